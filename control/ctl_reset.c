#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "util/du_sdir.h"

/*
 * @session_dir made canonical into @canon (PATH_MAX) and checked as at
 * start (nothing renamed through a link); *@info says whether its daemon
 * runs (a stale pid file is warned about).
 */
static int checked_session(const char *session_dir, char *canon, struct ctl_pid_info *info,
			   char *err, size_t errlen)
{
	struct stat sb;
	int ret;

	if (stat(session_dir, &sb) || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "no session in %s (directory absent)", session_dir);
		return -ENOENT;
	}
	if (!realpath(session_dir, canon)) {
		snprintf(err, errlen, "%s: %s", session_dir, strerror(errno));
		return -ENOENT;
	}
	ret = du_sdir_check(canon, err, errlen);
	if (ret)
		return ret;
	ctl_pid_probe(canon, info);
	if (info->state != CTL_PID_RUNNING)
		ctl_pid_warn_stale(canon, info);
	return 0;
}

/*
 * The samples are kept, not deleted: samples/current becomes
 * samples/reset-YYYYMMDD-HHMMSS (-N added on a name clash), which opreport
 * can still read with --session-dir pointing at a copy, and which the user
 * removes when no longer wanted.
 */
int ctl_reset(const char *session_dir, FILE *out, char *err, size_t errlen)
{
	char cur[PATH_MAX + 32], aside[PATH_MAX + 64], stats[PATH_MAX + 8], stamp[32], canon[PATH_MAX];
	struct ctl_pid_info info;
	struct stat sb;
	bool did = false;
	time_t now = time(NULL);
	struct tm tm;
	int ret;

	ret = checked_session(session_dir, canon, &info, err, errlen);
	if (ret)
		return ret;
	/* a running daemon holds the sample files mapped: moving them under
	 * it would lose samples (--save tells it; --reset is for afterwards) */
	if (info.state == CTL_PID_RUNNING) {
		snprintf(err, errlen, "oprofiled is running (pid %d) for session %s: stop it "
			 "first with opcontrol --stop (or set the samples aside with --save=NAME)",
			 (int)info.pid, canon);
		return -EBUSY;
	}
	session_dir = canon;
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
		ret = du_nf_rename(cur, aside);
		if (ret) {
			snprintf(err, errlen, "cannot move %s to %s: %s", cur, aside, strerror(-ret));
			return ret;
		}
		fprintf(out, "Samples moved to %s\n", aside);
		did = true;
	}
	snprintf(stats, sizeof(stats), "%s/stats", session_dir);
	ret = du_nf_unlink(stats);
	if (!ret) {
		fprintf(out, "Statistics removed.\n");
		did = true;
	} else if (ret != -ENOENT) {
		snprintf(err, errlen, "cannot remove %s: %s", stats, strerror(-ret));
		return ret;
	}
	if (!did)
		fprintf(out, "Nothing to reset in %s.\n", session_dir);
	return 0;
}

/*
 * The daemon @pid keeps writing into the files it has open, which the
 * rename carries into NAME, until SIGUSR2 makes it close them all and
 * start a fresh samples/current: the dump first files what it read so
 * far, and nothing it reads later is lost, only a sample file opened
 * between the rename and the switch begins in the fresh directory.
 */
static int save_running(const char *canon, const char *cur, const char *dest, pid_t pid,
			FILE *out, char *err, size_t errlen)
{
	char why[384];
	uint64_t saves;
	int ret;

	ret = ctl_dump(canon, CTL_DUMP_TIMEOUT_MS, out, err, errlen);
	if (ret)
		return ret;
	saves = ctl_saves(canon);
	ret = du_nf_rename(cur, dest);
	if (ret) {
		snprintf(err, errlen, "cannot move %s to %s: %s", cur, dest, strerror(-ret));
		return ret;
	}
	ret = ctl_new_current(canon, pid, saves, CTL_DUMP_TIMEOUT_MS, why, sizeof(why));
	if (ret)
		snprintf(err, errlen, "samples moved to %s, but the daemon did not confirm a fresh "
			 "samples/current: %s", dest, why);
	return ret;
}

/* 0.9 moved samples/current to samples/NAME the same way (its --save),
 * under a running daemon too. */
int ctl_save(const char *session_dir, const char *name, FILE *out, char *err, size_t errlen)
{
	char cur[PATH_MAX + 32], dest[PATH_MAX + 160], canon[PATH_MAX];
	struct ctl_pid_info info;
	struct stat sb;
	int ret;

	if (!du_sdir_session_name_ok(name)) {
		snprintf(err, errlen, "bad session name '%.64s' (" DU_SDIR_SESSION_NAME_RULE ")",
			 name);
		return -EINVAL;
	}
	ret = checked_session(session_dir, canon, &info, err, errlen);
	if (ret)
		return ret;
	snprintf(cur, sizeof(cur), "%s/samples/current", canon);
	snprintf(dest, sizeof(dest), "%s/samples/%s", canon, name);
	if (!du_nf_lstat(dest, &sb)) {
		snprintf(err, errlen, "session %s already exists (%s): choose another name",
			 name, dest);
		return -EEXIST;
	}
	ret = du_nf_lstat(cur, &sb);
	if (ret) {
		snprintf(err, errlen, "nothing to save: %s: %s", cur, strerror(-ret));
		return ret;
	}
	if (info.state == CTL_PID_RUNNING)
		ret = save_running(canon, cur, dest, info.pid, out, err, errlen);
	else
		ret = du_nf_rename(cur, dest);
	if (ret) {
		if (info.state != CTL_PID_RUNNING)
			snprintf(err, errlen, "cannot move %s to %s: %s", cur, dest, strerror(-ret));
		return ret;
	}
	fprintf(out, "Samples saved as session %s (%s)%s; opreport session:%s reports them.\n",
		name, dest, info.state == CTL_PID_RUNNING ?
		", profiling goes on into a fresh samples/current" : "", name);
	return 0;
}
