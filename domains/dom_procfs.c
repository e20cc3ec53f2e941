/*
 * The procfs backend: find QEMU processes under a proc root, read their
 * command lines and vCPU thread names, and keep the table current.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dom_backend.h"
#include "dom_proc.h"
#include "dom_procfs.h"
#include "domprof/raw.h"
#include "dom_cmdline.h"
#include "sfname/sfname.h"
#include "util/du_log.h"

/* Scans after a change of thread count during which threads are re-read:
 * QEMU names a thread just after creating it, so a scan can see the
 * thread before its name. */
#define DOM_SETTLE_SCANS 3

/* The procfs side of a domain: how it is found and kept current. */
struct pdom {
	struct dom_domain *dom;		/* what it reports (dom.h) */
	struct pdom *next;		/* table list */
	struct pdom *hnext;		/* pid hash chain */
	pid_t pid;
	unsigned long long start_time;	/* /proc/PID/stat field 22; 0: unknown */
	nlink_t task_nlink;		/* st_nlink of task/ at the last read */
	unsigned int settle;		/* scans left to re-read threads */
	unsigned int seen_gen;
	bool vcpus_dirty;		/* report vcpus_changed this scan */
};

/* A process that claims to be QEMU but failed the identity checks: kept
 * so it is reported once, and dropped when it exits. */
struct refusal {
	struct refusal *next;
	pid_t pid;
	unsigned long long start_time;
	unsigned int seen_gen;
	unsigned int scans;		/* consecutive scans refused */
	bool reported;
};

/* Scans a claimant is refused before it is reported: QEMU opens its KVM
 * VM a moment after exec. */
#define REFUSE_REPORT_SCANS 3
/* fds looked at for the KVM VM: QEMU opens it early, so among the first */
#define IDENTITY_MAX_FDS 4096
#define REFUSAL_BUCKETS 256

struct dom_table {
	int proc_fd;
	bool identity;			/* check_identity (dom.h) */
	uid_t *vm_uids;
	size_t nr_vm_uids;
	struct refusal *refused[REFUSAL_BUCKETS];
	char **names;			/* selection, NULL-terminated; NULL: all */
	struct pdom *list;
	struct pdom **buckets;	/* pid hash */
	size_t nr_buckets;		/* power of two */
	size_t count;
	unsigned int gen;
};

static void refusals_prune(struct dom_table *t, bool all);

/* ---- small helpers ----------------------------------------------------- */

/*
 * Read up to @cap bytes of @path (relative to @dirfd) into @buf.  Returns
 * the byte count, or -errno.  *@full is set when the file may have more.
 */
static ssize_t read_at(int dirfd, const char *path, char *buf, size_t cap,
		       bool *full)
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

/* Start time and state from /proc/PID/stat (dom_proc.h: 0, -ENOENT when
 * absent, -EINVAL when malformed). */
static int read_stat(int dirfd, pid_t pid, unsigned long long *start, char *state)
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

static void domain_free(struct pdom *d)
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
	n = read_at(dirfd, path, buf, (1 << 20) - 1, &full);
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

/* Build a domain from /proc/PID; NULL when it cannot (it may just have
 * exited) — the error is logged at debug level and the pid skipped. */
static struct pdom *domain_probe(struct dom_table *t, pid_t pid)
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
	if (read_stat(t->proc_fd, pid, &d->start_time, &state) < 0)
		d->start_time = 0;
	if (state == 'Z')
		goto out_free;
	snprintf(path, sizeof(path), "%d/cmdline", (int)pid);
	n = read_at(t->proc_fd, path, buf, DOM_CMDLINE_MAX, &full);
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
	dom_domain_set_priv(d->dom, d);
	d->task_nlink = (nlink_t)-1;
	d->settle = DOM_SETTLE_SCANS;
	free(buf);
	return d;
out_free:
	free(buf);
	domain_free(d);
	return NULL;
}

static bool same_map(const struct dom_domain *dom, const pid_t *map, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++)
		if (dom_domain_vcpu_tid(dom, i) != map[i])
			return false;
	return true;
}

/*
 * Re-read the thread names of @d if its thread count changed or it is
 * still settling.  Sets d->vcpus_dirty when the vCPU map changed.
 */
static void domain_read_tasks(struct dom_table *t, struct pdom *d)
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
		n = read_at(t->proc_fd, path, comm, sizeof(comm), NULL);
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

/* ---- the table ---------------------------------------------------------- */

static void table_link(struct dom_table *t, struct pdom *d)
{
	size_t b = dom_hash_id(d->pid) & (t->nr_buckets - 1);

	d->next = t->list;
	t->list = d;
	d->hnext = t->buckets[b];
	t->buckets[b] = d;
	t->count++;
}

static void table_unlink(struct dom_table *t, struct pdom *d)
{
	size_t b = dom_hash_id(d->pid) & (t->nr_buckets - 1);
	struct pdom **pp;

	for (pp = &t->buckets[b]; *pp; pp = &(*pp)->hnext)
		if (*pp == d) {
			*pp = d->hnext;
			break;
		}
	for (pp = &t->list; *pp; pp = &(*pp)->next)
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	t->count--;
}

/* Grow the pid hash so chains stay short; failure only costs speed. */
static void table_grow(struct dom_table *t)
{
	struct pdom **nb, *d;
	size_t n = t->nr_buckets * 2;

	if (t->count < t->nr_buckets)
		return;
	nb = calloc(n, sizeof(*nb));
	if (!nb)
		return;
	for (d = t->list; d; d = d->next) {
		size_t b = dom_hash_id(d->pid) & (n - 1);

		d->hnext = nb[b];
		nb[b] = d;
	}
	free(t->buckets);
	t->buckets = nb;
	t->nr_buckets = n;
}

static struct pdom *table_find(const struct dom_table *t, pid_t pid)
{
	struct pdom *d;

	for (d = t->buckets[dom_hash_id(pid) & (t->nr_buckets - 1)]; d; d = d->hnext)
		if (d->pid == pid)
			return d;
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
	t->nr_buckets = 64;
	t->buckets = calloc(t->nr_buckets, sizeof(*t->buckets));
	if (!t->buckets)
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
	for (d = t->list; d; d = next) {
		next = d->next;
		domain_free(d);
	}
	if (t->names) {
		for (s = t->names; *s; s++)
			free(*s);
		free(t->names);
	}
	if (t->proc_fd >= 0)
		close(t->proc_fd);
	refusals_prune(t, true);
	free(t->vm_uids);
	free(t->buckets);
	free(t);
}

/* ---- identity (dom.h: check_identity) ----------------------------------- */

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
	n = read_at(t->proc_fd, path, buf, sizeof(buf) - 1, NULL);
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

/* NULL when @pid may be a domain, else why not. */
static const char *identity_refusal(const struct dom_table *t, pid_t pid)
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

/* Note that @pid was refused this scan; report it once it has been for a
 * few scans.  Memory failure only costs the report. */
static void refusal_note(struct dom_table *t, pid_t pid, const char *why,
			 const struct dom_ops *ops, void *ctx)
{
	struct refusal *r = refusal_find(t, pid);
	unsigned long long start = 0;
	char state = 0;
	struct pdom *d;

	if (read_stat(t->proc_fd, pid, &start, &state) < 0)
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
	d = domain_probe(t, pid);	/* for the name it claims */
	if (ops && ops->refused)
		ops->refused(ctx, pid, d ? dom_domain_name(d->dom) : "?", why);
	else
		du_info("domains: pid %d claims to be QEMU but %s; refused", (int)pid, why);
	domain_free(d);
}

/* Forget the refused processes that were not seen this scan (exited), and
 * with @all every one. */
static void refusals_prune(struct dom_table *t, bool all)
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

/* Cheapest test first: one readlink, then the 16-byte comm, then argv[0]. */
static bool pid_is_qemu(int dirfd, pid_t pid)
{
	char path[32], buf[PATH_MAX];
	ssize_t n;
	char *nul;

	snprintf(path, sizeof(path), "%d/exe", (int)pid);
	n = readlinkat(dirfd, path, buf, sizeof(buf));
	if (n > 0 && dom_is_qemu_path(buf, (size_t)n))
		return true;
	snprintf(path, sizeof(path), "%d/comm", (int)pid);
	n = read_at(dirfd, path, buf, 64, NULL);
	if (n > 0 && dom_is_qemu_comm(buf, (size_t)n))
		return true;
	snprintf(path, sizeof(path), "%d/cmdline", (int)pid);
	n = read_at(dirfd, path, buf, sizeof(buf), NULL);
	if (n <= 0)
		return false;
	/* An argv[0] longer than the buffer is no QEMU path we accept. */
	nul = memchr(buf, '\0', (size_t)n);
	if (!nul)
		return false;
	return dom_is_qemu_path(buf, (size_t)(nul - buf));
}

int dom_scan(struct dom_table *t, const struct dom_ops *ops, void *ctx)
{
	struct pdom *added = NULL, *removed = NULL, *d, **pp;
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
		unsigned long long start;
		const char *why;
		char state;
		pid_t pid = dom_proc_pid(de->d_name);

		if (!pid)
			continue;
		d = table_find(t, pid);
		if (d) {
			int r = read_stat(t->proc_fd, pid, &start, &state);

			if (r == 0 && state != 'Z' &&
			    (!d->start_time || start == d->start_time)) {
				d->start_time = start;
				d->seen_gen = t->gen;
				domain_read_tasks(t, d);
				continue;
			}
			/* A tree without stat files (tests) gives no start
			 * time: the directory entry is its liveness. */
			if (r < 0 && !d->start_time) {
				d->seen_gen = t->gen;
				domain_read_tasks(t, d);
				continue;
			}
			/* Exited, a zombie, or the pid was reused: the old
			 * domain goes; a reused pid is probed as new. */
			if (r < 0)
				continue;
		}
		if (!pid_is_qemu(t->proc_fd, pid))
			continue;
		why = identity_refusal(t, pid);
		if (why) {
			refusal_note(t, pid, why, ops, ctx);
			continue;
		}
		d = domain_probe(t, pid);
		if (!d)
			continue;
		d->next = added;
		added = d;
	}
	closedir(dir);
	refusals_prune(t, false);

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
		domain_free(d);
	}
	while ((d = added)) {
		added = d->next;
		d->seen_gen = t->gen;
		domain_read_tasks(t, d);
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
	return 0;
}

int dom_lookup_task(const struct dom_table *t, pid_t pid, pid_t tid,
		    const struct dom_domain **dp, int *vcpu)
{
	const struct pdom *d = table_find(t, pid);

	if (dp)
		*dp = d ? d->dom : NULL;
	if (vcpu)
		*vcpu = d ? dom_domain_vcpu_of_tid(d->dom, tid) : -1;
	return d ? 0 : -ENOENT;
}

size_t dom_table_count(const struct dom_table *t)
{
	return t->count;
}

const struct dom_domain *dom_table_next(const struct dom_table *t,
					const struct dom_domain *prev)
{
	const struct pdom *d = prev ? ((const struct pdom *)dom_domain_priv(prev))->next : t->list;

	return d ? d->dom : NULL;
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

static int procfs_lookup(void *state, uint32_t key_ns, uint64_t key, uint32_t vcpu, pid_t tid,
			 const struct dom_domain **d, int *vcpu_out)
{
	int ret;

	*d = NULL;
	*vcpu_out = -1;
	if (key_ns != DP_DOMKEY_HOST_PID || !key || key > INT_MAX)
		return -ENOENT;
	ret = dom_lookup_task(state, (pid_t)key, tid, d, vcpu_out);
	if (!ret)
		dom_vcpu_recorded(vcpu, DOM_VCPU_MAX, vcpu_out);
	return ret;
}

static int procfs_lookup_pid(void *state, pid_t pid, pid_t tid, const struct dom_domain **d,
			     int *vcpu_out)
{
	return dom_lookup_task(state, pid, tid, d, vcpu_out);
}

static const struct dom_domain *procfs_next(void *state, const struct dom_domain *prev)
{
	return dom_table_next(state, prev);
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
	.lookup = procfs_lookup,
	.lookup_pid = procfs_lookup_pid,
	.next = procfs_next,
	.close = procfs_close,
};
