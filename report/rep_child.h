/*
 * The report tools' parser children: every ELF and DWARF file is read in a
 * forked child that runs without root (as the dedicated user when we are
 * root), with no_new_privs, CPU, memory and file-size limits, and under a
 * seccomp allow-list once its files are open.  The parent only reads the
 * child's bounded reply, and trusts nothing in it.
 */
#ifndef REP_CHILD_H
#define REP_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The user a root report drops to in its parser children. */
#define REP_CHILD_USER "domprof"
/* Where a root report's children keep debuginfod's cache. */
#define REP_CHILD_CACHE "/var/cache/domprof/debuginfod"

struct rep_child_cfg {
	bool drop;		/* we are root: children change to uid/gid */
	uid_t uid;
	gid_t gid;
	char user[64];		/* its name, for messages */
	char cache[512];	/* DEBUGINFOD_CACHE_PATH for the children; "" leave it */
};

/* Who the children run as, and their debuginfod cache: 0 or -errno. */
int rep_child_cfg_init(struct rep_child_cfg *cfg);

/*
 * Run @fn(@ctx, out) in a confined child, @fd (may be -1) the one
 * descriptor it inherits beside the reply pipe @out; @fn returns the exit
 * status: 0 when it wrote its reply, 2 when it wrote "\0" and a reason.
 * @wall_ms bounds the child's time.  0 with the reply in *@reply (malloc'd)
 * and *@len; -errno with the reason in @err.
 */
int rep_child_run(const struct rep_child_cfg *cfg, int fd, int (*fn)(void *ctx, int out),
		  void *ctx, unsigned int wall_ms, char **reply, size_t *len, char *err,
		  size_t errlen);

/*
 * In the child, once every file it needs is open: a seccomp allow-list
 * (reading, memory, writing its reply) that kills the child on any other
 * system call.  0 or -errno.
 */
int rep_child_confine(void);

#endif
