/*
 * The procfs backend's identity checks (dom.h: check_identity): a command
 * line is a claim anyone can make, so a QEMU counts as a domain only if
 * it runs as root or the hypervisor's user and holds a KVM VM.  The
 * claimants refused are remembered, to be reported once.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dom_procfs_int.h"
#include "util/du_log.h"

static bool uid_allowed(const struct dom_table *t, unsigned long uid)
{
	if (uid == 0)
		return true;
	for (size_t i = 0; i < t->nr_vm_uids; i++)
		if ((unsigned long)t->vm_uids[i] == uid)
			return true;
	return false;
}

/* All four uids of /proc/PID/status (real, effective, saved, fs) are
 * root or the hypervisor's.  Not the owner of /proc/PID: a process that
 * makes itself non-dumpable shows as root's there. */
static bool owner_allowed(const struct dom_table *t, pid_t pid)
{
	char path[32], buf[4096], *p;
	unsigned long u[4];
	ssize_t n;

	snprintf(path, sizeof(path), "%d/status", (int)pid);
	n = dpf_read_at(t->proc_fd, path, buf, sizeof(buf) - 1, NULL);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
		return false;
	for (int i = 0; i < 4; i++)
		if (!uid_allowed(t, u[i]))
			return false;
	return true;
}

/* The process holds a KVM VM: one of its fds is "anon_inode:kvm-vm". */
static bool holds_kvm_vm(const struct dom_table *t, pid_t pid)
{
	static const char want[] = "anon_inode:kvm-vm";
	char path[64], link[64];
	struct dirent *de;
	unsigned int seen = 0;
	bool found = false;
	DIR *dir;
	int fd;

	snprintf(path, sizeof(path), "%d/fd", (int)pid);
	fd = openat(t->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return false;
	}
	while (!found && seen < IDENTITY_MAX_FDS && (de = readdir(dir))) {
		ssize_t n;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		seen++;
		n = readlinkat(fd, de->d_name, link, sizeof(link));
		found = n == (ssize_t)sizeof(want) - 1 && !memcmp(link, want, sizeof(want) - 1);
	}
	closedir(dir);
	return found;
}

const char *dpf_identity_refusal(const struct dom_table *t, pid_t pid)
{
	if (!t->identity)
		return NULL;
	if (!owner_allowed(t, pid))
		return "not run by root or the hypervisor's user";
	if (!holds_kvm_vm(t, pid))
		return "holds no KVM VM";
	return NULL;
}

static struct refusal *refusal_find(struct dom_table *t, pid_t pid)
{
	struct refusal *r;

	for (r = t->refused[dom_hash_id(pid) % REFUSAL_BUCKETS]; r; r = r->next)
		if (r->pid == pid)
			return r;
	return NULL;
}

void dpf_refusal_note(struct dom_table *t, pid_t pid, const char *why,
		      const struct dom_ops *ops, void *ctx)
{
	struct refusal *r = refusal_find(t, pid);
	unsigned long long start = 0;
	char state = 0;
	struct pdom *d;

	if (dpf_read_stat(t->proc_fd, pid, &start, &state) < 0)
		start = 0;
	if (r && r->start_time != start) {
		r->scans = 0;		/* a new process under a reused pid */
		r->reported = false;
		r->start_time = start;
	}
	if (!r) {
		size_t b = dom_hash_id(pid) % REFUSAL_BUCKETS;

		r = calloc(1, sizeof(*r));
		if (!r)
			return;
		r->pid = pid;
		r->start_time = start;
		r->next = t->refused[b];
		t->refused[b] = r;
	}
	r->seen_gen = t->gen;
	if (r->reported || ++r->scans < REFUSE_REPORT_SCANS)
		return;
	r->reported = true;
	d = dpf_domain_probe(t, pid);	/* for the name it claims */
	if (ops && ops->refused)
		ops->refused(ctx, pid, d ? dom_domain_name(d->dom) : "?", why);
	else
		du_info("domains: pid %d claims to be QEMU but %s; refused", (int)pid, why);
	dpf_domain_free(d);
}

void dpf_refusals_prune(struct dom_table *t, bool all)
{
	for (size_t b = 0; b < REFUSAL_BUCKETS; b++) {
		struct refusal **pp = &t->refused[b];

		while (*pp) {
			struct refusal *r = *pp;

			if (!all && r->seen_gen == t->gen) {
				pp = &r->next;
				continue;
			}
			*pp = r->next;
			free(r);
		}
	}
}
