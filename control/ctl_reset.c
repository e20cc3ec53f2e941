#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/*
 * The samples are kept, not deleted: samples/current becomes
 * samples/reset-YYYYMMDD-HHMMSS (-N added on a name clash), which opreport
 * can still read with --session-dir pointing at a copy, and which the user
 * removes when no longer wanted.  A running daemon holds the sample files
 * mapped, so moving them under it would lose samples: we refuse instead.
 */
int ctl_reset(const char *session_dir, FILE *out, char *err, size_t errlen)
{
	char cur[PATH_MAX], aside[PATH_MAX], stats[PATH_MAX], stamp[32];
	struct ctl_pid_info info;
	struct stat sb;
	bool did = false;
	time_t now = time(NULL);
	struct tm tm;

	if (stat(session_dir, &sb) || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "no session in %s (directory absent)", session_dir);
		return -ENOENT;
	}
	ctl_pid_probe(session_dir, &info);
	if (info.state == CTL_PID_RUNNING) {
		snprintf(err, errlen, "oprofiled is running (pid %d) for session %s: "
			 "stop it first with opcontrol --stop", (int)info.pid, session_dir);
		return -EBUSY;
	}
	ctl_pid_warn_stale(session_dir, &info);

	snprintf(cur, sizeof(cur), "%s/samples/current", session_dir);
	if (!lstat(cur, &sb)) {
		if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm))
			snprintf(stamp, sizeof(stamp), "%lld", (long long)now);
		snprintf(aside, sizeof(aside), "%s/samples/reset-%s", session_dir, stamp);
		for (int i = 1; !lstat(aside, &sb); i++) {
			if (i > 999) {
				snprintf(err, errlen, "cannot find a free name for %s", aside);
				return -EEXIST;
			}
			snprintf(aside, sizeof(aside), "%s/samples/reset-%s-%d", session_dir, stamp, i);
		}
		if (rename(cur, aside)) {
			int e = errno;

			snprintf(err, errlen, "cannot move %s to %s: %s", cur, aside, strerror(e));
			return -e;
		}
		fprintf(out, "Samples moved to %s\n", aside);
		did = true;
	}
	snprintf(stats, sizeof(stats), "%s/stats", session_dir);
	if (!unlink(stats)) {
		fprintf(out, "Statistics removed.\n");
		did = true;
	} else if (errno != ENOENT) {
		int e = errno;

		snprintf(err, errlen, "cannot remove %s: %s", stats, strerror(e));
		return -e;
	}
	if (!did)
		fprintf(out, "Nothing to reset in %s.\n", session_dir);
	return 0;
}
