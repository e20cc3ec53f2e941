/* Unit tests for opcontrol's logic (libctl.a), with fake/oprofiled as daemon. */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/perf_event.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_test.h"

static char warn_last[512];
static int warn_count;

static void capture_log(enum du_log_level level, const char *fmt, va_list ap)
{
	if (level != DU_LOG_WARN)
		return;
	warn_count++;
	vsnprintf(warn_last, sizeof(warn_last), fmt, ap);
}

/* ---- option parsing ------------------------------------------------------ */

struct parse_case {
	const char *args[8];
	int ret;			/* 0 or -EINVAL */
	enum ctl_action action;
	const char *err_has;		/* substring of the message on failure */
};

static const struct parse_case parse_cases[] = {
	{ { "--start" }, 0, CTL_START, NULL },
	{ { "--stop" }, 0, CTL_STOP, NULL },
	{ { "--dump" }, 0, CTL_DUMP, NULL },
	{ { "--status" }, 0, CTL_STATUS, NULL },
	{ { "--reset" }, 0, CTL_RESET, NULL },
	{ { "-h" }, 0, CTL_HELP, NULL },
	{ { "--help" }, 0, CTL_HELP, NULL },
	{ { "--version" }, 0, CTL_VERSION, NULL },
	{ { "--start", "--event=CPU_CLK_UNHALTED:100000:0:1:1", "-e", "TIMER" }, 0, CTL_START, NULL },
	{ { "--start", "--separate=lib,thread", "--collector", "perf", "--domains=all" }, 0, CTL_START, NULL },
	{ { "--start", "--record=/tmp/x.raw", "--events-dir=ev", "--verbose" }, 0, CTL_START, NULL },
	{ { "--status", "--session-dir=/tmp/s" }, 0, CTL_STATUS, NULL },
	{ { "--session-dir", "/tmp/s", "--stop" }, 0, CTL_STOP, NULL },
	{ { "--start", "--start" }, 0, CTL_START, NULL },
	{ { "--start", "--separate=all" }, 0, CTL_START, NULL },
	/* OProfile's own spelling, which the daemon always took */
	{ { "--start", "--separate=library,kernel" }, 0, CTL_START, NULL },
	{ { "--start", "--collector=kmod" }, 0, CTL_START, NULL },
	{ { "--start", "--collector=xen" }, 0, CTL_START, NULL },
	{ { "--start", "--callgraph=0" }, 0, CTL_START, NULL },
	{ { "--start", "-c", "127" }, 0, CTL_START, NULL },
	/* bad */
	{ { "--start", "--callgraph=128" }, -EINVAL, CTL_NONE, "depth 0..127" },
	{ { "--start", "--callgraph=-1" }, -EINVAL, CTL_NONE, "depth 0..127" },
	{ { "--start", "--callgraph=4x" }, -EINVAL, CTL_NONE, "depth 0..127" },
	{ { "--start", "-c", "3", "--callgraph=4" }, -EINVAL, CTL_NONE, "given twice" },
	{ { "--stop", "--callgraph=4" }, -EINVAL, CTL_NONE, "only applies to --start" },
	{ { "--start", "--guest-cpu=0" }, -EINVAL, CTL_NONE, "milliseconds 1..1000" },
	{ { "--start", "--guest-cpu=1001" }, -EINVAL, CTL_NONE, "milliseconds 1..1000" },
	{ { "--start", "--guest-cpu=20ms" }, -EINVAL, CTL_NONE, "milliseconds 1..1000" },
	{ { "--start", "--guest-cpu=5", "--guest-cpu=6" }, -EINVAL, CTL_NONE, "given twice" },
	{ { "--dump", "--guest-cpu=5" }, -EINVAL, CTL_NONE, "only applies to --start" },
	{ { "--start", "--guest-cpu-total=1001" }, -EINVAL, CTL_NONE, "milliseconds 1..1000" },
	{ { "--start", "--xen-read-budget=101" }, -EINVAL, CTL_NONE, "percentage 0..100" },
	{ { "--start", "--xen-read-budget=5%" }, -EINVAL, CTL_NONE, "percentage 0..100" },
	{ { "--dump", "--xen-read-budget=5" }, -EINVAL, CTL_NONE, "only applies to --start" },
	{ { NULL }, -EINVAL, CTL_NONE, "no action" },
	/* OProfile 0.9: options alone store a setup */
	{ { "--session-dir=/tmp/s" }, 0, CTL_SETUP, NULL },
	{ { "--no-vmlinux" }, 0, CTL_SETUP, NULL },
	{ { "--setup", "--event=TIMER", "-p", "library", "--vmlinux=/boot/v" }, 0, CTL_SETUP, NULL },
	{ { "--init" }, 0, CTL_INIT, NULL },
	{ { "--init", "--collector=kmod" }, 0, CTL_INIT, NULL },
	{ { "--shutdown" }, 0, CTL_SHUTDOWN, NULL },
	{ { "--deinit" }, 0, CTL_DEINIT, NULL },
	{ { "--save=run1" }, 0, CTL_SAVE, NULL },
	{ { "--save", "run1" }, 0, CTL_SAVE, NULL },
	{ { "-l" }, 0, CTL_LIST_EVENTS, NULL },
	{ { "--list", "--events-dir=/x" }, 0, CTL_LIST_EVENTS, NULL },
	{ { "-s", "-V" }, 0, CTL_START, NULL },
	{ { "-t" }, 0, CTL_STOP, NULL },
	{ { "-d" }, 0, CTL_DUMP, NULL },
	/* abbreviations, as getopt_long takes them */
	{ { "--star", "--sep=lib", "--coll=perf" }, 0, CTL_START, NULL },
	{ { "--shut" }, 0, CTL_SHUTDOWN, NULL },
	{ { "--sta" }, -EINVAL, CTL_NONE, "ambiguous option '--sta' (--start, --status)" },
	{ { "--save" }, -EINVAL, CTL_NONE, "--save needs a value" },
	{ { "--save=current" }, -EINVAL, CTL_NONE, "needs a session name" },
	{ { "--save=../x" }, -EINVAL, CTL_NONE, "needs a session name" },
	{ { "--save=.x" }, -EINVAL, CTL_NONE, "needs a session name" },
	{ { "--save=a", "--event=X" }, -EINVAL, CTL_NONE, "--event only applies to --start" },
	{ { "--save=a", "--save=b" }, -EINVAL, CTL_NONE, "--save given twice" },
	{ { "--start", "--vmlinux=/v", "--no-vmlinux" }, -EINVAL, CTL_NONE, "do not go together" },
	{ { "--stop", "--events-dir=/x" }, -EINVAL, CTL_NONE, "only applies to --start" },
	{ { "--init", "--save=a" }, -EINVAL, CTL_NONE, "only one action at a time: --init and --save" },
	{ { "--start", "--stop" }, -EINVAL, CTL_NONE, "only one action at a time: --start and --stop" },
	{ { "--dump", "--status" }, -EINVAL, CTL_NONE, "only one action" },
	{ { "--bogus" }, -EINVAL, CTL_NONE, "unknown option '--bogus'" },
	{ { "--start", "--bogus=1" }, -EINVAL, CTL_NONE, "unknown option '--bogus'" },
	{ { "-x" }, -EINVAL, CTL_NONE, "unknown option '-x'" },
	{ { "--start", "junk" }, -EINVAL, CTL_NONE, "unexpected argument 'junk'" },
	{ { "--start", "--event" }, -EINVAL, CTL_NONE, "--event needs a value" },
	{ { "--start", "--event=" }, -EINVAL, CTL_NONE, "--event needs a value" },
	{ { "--stop=1" }, -EINVAL, CTL_NONE, "--stop takes no value" },
	{ { "--start", "--separate=lib,bogus" }, -EINVAL, CTL_NONE, "bad --separate value 'bogus'" },
	{ { "--start", "--separate=lib," }, -EINVAL, CTL_NONE, "bad --separate value ''" },
	{ { "--start", "--separate=" }, -EINVAL, CTL_NONE, "--separate needs a value" },
	{ { "--start", "--separate=lib", "--separate=cpu" }, -EINVAL, CTL_NONE, "given twice" },
	{ { "--stop", "--event=TIMER" }, -EINVAL, CTL_NONE,
	  "--event only applies to --start or --setup, not --stop" },
	{ { "--status", "--separate=lib" }, -EINVAL, CTL_NONE, "only applies to --start" },
	{ { "--dump", "--collector=perf" }, -EINVAL, CTL_NONE, "only applies to --start" },
	{ { "--session-dir" }, -EINVAL, CTL_NONE, "needs a value" },
};

static void test_parse_table(void)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		char *argv[10] = { "opcontrol" };
		char err[256] = "";
		struct ctl_opts o;
		int argc = 1, ret;

		while (argc < 9 && c->args[argc - 1]) {
			argv[argc] = (char *)c->args[argc - 1];
			argc++;
		}
		ret = ctl_parse_args(argc, argv, &o, err, sizeof(err));
		if (ret != c->ret)
			fprintf(stderr, "\ncase %zu: ret %d (%s)\n", i, ret, err);
		CU_ASSERT_EQUAL(ret, c->ret);
		if (!c->ret) {
			CU_ASSERT_EQUAL(o.action, c->action);
			/* --setup stores what was given, no defaults */
			CU_ASSERT(c->action == CTL_SETUP || (o.session_dir && o.collector));
		} else if (c->err_has && !strstr(err, c->err_has)) {
			fprintf(stderr, "\ncase %zu: message '%s' lacks '%s'\n", i, err, c->err_has);
			CU_FAIL("error message");
		}
	}
}

/* --start without --collector: xen on Xen's dom0 (with libxen), else perf */
static void test_default_collector(void)
{
	char dir[] = "/tmp/test_ctl_caps.XXXXXX", path[64];
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/capabilities", dir);
	CU_ASSERT_STRING_EQUAL(ctl_default_collector(path), "perf");	/* no xenfs */
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	CU_ASSERT_STRING_EQUAL(ctl_default_collector(path), "perf");	/* a domU */
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("control_d\n", f);
	fclose(f);
#ifdef HAVE_XEN
	CU_ASSERT_STRING_EQUAL(ctl_default_collector(path), "xen");
#else
	CU_ASSERT_STRING_EQUAL(ctl_default_collector(path), "perf");
#endif
	unlink(path);
	rmdir(dir);
}

static void test_parse_values(void)
{
	char *argv[] = { "opcontrol", "--start", "--event=A:1", "-e", "B", "--separate=lib",
			 "--session-dir", "/tmp/s", "--domains=web1,db", NULL };
	char err[256];
	struct ctl_opts o;

	CU_ASSERT_EQUAL(ctl_parse_args(9, argv, &o, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(o.n_events, 2);
	CU_ASSERT_STRING_EQUAL(o.events[0], "A:1");
	CU_ASSERT_STRING_EQUAL(o.events[1], "B");
	CU_ASSERT_STRING_EQUAL(o.separate, "lib");
	CU_ASSERT_STRING_EQUAL(o.session_dir, "/tmp/s");
	CU_ASSERT_STRING_EQUAL(o.domains, "web1,db");
	CU_ASSERT_STRING_EQUAL(o.collector, "perf");
	CU_ASSERT_PTR_NULL(o.record);

	char *argv2[] = { "opcontrol", "--status", NULL };

	CU_ASSERT_EQUAL(ctl_parse_args(2, argv2, &o, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(o.session_dir, DP_DEFAULT_SESSION_DIR);
}

/* Stored settings fill what the command line leaves out, the command line
 * wins, and --setup merges: what it stores is its own options, then the
 * stored ones it did not give again. */
static void test_setup_merge(void)
{
	static const char stored[] = "event TIMER:5\nevent CPU_CLK_UNHALTED\nseparate lib\n"
				     "session_dir /tmp/q\ncallgraph 4\nno_vmlinux 1\n";
	struct du_kv *kv = du_kv_parse(stored, sizeof(stored) - 1);
	char *start[] = { "opcontrol", "--start", "--sep=cpu", "--vmlinux=/v", NULL };
	char *dump[] = { "opcontrol", "--dump", NULL };
	char *setup[] = { "opcontrol", "--setup", "-e", "B", NULL };
	char err[256] = "";
	struct ctl_opts o;

	CU_ASSERT_FATAL(kv != NULL);
	CU_ASSERT_EQUAL_FATAL(ctl_parse_args_setup(4, start, kv, "S", &o, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(o.n_events, 2);
	CU_ASSERT_STRING_EQUAL(o.events[0], "TIMER:5");
	CU_ASSERT_STRING_EQUAL(o.separate, "cpu");
	CU_ASSERT_STRING_EQUAL(o.session_dir, "/tmp/q");
	CU_ASSERT_EQUAL(o.callgraph, 4);
	CU_ASSERT_STRING_EQUAL(o.vmlinux, "/v");	/* --vmlinux given: no_vmlinux not taken */
	CU_ASSERT_FALSE(o.no_vmlinux);
	CU_ASSERT_EQUAL(ctl_parse_args_setup(2, dump, kv, "S", &o, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(o.session_dir, "/tmp/q");
	CU_ASSERT_EQUAL(ctl_parse_args_setup(4, setup, kv, "S", &o, err, sizeof(err)), 0);
	o.setup[o.setup_len] = '\0';
	CU_ASSERT_STRING_EQUAL(o.setup, "event B\nseparate lib\nsession_dir /tmp/q\n"
				      "callgraph 4\nno_vmlinux 1\n");
	du_kv_free(kv);

	/* a bad stored value is refused, naming the file */
	kv = du_kv_parse("callgraph 999\n", 14);
	CU_ASSERT_EQUAL(ctl_parse_args_setup(2, start, kv, "SETUPFILE", &o, err, sizeof(err)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "SETUPFILE: --callgraph needs a depth"));
	du_kv_free(kv);
}

/* opcontrol --setup through ctl_main with HOME at @home: its output. */
static void run_setup(const char *home, const char *opt, char *out, size_t outlen)
{
	char *argv[] = { "opcontrol", "--setup", (char *)opt, NULL };
	FILE *f = fmemopen(out, outlen, "w");

	setenv("HOME", home, 1);
	CU_ASSERT_EQUAL(ctl_main(3, argv, f, f), 0);
	fclose(f);
	setenv("HOME", "/nonexistent-domprof-test-home", 1);
}

/* The setup file is written private and merged with the stored one, but
 * a stored one that others could have written is ignored. */
static void test_setup_file(void)
{
	char home[] = "/tmp/test_ctl_home.XXXXXX", path[PATH_MAX], out[2048], text[512];
	struct stat sb;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(home));
	snprintf(path, sizeof(path), "%s/.domprof/setup", home);
	run_setup(home, "--callgraph=4", out, sizeof(out));
	CU_ASSERT_EQUAL_FATAL(stat(path, &sb), 0);
	CU_ASSERT_EQUAL(sb.st_mode & 0777, 0600);
	run_setup(home, "--sep=lib", out, sizeof(out));
	CU_ASSERT(du_read_small(path, text, sizeof(text)) > 0);
	CU_ASSERT_STRING_EQUAL(text, "separate lib\ncallgraph 4\n");
	chmod(path, 0666);
	warn_count = 0;
	run_setup(home, "--sep=cpu", out, sizeof(out));
	CU_ASSERT_EQUAL(warn_count, 1);
	CU_ASSERT(du_read_small(path, text, sizeof(text)) > 0);
	CU_ASSERT_STRING_EQUAL(text, "separate cpu\n");
	unlink(path);
	snprintf(path, sizeof(path), "%s/.domprof", home);
	rmdir(path);
	rmdir(home);
}

/* Does the daemon's command line for opcontrol @args (at most 4, NULL
 * after the last when fewer) hold @want (an argument), or, @want NULL, no
 * argument starting with @prefix? */
static bool daemon_gets(const char *const args[4], const char *want, const char *prefix)
{
	char *argv[8] = { "opcontrol" };
	char specs[1][96] = { "TIMER:1:0:1:1" };
	const char *dargv[32];
	char store[4096], err[256];
	struct ctl_opts o;
	bool found = false;
	int argc = 1;

	for (; argc <= 4 && args[argc - 1]; argc++)
		argv[argc] = (char *)args[argc - 1];
	CU_ASSERT_FATAL(ctl_parse_args(argc, argv, &o, err, sizeof(err)) == 0);
	CU_ASSERT_FATAL(ctl_daemon_argv("oprofiled", "/tmp/s", &o, specs, 1, dargv, 32, store,
					sizeof(store)) == 0);
	for (size_t i = 0; dargv[i]; i++)
		found |= want ? !strcmp(dargv[i], want) : !strncmp(dargv[i], prefix, strlen(prefix));
	return want ? found : !found;
}

/* Options that reach the daemon's command line; 0 (off) or not given,
 * nothing does (the daemon keeps its default). */
static void test_daemon_argv(void)
{
	static const struct {
		const char *args[4];
		const char *want, *prefix;
	} cases[] = {
		{ { "--start", "--callgraph=16" }, "--callgraph=16", NULL },
		{ { "--start", "--callgraph=0" }, NULL, "--callgraph" },
		{ { "--start", "--guest-cpu", "20" }, "--guest-cpu=20", NULL },
		{ { "--start" }, NULL, "--guest-cpu" },
		{ { "--start", "--guest-cpu-total=300" }, "--guest-cpu-total=300", NULL },
		/* 0 is not the default here: it turns the budget off */
		{ { "--start", "--xen-read-budget=0" }, "--xen-read-budget=0", NULL },
		{ { "--start", "--xen-read-budget", "12" }, "--xen-read-budget=12", NULL },
		{ { "--start" }, NULL, "--xen-read-budget" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CU_ASSERT(daemon_gets(cases[i].args, cases[i].want, cases[i].prefix));
}

static void test_parse_too_many_events(void)
{
	char *argv[CTL_MAX_EVENTS + 3] = { "opcontrol", "--start" };
	char err[256] = "";
	struct ctl_opts o;

	for (int i = 0; i <= CTL_MAX_EVENTS; i++)
		argv[2 + i] = "--event=X";
	CU_ASSERT_EQUAL(ctl_parse_args(CTL_MAX_EVENTS + 3, argv, &o, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "too many"));
	CU_ASSERT_EQUAL(ctl_parse_args(CTL_MAX_EVENTS + 2, argv, &o, err, sizeof(err)), 0);
}

/* ---- pid file ---------------------------------------------------------------- */

static char tmp_session[PATH_MAX];

static void make_session(void)
{
	snprintf(tmp_session, sizeof(tmp_session), "/tmp/test_ctl.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmp_session));
}

static void rm_session(void)
{
	char cmd[PATH_MAX + 16];

	/* fake daemons we stopped were reparented to us (subreaper): reap them */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_session);
	if (system(cmd))
		fprintf(stderr, "cleanup of %s failed\n", tmp_session);
}

static void write_file(const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp_session, name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void test_pid_parse(void)
{
	pid_t p = 0;

	CU_ASSERT_TRUE(ctl_pid_parse("1234\n", &p));
	CU_ASSERT_EQUAL(p, 1234);
	CU_ASSERT_TRUE(ctl_pid_parse("42", &p));
	CU_ASSERT_FALSE(ctl_pid_parse("", &p));
	CU_ASSERT_FALSE(ctl_pid_parse("\n", &p));
	CU_ASSERT_FALSE(ctl_pid_parse("-5\n", &p));
	CU_ASSERT_FALSE(ctl_pid_parse("0\n", &p));
	CU_ASSERT_FALSE(ctl_pid_parse("1\n", &p));	/* never signal init */
	CU_ASSERT_FALSE(ctl_pid_parse("12ab\n", &p));
	CU_ASSERT_FALSE(ctl_pid_parse("99999999999999999999\n", &p));
	CU_ASSERT_FALSE(ctl_pid_parse("12 34\n", &p));
}

static void test_pid_probe(void)
{
	struct ctl_pid_info info;
	char buf[32];

	make_session();
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL(info.state, CTL_PID_NONE);

	/* a pid that no longer runs */
	snprintf(buf, sizeof(buf), "%d\n", (int)dead_pid());
	write_file("oprofiled.pid", buf);
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL(info.state, CTL_PID_STALE);
	CU_ASSERT_NOT_EQUAL(info.pid, 0);
	warn_count = 0;
	ctl_pid_warn_stale(tmp_session, &info);
	CU_ASSERT_EQUAL(warn_count, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(warn_last, "is not running"));

	/* garbage */
	write_file("oprofiled.pid", "hello\n");
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL(info.state, CTL_PID_STALE);
	CU_ASSERT_EQUAL(info.pid, 0);

	/* a live process that is not oprofiled: ourselves */
	snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	write_file("oprofiled.pid", buf);
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL(info.state, CTL_PID_FOREIGN);
	CU_ASSERT_STRING_EQUAL(info.comm, "test_ctl");
	warn_count = 0;
	ctl_pid_warn_stale(tmp_session, &info);
	CU_ASSERT_PTR_NOT_NULL(strstr(warn_last, "not oprofiled"));

	/* none of these count as running for --stop / --dump */
	char err[256];

	CU_ASSERT_EQUAL(ctl_stop(tmp_session, 100, stdout, err, sizeof(err)), -ESRCH);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "Daemon not running"));
	CU_ASSERT_EQUAL(ctl_dump(tmp_session, 100, stdout, err, sizeof(err)), -ESRCH);
	/* and we must not have been signalled: still here */
	rm_session();
}

static void test_pid_zombie(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	/* not reaped yet: a zombie is not alive */
	for (int i = 0; i < 100 && ctl_pid_alive(pid); i++)
		ctl_sleep_ms(10);
	CU_ASSERT_FALSE(ctl_pid_alive(pid));
	waitpid(pid, NULL, 0);
	CU_ASSERT_FALSE(ctl_pid_alive(pid));
	CU_ASSERT_TRUE(ctl_pid_alive(getpid()));
}

/* ---- status ------------------------------------------------------------------ */

static char *format_status(const struct ctl_status *st)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	ctl_status_format(f, st);
	fclose(f);
	return buf;
}

static void test_status_format(void)
{
	static const char stats_text[] =
		"dumps 2\nrunning 1\ncollector perf\nstart_time 1000\n"
		"events CPU_CLK_UNHALTED:100000:0:1:1\n"
		"samples_received 1000\nsamples_lost 0\nsamples_filed 900\n"
		"samples_host_kernel 250\nsamples_host_user 250\n"
		"samples_guest_kernel 0\nsamples_guest_user 500\n"
		"unresolved_no_mapping 60\nunresolved_kernel 40\n"
		"unresolved_no_task 0\nunresolved_bad_event 0\n"
		"stream_unknown_records 0\nstream_bad_records 0\n"
		"processes_seen 17\nsample_files 12\n"
		"new_counter 5\n"
		"this-is-garbage!\n";
	static const char conf_text[] =
		"event CPU_CLK_UNHALTED:100000:0:1:1\nevent TIMER:5000:0:1:0\n"
		"separate lib,thread\ncollector perf\n";
	struct du_kv *stats = du_kv_parse(stats_text, sizeof(stats_text) - 1);
	struct du_kv *conf = du_kv_parse(conf_text, sizeof(conf_text) - 1);
	struct ctl_status st = {
		.session_dir = "/var/lib/domprof",
		.pid = { .state = CTL_PID_RUNNING, .pid = 4242 },
		.stats = stats, .conf = conf, .now = 1000 + 3723,
	};
	char *s = format_status(&st);

	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Session:      /var/lib/domprof\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "running (pid 4242, up 1h 02m 03s)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Collector:    perf\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Events:       CPU_CLK_UNHALTED:100000:0:1:1\n"
				      "              TIMER:5000:0:1:0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Separate:     lib,thread\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Domains:      all\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "(2 dumps so far)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "  samples received                   1000\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "    filed                             900   90.0% of received\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "    guest user                        500   50.0% of received\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "    unresolved                        100   10.0% of received\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "      no mapping                       60    6.0% of received\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "  samples lost                          0    0.0% of taken\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "  processes seen                       17\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "new_counter"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "(1 unreadable line in /var/lib/domprof/stats ignored)"));
	if (CU_get_number_of_failures())
		fputs(s, stderr);
	free(s);

	/* stopped: the last run's stats, no uptime */
	st.pid.state = CTL_PID_NONE;
	s = format_status(&st);
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Daemon:       not running (statistics below are from the last run)"));
	CU_ASSERT_PTR_NULL(strstr(s, "up "));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "did not stop cleanly"));	/* stats say running 1 */
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "samples received"));
	free(s);

	/* nothing but a pid: no statistics, defaults shown */
	st.stats = NULL;
	st.conf = NULL;
	st.pid.state = CTL_PID_RUNNING;
	s = format_status(&st);
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "running (pid 4242)\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "No statistics yet"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Collector:    (unknown)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Events:       (not known yet)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "Separate:     (not known yet)"));
	free(s);

	/* no received samples: no division by zero, no shares */
	static const char zero[] = "dumps 1\nsamples_received 0\nsamples_filed 0\nsamples_lost 0\n";
	struct du_kv *z = du_kv_parse(zero, sizeof(zero) - 1);

	st.stats = z;
	s = format_status(&st);
	CU_ASSERT_PTR_NULL(strstr(s, "%"));
	CU_ASSERT_PTR_NOT_NULL(strstr(s, "(1 dump so far)"));
	free(s);

	du_kv_free(z);
	du_kv_free(stats);
	du_kv_free(conf);
}

static void test_status_no_session(void)
{
	char err[256] = "";
	FILE *devnull = fopen("/dev/null", "w");

	CU_ASSERT_EQUAL(ctl_status("/nonexistent/session", devnull, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no session"));
	make_session();
	CU_ASSERT_EQUAL(ctl_status(tmp_session, devnull, err, sizeof(err)), -ENOENT);
	write_file("stats", "dumps 1\nrunning 0\n");
	CU_ASSERT_EQUAL(ctl_status(tmp_session, devnull, err, sizeof(err)), 0);
	rm_session();
	fclose(devnull);
}

/* Every domain's info file shows in the status, profiled or not (the
 * toggles of libvirt metadata and opcontrol --profile-domain are seen
 * there), with or without an agent's stats beside it. */
static void test_status_domains(void)
{
	char err[256] = "", path[PATH_MAX + 32], *buf = NULL;
	size_t len = 0;
	FILE *f;

	make_session();
	write_file("stats", "dumps 1\nrunning 0\n");
	snprintf(path, sizeof(path), "%s/domains", tmp_session);
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/domains/web", tmp_session);
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/domains/db", tmp_session);
	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0755), 0);
	write_file("domains/web/info", "name web\nstate running\nselected yes\n");
	write_file("domains/web/stats", "agent_connected 1\nagent_seen 1\nsamples_received 5\n");
	write_file("domains/db/info", "name db\nstate stopped\nselected no\n");
	f = open_memstream(&buf, &len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(ctl_status(tmp_session, f, err, sizeof(err)), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "    web                  profiled yes, running\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "    web                  agent connected"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "    db                   profiled no, stopped\n"));
	if (CU_get_number_of_failures())
		fputs(buf, stderr);
	free(buf);
	rm_session();
}

/* ---- start / stop / dump / reset with fake/oprofiled ---------------------- */

static void set_fake_daemon(void)
{
	char self[PATH_MAX], fake[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	CU_ASSERT_FATAL(n > 0);
	self[n] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	snprintf(fake, sizeof(fake), "%s/fake/oprofiled", self);
	CU_ASSERT_EQUAL_FATAL(access(fake, X_OK), 0);
	setenv("DOMPROF_OPROFILED", fake, 1);
}

static int start_fake(const char *extra_arg, char *out_buf, size_t out_len, char *err, size_t errlen)
{
	char *argv[] = { "opcontrol", "--start", "--session-dir", tmp_session,
			 (char *)extra_arg, NULL };
	char specs[2][96] = { "CPU_CLK_UNHALTED:100000:0:1:1", "TIMER:5000:0:1:0" };
	struct ctl_opts o;
	FILE *f = fmemopen(out_buf, out_len, "w");
	int ret;

	CU_ASSERT_EQUAL(ctl_parse_args(extra_arg ? 5 : 4, argv, &o, err, errlen), 0);
	ret = ctl_start(&o, specs, 2, f, err, errlen);
	fclose(f);
	return ret;
}

static uint64_t stats_u64(const char *key)
{
	char path[PATH_MAX + 16];
	struct du_kv *kv;
	uint64_t v = UINT64_MAX;

	snprintf(path, sizeof(path), "%s/stats", tmp_session);
	kv = du_kv_load(path);
	du_kv_get_u64(kv, key, &v);
	du_kv_free(kv);
	return v;
}

/* --save under the fake daemon @pid: a dump, the move, SIGUSR2 (the fake
 * makes a fresh samples/current and counts saves, as the daemon does). */
static void save_running_fake(pid_t pid, FILE *devnull)
{
	char path[PATH_MAX + 64], err[512];

	snprintf(path, sizeof(path), "%s/samples/current", tmp_session);
	CU_ASSERT_EQUAL_FATAL(du_mkdir_p(path), 0);
	CU_ASSERT_EQUAL(ctl_save(tmp_session, "live", devnull, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(stats_u64("saves"), 1);
	CU_ASSERT_EQUAL(stats_u64("dumps"), 3);
	CU_ASSERT_EQUAL(access(path, F_OK), 0);	/* the daemon's fresh one */
	snprintf(path, sizeof(path), "%s/samples/live", tmp_session);
	CU_ASSERT_EQUAL(access(path, F_OK), 0);
	CU_ASSERT_EQUAL(ctl_save(tmp_session, "live", devnull, err, sizeof(err)), -EEXIST);
	CU_ASSERT_TRUE(ctl_pid_alive(pid));
}

/* --save with no daemon: samples/current to samples/NAME, once per name. */
static void save_stopped(FILE *devnull)
{
	char path[PATH_MAX + 64], err[512];

	snprintf(path, sizeof(path), "%s/samples/current", tmp_session);
	rmdir(path);
	CU_ASSERT_EQUAL(ctl_save(tmp_session, "run1", devnull, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "nothing to save"));
	mkdir(path, 0755);
	CU_ASSERT_EQUAL(ctl_save(tmp_session, "run1", devnull, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/samples/run1", tmp_session);
	CU_ASSERT_EQUAL(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/samples/current", tmp_session);
	mkdir(path, 0755);
	CU_ASSERT_EQUAL(ctl_save(tmp_session, "run1", devnull, err, sizeof(err)), -EEXIST);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "session run1 already exists"));
	CU_ASSERT_EQUAL(ctl_save(tmp_session, "a/b", devnull, err, sizeof(err)), -EINVAL);
	CU_ASSERT_EQUAL(access(path, F_OK), 0);
	rmdir(path);
}

static void test_start_stop_dump(void)
{
	char out[4096] = "", err[512] = "", path[PATH_MAX + 64], buf[64];
	struct ctl_pid_info info;
	FILE *devnull = fopen("/dev/null", "w");
	pid_t pid;
	int ret;

	set_fake_daemon();
	make_session();
	/* a stale pid file is reported and ignored */
	snprintf(buf, sizeof(buf), "%d\n", (int)dead_pid());
	write_file("oprofiled.pid", buf);
	warn_count = 0;
	ret = start_fake("--separate=lib", out, sizeof(out), err, sizeof(err));
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_TRUE(warn_count >= 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Profiler running."));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "event:     CPU_CLK_UNHALTED:100000:0:1:1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "event:     TIMER:5000:0:1:0"));
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL_FATAL(info.state, CTL_PID_RUNNING);
	pid = info.pid;
	snprintf(buf, sizeof(buf), "pid %d", (int)pid);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, buf));

	/* a second start is refused */
	ret = start_fake(NULL, out, sizeof(out), err, sizeof(err));
	CU_ASSERT_EQUAL(ret, -EALREADY);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "already running"));

	/* dump: stats' dumps goes up */
	CU_ASSERT_EQUAL(stats_u64("dumps"), 0);
	CU_ASSERT_EQUAL(ctl_dump(tmp_session, 5000, devnull, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(stats_u64("dumps"), 1);
	CU_ASSERT_EQUAL(ctl_dump(tmp_session, 5000, devnull, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(stats_u64("dumps"), 2);

	/* status while running, with the kernel module's per-CPU counters */
	char *sbuf = NULL, kstats[PATH_MAX + 16];
	size_t slen = 0;
	FILE *sf = open_memstream(&sbuf, &slen), *kf;

	snprintf(kstats, sizeof(kstats), "%s/kmod-stats", tmp_session);
	kf = fopen(kstats, "w");
	CU_ASSERT_FATAL(kf != NULL);
	fputs("cpu 0 samples 100 lost 7 guest 40 counting 1\n"
	      "cpu 1 samples 50 lost 0 guest 0 counting 0\n", kf);
	fclose(kf);
	setenv("DOMPROF_KMOD_STATS", kstats, 1);
	CU_ASSERT_EQUAL(ctl_status(tmp_session, sf, err, sizeof(err)), 0);
	unsetenv("DOMPROF_KMOD_STATS");
	unlink(kstats);
	fclose(sf);
	CU_ASSERT_PTR_NOT_NULL(strstr(sbuf, buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(sbuf, "Separate:     lib\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sbuf, "TIMER:5000:0:1:0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sbuf, "lost          7"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sbuf, "all 2 CPUs: samples 150, lost 7\n"));
	free(sbuf);

	/* reset refuses while running; save dumps, moves samples/current
	 * and has the daemon start a fresh one (SIGUSR2, stats' saves) */
	CU_ASSERT_EQUAL(ctl_reset(tmp_session, devnull, err, sizeof(err)), -EBUSY);
	save_running_fake(pid, devnull);

	/* stop */
	CU_ASSERT_EQUAL(ctl_stop(tmp_session, 10000, devnull, err, sizeof(err)), 0);
	CU_ASSERT_FALSE(ctl_pid_alive(pid));
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL(info.state, CTL_PID_NONE);
	CU_ASSERT_EQUAL(stats_u64("running"), 0);
	CU_ASSERT_EQUAL(ctl_stop(tmp_session, 100, devnull, err, sizeof(err)), -ESRCH);
	CU_ASSERT_EQUAL(ctl_dump(tmp_session, 100, devnull, err, sizeof(err)), -ESRCH);

	/* status after the run still shows its stats */
	CU_ASSERT_EQUAL(ctl_status(tmp_session, devnull, err, sizeof(err)), 0);
	/* shutdown with no daemon is no error (0.9: --stop, then --shutdown) */
	CU_ASSERT_EQUAL(ctl_shutdown(tmp_session, 100, devnull, err, sizeof(err)), 0);

	save_stopped(devnull);

	/* reset moves samples/current aside and removes stats */
	snprintf(path, sizeof(path), "%s/samples", tmp_session);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/samples/current", tmp_session);
	mkdir(path, 0755);
	CU_ASSERT_EQUAL(ctl_reset(tmp_session, devnull, err, sizeof(err)), 0);
	CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
	CU_ASSERT_EQUAL(stats_u64("dumps"), UINT64_MAX);
	snprintf(path, sizeof(path), "ls -d '%s'/samples/reset-* >/dev/null 2>&1", tmp_session);
	CU_ASSERT_EQUAL(system(path), 0);
	rm_session();
	fclose(devnull);
}

static void test_start_foreign_pid(void)
{
	char out[4096] = "", err[512] = "", buf[64];
	FILE *devnull = fopen("/dev/null", "w");

	set_fake_daemon();
	make_session();
	/* our own pid: alive but not oprofiled, so the file is stale */
	snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	write_file("oprofiled.pid", buf);
	warn_count = 0;
	CU_ASSERT_EQUAL(start_fake(NULL, out, sizeof(out), err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(warn_last, "not oprofiled"));
	/* another session's pid file naming this session's daemon (forged):
	 * that daemon holds no lock there, so it is not stopped from there */
	{
		char other[PATH_MAX + 16], pidf[PATH_MAX + 32];
		struct ctl_pid_info info, mine;
		FILE *f;

		ctl_pid_probe(tmp_session, &mine);
		CU_ASSERT_EQUAL_FATAL(mine.state, CTL_PID_RUNNING);
		snprintf(other, sizeof(other), "%s/other", tmp_session);
		CU_ASSERT_EQUAL_FATAL(mkdir(other, 0700), 0);
		snprintf(pidf, sizeof(pidf), "%s/oprofiled.pid", other);
		f = fopen(pidf, "w");
		CU_ASSERT_FATAL(f != NULL);
		fprintf(f, "%d\n", (int)mine.pid);
		fclose(f);
		ctl_pid_probe(other, &info);
		CU_ASSERT_EQUAL(info.state, CTL_PID_UNLOCKED);
		CU_ASSERT_EQUAL(ctl_stop(other, 500, devnull, err, sizeof(err)), -ESRCH);
		CU_ASSERT_TRUE(ctl_pid_alive(mine.pid));
		unlink(pidf);
		rmdir(other);
		/* this session's file naming another pid: the lock's holder wins */
		snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
		write_file("oprofiled.pid", buf);
		ctl_pid_probe(tmp_session, &info);
		CU_ASSERT_EQUAL(info.state, CTL_PID_RUNNING);
		CU_ASSERT_EQUAL(info.pid, mine.pid);
	}
	CU_ASSERT_EQUAL(ctl_stop(tmp_session, 10000, devnull, err, sizeof(err)), 0);
	rm_session();
	fclose(devnull);
}

static void test_start_failures(void)
{
	char out[4096] = "", err[512] = "", argsf[PATH_MAX + 16], line[PATH_MAX + 64];
	FILE *devnull = fopen("/dev/null", "w"), *f;
	bool saw_record = false, saw_session = false, saw_sep = false;
	int n_events = 0;

	set_fake_daemon();
	make_session();

	/* the daemon's failure is relayed */
	setenv("FAKE_OPROFILED_FAIL", "perf_event_open failed: no such device", 1);
	CU_ASSERT_EQUAL(start_fake(NULL, out, sizeof(out), err, sizeof(err)), -EIO);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "failed to start (exit status 1)"));
	unsetenv("FAKE_OPROFILED_FAIL");

	/* the daemon that cannot be run */
	setenv("DOMPROF_OPROFILED", "/nonexistent/oprofiled", 1);
	CU_ASSERT_EQUAL(start_fake(NULL, out, sizeof(out), err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot run /nonexistent/oprofiled"));
	set_fake_daemon();

	/* kmod: the installed module is loaded with modprobe, never built */
	setenv("DOMPROF_KMOD_DEVICE", "/nonexistent/domprof", 1);
	setenv("DOMPROF_MODPROBE", "false", 1);
	CU_ASSERT_EQUAL(start_fake("--collector=kmod", out, sizeof(out), err, sizeof(err)), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "false domprof failed"));
	setenv("DOMPROF_MODPROBE", "true", 1);
	CU_ASSERT_EQUAL(start_fake("--collector=kmod", out, sizeof(out), err, sizeof(err)), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "did not appear"));
	unsetenv("DOMPROF_MODPROBE");
	unsetenv("DOMPROF_KMOD_DEVICE");

	/* the command line per the contract; relative --record made absolute */
	snprintf(argsf, sizeof(argsf), "%s/args", tmp_session);
	setenv("FAKE_OPROFILED_ARGS", argsf, 1);
	CU_ASSERT_EQUAL_FATAL(start_fake("--record=rec.raw", out, sizeof(out), err, sizeof(err)), 0);
	unsetenv("FAKE_OPROFILED_ARGS");
	f = fopen(argsf, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "--record=/", 10) && strstr(line, "/rec.raw"))
			saw_record = true;
		if (!strncmp(line, "--session-dir=", 14) && !strcmp(line + 14, tmp_session))
			saw_session = true;
		if (!strncmp(line, "--event=", 8))
			n_events++;
		if (!strncmp(line, "--separate", 10) || !strncmp(line, "--domains", 9))
			saw_sep = true;
	}
	fclose(f);
	CU_ASSERT_TRUE(saw_record);
	CU_ASSERT_TRUE(saw_session);
	CU_ASSERT_FALSE(saw_sep);
	CU_ASSERT_EQUAL(n_events, 2);
	CU_ASSERT_EQUAL(ctl_stop(tmp_session, 10000, devnull, err, sizeof(err)), 0);

	/* a daemon that never finishes a dump: bounded wait */
	setenv("FAKE_OPROFILED_NODUMP", "1", 1);
	CU_ASSERT_EQUAL_FATAL(start_fake(NULL, out, sizeof(out), err, sizeof(err)), 0);
	unsetenv("FAKE_OPROFILED_NODUMP");
	CU_ASSERT_EQUAL(ctl_dump(tmp_session, 300, devnull, err, sizeof(err)), -ETIMEDOUT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "did not finish the dump"));
	CU_ASSERT_EQUAL(ctl_stop(tmp_session, 10000, devnull, err, sizeof(err)), 0);
	rm_session();
	fclose(devnull);
}

/* ---- the real oprofiled, through opcontrol ----------------------------------------- */

/*
 * Can this process open a system-wide perf event, as oprofiled's perf
 * collector will?  0, or -errno of the refusal.
 */
static int perf_probe(void)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_period = 1000000, .disabled = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* opcontrol ARGS... --session-dir=tmp_session: its exit status, output in @out. */
static int opcontrol(char *out, size_t outlen, const char *a1, const char *a2, const char *a3,
		     const char *a4)
{
	char sd[PATH_MAX + 16];
	char *argv[] = { "opcontrol", sd, (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL };
	int argc = 2;
	FILE *f = fmemopen(out, outlen, "w");
	int ret;

	snprintf(sd, sizeof(sd), "--session-dir=%s", tmp_session);
	while (argv[argc])
		argc++;
	ret = ctl_main(argc, argv, f, f);
	fclose(f);
	return ret;
}

/*
 * --collector is checked against the daemon's table (--list-collectors),
 * not a list of opcontrol's: a collector the daemon adds is taken, one it
 * lacks or cannot start live (file) is refused, naming those it has.
 */
static int ctl_run2(char *out, size_t outlen, const char *a1, const char *a2)
{
	char *argv[] = { "opcontrol", (char *)a1, (char *)a2, NULL };
	FILE *f = fmemopen(out, outlen, "w");
	int ret = ctl_main(3, argv, f, f);

	fclose(f);
	return ret;
}

static void test_collector_from_daemon(void)
{
	struct ctl_collector c;
	char out[1024], names[128], home[] = "/tmp/test_ctl_home.XXXXXX", cmd[64];

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(home));
	setenv("HOME", home, 1);
	set_fake_daemon();
	setenv("FAKE_OPROFILED_COLLECTORS", "perf live events callchain\nfile input\n"
	       "newone live events-optional\n", 1);
	CU_ASSERT_EQUAL(ctl_run2(out, sizeof(out), "--setup", "--collector=newone"), 0);
	CU_ASSERT_EQUAL(ctl_run2(out, sizeof(out), "--setup", "--collector=kmod"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown collector 'kmod'"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "has perf, newone)"));
	CU_ASSERT_EQUAL(ctl_run2(out, sizeof(out), "--init", "--collector=file"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown collector 'file'"));
	unsetenv("FAKE_OPROFILED_COLLECTORS");
	setenv("HOME", "/nonexistent-domprof-test-home", 1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
	CU_ASSERT_EQUAL(system(cmd), 0);
	/* the words: events, or events only when given */
	CU_ASSERT_EQUAL(ctl_collectors_parse("perf live events\nkmod live events-optional\n",
					     "kmod", &c, names, sizeof(names)), 0);
	CU_ASSERT(!c.events && c.events_optional);
	CU_ASSERT_EQUAL(ctl_collectors_parse("perf live events\n", "perf", &c, names,
					     sizeof(names)), 0);
	CU_ASSERT(c.events && !c.events_optional);
	CU_ASSERT_EQUAL(ctl_collectors_parse("perf live events", "per", &c, names,
					     sizeof(names)), -ENOENT);
	CU_ASSERT_EQUAL(ctl_collectors_parse("perf liveevents\n", "perf", &c, names,
					     sizeof(names)), -ENOENT);
	/* every live collector of this build's daemon table is one opcontrol takes */
	CU_ASSERT_EQUAL(ctl_collector_check(CTL_TEST_OPROFILED, "perf", &c, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(ctl_collector_check(CTL_TEST_OPROFILED, "kmod", &c, out, sizeof(out)), 0);
	CU_ASSERT_EQUAL(ctl_collector_check(CTL_TEST_OPROFILED, "file", &c, out, sizeof(out)),
			-EINVAL);
	CU_ASSERT_EQUAL(ctl_collector_check("/nonexistent/oprofiled", "perf", &c, out,
					    sizeof(out)), -ENOEXEC);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "cannot ask /nonexistent/oprofiled"));
}

/* Samples of this very test program, in any sample file under samples/@sub. */
static bool own_samples_in(const char *sub)
{
	char cmd[PATH_MAX * 2];

	snprintf(cmd, sizeof(cmd), "find '%s/samples/%s' -path '*test_ctl*' -type f | grep -q .",
		 tmp_session, sub);
	return system(cmd) == 0;
}

static bool own_samples_filed(void)
{
	return own_samples_in("current");
}

static void burn_cpu_ms(int ms)
{
	struct timespec a, b;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i * 7;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

/*
 * start, status, dump, stop against the oprofiled of this build tree with
 * the perf collector: the session contract as the real daemon keeps it,
 * --separate=library accepted by both, and samples of this process filed.
 */
/* --save while the real daemon @pid runs: what was filed moves to
 * samples/live, the daemon goes on, into a fresh samples/current. */
static void real_daemon_save(pid_t pid)
{
	char out[8192];
	bool filed = false;

	CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--save=live", NULL, NULL, NULL), 0);
	if (!strstr(out, "profiling goes on"))
		fprintf(stderr, "\nopcontrol --save said:\n%s\n", out);
	CU_ASSERT_TRUE(own_samples_in("live"));
	CU_ASSERT_EQUAL(stats_u64("saves"), 1);
	CU_ASSERT_TRUE(ctl_pid_alive(pid));
	for (int i = 0; i < 20 && !filed; i++) {
		burn_cpu_ms(100);
		CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--dump", NULL, NULL, NULL), 0);
		filed = own_samples_filed();
	}
	CU_ASSERT_TRUE(filed);
}

static void test_real_daemon(void)
{
	char out[8192], buf[64];
	struct ctl_pid_info info;
	bool filed = false;
	int probe = perf_probe();
	pid_t pid;

	if (probe && !getenv("DOMPROF_TEST_REQUIRE_PERF")) {
		fprintf(stderr, "\n  SKIPPED: cannot open a system-wide perf event (%s); "
			"set DOMPROF_TEST_REQUIRE_PERF=1 to make this a failure ", strerror(-probe));
		return;
	}
	CU_ASSERT_EQUAL_FATAL(probe, 0);
	CU_ASSERT_EQUAL_FATAL(access(CTL_TEST_OPROFILED, X_OK), 0);
	setenv("DOMPROF_OPROFILED", CTL_TEST_OPROFILED, 1);
	make_session();

	/* --domains names none that runs: QEMUs on the test machine stay theirs */
	CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--start", "--separate=library",
				  "--events-dir=" CTL_TEST_EVENTS_DIR, "--domains=none-such"), 0);
	if (!strstr(out, "Profiler running."))
		fprintf(stderr, "\nopcontrol --start said:\n%s\n", out);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Profiler running."));
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL_FATAL(info.state, CTL_PID_RUNNING);
	pid = info.pid;
	CU_ASSERT_TRUE(ctl_pid_is_oprofiled(pid, buf, sizeof(buf)));

	/* dump until this process's samples are in a sample file (bounded) */
	for (int i = 0; i < 20 && !filed; i++) {
		burn_cpu_ms(100);
		CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--dump", NULL, NULL, NULL), 0);
		filed = own_samples_filed();
	}
	CU_ASSERT_TRUE(filed);
	/* mapped sample files show samples before a dump writes the stats
	 * that count them: one more dump, then the stats are at least as new */
	CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--dump", NULL, NULL, NULL), 0);
	CU_ASSERT(stats_u64("dumps") >= 1 && stats_u64("dumps") != UINT64_MAX);
	CU_ASSERT(stats_u64("samples_received") > 0 && stats_u64("samples_received") != UINT64_MAX);
	CU_ASSERT_EQUAL(stats_u64("running"), 1);

	/* status: the daemon's own stats and session.conf (written once its
	 * collector runs, so after the first samples came through) */
	CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--status", NULL, NULL, NULL), 0);
	snprintf(buf, sizeof(buf), "running (pid %d", (int)pid);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, buf));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Collector:    perf\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "Separate:     library\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "samples received"));

	real_daemon_save(pid);

	/* stop: the daemon exits, its pid file goes, its stats say so */
	CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--stop", NULL, NULL, NULL), 0);
	CU_ASSERT_FALSE(ctl_pid_alive(pid));
	ctl_pid_probe(tmp_session, &info);
	CU_ASSERT_EQUAL(info.state, CTL_PID_NONE);
	CU_ASSERT_EQUAL(stats_u64("running"), 0);
	CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--stop", NULL, NULL, NULL), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "not running"));
	CU_ASSERT_EQUAL(opcontrol(out, sizeof(out), "--status", NULL, NULL, NULL), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "not running"));
	if (CU_get_number_of_failures())
		fprintf(stderr, "\n(session kept: %s)\n", tmp_session);
	else
		rm_session();
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "parse table", test_parse_table },
		{ "parse values", test_parse_values },
		{ "stored settings (--setup)", test_setup_merge },
		{ "the setup file", test_setup_file },
		{ "default collector", test_default_collector },
		{ "collectors from the daemon's table", test_collector_from_daemon },
		{ "parse too many events", test_parse_too_many_events },
		{ "options on the daemon's command line", test_daemon_argv },
		{ "pid parse", test_pid_parse },
		{ "pid probe", test_pid_probe },
		{ "pid zombie", test_pid_zombie },
		{ "status format", test_status_format },
		{ "status no session", test_status_no_session },
		{ "status per domain", test_status_domains },
		{ "start stop dump reset", test_start_stop_dump },
		{ "start over foreign pid", test_start_foreign_pid },
		{ "start failures", test_start_failures },
		{ "real oprofiled: start status dump stop", test_real_daemon },
	};

	/* the fake daemon's parent must be waited for by ctl_start, not ignored */
	signal(SIGCHLD, SIG_DFL);
	/*
	 * Detached fake daemons become our children, not init's, so none is
	 * left a zombie where init does not reap (containers).
	 */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/* no stored --setup of whoever runs the tests */
	setenv("HOME", "/nonexistent-domprof-test-home", 1);
	du_log_set(capture_log);
	return du_test_main("opcontrol", tests, DU_TEST_N(tests), NULL, NULL);
}
