/*
 * OProfile 0.9's opcontrol verbs on domprof's model (opcontrol(1),
 * "OProfile 0.9"): --setup keeps options for later commands as 0.9 kept
 * them in ~/.oprofile/daemonrc; --init has no oprofilefs to mount, so it
 * checks what --start will need (and loads the module for the kmod
 * collector); --shutdown and --deinit stop the daemon, which in domprof
 * --stop already ends; --list-events is ophelp's list.  --save lives
 * beside --reset (ctl_reset.c): both move samples/current.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "events/ev.h"
#include "util/du_sdir.h"

int ctl_setup_path(char *buf, size_t len)
{
	const char *home = getenv("HOME");
	char canon[PATH_MAX];

	/* canonical: the file is reached walking without symlinks (du_nf_*) */
	if (!home || !*home || !realpath(home, canon))
		return -ENOENT;
	if (snprintf(buf, len, "%s/.domprof/setup", canon) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int ctl_setup_save(const struct ctl_opts *o, const char *path, FILE *out, char *err,
		   size_t errlen)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 8];
	char *slash;
	int ret;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	ret = du_nf_mkdirs(dir);
	if (!ret)
		ret = du_nf_write_atomic(path, tmp, o->setup, o->setup_len, 0600);
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(-ret));
		return ret;
	}
	fprintf(out, "Settings stored in %s for later opcontrol commands%s\n", path,
		o->setup_len ? ":" : " (none).");
	for (const char *p = o->setup; p < o->setup + o->setup_len;) {
		size_t n = strcspn(p, "\n");

		fprintf(out, "  %.*s\n", (int)n, p);
		p += n + 1;
	}
	return 0;
}

static void init_perf(FILE *out)
{
	char buf[32] = "unknown";
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			snprintf(buf, sizeof(buf), "unknown");
		fclose(f);
		buf[strcspn(buf, "\n")] = '\0';
	}
	fprintf(out, "  module:      none needed (perf_event_open)\n");
	fprintf(out, "  privileges:  %s; kernel.perf_event_paranoid is %s\n",
		geteuid() ? "not root: system-wide profiling needs root or CAP_PERFMON" : "root",
		buf);
}

static int init_events(const struct ctl_opts *o, FILE *out, char *err, size_t errlen)
{
	const char *dir = o->events_dir ? o->events_dir : ev_default_dir();
	char msg[256];
	struct ev_table *t = ev_table_load(dir, NULL, msg, sizeof(msg));
	struct ev_spec def;
	size_t n = 0;

	if (!t) {
		snprintf(err, errlen, "cannot load the event table from %s: %s", dir, msg);
		return -ENOENT;
	}
	while (ev_table_get(t, n))
		n++;
	fprintf(out, "  events:      CPU type %s, %zu events (%s)\n", ev_table_cpu_type(t), n, dir);
	if (!ev_default_spec(t, &def)) {
		fprintf(out, "  default:     ");
		ev_spec_print(out, &def);
	}
	ev_table_free(t);
	return 0;
}

int ctl_init(const struct ctl_opts *o, FILE *out, char *err, size_t errlen)
{
	char daemon[PATH_MAX];
	struct ctl_pid_info info;
	int ret;

	fprintf(out, "domprof: checking what profiling needs (collector %s)\n", o->collector);
	if (!strcmp(o->collector, "kmod")) {
		ret = ctl_kmod_load(err, errlen);
		if (ret)
			return ret;
		fprintf(out, "  module:      domprof loaded\n");
	} else if (!strcmp(o->collector, "perf")) {
		init_perf(out);
	} else {
		fprintf(out, "  module:      none needed (libxenctrl)\n");
	}
	ret = init_events(o, out, err, errlen);
	if (ret)
		return ret;
	ctl_find_daemon(daemon, sizeof(daemon));
	fprintf(out, "  daemon:      %s\n", daemon);
	ctl_pid_probe(o->session_dir, &info);
	fprintf(out, "  session:     %s (%s)\n", o->session_dir,
		info.state == CTL_PID_RUNNING ? "daemon running" : "no daemon running");
	return 0;
}

int ctl_shutdown(const char *session_dir, int timeout_ms, FILE *out, char *err, size_t errlen)
{
	struct ctl_pid_info info;

	/* 0.9's --stop left its daemon idle and --shutdown ended it; here
	 * --stop ends it, so after one --shutdown has nothing left to do */
	ctl_pid_probe(session_dir, &info);
	if (info.state != CTL_PID_RUNNING) {
		ctl_pid_warn_stale(session_dir, &info);
		fprintf(out, "Daemon not running (session %s): nothing to shut down.\n",
			session_dir);
		return 0;
	}
	return ctl_stop(session_dir, timeout_ms, out, err, errlen);
}

int ctl_list_events(const struct ctl_opts *o, FILE *out, char *err, size_t errlen)
{
	const char *dir = o->events_dir ? o->events_dir : ev_default_dir();
	char msg[256];
	struct ev_table *t = ev_table_load(dir, NULL, msg, sizeof(msg));

	if (!t) {
		snprintf(err, errlen, "cannot load the event table from %s: %s", dir, msg);
		return -ENOENT;
	}
	ev_table_list(out, t);
	ev_table_free(t);
	return 0;
}
