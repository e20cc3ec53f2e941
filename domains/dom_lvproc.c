/*
 * The libvirt backend's view of /proc: a domain's QEMU process (its pid
 * file, checked against the QEMU's -uuid and owner, else a search) and
 * its vCPU threads ("CPU N/KVM").  Why from /proc: dom_libvirt.c's
 * opening comment.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "dom_cmdline.h"
#include "dom_libvirt_int.h"
#include "util/du_fs.h"

/* All four uids of /proc/PID/status are root or the hypervisor's (a pid
 * file or a /proc search names the QEMU; a local user's process with the
 * domain's -uuid is not it).  Not checked on a fake tree unless asked. */
static bool pid_owner_ok(const struct dom_lv *lv, pid_t pid)
{
	char path[PATH_MAX], buf[4096], *p;
	unsigned long u[4];
	ssize_t n;

	if (!lv->identity)
		return true;
	snprintf(path, sizeof(path), "%s/%d/status", lv->proc_root, (int)pid);
	n = du_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return false;
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
		return false;
	for (int i = 0; i < 4; i++) {
		bool ok = u[i] == 0;

		for (size_t k = 0; k < lv->nr_vm_uids && !ok; k++)
			ok = u[i] == (unsigned long)lv->vm_uids[k];
		if (!ok)
			return false;
	}
	return true;
}

bool dlv_pid_has_uuid(const struct dom_lv *lv, pid_t pid, const char *uuid)
{
	char path[PATH_MAX];
	struct dom_cmdline cl;
	char *buf;
	ssize_t n;
	bool ok = false;
	int fd;

	if (!pid_owner_ok(lv, pid))
		return false;
	snprintf(path, sizeof(path), "%s/%d/cmdline", lv->proc_root, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	buf = malloc(DOM_CMDLINE_MAX);
	if (!buf) {
		close(fd);
		return false;
	}
	n = read(fd, buf, DOM_CMDLINE_MAX);
	close(fd);
	if (n > 0 && !dom_cmdline_parse(buf, (size_t)n, n == DOM_CMDLINE_MAX, &cl)) {
		ok = !strcasecmp(cl.uuid, uuid);
		dom_cmdline_release(&cl);
	}
	free(buf);
	return ok;
}

pid_t dlv_find_qemu_pid(const struct dom_lv *lv, const char *name, const char *uuid)
{
	char path[PATH_MAX], buf[DLV_PIDFILE_MAX];
	struct dirent *de;
	pid_t pid = 0;
	long v;
	char *end;
	DIR *dir;

	if (snprintf(path, sizeof(path), "%s/%s.pid", lv->pid_dir, name) < (int)sizeof(path) &&
	    !strchr(name, '/') && du_read_small(path, buf, sizeof(buf)) > 0) {
		errno = 0;
		v = strtol(buf, &end, 10);
		if (!errno && v > 1 && v <= INT_MAX && (*end == '\0' || *end == '\n') &&
		    dlv_pid_has_uuid(lv, (pid_t)v, uuid))
			return (pid_t)v;
	}
	/* another state directory (session URIs), or an odd name */
	dir = opendir(lv->proc_root);
	if (!dir)
		return 0;
	while (!pid && (de = readdir(dir))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		errno = 0;
		v = strtol(de->d_name, &end, 10);
		if (*end || errno || v <= 1 || v > INT_MAX)
			continue;
		if (dlv_pid_has_uuid(lv, (pid_t)v, uuid))
			pid = (pid_t)v;
	}
	closedir(dir);
	return pid;
}

bool dlv_read_vcpus(const struct dom_lv *lv, struct lvdom *d)
{
	char path[PATH_MAX], comm[32];
	pid_t *map = NULL;
	unsigned int nr = 0, cap = 0, v;
	struct dirent *de;
	bool changed = false;
	DIR *dir;

	if (d->pid <= 0)
		return false;
	snprintf(path, sizeof(path), "%s/%d/task", lv->proc_root, (int)d->pid);
	dir = opendir(path);
	if (!dir)
		return false;
	while ((de = readdir(dir))) {
		char *end;
		long tid;
		ssize_t n;

		errno = 0;
		tid = strtol(de->d_name, &end, 10);
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end || errno ||
		    tid > INT_MAX)
			continue;
		snprintf(path, sizeof(path), "%s/%d/task/%ld/comm", lv->proc_root, (int)d->pid,
			 tid);
		n = du_read_small(path, comm, sizeof(comm));
		if (n <= 0 || !dom_parse_vcpu_comm(comm, (size_t)n, &v))
			continue;
		if (dom_vcpu_map_add(&map, &cap, &nr, v, (pid_t)tid))
			goto out;
	}
	if (nr != d->nr_vcpus || (nr && memcmp(map, d->vcpu_tid, nr * sizeof(*map)))) {
		free(d->vcpu_tid);
		d->vcpu_tid = map;
		d->nr_vcpus = nr;
		map = NULL;
		changed = true;
	}
out:
	free(map);
	closedir(dir);
	return changed;
}
