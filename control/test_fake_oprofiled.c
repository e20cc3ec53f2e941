/*
 * A stand-in for oprofiled, for test_ctl only: it honours the session
 * contract's outside (pid file held under a POSIX lock, session.conf, stats with
 * dumps, saves and running, SIGUSR1/SIGUSR2/SIGTERM, the launching parent's exit status)
 * and collects nothing.
 *
 * Test knobs (environment):
 *   FAKE_OPROFILED_FAIL=MSG    the child reports MSG and the parent exits 1
 *   FAKE_OPROFILED_NODUMP=1    ignore SIGUSR1 (dump timeouts)
 *   FAKE_OPROFILED_ARGS=FILE   write the received argv there, one per line
 *   FAKE_OPROFILED_COLLECTORS=TEXT  what --list-collectors prints (else the
 *                              real daemon of the build tree answers it)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1, got_usr2, got_term;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		got_usr1 = 1;
	else if (sig == SIGUSR2)
		got_usr2 = 1;
	else
		got_term = 1;
}

static char session[4096];
static char collector[32] = "perf";
static char events[2048];
static long dumps, saves;
static time_t start_time;

static void write_stats(int running)
{
	char tmp[4200], path[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/stats.tmp", session);
	snprintf(path, sizeof(path), "%s/stats", session);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "dumps %ld\nrunning %d\ncollector %s\nstart_time %lld\nevents %s\n"
		"samples_received %ld\nsamples_lost 0\nsamples_filed %ld\nsaves %ld\n",
		dumps, running, collector, (long long)start_time, events, dumps * 100, dumps * 90,
		saves);
	fclose(f);
	rename(tmp, path);
}

static const char *opt_value(const char *arg, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(arg, name, n) && arg[n] == '=' ? arg + n + 1 : NULL;
}

int main(int argc, char **argv)
{
	char path[4200], conf[8192] = "", buf[64];
	const char *v, *fail = getenv("FAKE_OPROFILED_FAIL"), *args = getenv("FAKE_OPROFILED_ARGS");
	int pfd[2], fd;
	pid_t pid;
	ssize_t n;

	if (args) {
		FILE *f = fopen(args, "w");

		for (int i = 0; f && i < argc; i++)
			fprintf(f, "%s\n", argv[i]);
		if (f)
			fclose(f);
	}
	if (argc == 2 && !strcmp(argv[1], "--list-collectors")) {
		if ((v = getenv("FAKE_OPROFILED_COLLECTORS")))
			return fputs(v, stdout) < 0;
		execv(CTL_TEST_OPROFILED, argv);
		return 127;
	}
	for (int i = 1; i < argc; i++) {
		if ((v = opt_value(argv[i], "--session-dir"))) {
			snprintf(session, sizeof(session), "%s", v);
		} else if ((v = opt_value(argv[i], "--collector"))) {
			snprintf(collector, sizeof(collector), "%s", v);
		} else if ((v = opt_value(argv[i], "--event"))) {
			size_t l = strlen(events);

			snprintf(events + l, sizeof(events) - l, "%s%s", l ? "," : "", v);
			l = strlen(conf);
			snprintf(conf + l, sizeof(conf) - l, "event %s\n", v);
		} else if ((v = opt_value(argv[i], "--separate"))) {
			size_t l = strlen(conf);

			snprintf(conf + l, sizeof(conf) - l, "separate %s\n", v);
		}
	}
	if (!session[0]) {
		fprintf(stderr, "oprofiled: --session-dir missing\n");
		return 1;
	}
	if (pipe(pfd))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid > 0) {
		close(pfd[1]);
		n = read(pfd[0], conf, sizeof(conf) - 1);
		if (n == 2 && !memcmp(conf, "OK", 2))
			return 0;
		if (n > 0) {
			conf[n] = '\0';
			fprintf(stderr, "oprofiled: %s\n", conf);
		}
		return 1;
	}
	close(pfd[0]);
	setsid();
	snprintf(path, sizeof(path), "%s/oprofiled.pid", session);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || fcntl(fd, F_SETLK, &(struct flock){ .l_type = F_WRLCK })) {
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : 0;
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		dprintf(pfd[1], "oprofiled already running (pid %s) for session %s", buf, session);
		_exit(1);
	}
	if (fail) {
		unlink(path);
		dprintf(pfd[1], "%s", fail);
		_exit(1);
	}
	if (ftruncate(fd, 0) || dprintf(fd, "%d\n", (int)getpid()) < 0)
		_exit(1);
	snprintf(path, sizeof(path), "%s/session.conf", session);
	{
		FILE *f = fopen(path, "w");

		if (f) {
			fprintf(f, "%scollector %s\n", conf, collector);
			fclose(f);
		}
	}
	start_time = time(NULL);

	sigset_t block, old;
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	if (getenv("FAKE_OPROFILED_NODUMP"))
		signal(SIGUSR1, SIG_IGN);
	else
		sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	write_stats(1);
	if (write(pfd[1], "OK", 2) != 2)
		_exit(1);
	close(pfd[1]);
	/* detach from the test's output so a waiting reader is not held open */
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	while (!got_term) {
		sigsuspend(&old);
		if (got_usr1) {
			got_usr1 = 0;
			dumps++;
			write_stats(1);
		}
		if (got_usr2) {	/* --save: a fresh samples/current, as the daemon */
			got_usr2 = 0;
			snprintf(path, sizeof(path), "%s/samples/current", session);
			mkdir(path, 0750);
			saves++;
			write_stats(1);
		}
	}
	dumps++;
	write_stats(0);
	snprintf(path, sizeof(path), "%s/oprofiled.pid", session);
	unlink(path);
	return 0;
}
