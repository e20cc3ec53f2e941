#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "util/du_fs.h"
#include "util/du_log.h"

int ctl_abs_path(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	int n;

	if (path[0] == '/') {
		n = snprintf(buf, len, "%s", path);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		n = snprintf(buf, len, "%s/%s", cwd, path);
	}
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

void ctl_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

bool ctl_pid_parse(const char *text, pid_t *pid)
{
	long v = 0;
	const char *p = text;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return false;
	}
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (*p || v <= 1)
		return false;
	*pid = (pid_t)v;
	return true;
}

bool ctl_pid_alive(pid_t pid)
{
	char path[64], buf[512];
	const char *rp;

	if (kill(pid, 0) && errno != EPERM)
		return false;
	/*
	 * A daemonized oprofiled is reparented; until its new parent reaps it,
	 * an exited daemon is a zombie that kill() still finds.
	 */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (du_read_small(path, buf, sizeof(buf)) <= 0)
		return true;
	rp = strrchr(buf, ')');
	if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
		return false;
	return true;
}

bool ctl_pid_is_oprofiled(pid_t pid, char *comm, size_t commlen)
{
	char path[64], buf[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = du_read_small(path, buf, sizeof(buf));
	if (n > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(comm, commlen, "%s", buf);
		if (!strcmp(buf, "oprofiled"))
			return true;
	} else {
		snprintf(comm, commlen, "?");
	}
	/* comm can be changed by the process; the executable's name is a second opinion. */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		buf[n - 10] = '\0';
	base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	return !strcmp(base, "oprofiled");
}

void ctl_pid_probe(const char *session_dir, struct ctl_pid_info *info)
{
	char path[PATH_MAX], buf[64];
	ssize_t n;

	memset(info, 0, sizeof(*info));
	snprintf(path, sizeof(path), "%s/oprofiled.pid", session_dir);
	n = du_read_small(path, buf, sizeof(buf));
	if (n < 0) {
		info->state = n == -ENOENT ? CTL_PID_NONE : CTL_PID_STALE;
		return;
	}
	if (!ctl_pid_parse(buf, &info->pid)) {
		info->pid = 0;
		info->state = CTL_PID_STALE;
		return;
	}
	if (!ctl_pid_alive(info->pid)) {
		info->state = CTL_PID_STALE;
		return;
	}
	info->state = ctl_pid_is_oprofiled(info->pid, info->comm, sizeof(info->comm)) ?
		CTL_PID_RUNNING : CTL_PID_FOREIGN;
}

void ctl_pid_warn_stale(const char *session_dir, const struct ctl_pid_info *info)
{
	switch (info->state) {
	case CTL_PID_STALE:
		if (info->pid)
			du_warn("stale pid file %s/oprofiled.pid: pid %d is not running (ignored)",
				session_dir, (int)info->pid);
		else
			du_warn("unreadable pid file %s/oprofiled.pid (ignored)", session_dir);
		break;
	case CTL_PID_FOREIGN:
		du_warn("stale pid file %s/oprofiled.pid: pid %d is '%s', not oprofiled (ignored)",
			session_dir, (int)info->pid, info->comm);
		break;
	default:
		break;
	}
}
