/*
 * opcontrol's logic, kept out of opcontrol.c so the unit tests can drive it.
 * Everything here follows the session contract (doc/session.md): the pid
 * file, the stats and session.conf files, and oprofiled's command line.
 *
 * Conventions: actions return 0 or -errno with a one-line message in the
 * caller's @err buffer (the program prefixes it with "opcontrol: ");
 * normal output goes to the FILE the caller passes; warnings go through
 * du_warn().
 */
#ifndef CTL_H
#define CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util/du_kv.h"

#define CTL_MAX_EVENTS		16
#define CTL_DUMP_TIMEOUT_MS	10000
#define CTL_STOP_TIMEOUT_MS	30000
#define CTL_START_TIMEOUT_MS	30000

enum ctl_action {
	CTL_NONE,
	CTL_START,
	CTL_STOP,
	CTL_DUMP,
	CTL_STATUS,
	CTL_RESET,
	CTL_HELP,
	CTL_VERSION,
	CTL_INIT,		/* OProfile 0.9's verbs, mapped (ctl_o9.c) */
	CTL_SETUP,
	CTL_SHUTDOWN,
	CTL_DEINIT,
	CTL_SAVE,
	CTL_LIST_EVENTS,
};

/* Where --setup keeps its options: $HOME/.domprof/setup (OProfile kept
 * them in ~/.oprofile/daemonrc), "key value" lines (util/du_kv.h). */
#define CTL_SETUP_FILE_DESC	"$HOME/.domprof/setup"
#define CTL_SETUP_MAX		8192

/* The parsed command line.  Strings are borrowed from argv. */
struct ctl_opts {
	enum ctl_action action;
	const char *session_dir;	/* never NULL after parsing */
	const char *events[CTL_MAX_EVENTS];
	size_t n_events;
	const char *separate;		/* NULL: daemon default */
	const char *collector;		/* ctl_default_collector() unless given */
	const char *domains;		/* NULL: not given */
	const char *record;
	const char *events_dir;		/* NULL: DP_EVENTS_DIR */
	bool verbose;
	bool no_dom0;		/* --no-dom0: the xen collector leaves dom0 out */
	unsigned int callgraph;		/* --callgraph depth, 0: off */
	bool callgraph_given;
	unsigned int guest_cpu_ms;	/* --guest-cpu, 0: the daemon's default */
	bool guest_cpu_given;
	unsigned int guest_cpu_total_ms;	/* --guest-cpu-total, as guest_cpu_ms */
	bool guest_cpu_total_given;
	unsigned int xen_budget_pct;	/* --xen-read-budget */
	bool xen_budget_given;
	const char *vmlinux;		/* --vmlinux (accepted, not read) */
	bool no_vmlinux;
	const char *save_name;		/* --save=NAME */
	uint64_t given;			/* options on the command line, by bit */
	/* what --setup stores: the given options as "key value" lines,
	 * paths made absolute, then the stored ones not given again */
	char setup[CTL_SETUP_MAX];
	size_t setup_len;
};

/*
 * Parse opcontrol's arguments (argv[0] is skipped) into @o with
 * getopt_long (long options may be abbreviated).  At most one action; none
 * with options given means --setup, as in OProfile.  Start options with an
 * action that does not take them, unknown or ambiguous options, repeated
 * single-value options, a bad --save name and a bad --separate value
 * are refused: -EINVAL with a message.  The collector is checked later,
 * against the daemon's table (ctl_collector_check).  Event names are
 * not checked here (see ctl_events_resolve).  The session directory and
 * the collector get their defaults, except with --setup (which stores only
 * what is given).
 */
int ctl_parse_args(int argc, char *const *argv, struct ctl_opts *o, char *err, size_t errlen);

/*
 * The same, and then the stored settings @setup (NULL: none) fill every
 * option the command line did not give, checked as if given; @setup_what
 * names their file in messages.  @setup's strings are borrowed by @o.
 */
int ctl_parse_args_setup(int argc, char *const *argv, const struct du_kv *setup,
			 const char *setup_what, struct ctl_opts *o, char *err, size_t errlen);

/* Fill @o's options that its command line did not give from @setup. */
int ctl_setup_apply(struct ctl_opts *o, const struct du_kv *setup, const char *what, char *err,
		    size_t errlen);

/*
 * The collector --start uses when none is given: "xen" when @caps_path
 * (CTL_XEN_CAPS, xenfs's capabilities file) says this is Xen's control
 * domain (dom0) and domprof was built with libxen, else "perf".
 */
#define CTL_XEN_CAPS "/proc/xen/capabilities"
const char *ctl_default_collector(const char *caps_path);

/* What oprofiled's collector table says of one collector opcontrol can
 * start (a live one). */
struct ctl_collector {
	bool events;		/* programs the --event list (the default one
				 * when none is given) */
	bool events_optional;	/* programs --event when given, else its own */
};

/*
 * Find @name among the live collectors of @text, the output of oprofiled
 * --list-collectors ("NAME WORD..." lines): 0 with *@c filled, or -ENOENT.
 * @names gets the live collectors' names, ", "-separated, for a message.
 */
int ctl_collectors_parse(const char *text, const char *name, struct ctl_collector *c,
			 char *names, size_t nameslen);

/*
 * Ask @daemon (ctl_find_daemon) whether it has a live collector @name:
 * 0 with *@c filled, -EINVAL naming the ones it has, or -errno when it
 * could not be asked; @err says which.
 */
int ctl_collector_check(const char *daemon, const char *name, struct ctl_collector *c,
			char *err, size_t errlen);
void ctl_usage(FILE *f);

/*
 * Check every event of @o against the event table (ev_table_load with a
 * NULL cpu type, from o->events_dir or DP_EVENTS_DIR) and write each, with
 * defaults filled in, as "NAME:COUNT:UM:K:U" into @specs (n_out of them;
 * the table's default event when none was given).
 */
int ctl_events_resolve(const struct ctl_opts *o, char specs[][96], size_t max, size_t *n_out,
		       char *err, size_t errlen);

/* ---- pid file ------------------------------------------------------- */

enum ctl_pid_state {
	CTL_PID_NONE,		/* no pid file */
	CTL_PID_RUNNING,	/* live oprofiled */
	CTL_PID_STALE,		/* unreadable content or process gone */
	CTL_PID_FOREIGN,	/* live process that is not oprofiled */
	CTL_PID_UNLOCKED,	/* an oprofiled without this session's lock */
};

struct ctl_pid_info {
	enum ctl_pid_state state;
	pid_t pid;		/* 0 when the file held no valid pid */
	char comm[32];		/* FOREIGN: what runs under that pid */
};

/* Inspect SESSION/oprofiled.pid: the daemon is the process holding the
 * file's lock (F_GETLK), not merely one the file names.  Never fails:
 * problems become states. */
void ctl_pid_probe(const char *session_dir, struct ctl_pid_info *info);
/* Parse a pid file's content: a decimal pid > 1, optional trailing newline. */
bool ctl_pid_parse(const char *text, pid_t *pid);
/* The process exists and is not a zombie. */
bool ctl_pid_alive(pid_t pid);
/* The process's comm or executable name is "oprofiled". Fills @comm. */
bool ctl_pid_is_oprofiled(pid_t pid, char *comm, size_t commlen);
/* du_warn() about a STALE/FOREIGN pid file; nothing for other states. */
void ctl_pid_warn_stale(const char *session_dir, const struct ctl_pid_info *info);

/* ---- actions ---------------------------------------------------------- */

/* What --status shows, gathered so that formatting is a pure function. */
struct ctl_status {
	const char *session_dir;
	struct ctl_pid_info pid;
	const struct du_kv *stats;	/* NULL: no stats file */
	const struct du_kv *conf;	/* NULL: no session.conf */
	time_t now;
};

/* Write the person-readable status report. */
void ctl_status_format(FILE *out, const struct ctl_status *st);
/* --status: gather and print; -ENOENT when there is no session at all. */
int ctl_status(const char *session_dir, FILE *out, char *err, size_t errlen);

/*
 * The kernel collector (ctl_kmod.c).  ctl_kmod_load: make sure the device
 * is there, loading the installed module with modprobe if not (never
 * builds it); 0 or -ENODEV with the reason in @err.  ctl_kmod_status: the
 * module's per-CPU samples and lost counters, nothing when not loaded.
 * $DOMPROF_KMOD_DEVICE, $DOMPROF_MODPROBE, $DOMPROF_KMOD_STATS: tests.
 */
int ctl_kmod_load(char *err, size_t errlen);
void ctl_kmod_status(FILE *out);

/*
 * Path of the oprofiled to run: $DOMPROF_OPROFILED if set (tests), else
 * next to this executable, else the build tree's ../daemon/oprofiled, else
 * $(bindir)/oprofiled, else plain "oprofiled" (looked up in $PATH).
 */
void ctl_find_daemon(char *buf, size_t len);

/*
 * Build oprofiled's argv for @o and the resolved @specs into @argv (at most
 * @max entries including the NULL terminator).  Strings are borrowed from
 * @o, @specs, @daemon and @session_abs, except "--opt=value" strings which
 * are written into @store (@storelen bytes).
 */
int ctl_daemon_argv(const char *daemon, const char *session_abs, const struct ctl_opts *o,
		    char specs[][96], size_t n_specs, const char **argv, size_t max,
		    char *store, size_t storelen);

/* --start with already resolved event specs. */
int ctl_start(const struct ctl_opts *o, char specs[][96], size_t n_specs, FILE *out,
	      char *err, size_t errlen);
/* --stop; -ESRCH "Daemon not running" when there is none. */
int ctl_stop(const char *session_dir, int timeout_ms, FILE *out, char *err, size_t errlen);
/* --dump; -ESRCH when no daemon, -ETIMEDOUT when stats did not move. */
int ctl_dump(const char *session_dir, int timeout_ms, FILE *out, char *err, size_t errlen);
/* The daemon's count of --save switches so far (stats key "saves"). */
uint64_t ctl_saves(const char *session_dir);
/*
 * --save under a running daemon @pid, once samples/current was renamed:
 * SIGUSR2, and wait until stats' "saves" grows past @saves (read before
 * the rename): the daemon closed its files and took a fresh
 * samples/current (opd_daemon_new_current).  -ESRCH, -ETIMEDOUT.
 */
int ctl_new_current(const char *session_dir, pid_t pid, uint64_t saves, int timeout_ms,
		    char *err, size_t errlen);
/* --reset: refuses (-EBUSY) while the daemon runs. */
int ctl_reset(const char *session_dir, FILE *out, char *err, size_t errlen);

/* ---- OProfile 0.9's verbs (ctl_o9.c) ---------------------------------- */

/*
 * The setup file's path into @buf: CTL_SETUP_FILE_DESC with $HOME made
 * canonical.  -ENOENT without $HOME.
 */
int ctl_setup_path(char *buf, size_t len);
/* --setup: write o->setup as the setup file @path (directory made 0700,
 * file 0600, replaced atomically) and say what it holds on @out. */
int ctl_setup_save(const struct ctl_opts *o, const char *path, FILE *out, char *err,
		   size_t errlen);
/* --init: check what --start will need and say what was found; for the
 * kmod collector, load the module (as 0.9's --init did). */
int ctl_init(const struct ctl_opts *o, FILE *out, char *err, size_t errlen);
/* --shutdown, --deinit: --stop, and no daemon is not an error. */
int ctl_shutdown(const char *session_dir, int timeout_ms, FILE *out, char *err, size_t errlen);
/* --list-events: ophelp's list for this CPU. */
int ctl_list_events(const struct ctl_opts *o, FILE *out, char *err, size_t errlen);

/*
 * --save=NAME: move SESSION/samples/current to SESSION/samples/NAME, NAME
 * not taken (-EEXIST), same checks as --reset; NAME as
 * du_sdir_session_name_ok() allows.  With the daemon running: dump first,
 * move, then make the daemon continue into a fresh samples/current
 * (ctl_new_current).
 */
int ctl_save(const char *session_dir, const char *name, FILE *out, char *err, size_t errlen);

/* Whole program: returns the exit status. */
int ctl_main(int argc, char *const *argv, FILE *out, FILE *errf);

/* Helpers shared by the ctl_*.c files. */
int ctl_abs_path(const char *path, char *buf, size_t len);
void ctl_sleep_ms(int ms);

#endif
