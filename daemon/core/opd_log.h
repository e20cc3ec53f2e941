/*
 * The daemon's log: a du_log hook writing to SESSION/oprofiled.log (and to
 * stderr too in the foreground).  The log state is the program's one log
 * hook global.
 */
#ifndef OPD_LOG_H
#define OPD_LOG_H

#include <stdbool.h>
#include <stddef.h>

/* Copy @src to @dst (@size bytes, NUL included) with control bytes, DEL
 * and backslash written as \xHH, cut at a whole unit if it does not fit.
 * Every log line goes through it.  The length written. */
size_t opd_log_escape(char *dst, size_t size, const char *src);

/* Open (append, never through a symlink: util/du_sdir.h) @path and install the hook.  0 or -errno. */
int opd_log_open(const char *path, bool also_stderr, bool verbose);
/* Reopen the same path (SIGHUP, after log rotation). 0 or -errno. */
int opd_log_reopen(void);
/* Stop echoing to stderr (after daemonizing). */
void opd_log_quiet_stderr(void);
void opd_log_close(void);

#endif
