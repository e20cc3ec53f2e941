/*
 * What the domain backends read of the proc tree (dom_procfs.c, and
 * dom_xenback.c for dom0's back-end threads): the pid an entry names and
 * a task's stat line.
 */
#ifndef DOM_PROC_H
#define DOM_PROC_H

#include <sys/types.h>

/* A task's /proc/PID/stat, the fields domprof uses. */
struct dom_pstat {
	char comm[64];			/* field 2, cut to fit */
	char state;			/* field 3: R, S, Z... */
	unsigned long flags;		/* field 9: the kernel's PF_* */
	unsigned long long start;	/* field 22: start time, ticks after boot */
};

/* The pid a proc tree entry @name stands for, or 0 when it is not a pid's
 * ("self", "1a", "01", or past INT_MAX). */
pid_t dom_proc_pid(const char *name);

/*
 * /proc/@pid/stat under @dirfd into *@st.  Returns 0, -ENOENT when the
 * file is absent (the task is gone, or a test's fake tree omits it),
 * -EINVAL when the line is malformed, or another -errno.
 */
int dom_proc_stat(int dirfd, pid_t pid, struct dom_pstat *st);

#endif
