/*
 * The procfs backend's reading of one process under the proc root: is it
 * a QEMU, the domain its command line describes (with the agent chardev
 * libvirt passed as an fd), and its vCPU threads' names.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dom_cmdline.h"
#include "dom_proc.h"
#include "dom_procfs_int.h"
#include "util/du_log.h"

/* ---- small helpers ----------------------------------------------------- */

ssize_t dpf_read_at(int dirfd, const char *path, char *buf, size_t cap, bool *full)
{
	ssize_t n;
	size_t got = 0;
	int fd;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	while (got < cap) {
		n = read(fd, buf + got, cap - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (full)
		*full = got == cap;
	close(fd);
	return (ssize_t)got;
}

int dpf_read_stat(int dirfd, pid_t pid, unsigned long long *start, char *state)
{
	struct dom_pstat st;
	int r = dom_proc_stat(dirfd, pid, &st);

	if (r == 0) {
		*start = st.start;
		*state = st.state;
	}
	return r;
}

/* ---- domains ------------------------------------------------------------ */

void dpf_domain_free(struct pdom *d)
{
	if (!d)
		return;
	dom_domain_free(d->dom);
	free(d);
}

/*
 * Resolve an agent chardev given as fd=N (libvirt opens the listening
 * socket itself): /proc/PID/fd/N is "socket:[INODE]", and the path bound
 * to that inode is in /proc/PID/net/unix.  Best effort: NULL if anything
 * is missing.
 */
static char *agent_path_from_fd(int dirfd, pid_t pid, int fd)
{
	char path[64], link[64], *buf = NULL, *line, *save = NULL, *res = NULL;
	unsigned long long ino;
	ssize_t n;
	bool full;

	snprintf(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
	n = readlinkat(dirfd, path, link, sizeof(link) - 1);
	if (n < 0)
		return NULL;
	link[n] = '\0';
	if (sscanf(link, "socket:[%llu]", &ino) != 1)
		return NULL;
	buf = malloc(1 << 20);
	if (!buf)
		return NULL;
	snprintf(path, sizeof(path), "%d/net/unix", (int)pid);
	n = dpf_read_at(dirfd, path, buf, (1 << 20) - 1, &full);
	if (n < 0)
		goto out_free;
	buf[n] = '\0';
	/* Num RefCount Protocol Flags Type St Inode Path */
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long lino;
		int off = 0;

		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %llu %n", &lino,
			   &off) < 1 || lino != ino || off <= 0 || !line[off])
			continue;
		if (line[off] == '/')
			res = strdup(line + off);
		break;
	}
out_free:
	free(buf);
	return res;
}

/* The neutral domain a parsed command line describes; NULL when out of
 * memory. */
static struct dom_domain *domain_build(struct dom_table *t, pid_t pid, struct dom_cmdline *cl)
{
	struct dom_domain *dom;
	char tmp[32];
	char *agent = NULL;
	int ret = 0;

	snprintf(tmp, sizeof(tmp), "qemu-%d", (int)pid);
	dom = dom_domain_new(cl->name ? cl->name : tmp);
	if (!dom)
		return NULL;
	dom_domain_set_pid(dom, pid);
	dom_domain_set_hypervisor(dom, "qemu");
	if (cl->uuid[0])
		dom_domain_set_uuid(dom, cl->uuid);
	if (cl->agent_path)
		ret = dom_domain_set_agent_path(dom, cl->agent_path);
	else if (cl->agent_fd >= 0 && (agent = agent_path_from_fd(t->proc_fd, pid, cl->agent_fd)))
		ret = dom_domain_set_agent_path(dom, agent);
	free(agent);
	if (ret) {
		dom_domain_free(dom);
		return NULL;
	}
	dom_domain_select(dom, (const char *const *)t->names);
	return dom;
}

struct pdom *dpf_domain_probe(struct dom_table *t, pid_t pid)
{
	struct dom_cmdline cl;
	struct pdom *d;
	char path[32], *buf;
	char state = 0;
	bool full = false;
	ssize_t n;

	buf = malloc(DOM_CMDLINE_MAX);
	d = calloc(1, sizeof(*d));
	if (!buf || !d)
		goto out_free;
	d->pid = pid;
	if (dpf_read_stat(t->proc_fd, pid, &d->start_time, &state) < 0)
		d->start_time = 0;
	if (state == 'Z')
		goto out_free;
	snprintf(path, sizeof(path), "%d/cmdline", (int)pid);
	n = dpf_read_at(t->proc_fd, path, buf, DOM_CMDLINE_MAX, &full);
	if (n < 0) {
		du_debug("domains: pid %d: cmdline: %s", (int)pid, strerror((int)-n));
		goto out_free;
	}
	if (dom_cmdline_parse(buf, (size_t)n, full, &cl))
		goto out_free;
	d->dom = domain_build(t, pid, &cl);
	dom_cmdline_release(&cl);
	if (!d->dom)
		goto out_free;
	d->task_nlink = (nlink_t)-1;
	d->settle = DOM_SETTLE_SCANS;
	free(buf);
	return d;
out_free:
	free(buf);
	dpf_domain_free(d);
	return NULL;
}

static bool same_map(const struct dom_domain *dom, const pid_t *map, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++)
		if (dom_domain_vcpu_tid(dom, i) != map[i])
			return false;
	return true;
}

void dpf_domain_read_tasks(struct dom_table *t, struct pdom *d)
{
	char path[64], comm[32];
	pid_t *map = NULL;
	unsigned int nr = 0, cap = 0, v;
	struct dirent *de;
	struct stat st;
	DIR *dir = NULL;
	int fd;

	snprintf(path, sizeof(path), "%d/task", (int)d->pid);
	if (fstatat(t->proc_fd, path, &st, 0) < 0)
		return;
	if (st.st_nlink != d->task_nlink) {
		d->task_nlink = st.st_nlink;
		d->settle = DOM_SETTLE_SCANS;
	} else if (d->settle == 0) {
		return;
	} else {
		d->settle--;
	}
	fd = openat(t->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	while ((de = readdir(dir))) {
		pid_t tid = dom_proc_pid(de->d_name);
		ssize_t n;

		if (!tid)
			continue;
		snprintf(path, sizeof(path), "%d/task/%d/comm", (int)d->pid, (int)tid);
		n = dpf_read_at(t->proc_fd, path, comm, sizeof(comm), NULL);
		if (n <= 0 || !dom_parse_vcpu_comm(comm, (size_t)n, &v))
			continue;
		if (dom_vcpu_map_add(&map, &cap, &nr, v, (pid_t)tid))
			goto out_close;
	}
	if (nr == dom_domain_nr_vcpus(d->dom) && same_map(d->dom, map, nr))
		goto out_close;
	if (dom_domain_set_vcpus(d->dom, map, nr) < 0) {
		/* Keep the old, consistent map; retry next scan. */
		d->task_nlink = (nlink_t)-1;
		goto out_close;
	}
	d->vcpus_dirty = true;
out_close:
	free(map);
	closedir(dir);
}

bool dpf_pid_is_qemu(int dirfd, pid_t pid)
{
	char path[32], buf[PATH_MAX];
	ssize_t n;
	char *nul;

	snprintf(path, sizeof(path), "%d/exe", (int)pid);
	n = readlinkat(dirfd, path, buf, sizeof(buf));
	if (n > 0 && dom_is_qemu_path(buf, (size_t)n))
		return true;
	snprintf(path, sizeof(path), "%d/comm", (int)pid);
	n = dpf_read_at(dirfd, path, buf, 64, NULL);
	if (n > 0 && dom_is_qemu_comm(buf, (size_t)n))
		return true;
	snprintf(path, sizeof(path), "%d/cmdline", (int)pid);
	n = dpf_read_at(dirfd, path, buf, sizeof(buf), NULL);
	if (n <= 0)
		return false;
	/* An argv[0] longer than the buffer is no QEMU path we accept. */
	nul = memchr(buf, '\0', (size_t)n);
	if (!nul)
		return false;
	return dom_is_qemu_path(buf, (size_t)(nul - buf));
}
