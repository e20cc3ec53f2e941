#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "util/du_fs.h"
#include "util/du_sdir.h"
#include "util/du_log.h"

#ifndef DP_SBINDIR
#define DP_SBINDIR "/usr/local/sbin"
#endif

#define POLL_MS 50

static bool executable(const char *path)
{
	struct stat sb;

	return !stat(path, &sb) && S_ISREG(sb.st_mode) && !access(path, X_OK);
}

void ctl_find_daemon(char *buf, size_t len)
{
	const char *env = getenv("DOMPROF_OPROFILED");
	char self[PATH_MAX], cand[PATH_MAX + 32];
	ssize_t n;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		char *slash;

		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand, sizeof(cand), "%s/oprofiled", self);
			if (executable(cand))
				goto found;
			/* installed: PREFIX/bin/opcontrol, PREFIX/sbin/oprofiled */
			snprintf(cand, sizeof(cand), "%s/../sbin/oprofiled", self);
			if (executable(cand))
				goto found;
			/* run from the build tree: control/opcontrol, daemon/oprofiled */
			snprintf(cand, sizeof(cand), "%s/../daemon/oprofiled", self);
			if (executable(cand))
				goto found;
		}
	}
	snprintf(cand, sizeof(cand), "%s/oprofiled", DP_SBINDIR);
	if (executable(cand))
		goto found;
	snprintf(buf, len, "oprofiled");
	return;
found:
	/* shown to the user: say /usr/sbin/oprofiled, not /usr/bin/../sbin/... */
	if (!realpath(cand, self) || snprintf(buf, len, "%s", self) >= (int)len)
		snprintf(buf, len, "%s", cand);
}

/* Append "--name=value" to @store and return it, NULL when full. */
static const char *store_opt(char **store, size_t *left, const char *name, const char *value)
{
	int n = snprintf(*store, *left, "--%s=%s", name, value);
	const char *s = *store;

	if (n < 0 || (size_t)n >= *left)
		return NULL;
	*store += n + 1;
	*left -= (size_t)n + 1;
	return s;
}

int ctl_daemon_argv(const char *daemon, const char *session_abs, const struct ctl_opts *o,
		    char specs[][96], size_t n_specs, const char **argv, size_t max,
		    char *store, size_t storelen)
{
	char abs[PATH_MAX];
	size_t n = 0;
	int ret;

#define PUSH(s) do { \
		const char *s_ = (s); \
		if (!s_ || n + 1 >= max) \
			return -E2BIG; \
		argv[n++] = s_; \
	} while (0)

	PUSH(daemon);
	PUSH(store_opt(&store, &storelen, "session-dir", session_abs));
	PUSH(store_opt(&store, &storelen, "collector", o->collector));
	for (size_t i = 0; i < n_specs; i++)
		PUSH(store_opt(&store, &storelen, "event", specs[i]));
	if (o->separate)
		PUSH(store_opt(&store, &storelen, "separate", o->separate));
	/* not in the base contract: passed only when asked for (see doc/session.md) */
	if (o->domains)
		PUSH(store_opt(&store, &storelen, "domains", o->domains));
	/* the daemon changes directory when it detaches: relative paths would move */
	if (o->record) {
		ret = ctl_abs_path(o->record, abs, sizeof(abs));
		if (ret)
			return ret;
		PUSH(store_opt(&store, &storelen, "record", abs));
	}
	if (o->events_dir) {
		ret = ctl_abs_path(o->events_dir, abs, sizeof(abs));
		if (ret)
			return ret;
		PUSH(store_opt(&store, &storelen, "events-dir", abs));
	}
	if (o->verbose)
		PUSH("--verbose");
	if (o->no_dom0)
		PUSH("--no-dom0");
	/* 0 is the daemon's default: pass nothing, so nothing changes */
	if (o->callgraph) {
		char depth[16];

		snprintf(depth, sizeof(depth), "%u", o->callgraph);
		PUSH(store_opt(&store, &storelen, "callgraph", depth));
	}
	if (o->guest_cpu_given) {
		char ms[16];

		snprintf(ms, sizeof(ms), "%u", o->guest_cpu_ms);
		PUSH(store_opt(&store, &storelen, "guest-cpu", ms));
	}
	if (o->guest_cpu_total_given) {
		char ms[16];

		snprintf(ms, sizeof(ms), "%u", o->guest_cpu_total_ms);
		PUSH(store_opt(&store, &storelen, "guest-cpu-total", ms));
	}
	if (o->xen_budget_given) {
		char pct[16];

		snprintf(pct, sizeof(pct), "%u", o->xen_budget_pct);
		PUSH(store_opt(&store, &storelen, "xen-read-budget", pct));
	}
	argv[n] = NULL;
	return 0;
#undef PUSH
}

static void warn_privileges(const char *collector)
{
	char buf[32] = "";
	FILE *f;

	if (geteuid() == 0 || strcmp(collector, "perf"))
		return;
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
		buf[strcspn(buf, "\n")] = '\0';
	}
	du_warn("not running as root: system-wide perf profiling needs root or "
		"CAP_PERFMON unless kernel.perf_event_paranoid allows it (it is %s); trying anyway",
		buf[0] ? buf : "unknown");
}

/* Run the daemon and wait (bounded) for its launching parent to exit. */
static int spawn_daemon(const char *const *argv, int timeout_ms, int *status,
			char *err, size_t errlen)
{
	int pfd[2], child_errno = 0, waited = 0;
	pid_t pid;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		int e;

		close(pfd[0]);
		if (strchr(argv[0], '/'))
			execv(argv[0], (char *const *)argv);
		else
			execvp(argv[0], (char *const *)argv);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(pfd[1]);
	/* the pipe closes on a successful exec: no bytes means it ran */
	do {
		n = read(pfd[0], &child_errno, sizeof(child_errno));
	} while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(child_errno));
		return -child_errno;
	}
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (waited >= timeout_ms) {
			kill(pid, SIGTERM);
			waitpid(pid, NULL, 0);
			snprintf(err, errlen, "%s did not report readiness within %d s; stopped it",
				 argv[0], timeout_ms / 1000);
			return -ETIMEDOUT;
		}
		ctl_sleep_ms(POLL_MS);
		waited += POLL_MS;
	}
}

int ctl_start(const struct ctl_opts *o, char specs[][96], size_t n_specs, FILE *out,
	      char *err, size_t errlen)
{
	char session[PATH_MAX], daemon[PATH_MAX], store[8192];
	const char *argv[CTL_MAX_EVENTS + 16];
	struct ctl_pid_info info;
	int ret, status = 0;

	if (!strcmp(o->collector, "kmod")) {
		/* the installed module, loaded now; the daemon opens its device */
		ret = ctl_kmod_load(err, errlen);
		if (ret)
			return ret;
	}
	ret = ctl_abs_path(o->session_dir, daemon, sizeof(daemon));
	if (ret) {
		snprintf(err, errlen, "session directory %s: %s", o->session_dir, strerror(-ret));
		return ret;
	}
	ctl_pid_probe(daemon, &info);
	if (info.state == CTL_PID_RUNNING) {
		snprintf(err, errlen, "oprofiled already running (pid %d) for session %s",
			 (int)info.pid, daemon);
		return -EALREADY;
	}
	/* created and checked as the daemon will (util/du_sdir.h), so that a
	 * refused directory is said before anything is started */
	ret = du_sdir_prepare(daemon, session, sizeof(session), err, errlen);
	if (ret)
		return ret;
	ctl_pid_warn_stale(session, &info);
	warn_privileges(o->collector);

	ctl_find_daemon(daemon, sizeof(daemon));
	ret = ctl_daemon_argv(daemon, session, o, specs, n_specs, argv,
			      sizeof(argv) / sizeof(argv[0]), store, sizeof(store));
	if (ret) {
		snprintf(err, errlen, "daemon command line too long");
		return ret;
	}
	ret = spawn_daemon(argv, CTL_START_TIMEOUT_MS, &status, err, errlen);
	if (ret)
		return ret;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		if (WIFEXITED(status))
			snprintf(err, errlen, "oprofiled failed to start (exit status %d); "
				 "see its message above and %s/oprofiled.log",
				 WEXITSTATUS(status), session);
		else
			snprintf(err, errlen, "oprofiled failed to start (killed by signal %d)",
				 WTERMSIG(status));
		return -EIO;
	}

	ctl_pid_probe(session, &info);
	fprintf(out, "Profiler running.\n");
	if (info.state == CTL_PID_RUNNING)
		fprintf(out, "  daemon:    pid %d (%s)\n", (int)info.pid, daemon);
	else
		du_warn("oprofiled reported success but %s/oprofiled.pid names no running daemon",
			session);
	fprintf(out, "  session:   %s\n", session);
	fprintf(out, "  collector: %s\n", o->collector);
	for (size_t i = 0; i < n_specs; i++)
		fprintf(out, "  event:     %s\n", specs[i]);
	if (o->vmlinux)	/* OProfile's option, kept for its scripts */
		fprintf(out, "  kernel:    named from the kallsyms copied now (--vmlinux %s not read)\n",
			o->vmlinux);
	fflush(out);
	return 0;
}

/* The running daemon of @session_dir, or -ESRCH with the message. */
static int running_daemon(const char *session_dir, pid_t *pid, char *err, size_t errlen)
{
	struct ctl_pid_info info;

	ctl_pid_probe(session_dir, &info);
	if (info.state != CTL_PID_RUNNING) {
		ctl_pid_warn_stale(session_dir, &info);
		snprintf(err, errlen, "Daemon not running (session %s)", session_dir);
		return -ESRCH;
	}
	*pid = info.pid;
	return 0;
}

static int signal_daemon(pid_t pid, int sig, char *err, size_t errlen)
{
	if (!kill(pid, sig))
		return 0;
	snprintf(err, errlen, "cannot signal oprofiled (pid %d): %s%s", (int)pid, strerror(errno),
		 errno == EPERM ? " (run as root)" : "");
	return -errno;
}

int ctl_stop(const char *session_dir, int timeout_ms, FILE *out, char *err, size_t errlen)
{
	pid_t pid;
	int ret, waited = 0;

	ret = running_daemon(session_dir, &pid, err, errlen);
	if (ret)
		return ret;
	fprintf(out, "Stopping profiling.\n");
	fflush(out);
	ret = signal_daemon(pid, SIGTERM, err, errlen);
	if (ret)
		return ret;
	while (ctl_pid_alive(pid)) {
		if (waited >= timeout_ms) {
			snprintf(err, errlen, "oprofiled (pid %d) did not exit within %d s",
				 (int)pid, timeout_ms / 1000);
			return -ETIMEDOUT;
		}
		ctl_sleep_ms(POLL_MS);
		waited += POLL_MS;
	}
	fprintf(out, "Profiler stopped.\n");
	return 0;
}

/* Key @key of SESSION/stats, 0 when absent. */
static uint64_t read_stat(const char *session_dir, const char *key)
{
	char path[PATH_MAX];
	struct du_kv *kv;
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/stats", session_dir);
	kv = du_kv_load(path);
	if (!du_kv_get_u64(kv, key, &v))
		v = 0;
	du_kv_free(kv);
	return v;
}

/* Send @sig to the daemon @pid and wait until its stats' @key grows past
 * @before (it rewrites them when done), at most @timeout_ms; @what names
 * the job in messages. */
static int signal_and_wait(const char *session_dir, pid_t pid, int sig, const char *key,
			   uint64_t before, const char *what, int timeout_ms, char *err,
			   size_t errlen)
{
	int ret, waited = 0;

	ret = signal_daemon(pid, sig, err, errlen);
	if (ret)
		return ret;
	while (read_stat(session_dir, key) <= before) {
		if (!ctl_pid_alive(pid)) {
			snprintf(err, errlen, "oprofiled (pid %d) exited during the %s; see %s/oprofiled.log",
				 (int)pid, what, session_dir);
			return -ESRCH;
		}
		if (waited >= timeout_ms) {
			snprintf(err, errlen, "oprofiled (pid %d) did not finish the %s within %d s "
				 "(stats still show %" PRIu64 " %s)", (int)pid, what, timeout_ms / 1000,
				 before, key);
			return -ETIMEDOUT;
		}
		ctl_sleep_ms(POLL_MS);
		waited += POLL_MS;
	}
	return 0;
}

int ctl_dump(const char *session_dir, int timeout_ms, FILE *out, char *err, size_t errlen)
{
	pid_t pid;
	int ret;

	(void)out;	/* silent on success, like OProfile's --dump */
	ret = running_daemon(session_dir, &pid, err, errlen);
	if (ret)
		return ret;
	return signal_and_wait(session_dir, pid, SIGUSR1, "dumps", read_stat(session_dir, "dumps"),
			       "dump", timeout_ms, err, errlen);
}

uint64_t ctl_saves(const char *session_dir)
{
	return read_stat(session_dir, "saves");
}

int ctl_new_current(const char *session_dir, pid_t pid, uint64_t saves, int timeout_ms,
		    char *err, size_t errlen)
{
	return signal_and_wait(session_dir, pid, SIGUSR2, "saves", saves,
			       "switch to a fresh samples/current", timeout_ms, err, errlen);
}
