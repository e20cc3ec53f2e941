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

/* The pid holding the session's lock on the pid file open as @fd (the
 * running daemon's, doc/session.md), or 0 when no process holds it. */
static pid_t lock_holder(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_GETLK, &fl) || fl.l_type == F_UNLCK || fl.l_pid <= 0)
		return 0;
	return fl.l_pid;
}

void ctl_pid_probe(const char *session_dir, struct ctl_pid_info *info)
{
	char path[PATH_MAX], buf[64];
	pid_t holder;
	ssize_t n;
	int fd;

	memset(info, 0, sizeof(*info));
	snprintf(path, sizeof(path), "%s/oprofiled.pid", session_dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		info->state = errno == ENOENT ? CTL_PID_NONE : CTL_PID_STALE;
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	holder = lock_holder(fd);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (!ctl_pid_parse(buf, &info->pid))
		info->pid = 0;
	/* the daemon is the process that holds the session's lock: a pid
	 * written in the file is not believed on its own (another session's
	 * daemon, or any process, may be named there) */
	if (holder && holder != info->pid)
		du_warn("pid file %s names pid %d, but pid %d holds the session's lock: using %d",
			path, (int)info->pid, (int)holder, (int)holder);
	if (holder)
		info->pid = holder;
	if (!info->pid || !ctl_pid_alive(info->pid)) {
		info->state = CTL_PID_STALE;
		return;
	}
	if (!ctl_pid_is_oprofiled(info->pid, info->comm, sizeof(info->comm)))
		info->state = CTL_PID_FOREIGN;
	else
		info->state = holder ? CTL_PID_RUNNING : CTL_PID_UNLOCKED;
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
	case CTL_PID_UNLOCKED:
		du_warn("stale pid file %s/oprofiled.pid: pid %d is an oprofiled that does not "
			"hold this session's lock (another session's daemon?): ignored",
			session_dir, (int)info->pid);
		break;
	default:
		break;
	}
}
