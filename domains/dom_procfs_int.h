/*
 * The procfs backend's state, shared by its files: dom_procfs.c (the
 * table, the scan, the backend ops), dom_procfs_read.c (what
 * /proc says of one process: QEMU or not, its domain, its vCPU threads)
 * and dom_procfs_ident.c (the identity checks, and the claimants they
 * refused).  Not an interface: dom_procfs.h is.
 */
#ifndef DOM_PROCFS_INT_H
#define DOM_PROCFS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "dom.h"
#include "util/du_hash.h"

/* Scans after a change of thread count during which threads are re-read:
 * QEMU names a thread just after creating it, so a scan can see the
 * thread before its name. */
#define DOM_SETTLE_SCANS 3

/* The procfs side of a domain: how it is found and kept current. */
struct pdom {
	struct dom_domain *dom;		/* what it reports (dom.h) */
	struct pdom *next;		/* table list */
	struct du_hlink link;		/* dom_table.pids: dom_hash_id(pid) */
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
	struct du_htab pids;		/* every domain by pid; .count is the table's */
	unsigned int gen;
};

/* ---- dom_procfs_read.c ---- */

/*
 * Read up to @cap bytes of @path (relative to @dirfd) into @buf.  Returns
 * the byte count, or -errno.  *@full is set when the file may have more.
 */
ssize_t dpf_read_at(int dirfd, const char *path, char *buf, size_t cap, bool *full);
/* Start time and state from /proc/PID/stat (dom_proc.h: 0, -ENOENT when
 * absent, -EINVAL when malformed). */
int dpf_read_stat(int dirfd, pid_t pid, unsigned long long *start, char *state);
/* Cheapest test first: one readlink, then the 16-byte comm, then argv[0]. */
bool dpf_pid_is_qemu(int dirfd, pid_t pid);
/* Build a domain from /proc/PID; NULL when it cannot (it may just have
 * exited) — the error is logged at debug level and the pid skipped. */
struct pdom *dpf_domain_probe(struct dom_table *t, pid_t pid);
/* Frees @d and its domain; NULL is fine. */
void dpf_domain_free(struct pdom *d);
/*
 * Re-read the thread names of @d if its thread count changed or it is
 * still settling.  Sets d->vcpus_dirty when the vCPU map changed.
 */
void dpf_domain_read_tasks(struct dom_table *t, struct pdom *d);

/* ---- dom_procfs_ident.c ---- */

/* NULL when @pid may be a domain, else why not. */
const char *dpf_identity_refusal(const struct dom_table *t, pid_t pid);
/* Note that @pid was refused this scan; report it once it has been for a
 * few scans.  Memory failure only costs the report. */
void dpf_refusal_note(struct dom_table *t, pid_t pid, const char *why,
		      const struct dom_ops *ops, void *ctx);
/* Forget the refused processes that were not seen this scan (exited), and
 * with @all every one. */
void dpf_refusals_prune(struct dom_table *t, bool all);

#endif
