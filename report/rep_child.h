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
/* Where a root report's children keep debuginfod's cache: in
 * debuginfod.USER below it. */
#define REP_CHILD_CACHE_TOP "/var/cache/domprof"

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
 * Run @fn(@ctx, out, in) in a confined child, @fd (may be -1) the one
 * descriptor it keeps beside the reply pipe @out and the answer pipe @in
 * (every other is closed, stdin, stdout and stderr are /dev/null); @fn returns the exit status: 0 when it wrote its reply, 2 when it
 * wrote "\0" and a reason.  @wall_ms bounds the child's time.  0 with the
 * reply in *@reply (malloc'd) and *@len; -errno with the reason in @err.
 */
int rep_child_run(const struct rep_child_cfg *cfg, int fd, int (*fn)(void *ctx, int out, int in),
		  void *ctx, unsigned int wall_ms, char **reply, size_t *len, char *err,
		  size_t errlen);

/*
 * The same, for a child that asks one question first (rep_child_ask): its
 * bytes go to @ask(@actx, q, n) in the parent, whose return (one byte) is
 * the answer.
 */
int rep_child_run_ask(const struct rep_child_cfg *cfg, int fd,
		      int (*fn)(void *ctx, int out, int in), void *ctx,
		      int (*ask)(void *actx, const char *q, size_t n), void *actx,
		      unsigned int wall_ms, char **reply, size_t *len, char *err, size_t errlen);

/* In the child: ask @q (at most 255 bytes) on @out, the answer read from
 * @in; the answer byte, or -1. */
int rep_child_ask(int out, int in, const char *q, size_t n);

/*
 * In the child, once every file it needs is open: a seccomp allow-list
 * (reading, memory, writing its reply) that kills the child on any other
 * system call.  0 or -errno.
 */
int rep_child_confine(void);

#endif
