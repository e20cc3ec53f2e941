#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect_file.h"
#include "collect_perf.h"
#include "events/ev.h"
#include "opd_daemon.h"
#include "opd_log.h"
#include "opd_main.h"
#include "util/du_fs.h"
#include "util/du_log.h"

#define READY_MARK "\001ready\n"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: oprofiled --session-dir=DIR [--collector=perf|file] [--input=FILE]\n"
		"                 [--event=NAME:COUNT:UM:K:U]... [--separate=LIST]\n"
		"                 [--record=FILE] [--events-dir=DIR] [--domains=LIST]\n"
		"                 [--foreground] [--verbose]\n"
		"  --separate: comma list of none, lib, kernel, thread, cpu, all\n");
}

enum {
	OPT_SESSION = 256, OPT_COLLECTOR, OPT_INPUT, OPT_EVENT, OPT_SEPARATE, OPT_RECORD,
	OPT_EVENTS_DIR, OPT_DOMAINS, OPT_FOREGROUND, OPT_VERBOSE, OPT_MAX_FILES, OPT_HELP,
};

static const struct option long_opts[] = {
	{ "session-dir", required_argument, NULL, OPT_SESSION },
	{ "collector", required_argument, NULL, OPT_COLLECTOR },
	{ "input", required_argument, NULL, OPT_INPUT },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "separate", required_argument, NULL, OPT_SEPARATE },
	{ "record", required_argument, NULL, OPT_RECORD },
	{ "events-dir", required_argument, NULL, OPT_EVENTS_DIR },
	{ "domains", required_argument, NULL, OPT_DOMAINS },
	{ "foreground", no_argument, NULL, OPT_FOREGROUND },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "max-open-files", required_argument, NULL, OPT_MAX_FILES },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

struct opts {
	struct opd_conf conf;
	const char *event_args[DP_RAW_MAX_EVENTS];
	unsigned int nr_event_args;
	bool max_files_given;
};

/* 0, 1 (usage error), or 2 (--help) */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	struct opd_conf *c = &o->conf;
	int opt;

	opd_conf_defaults(c);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_SESSION:
			c->session_dir = optarg;
			break;
		case OPT_COLLECTOR:
			if (!strcmp(optarg, "perf")) {
				c->collector = OPD_COLLECT_PERF;
			} else if (!strcmp(optarg, "file")) {
				c->collector = OPD_COLLECT_FILE;
			} else {
				fprintf(stderr, "oprofiled: unknown collector '%s' (perf or file)\n", optarg);
				return 1;
			}
			break;
		case OPT_INPUT:
			c->input = optarg;
			break;
		case OPT_EVENT:
			if (o->nr_event_args == DP_RAW_MAX_EVENTS) {
				fprintf(stderr, "oprofiled: at most %d events\n", DP_RAW_MAX_EVENTS);
				return 1;
			}
			o->event_args[o->nr_event_args++] = optarg;
			break;
		case OPT_SEPARATE:
			if (opd_parse_separate(optarg, &c->separate)) {
				fprintf(stderr, "oprofiled: bad --separate list '%s'\n", optarg);
				return 1;
			}
			c->separate_str = optarg;
			break;
		case OPT_RECORD:
			c->record = optarg;
			break;
		case OPT_EVENTS_DIR:
			c->events_dir = optarg;
			break;
		case OPT_DOMAINS:
			c->domains = optarg;
			break;
		case OPT_FOREGROUND:
			c->foreground = true;
			break;
		case OPT_VERBOSE:
			c->verbose = true;
			break;
		case OPT_MAX_FILES:
			c->max_open_files = (unsigned int)strtoul(optarg, NULL, 10);
			o->max_files_given = true;
			if (!c->max_open_files) {
				fprintf(stderr, "oprofiled: bad --max-open-files '%s'\n", optarg);
				return 1;
			}
			break;
		case OPT_HELP:
			return 2;
		default:
			return 1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "oprofiled: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	if (c->collector == OPD_COLLECT_FILE && !c->input) {
		fprintf(stderr, "oprofiled: --collector=file needs --input=FILE\n");
		return 1;
	}
	if (c->collector != OPD_COLLECT_FILE && c->input) {
		fprintf(stderr, "oprofiled: --input is for --collector=file\n");
		return 1;
	}
	c->live_proc_lookup = c->collector == OPD_COLLECT_PERF;
	c->track_domains = c->collector == OPD_COLLECT_PERF;
	return 0;
}

/* Take SESSION/oprofiled.pid.  The fd (returned) holds the lock until exit. */
static int take_lock(const char *session, char *path, size_t size)
{
	char buf[32];
	ssize_t n;
	int fd;

	snprintf(path, size, "%s/oprofiled.pid", session);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		du_err("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		du_err("oprofiled already running (pid %s) for session %s", buf[0] ? buf : "?", session);
		close(fd);
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n) {
		du_err("cannot write %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void on_signal(int sig)
{
	switch (sig) {
	case SIGUSR1:
		opd_sig.dump = 1;
		break;
	case SIGHUP:
		opd_sig.hup = 1;
		break;
	default:
		opd_sig.stop = 1;
		break;
	}
}

static void setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: poll() returns EINTR and the loop sees the flag */
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/*
 * Raise the fd limit and size the open sample file cap from it and from
 * vm.max_map_count (each open sample file holds an fd and a mapping): as
 * many as the system allows, since reopening a file costs far more than
 * keeping it, but never so many that we run out.
 */
static void size_open_files(struct opd_conf *c, bool given)
{
	unsigned long maps = 65530, cap;
	struct rlimit rl;
	FILE *f;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (given)
		return;
	f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f) {
		if (fscanf(f, "%lu", &maps) != 1)
			maps = 65530;
		fclose(f);
	}
	cap = maps / 4;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < cap + 1024)
		cap = rl.rlim_cur > 1024 + 64 ? rl.rlim_cur - 1024 : 64;
	if (cap > 65536)
		cap = 65536;
	c->max_open_files = (unsigned int)cap;
}

/* Parent side of daemonizing: relay the child's messages; 0 if it is ready. */
static int wait_child(int rfd, pid_t child)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	int status;

	for (;;) {
		if (len == sizeof(buf) - 1) {
			fwrite(buf, 1, len - 64, stderr);
			memmove(buf, buf + len - 64, 64);
			len = 64;
		}
		n = read(rfd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (len >= strlen(READY_MARK) && !strcmp(buf + len - strlen(READY_MARK), READY_MARK)) {
		fwrite(buf, 1, len - strlen(READY_MARK), stderr);
		return 0;
	}
	fwrite(buf, 1, len, stderr);
	if (waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		fprintf(stderr, "oprofiled: the daemon exited before it was ready\n");
	return 1;
}

static int load_events(struct opts *o, struct ev_table **tab)
{
	struct opd_conf *c = &o->conf;
	char err[512];

	*tab = ev_table_load(c->events_dir, NULL, err, sizeof(err));
	if (!*tab) {
		du_err("cannot load events from %s: %s", c->events_dir, err);
		return -1;
	}
	for (unsigned int i = 0; i < o->nr_event_args; i++) {
		if (ev_spec_parse(o->event_args[i], &c->events[i], err, sizeof(err)) ||
		    ev_spec_check(*tab, &c->events[i], err, sizeof(err))) {
			du_err("bad event '%s': %s", o->event_args[i], err);
			return -1;
		}
	}
	c->nr_events = o->nr_event_args;
	if (!c->nr_events) {
		if (ev_default_spec(*tab, &c->events[0])) {
			du_err("no default event for cpu type %s", ev_table_cpu_type(*tab));
			return -1;
		}
		c->nr_events = 1;
	}
	return 0;
}

int opd_main(int argc, char **argv)
{
	static struct opts o;	/* large; the config outlives every module */
	struct opd_conf *c = &o.conf;
	struct collect_perf *perf = NULL;
	struct ev_table *tab = NULL;
	struct opd_daemon d;
	char pidpath[PATH_MAX], logpath[PATH_MAX];
	int pipefd[2] = { -1, -1 };
	int lockfd = -1, ret, status = 1;
	bool daemon_ok = false;

	du_log_set_prog("oprofiled");
	ret = parse_opts(argc, argv, &o);
	if (ret) {
		usage(ret == 2 ? stdout : stderr);
		return ret == 2 ? 0 : 1;
	}
	if (c->collector == OPD_COLLECT_FILE && o.nr_event_args)
		du_warn("--event is ignored by the file collector (events come from the stream)");
	if (c->collector == OPD_COLLECT_PERF && load_events(&o, &tab))
		return 1;
	ret = du_mkdir_p(c->session_dir);
	if (ret) {
		du_err("cannot create session directory %s: %s", c->session_dir, strerror(-ret));
		goto out_events;
	}
	if (!c->foreground) {
		pid_t child;

		if (pipe2(pipefd, O_CLOEXEC)) {
			du_err("pipe: %s", strerror(errno));
			goto out_events;
		}
		fflush(NULL);
		child = fork();
		if (child < 0) {
			du_err("fork: %s", strerror(errno));
			goto out_events;
		}
		if (child > 0) {
			close(pipefd[1]);
			status = wait_child(pipefd[0], child);
			close(pipefd[0]);
			goto out_events;
		}
		close(pipefd[0]);
		setsid();
		/* Until ready, what we would print goes to the waiting parent. */
		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[1]);
		ret = open("/dev/null", O_RDWR);
		if (ret >= 0) {
			dup2(ret, STDIN_FILENO);
			dup2(ret, STDOUT_FILENO);
			if (ret > STDERR_FILENO)
				close(ret);
		}
	}
	setup_signals();
	size_open_files(c, o.max_files_given);
	lockfd = take_lock(c->session_dir, pidpath, sizeof(pidpath));
	if (lockfd < 0)
		goto out_events;
	snprintf(logpath, sizeof(logpath), "%s/oprofiled.log", c->session_dir);
	ret = opd_log_open(logpath, true, c->verbose);
	if (ret) {
		du_err("cannot open log %s: %s", logpath, strerror(-ret));
		goto out_unlock;
	}
	du_info("oprofiled starting: session %s, collector %s, separate %s, up to %u open sample files",
		c->session_dir, c->collector == OPD_COLLECT_FILE ? "file" : "perf", c->separate_str,
		c->max_open_files);
	if (c->track_domains)
		du_info("domains: %s", c->domains ? c->domains : "all");
	else
		du_info("replay: guest samples are filed under domain pid-<hypervisor pid>");
	ret = opd_daemon_init(&d, c, c->collector == OPD_COLLECT_FILE ? c->input : "perf");
	if (ret)
		goto out_log;
	if (c->collector == OPD_COLLECT_PERF) {
		char err[512];

		perf = collect_perf_open(&d, tab, err, sizeof(err));
		if (!perf) {
			du_err("%s", err);
			goto out_daemon;
		}
	}
	if (opd_daemon_write_stats(&d))
		goto out_perf;
	daemon_ok = true;
	if (!c->foreground) {
		/* ready: release the parent, stop writing to its pipe */
		fputs(READY_MARK, stderr);
		fflush(stderr);
		opd_log_quiet_stderr();
		ret = open("/dev/null", O_WRONLY);
		if (ret >= 0) {
			dup2(ret, STDERR_FILENO);
			if (ret > STDERR_FILENO)
				close(ret);
		}
	}

	if (c->collector == OPD_COLLECT_PERF)
		ret = collect_perf_run(perf);
	else
		ret = collect_file_run(&d, c->input);
	if (!ret)
		ret = opd_stream_finish(d.stream);
	status = ret ? 1 : 0;
	if (opd_daemon_stop(&d))
		status = 1;
	du_info("oprofiled stopped: %llu samples received, %llu filed, %llu lost",
		(unsigned long long)d.st.samples_received, (unsigned long long)d.st.samples_filed,
		(unsigned long long)d.st.samples_lost);

out_perf:
	collect_perf_close(perf);
out_daemon:
	opd_daemon_fini(&d);
out_log:
	if (!daemon_ok && !c->foreground)
		fflush(stderr);
	opd_log_close();
out_unlock:
	unlink(pidpath);
	close(lockfd);
out_events:
	ev_table_free(tab);
	return status;
}
