/*
 * The procfs backend: find QEMU processes under a proc root, read their
 * command lines and vCPU thread names, and keep the table current.  Here
 * the table and the scan; reading one process is dom_procfs_read.c's,
 * the identity checks are dom_procfs_ident.c's.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dom_backend.h"
#include "dom_proc.h"
#include "dom_procfs.h"
#include "dom_procfs_int.h"
#include "dom_cmdline.h"
#include "sfname/sfname.h"
#include "util/du_log.h"

/* ---- the table ---------------------------------------------------------- */

static uint32_t pid_hash(pid_t pid)
{
	return (uint32_t)dom_hash_id(pid);
}

static void table_link(struct dom_table *t, struct pdom *d)
{
	d->next = t->list;
	t->list = d;
	du_htab_add(&t->pids, &d->link, pid_hash(d->pid));
}

static void table_unlink(struct dom_table *t, struct pdom *d)
{
	struct pdom **pp;

	du_htab_del(&t->pids, &d->link);
	for (pp = &t->list; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
}

/* Grow the pid hash so chains stay short; failure only costs speed. */
static void table_grow(struct dom_table *t)
{
	if (t->pids.count > t->pids.mask)
		(void)du_htab_grow(&t->pids);
}

static struct pdom *table_find(const struct dom_table *t, pid_t pid)
{
	uint32_t h = pid_hash(pid);

	for (struct du_hlink *l = du_htab_chain(&t->pids, h); l; l = l->next) {
		struct pdom *d = du_container_of(l, struct pdom, link);

		if (l->hash == h && d->pid == pid)
			return d;
	}
	return NULL;
}

struct dom_table *dom_table_new(const struct dom_config *cfg)
{
	const char *root = cfg && cfg->proc_root ? cfg->proc_root : "/proc";
	struct dom_table *t;
	size_t n = 0, i;
	int err;

	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->proc_fd = -1;
	if (du_htab_init(&t->pids, 64))
		goto out_nomem;
	if (cfg && cfg->names) {
		while (cfg->names[n])
			n++;
		t->names = calloc(n + 1, sizeof(*t->names));
		if (!t->names)
			goto out_nomem;
		for (i = 0; i < n; i++) {
			t->names[i] = strdup(cfg->names[i]);
			if (!t->names[i])
				goto out_nomem;
		}
	}
	t->identity = !cfg || !cfg->proc_root || cfg->check_identity;
	if (cfg && cfg->nr_vm_uids) {
		t->vm_uids = calloc(cfg->nr_vm_uids, sizeof(*t->vm_uids));
		if (!t->vm_uids)
			goto out_nomem;
		memcpy(t->vm_uids, cfg->vm_uids, cfg->nr_vm_uids * sizeof(*t->vm_uids));
		t->nr_vm_uids = cfg->nr_vm_uids;
	}
	t->proc_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->proc_fd < 0) {
		err = errno;
		du_debug("domains: cannot open %s: %s", root, strerror(err));
		goto out_free;
	}
	return t;
out_nomem:
	err = ENOMEM;
out_free:
	dom_table_free(t);
	errno = err;
	return NULL;
}

void dom_table_free(struct dom_table *t)
{
	struct pdom *d, *next;
	char **s;

	if (!t)
		return;
	du_htab_fini(&t->pids, NULL);	/* its domains go below, by the list */
	for (d = t->list; d; d = next) {
		next = d->next;
		dpf_domain_free(d);
	}
	if (t->names) {
		for (s = t->names; *s; s++)
			free(*s);
		free(t->names);
	}
	if (t->proc_fd >= 0)
		close(t->proc_fd);
	dpf_refusals_prune(t, true);
	free(t->vm_uids);
	free(t);
}

/*
 * Pid @pid of the proc root in this scan: a known domain still alive is
 * marked seen (its threads re-read); a new QEMU that passes the identity
 * checks is probed and pushed on *@added.
 */
static void scan_pid(struct dom_table *t, pid_t pid, struct pdom **added,
		     const struct dom_ops *ops, void *ctx)
{
	struct pdom *d = table_find(t, pid);
	unsigned long long start;
	const char *why;
	char state;

	if (d) {
		int r = dpf_read_stat(t->proc_fd, pid, &start, &state);

		if (r == 0 && state != 'Z' &&
		    (!d->start_time || start == d->start_time)) {
			d->start_time = start;
			d->seen_gen = t->gen;
			dpf_domain_read_tasks(t, d);
			return;
		}
		/* A tree without stat files (tests) gives no start
		 * time: the directory entry is its liveness. */
		if (r < 0 && !d->start_time) {
			d->seen_gen = t->gen;
			dpf_domain_read_tasks(t, d);
			return;
		}
		/* Exited, a zombie, or the pid was reused: the old
		 * domain goes; a reused pid is probed as new. */
		if (r < 0)
			return;
	}
	if (!dpf_pid_is_qemu(t->proc_fd, pid))
		return;
	why = dpf_identity_refusal(t, pid);
	if (why) {
		dpf_refusal_note(t, pid, why, ops, ctx);
		return;
	}
	d = dpf_domain_probe(t, pid);
	if (!d)
		return;
	d->next = *added;
	*added = d;
}

/* The scan's outcome into the table and to @ops: the domains not seen go,
 * the ones in @added come, then the vCPU maps that changed. */
static void scan_apply(struct dom_table *t, struct pdom *added, const struct dom_ops *ops,
		       void *ctx)
{
	struct pdom *removed = NULL, *d, **pp;

	/* Removals first, so a restart reads as remove + add. */
	for (pp = &t->list; *pp;) {
		d = *pp;
		if (d->seen_gen == t->gen) {
			pp = &d->next;
			continue;
		}
		table_unlink(t, d);
		d->next = removed;
		removed = d;
	}
	while ((d = removed)) {
		removed = d->next;
		if (ops && ops->removed)
			ops->removed(ctx, d->dom);
		dpf_domain_free(d);
	}
	while ((d = added)) {
		added = d->next;
		d->seen_gen = t->gen;
		dpf_domain_read_tasks(t, d);
		d->vcpus_dirty = false;
		table_grow(t);
		table_link(t, d);
		if (ops && ops->added)
			ops->added(ctx, d->dom);
	}
	for (d = t->list; d; d = d->next) {
		if (!d->vcpus_dirty)
			continue;
		d->vcpus_dirty = false;
		if (ops && ops->vcpus_changed)
			ops->vcpus_changed(ctx, d->dom);
	}
}

int dom_scan(struct dom_table *t, const struct dom_ops *ops, void *ctx)
{
	struct pdom *added = NULL;
	struct dirent *de;
	DIR *dir;
	int fd;

	fd = openat(t->proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		int err = -errno;

		close(fd);
		return err;
	}
	t->gen++;
	while ((de = readdir(dir))) {
		pid_t pid = dom_proc_pid(de->d_name);

		if (pid)
			scan_pid(t, pid, &added, ops, ctx);
	}
	closedir(dir);
	dpf_refusals_prune(t, false);
	scan_apply(t, added, ops, ctx);
	return 0;
}

size_t dom_table_count(const struct dom_table *t)
{
	return t->pids.count;
}

/* ---- the backend ops ---------------------------------------------------- */

static int procfs_open(const struct dom_config *cfg, void **state)
{
	struct dom_table *t = dom_table_new(cfg);

	if (!t)
		return -errno;
	*state = t;
	return 0;
}

static int procfs_fd(void *state)
{
	(void)state;
	return -1;	/* no events from /proc: rescanned */
}

static int procfs_refresh(void *state, const struct dom_ops *ops, void *ctx)
{
	return dom_scan(state, ops, ctx);
}

static void procfs_close(void *state)
{
	dom_table_free(state);
}

const struct dom_backend_ops dom_backend_procfs = {
	.name = "procfs",
	.open = procfs_open,
	.fd = procfs_fd,
	.refresh = procfs_refresh,
	.close = procfs_close,
};
