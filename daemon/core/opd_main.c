/*
 * oprofiled's program (opd_main.h): the command line read (opd_args.c),
 * the event tables loaded, the session prepared and locked, the daemon
 * detached, split into monitor and worker (opd_privsep.h) and run.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dom_backend.h"
#include "domprof/agent.h"
#include "events/ev.h"
#include "opd_args.h"
#include "opd_collector.h"
#include "opd_daemon.h"
#include "opd_log.h"
#include "opd_main.h"
#include "opd_privsep.h"
#include "opd_relay.h"
#include "util/du_fs.h"
#include "util/du_cli.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

#define READY_MARK "\001ready\n"

/* Take SESSION/oprofiled.pid: a lock opcontrol can ask the holder of
 * (F_GETLK), so that it knows this daemon by more than the pid written in
 * the file.  The fd (returned) holds the lock until this process exits;
 * a fork does not take it along (POSIX record locks are per process). */
static int take_lock(const char *session, char *path, size_t size)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char buf[32];
	int fd, n;

	snprintf(path, size, "%s/oprofiled.pid", session);
	/* never through a planted link, and the monitor's alone (util/du_sdir.h) */
	fd = du_nf_open(path, O_RDWR | O_CREAT, DU_SDIR_SECRET_MODE, false);
	if (fd < 0) {
		du_err("refusing pid file %s: %s", path, du_own_strerror(fd));
		return -1;
	}
	if (fcntl(fd, F_SETLK, &fl)) {
		fl.l_pid = 0;
		if (fcntl(fd, F_GETLK, &fl) || fl.l_type == F_UNLCK)
			fl.l_pid = 0;
		du_err("oprofiled already running (pid %d) for session %s", (int)fl.l_pid, session);
		close(fd);
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (fchmod(fd, DU_SDIR_SECRET_MODE) || ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n) {
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
	case SIGUSR2:
		opd_sig.save = 1;
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
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/*
 * Raise the fd limit and size the open sample file cap from
 * vm.max_map_count: an open sample file holds a mapping and no descriptor
 * (lib/odb), so the mappings bound it.  Half of them, the rest left to the
 * process's own (libraries, heap, a large file's index): as many as the
 * system allows, since reopening a file costs far more than keeping it,
 * but never so many that we run out.  Where a limit is met anyway, the
 * sample-file layer lowers the cap (opd_sfile.c).
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
	cap = maps / 2;
	if (cap < 64)
		cap = 64;
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

static int load_events(struct opd_opts *o, struct ev_table **tab)
{
	struct opd_conf *c = &o->conf;
	char err[512];

	*tab = ev_table_load(c->events_dir, NULL, err, sizeof(err));
	if (!*tab) {
		du_err("cannot load events from %s: %s", c->events_dir, err);
		return -1;
	}
	c->cpu_type = ev_table_cpu_type(*tab);
	for (unsigned int i = 0; i < o->nr_event_args; i++) {
		if (ev_spec_parse(o->event_args[i], &c->events[i], err, sizeof(err)) ||
		    ev_spec_check(*tab, &c->events[i], err, sizeof(err))) {
			du_err("bad event '%s': %s", o->event_args[i], err);
			return -1;
		}
	}
	c->nr_events = o->nr_event_args;
	if (!c->nr_events && !(o->collector->caps & OPD_CAP_EVENTS_OPT)) {
		if (ev_default_spec(*tab, &c->events[0])) {
			du_err("no default event for cpu type %s", ev_table_cpu_type(*tab));
			return -1;
		}
		c->nr_events = 1;
	}
	return 0;
}

/*
 * Fork; the parent waits for the child's READY_MARK and exits (returns 1
 * with *@status set), the child goes on in a new session with stderr
 * into the pipe until ready (returns 0).  -1 on failure.
 */
static int daemonize(int *status)
{
	int pipefd[2];
	pid_t child;
	int fd;

	if (pipe2(pipefd, O_CLOEXEC)) {
		du_err("pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	child = fork();
	if (child < 0) {
		du_err("fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (child > 0) {
		close(pipefd[1]);
		*status = wait_child(pipefd[0], child);
		close(pipefd[0]);
		return 1;
	}
	close(pipefd[0]);
	setsid();
	/* Until ready, what we would print goes to the waiting parent. */
	dup2(pipefd[1], STDERR_FILENO);
	close(pipefd[1]);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	return 0;
}

/* Ready: release the waiting parent, stop writing to its pipe. */
static void release_parent(void)
{
	int fd;

	fputs(READY_MARK, stderr);
	fflush(stderr);
	opd_log_quiet_stderr();
	fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
}

/* The monitor does not tell the waiting parent anything: its end of the
 * pipe goes, so the parent hears the worker alone. */
static void release_parent_quietly(void)
{
	int fd;

	opd_log_quiet_stderr();
	fd = open("/dev/null", O_WRONLY);
	if (fd >= 0) {
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
}

/* The worker's drop, once the collector started (opd_daemon.started). */
struct worker {
	const struct opd_conf *conf;
	struct opd_stats *st;
	uid_t uid;
	gid_t gid;
	pid_t monitor;
};

/* What the worker writes, below the session: its own, handed over as
 * directory descriptors (util/du_sdir.h, du_nf_root_add). */
static const char *const worker_dirs[] = { "samples/current", "images", "domains" };

/* Give the worker @sub of the session: made if missing, everything below
 * it the worker's user's (no link followed), opened.  The fd or -errno
 * (logged). */
static int hand_dir(const struct worker *w, const char *sub, char *path, size_t size)
{
	int ret;

	if (snprintf(path, size, "%s/%s", w->conf->session_dir, sub) >= (int)size)
		return -ENAMETOOLONG;
	ret = du_nf_mkdirs(path);
	if (!ret) {
		ret = du_sdir_chown_tree(path, w->uid, w->gid);
		if (ret)	/* (a hard link stays root's: the worker cannot write it) */
			du_warn("privsep: giving %s to uid %u: %s", path, (unsigned int)w->uid,
				strerror(-ret));
		ret = du_nf_open(path, O_RDONLY | O_DIRECTORY, 0, false);
	}
	if (ret < 0)
		du_err("privsep: cannot hand %s to the worker: %s", path, strerror(-ret));
	return ret;
}

static int worker_started(void *ctx)
{
	enum { NR = sizeof(worker_dirs) / sizeof(worker_dirs[0]) };
	char path[NR][PATH_MAX];
	struct worker *w = ctx;
	int fd[NR], ret = 0;
	size_t i;

	/* the session directory, its log, pid file and kernel tables stay
	 * the monitor's: the worker gets what it writes, and nothing else
	 * (the roots, once set, are all its paths resolve in) */
	for (i = 0; i < NR && ret >= 0; i++)
		ret = fd[i] = hand_dir(w, worker_dirs[i], path[i], sizeof(path[i]));
	for (i = 0; i < NR && ret >= 0; i++)
		ret = du_nf_root_add(path[i], fd[i]);
	if (ret < 0)
		return ret;
	w->st->privsep_worker_uid = w->uid;
	ret = opd_ps_drop(w->uid, w->gid, w->monitor);
	/* ready only now: whoever started us may check the worker at once */
	if (!ret && !w->conf->foreground)
		release_parent();
	return ret;
}

/* The worker's user: 0 or -1 (logged). */
static int check_worker(const struct opd_conf *c, struct worker *w)
{
	int ret = du_sdir_worker_user(c->privsep_user, &w->uid, &w->gid);
	const char *name = c->privsep_user ? c->privsep_user : DU_SDIR_WORKER;

	if (ret == -ENOENT && !c->privsep_user)
		du_err("privsep: no user %s to run the worker as; create it (make install does, "
		       "through sysusers.d; or useradd --system --no-create-home --shell "
		       "/usr/sbin/nologin --user-group %s), name another with --privsep=USER, "
		       "or run the loop as root with --no-privsep", name, name);
	else if (ret == -ENOENT)
		du_err("privsep: no user %s (--privsep=USER); --no-privsep runs the loop as root",
		       name);
	else if (ret == -EPERM)
		du_err("privsep: refusing to run the worker as %s, a user other services share "
		       "(they could signal or trace it): create the user %s, or name one of its "
		       "own with --privsep=USER", name, DU_SDIR_WORKER);
	else if (ret)
		du_err("privsep: refusing to run the worker as %s (root)", name);
	return ret ? -1 : 0;
}

/* The split's fds: the channel, the wake-up pipe, the relayed collector's
 * stream (opd_relay.h).  -1 entries are not open. */
enum { SV0, SV1, WAKE0, WAKE1, PUB0, PUB1, STREAM0, STREAM1, NR_SPLIT_FDS };

static void close_fds(int *fd, int n)
{
	for (int i = 0; i < n; i++)
		if (fd[i] >= 0)
			close(fd[i]);
}

static int open_fds(int *fd, bool relay)
{
	for (int i = 0; i < NR_SPLIT_FDS; i++)
		fd[i] = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fd + SV0) ||
	    pipe2(fd + WAKE0, O_CLOEXEC | O_NONBLOCK) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fd + PUB0) ||
	    (relay && pipe2(fd + STREAM0, O_CLOEXEC))) {
		du_err("privsep: socketpair or pipe: %s", strerror(errno));
		close_fds(fd, NR_SPLIT_FDS);
		return -1;
	}
	return 0;
}

/*
 * --privsep as root: fork.  The parent becomes the monitor and returns
 * 1 with *@status its exit status; the child, the worker, returns 0 with
 * the conf pointed at the monitor, *@pub_fd the channel its session files
 * go through (opd_pub.h) and *@relay_fd the stream of a collector the
 * monitor runs (OPD_CAP_MONITOR), else -1.  -1 on failure (logged).
 */
static int split(struct opd_conf *c, const struct opd_collector_ops *ops,
		 const struct ev_table *tab, struct opd_ps_chan *ch, struct worker *w, int *status,
		 int *relay_fd, int *pub_fd)
{
	int fd[NR_SPLIT_FDS];
	pid_t child;

	if (check_worker(c, w) || open_fds(fd, ops->caps & OPD_CAP_MONITOR))
		return -1;
	w->conf = c;
	w->monitor = getpid();
	fflush(NULL);
	child = fork();
	if (child < 0) {
		du_err("privsep: fork: %s", strerror(errno));
		close_fds(fd, NR_SPLIT_FDS);
		return -1;
	}
	if (child > 0) {
		struct opd_relay_mon *rm = NULL;

		close_fds((int[]){ fd[SV1], fd[WAKE0], fd[PUB0], fd[STREAM0] }, 4);
		/* NULL (logged): the worker's start is then refused */
		if (fd[STREAM1] >= 0)
			rm = opd_relay_mon_open(ops, c, tab, fd[STREAM1]);
		if (!c->foreground)	/* the worker says when it is ready */
			release_parent_quietly();
		*status = opd_ps_monitor_wake(fd[SV0], fd[WAKE1], fd[PUB1], c, child, rm);
		opd_relay_mon_close(rm);
		return 1;
	}
	close_fds((int[]){ fd[SV0], fd[WAKE1], fd[PUB1], fd[STREAM1] }, 4);
	*pub_fd = fd[PUB0];
	*relay_fd = fd[STREAM0];
	ch->sock = fd[SV1];
	ch->wake = fd[WAKE0];
	c->domain_backend_ops = &opd_ps_backend;
	c->domain_backend_arg = ch;
	return 0;
}


/* A domain's task layout, from its agent to the open collector. */
struct layout_to {
	const struct opd_collector_ops *ops;
	void *state;
};

static void layout_to_collector(void *ctx, uint32_t key_ns, uint64_t key,
				const struct dp_ag_task_layout *l)
{
	const struct layout_to *t = ctx;

	t->ops->task_layout(t->state, key_ns, key, l);
}

/* The daemon proper, with the log open: 0 or 1.  *@ready is set once the
 * parent was released; *@worker when this is the privsep worker. */
static int run(struct opd_opts *o, const struct ev_table *tab, bool *ready, bool *worker)
{
	const struct opd_collector_ops *ops = o->collector;
	struct opd_conf *c = &o->conf;
	struct opd_collector_ops relay_ops;
	struct opd_collector_args args;
	int relay_fd = -1, pub_fd = -1;
	struct opd_ps_chan ch = { .sock = -1, .wake = -1 };
	struct worker w;
	struct opd_daemon d;
	struct layout_to lt;
	void *state = NULL;
	int ret, status = 1;

	if (c->privsep && geteuid() != 0) {
		du_info("privsep: not root, nothing to separate");
		c->privsep = false;
	}
	if (c->privsep) {
		ret = split(c, ops, tab, &ch, &w, &status, &relay_fd, &pub_fd);
		if (ret)
			return ret > 0 ? status : 1;
		*worker = true;
		if (relay_fd >= 0) {
			/* the monitor runs the collector: read its stream */
			opd_relay_worker_ops(ops, &relay_ops);
			ops = &relay_ops;
		}
	}
	ret = opd_daemon_init(&d, c, c->input ? c->input : c->collector);
	if (ret)
		return 1;
	/* (the process ends after this run: thousands of sample files are
	 * unmapped by its exit at once, not by a munmap each) */
	d.exiting = true;
	d.pub_fd = pub_fd;
	if (c->privsep) {
		w.st = &d.st;
		d.started = worker_started;
		d.started_ctx = &w;
		if (d.agents) {
			opd_agents_set_connector(d.agents, opd_ps_connect, &ch);
			opd_agents_set_tsc_opener(d.agents, opd_ps_tsc_open, &ch);
		}
		opd_trans_set_maps_source(d.trans, opd_ps_maps, &ch);
		d.samples_dir = opd_ps_samples_dir;
		d.samples_dir_ctx = &ch;
	}
	memset(&args, 0, sizeof(args));
	args.conf = c;
	args.events = tab;
	args.sink = &d.sink;
	args.relay_fd = relay_fd;
	args.relay_chan = &ch;
	if (ops->open(&args, &state))
		goto out_daemon;
	lt = (struct layout_to){ .ops = ops, .state = state };
	if (ops->task_layout && d.agents)
		opd_agents_set_layout_sink(d.agents, layout_to_collector, &lt);
	if (opd_daemon_write_stats(&d))
		goto out_close;
	*ready = true;
	if (!c->foreground && !c->privsep)	/* the worker: once it dropped */
		release_parent();
	ret = opd_daemon_run(&d, ops, state);
	if (!ret)
		ret = opd_stream_finish(d.stream);
	status = ret ? 1 : 0;
	if (opd_daemon_stop(&d))
		status = 1;
	du_info("oprofiled stopped: %llu samples received, %llu filed, %llu lost",
		(unsigned long long)d.st.samples_received, (unsigned long long)d.st.samples_filed,
		(unsigned long long)d.st.samples_lost);
out_close:
	ops->close(state);
out_daemon:
	opd_daemon_fini(&d);
	return status;
}

/* Lock, log, run: 0 or 1. */
static int run_locked(struct opd_opts *o, const struct ev_table *tab)
{
	struct opd_conf *c = &o->conf;
	char pidpath[PATH_MAX], logpath[PATH_MAX];
	bool ready = false, worker = false;
	int lockfd, ret, status = 1;

	setup_signals();
	size_open_files(c, o->max_files_given);
	lockfd = take_lock(c->session_dir, pidpath, sizeof(pidpath));
	if (lockfd < 0)
		return 1;
	snprintf(logpath, sizeof(logpath), "%s/oprofiled.log", c->session_dir);
	ret = opd_log_open(logpath, true, c->verbose);
	if (ret) {
		du_err("cannot open log %s: %s", logpath, strerror(-ret));
		goto out_unlock;
	}
	du_info("oprofiled starting: session %s, collector %s, separate %s, up to %u open sample files",
		c->session_dir, c->collector, c->separate_str, c->max_open_files);
	if (c->track_domains)
		du_info("domains: %s", c->domains ? c->domains : "all");
	else
		du_info("replay: guest samples are filed under domain pid-<hypervisor pid>");
	status = run(o, tab, &ready, &worker);
	if (!ready && !c->foreground)
		fflush(stderr);
	opd_log_close();
out_unlock:
	if (!worker)	/* the monitor's, and it outlives the worker */
		du_nf_unlink(pidpath);
	close(lockfd);
	return status;
}

int opd_main(int argc, char **argv)
{
	static struct opd_opts o;	/* large; the config outlives every module */
	struct opd_conf *c = &o.conf;
	struct ev_table *tab = NULL;
	int ret, status = 1;

	du_log_set_prog("oprofiled");
	memset(&o, 0, sizeof(o));
	ret = opd_parse_opts(argc, argv, &o);
	if (ret == 2 || ret == 3 || ret == 4) {
		if (ret == 2)
			opd_usage(stdout);
		else if (ret == 3)
			du_cli_version(stdout, "oprofiled");
		else
			opd_collector_list(stdout);
		return 0;
	}
	if (ret) {
		/* what was wrong is already said */
		fputs("Try 'oprofiled --help' for more information.\n", stderr);
		return 1;
	}
	if (!(o.collector->caps & (OPD_CAP_EVENTS | OPD_CAP_EVENTS_OPT)) && o.nr_event_args)
		du_warn("--event is ignored by the %s collector (events come from the stream)",
			c->collector);
	if (((o.collector->caps & OPD_CAP_EVENTS) ||
	     ((o.collector->caps & OPD_CAP_EVENTS_OPT) && o.nr_event_args)) && load_events(&o, &tab))
		return 1;
	/* created or checked before anything is written in it, and known by
	 * its canonical path from here on (util/du_sdir.h) */
	ret = du_sdir_prepare(c->session_dir, o.session_canon, sizeof(o.session_canon), o.sdir_err,
			      sizeof(o.sdir_err));
	if (ret) {
		du_err("%s", o.sdir_err);
		goto out_events;
	}
	c->session_dir = o.session_canon;
	if (!c->foreground) {
		ret = daemonize(&status);
		if (ret)	/* the parent (status set), or failure */
			goto out_events;
	}
	status = run_locked(&o, tab);
out_events:
	ev_table_free(tab);
	return status;
}
