#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domprof/agent.h"
#include "domprof/raw.h"

#include "ctl.h"
#include "ctl_libvirt.h"
#include "util/du_log.h"
#include "util/du_sdir.h"
#include "util/du_separate.h"

/* Which actions an option applies to (ctl_opts.action bits). */
#define ACT(a)		(1u << (a))
#define FOR_START	(ACT(CTL_START) | ACT(CTL_SETUP))
#define FOR_ALL		0u	/* any action */

enum opt_id {
	OPT_START, OPT_STOP, OPT_DUMP, OPT_STATUS, OPT_RESET, OPT_HELP, OPT_VERSION,
	OPT_INIT, OPT_SETUP, OPT_SHUTDOWN, OPT_DEINIT, OPT_SAVE, OPT_LIST_EVENTS,
	OPT_EVENT, OPT_SEPARATE, OPT_SESSION_DIR, OPT_COLLECTOR, OPT_DOMAINS,
	OPT_RECORD, OPT_EVENTS_DIR, OPT_VERBOSE, OPT_CALLGRAPH, OPT_NO_DOM0,
	OPT_GUEST_CPU, OPT_GUEST_CPU_TOTAL, OPT_VMLINUX, OPT_NO_VMLINUX,
	OPT_XEN_BUDGET, OPT_NR
};

struct opt_def {
	const char *name;	/* long name without "--" */
	char shortname;		/* 0: none */
	enum opt_id id;
	bool has_arg;
	enum ctl_action action;	/* CTL_NONE: an option, not an action */
	unsigned int applies;	/* ACT() bits of the actions it goes with; FOR_ALL */
	bool path;		/* stored by --setup as an absolute path */
};

/* OProfile 0.9's spellings; -h stays --help as in every domprof tool (0.9
 * had it for --shutdown). */
static const struct opt_def opt_table[] = {
	{ "start",       's', OPT_START,       false, CTL_START,    FOR_ALL, false },
	{ "stop",        't', OPT_STOP,        false, CTL_STOP,     FOR_ALL, false },
	{ "dump",        'd', OPT_DUMP,        false, CTL_DUMP,     FOR_ALL, false },
	{ "status",      0,   OPT_STATUS,      false, CTL_STATUS,   FOR_ALL, false },
	{ "reset",       0,   OPT_RESET,       false, CTL_RESET,    FOR_ALL, false },
	{ "help",        'h', OPT_HELP,        false, CTL_HELP,     FOR_ALL, false },
	{ "version",     'v', OPT_VERSION,     false, CTL_VERSION,  FOR_ALL, false },
	{ "init",        0,   OPT_INIT,        false, CTL_INIT,     FOR_ALL, false },
	{ "setup",       0,   OPT_SETUP,       false, CTL_SETUP,    FOR_ALL, false },
	{ "shutdown",    0,   OPT_SHUTDOWN,    false, CTL_SHUTDOWN, FOR_ALL, false },
	{ "deinit",      0,   OPT_DEINIT,      false, CTL_DEINIT,   FOR_ALL, false },
	{ "save",        0,   OPT_SAVE,        true,  CTL_SAVE,     FOR_ALL, false },
	{ "list-events", 'l', OPT_LIST_EVENTS, false, CTL_LIST_EVENTS, FOR_ALL, false },
	{ "event",       'e', OPT_EVENT,       true,  CTL_NONE, FOR_START, false },
	{ "separate",    'p', OPT_SEPARATE,    true,  CTL_NONE, FOR_START, false },
	{ "session-dir", 0,   OPT_SESSION_DIR, true,  CTL_NONE, FOR_ALL, true },
	{ "collector",   0,   OPT_COLLECTOR,   true,  CTL_NONE, FOR_START | ACT(CTL_INIT), false },
	{ "domains",     0,   OPT_DOMAINS,     true,  CTL_NONE, FOR_START, false },
	{ "record",      0,   OPT_RECORD,      true,  CTL_NONE, FOR_START, true },
	{ "events-dir",  0,   OPT_EVENTS_DIR,  true,  CTL_NONE,
	  FOR_START | ACT(CTL_INIT) | ACT(CTL_LIST_EVENTS), true },
	{ "verbose",     'V', OPT_VERBOSE,     false, CTL_NONE, FOR_START, false },
	{ "callgraph",   'c', OPT_CALLGRAPH,   true,  CTL_NONE, FOR_START, false },
	{ "no-dom0",     0,   OPT_NO_DOM0,     false, CTL_NONE, FOR_START, false },
	{ "guest-cpu",   0,   OPT_GUEST_CPU,   true,  CTL_NONE, FOR_START, false },
	{ "guest-cpu-total", 0, OPT_GUEST_CPU_TOTAL, true, CTL_NONE, FOR_START, false },
	{ "vmlinux",     0,   OPT_VMLINUX,     true,  CTL_NONE, FOR_START, true },
	{ "no-vmlinux",  0,   OPT_NO_VMLINUX,  false, CTL_NONE, FOR_START, false },
	{ "xen-read-budget", 0, OPT_XEN_BUDGET, true, CTL_NONE, FOR_START, false },
};

#define NR_OPTS (sizeof(opt_table) / sizeof(opt_table[0]))
_Static_assert(NR_OPTS == OPT_NR, "one opt_table entry per opt_id");
_Static_assert(OPT_NR <= 64, "opt_id fits the given mask");

static const char *action_name(enum ctl_action a)
{
	static const char *const names[] = {
		[CTL_NONE] = "none", [CTL_START] = "--start", [CTL_STOP] = "--stop",
		[CTL_DUMP] = "--dump", [CTL_STATUS] = "--status", [CTL_RESET] = "--reset",
		[CTL_HELP] = "--help", [CTL_VERSION] = "--version", [CTL_INIT] = "--init",
		[CTL_SETUP] = "--setup", [CTL_SHUTDOWN] = "--shutdown",
		[CTL_DEINIT] = "--deinit", [CTL_SAVE] = "--save",
		[CTL_LIST_EVENTS] = "--list-events",
	};
	return names[a];
}

void ctl_usage(FILE *f)
{
	fprintf(f,
		"Usage: opcontrol ACTION [OPTION]...\n"
		"Control the domprof profiling daemon (oprofiled).  Long options may be\n"
		"abbreviated; options without an action are stored as by --setup.\n"
		"\n"
		"Actions (exactly one):\n"
		"  --init               check what profiling needs (loads the module for\n"
		"                       --collector=kmod)\n"
		"  --setup              store the options given for later commands\n"
		"                       (%s)\n"
		"  -s, --start          start profiling (starts oprofiled)\n"
		"  -d, --dump           make the daemon write out all samples so far\n"
		"  -t, --stop           stop profiling; the daemon files everything and exits\n"
		"  --shutdown, --deinit the same as --stop; no daemon is no error\n"
		"  --save=NAME          move the current samples to session NAME (a running\n"
		"                       daemon goes on into fresh ones); opreport\n"
		"                       session:NAME reports them\n"
		"  --status             show whether the daemon runs, and its statistics\n"
		"  --reset              move the current samples aside (daemon stopped)\n"
		"  -l, --list-events    list the events of this CPU (as ophelp)\n"
		"  -h, --help           show this help\n"
		"  -v, --version        show the version\n"
		"\n"
		"Options:\n"
		"  --session-dir=DIR    session directory [%s]\n"
		"\n"
		"Options of --start and --setup:\n"
		"  -e, --event=NAME:COUNT:UM:KERNEL:USER\n"
		"                       event to count (repeat for several; see ophelp)\n"
		"  -p, --separate=LIST  " DU_SEP_WORDS "\n"
		"  --collector=NAME     where samples come from: a live collector of\n"
		"                       'oprofiled --list-collectors' (default: xen on\n"
		"                       Xen's dom0, else perf)\n"
		"  --domains=LIST|all   domains (guests) to profile [all]\n"
		"  --record=FILE        also write the collector's raw stream to FILE\n"
		"  -c, --callgraph=DEPTH\n"
		"                       record call chains of at most DEPTH frames (0: off,\n"
		"                       the default; at most 127); frame pointers needed\n"
		"  --events-dir=DIR     event description files [%s]\n"
		"  --no-dom0            xen collector: the other domains only, not dom0's own\n"
		"                       work\n"
		"  --xen-read-budget=PCT\n"
		"                       xen collector: the share of a vCPU's time its context\n"
		"                       reads may hold it (0..100, 0: a read each period) [5]\n"
		"  --guest-cpu=MS       daemon CPU a second each domain's agent may take\n"
		"                       (1..%d) [%d]\n"
		"  --guest-cpu-total=MS the same for all domains together, in fair shares\n"
		"                       (1..%d) [%d]\n"
		"  --vmlinux=FILE, --no-vmlinux\n"
		"                       accepted as OProfile's; kernel samples are always\n"
		"                       named from the kallsyms copied at --start\n"
		"  -V, --verbose        make the daemon log more\n",
		CTL_SETUP_FILE_DESC, DP_DEFAULT_SESSION_DIR, DP_EVENTS_DIR,
		DP_AG_GUEST_CPU_MS_MAX, DP_AG_GUEST_CPU_MS, DP_AG_GUEST_CPU_MS_MAX,
		DP_AG_GUEST_CPU_TOTAL_MS);
	ctl_lv_usage(f);
}

static const struct opt_def *find_name(const char *name, size_t n)
{
	for (size_t i = 0; i < NR_OPTS; i++)
		if (strlen(opt_table[i].name) == n && !strncmp(opt_table[i].name, name, n))
			return &opt_table[i];
	return NULL;
}

/* getopt_long's value for @d: its letter, else 256 + its id. */
static int opt_val(const struct opt_def *d)
{
	return d->shortname ? d->shortname : 256 + (int)d->id;
}

static const struct opt_def *find_val(int val)
{
	for (size_t i = 0; i < NR_OPTS; i++)
		if (opt_val(&opt_table[i]) == val)
			return &opt_table[i];
	return NULL;
}

static int set_once(const char **slot, const char *val, const char *name, char *err, size_t errlen)
{
	if (*slot) {
		snprintf(err, errlen, "--%s given twice", name);
		return -EINVAL;
	}
	if (!*val) {
		snprintf(err, errlen, "--%s needs a value", name);
		return -EINVAL;
	}
	*slot = val;
	return 0;
}

/* A decimal @val in @lo..@hi for option @name, given once (@given): 0, or
 * -EINVAL with a message saying what @what it needs. */
static int set_number(unsigned int *out, bool *given, const char *val, unsigned long lo,
		      unsigned long hi, const char *name, const char *what, char *err,
		      size_t errlen)
{
	char *end;
	unsigned long v;

	if (*given) {
		snprintf(err, errlen, "--%s given twice", name);
		return -EINVAL;
	}
	errno = 0;
	v = strtoul(val, &end, 10);
	if (!*val || *end || errno || val[0] == '-' || v < lo || v > hi) {
		snprintf(err, errlen, "--%s needs %s %lu..%lu, not '%.32s'", name, what, lo, hi,
			 val);
		return -EINVAL;
	}
	*given = true;
	*out = (unsigned int)v;
	return 0;
}

static int set_action(struct ctl_opts *o, const struct opt_def *d, const char *val, char *err,
		      size_t errlen)
{
	if (o->action != CTL_NONE && o->action != d->action) {
		snprintf(err, errlen, "only one action at a time: %s and %s",
			 action_name(o->action), action_name(d->action));
		return -EINVAL;
	}
	o->action = d->action;
	if (d->id == OPT_SAVE)
		return set_once(&o->save_name, val, d->name, err, errlen);
	return 0;
}

static int apply_string(struct ctl_opts *o, const struct opt_def *d, const char *val,
			char *err, size_t errlen)
{
	switch (d->id) {
	case OPT_EVENT:
		if (o->n_events == CTL_MAX_EVENTS) {
			snprintf(err, errlen, "too many --event options (at most %d)", CTL_MAX_EVENTS);
			return -EINVAL;
		}
		if (!*val) {
			snprintf(err, errlen, "--event needs a value NAME:COUNT:UM:KERNEL:USER");
			return -EINVAL;
		}
		o->events[o->n_events++] = val;
		return 0;
	case OPT_SEPARATE:
		return set_once(&o->separate, val, d->name, err, errlen);
	case OPT_SESSION_DIR:
		return set_once(&o->session_dir, val, d->name, err, errlen);
	case OPT_COLLECTOR:
		return set_once(&o->collector, val, d->name, err, errlen);
	case OPT_DOMAINS:
		return set_once(&o->domains, val, d->name, err, errlen);
	case OPT_RECORD:
		return set_once(&o->record, val, d->name, err, errlen);
	case OPT_EVENTS_DIR:
		return set_once(&o->events_dir, val, d->name, err, errlen);
	case OPT_VMLINUX:
		return set_once(&o->vmlinux, val, d->name, err, errlen);
	default:
		break;
	}
	snprintf(err, errlen, "internal: unhandled option --%s", d->name);
	return -EINVAL;
}

static int apply(struct ctl_opts *o, const struct opt_def *d, const char *val, char *err,
		 size_t errlen)
{
	if (d->action != CTL_NONE)
		return set_action(o, d, val, err, errlen);
	o->given |= 1ull << d->id;
	switch (d->id) {
	case OPT_VERBOSE:
		o->verbose = true;
		return 0;
	case OPT_NO_DOM0:
		o->no_dom0 = true;
		return 0;
	case OPT_NO_VMLINUX:
		o->no_vmlinux = true;
		return 0;
	case OPT_CALLGRAPH:
		return set_number(&o->callgraph, &o->callgraph_given, val, 0, DP_RAW_CC_MAX,
				  d->name, "a depth", err, errlen);
	case OPT_GUEST_CPU:
		return set_number(&o->guest_cpu_ms, &o->guest_cpu_given, val, 1,
				  DP_AG_GUEST_CPU_MS_MAX, d->name, "milliseconds", err, errlen);
	case OPT_GUEST_CPU_TOTAL:
		return set_number(&o->guest_cpu_total_ms, &o->guest_cpu_total_given, val, 1,
				  DP_AG_GUEST_CPU_MS_MAX, d->name, "milliseconds", err, errlen);
	case OPT_XEN_BUDGET:
		return set_number(&o->xen_budget_pct, &o->xen_budget_given, val, 0, 100,
				  d->name, "a percentage", err, errlen);
	default:
		return apply_string(o, d, val, err, errlen);
	}
}

/* Append "key value" for @d to o->setup: what --setup stores (the key is
 * the long name with '_' for '-', as du_kv keys are). */
static int note_setup(struct ctl_opts *o, const struct opt_def *d, const char *val, char *err,
		      size_t errlen)
{
	char abs[PATH_MAX], key[32];
	size_t room = sizeof(o->setup) - o->setup_len;
	int n, ret;

	if (d->action != CTL_NONE)
		return 0;
	if (d->path) {
		ret = ctl_abs_path(val, abs, sizeof(abs));
		if (ret) {
			snprintf(err, errlen, "--%s %.64s: %s", d->name, val, strerror(-ret));
			return ret;
		}
		val = abs;
	}
	if (strchr(val ? val : "", '\n')) {
		snprintf(err, errlen, "--%s: a newline in the value", d->name);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "%s", d->name);
	for (char *p = key; *p; p++)
		*p = *p == '-' ? '_' : *p;
	n = snprintf(o->setup + o->setup_len, room, "%s %s\n", key, d->has_arg ? val : "1");
	if (n < 0 || (size_t)n >= room) {
		snprintf(err, errlen, "too many options to store");
		return -E2BIG;
	}
	o->setup_len += (size_t)n;
	return 0;
}

/* "--a, --b, ..." for the long options that start with @p (@n bytes). */
static size_t candidates(const char *p, size_t n, char *buf, size_t len)
{
	size_t matches = 0, used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NR_OPTS; i++) {
		if (strncmp(opt_table[i].name, p, n))
			continue;
		if (used < len) {
			int w = snprintf(buf + used, len - used, "%s--%s", matches ? ", " : "",
					 opt_table[i].name);
			used += w > 0 ? (size_t)w : 0;
		}
		matches++;
	}
	return matches;
}

/* One line for what getopt_long refused in @argv at optind - 1. */
static void getopt_error(int c, char *const *argv, char *err, size_t errlen)
{
	const char *a = argv[optind - 1];
	const struct opt_def *d = optopt ? find_val(optopt) : NULL;
	size_t n = strcspn(a, "=");
	char names[160];

	if (c == ':' && d) {
		snprintf(err, errlen, "--%s needs a value", d->name);
		return;
	}
	if (d && a[0] == '-' && a[1] == '-' && a[n] == '=') {
		snprintf(err, errlen, "--%s takes no value", d->name);
		return;
	}
	if (a[0] == '-' && a[1] == '-' && candidates(a + 2, n - 2, names, sizeof(names)) > 1)
		snprintf(err, errlen, "ambiguous option '%.*s' (%s)", (int)(n > 64 ? 64 : n), a,
			 names);
	else if (a[0] == '-' && a[1] != '-' && optopt)
		snprintf(err, errlen, "unknown option '-%c'", optopt);
	else
		snprintf(err, errlen, "unknown option '%.*s'", (int)(n > 64 ? 64 : n), a);
}

static void make_getopt(struct option *lo, char *shorts)
{
	size_t ns = 0;

	shorts[ns++] = ':';	/* ':' for a missing value, '?' for the rest */
	for (size_t i = 0; i < NR_OPTS; i++) {
		const struct opt_def *d = &opt_table[i];

		lo[i] = (struct option){ d->name, d->has_arg ? required_argument : no_argument,
					 NULL, opt_val(d) };
		if (d->shortname) {
			shorts[ns++] = d->shortname;
			if (d->has_arg)
				shorts[ns++] = ':';
		}
	}
	lo[NR_OPTS] = (struct option){ NULL, 0, NULL, 0 };
	shorts[ns] = '\0';
}

/* The command line into @o (nothing checked across options yet). */
static int parse_argv(int argc, char *const *argv, struct ctl_opts *o, char *err, size_t errlen)
{
	struct option lo[NR_OPTS + 1];
	char shorts[2 * NR_OPTS + 2];
	int c, ret;

	make_getopt(lo, shorts);
	optind = 0;	/* glibc: start afresh (tests parse many times) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		const struct opt_def *d = find_val(c);

		if (c == '?' || c == ':' || !d) {
			getopt_error(c, argv, err, errlen);
			return -EINVAL;
		}
		ret = apply(o, d, optarg, err, errlen);
		if (!ret)
			ret = note_setup(o, d, optarg, err, errlen);
		if (ret)
			return ret;
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%.64s'", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int ctl_setup_apply(struct ctl_opts *o, const struct du_kv *setup, const char *what, char *err,
		    size_t errlen)
{
	const char *k, *v;
	char msg[256];
	uint64_t given = o->given;
	int ret;

	for (size_t i = 0; du_kv_entry(setup, i, &k, &v); i++) {
		char name[32];
		const struct opt_def *d;

		snprintf(name, sizeof(name), "%s", k);
		for (char *p = name; *p; p++)
			*p = *p == '_' ? '-' : *p;
		d = find_name(name, strlen(name));
		if (!d || d->action != CTL_NONE) {
			du_warn("%s: unknown setting '%s' ignored", what, k);
			continue;
		}
		if (given & (1ull << d->id))	/* the command line wins */
			continue;
		if ((d->id == OPT_VMLINUX && (given & (1ull << OPT_NO_VMLINUX))) ||
		    (d->id == OPT_NO_VMLINUX && (given & (1ull << OPT_VMLINUX))))
			continue;	/* one setting, either way */
		ret = apply(o, d, v, msg, sizeof(msg));
		if (!ret)
			ret = note_setup(o, d, v, msg, sizeof(msg));
		if (ret) {
			snprintf(err, errlen, "%s: %s", what, msg);
			return ret;
		}
	}
	return 0;
}

/* An option of @o that its action does not take: its name, else NULL. */
static const char *misplaced(const struct ctl_opts *o)
{
	for (size_t i = 0; i < NR_OPTS; i++) {
		const struct opt_def *d = &opt_table[i];

		if ((o->given & (1ull << d->id)) && d->applies && !(d->applies & ACT(o->action)))
			return d->name;
	}
	return NULL;
}

static int check_values(struct ctl_opts *o, char *err, size_t errlen)
{
	const char *bad = misplaced(o);
	int ret;

	if (bad) {
		snprintf(err, errlen, "--%s only applies to --start%s, not %s", bad,
			 !strcmp(bad, "events-dir") ? ", --setup, --init or --list-events" :
			 !strcmp(bad, "collector") ? ", --setup or --init" : " or --setup",
			 action_name(o->action));
		return -EINVAL;
	}
	if (o->vmlinux && o->no_vmlinux) {
		snprintf(err, errlen, "--vmlinux and --no-vmlinux do not go together");
		return -EINVAL;
	}
	if (o->save_name && !du_sdir_session_name_ok(o->save_name)) {
		snprintf(err, errlen, "--save needs a session name (" DU_SDIR_SESSION_NAME_RULE
			 "), not '%.64s'", o->save_name);
		return -EINVAL;
	}
	if (o->separate) {
		unsigned int bits;

		ret = du_separate_parse(o->separate, &bits, err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

int ctl_parse_args_setup(int argc, char *const *argv, const struct du_kv *setup,
			 const char *setup_what, struct ctl_opts *o, char *err, size_t errlen)
{
	int ret;

	memset(o, 0, sizeof(*o));
	ret = parse_argv(argc, argv, o, err, errlen);
	if (ret)
		return ret;
	if (o->action == CTL_NONE && !o->given) {
		snprintf(err, errlen, "no action given (--init, --setup, --start, --dump, --stop, "
			 "--shutdown, --save=NAME, --status, --reset, --list-events)");
		return -EINVAL;
	}
	if (o->action == CTL_NONE)	/* OProfile: options alone are a setup */
		o->action = CTL_SETUP;
	if (o->action == CTL_HELP || o->action == CTL_VERSION)
		goto defaults;
	ret = check_values(o, err, errlen);
	if (ret)
		return ret;
	/* stored settings fill what was not given, for the actions they
	 * apply to (the session directory: every action) */
	if (setup) {
		uint64_t cmdline = o->given;

		ret = ctl_setup_apply(o, setup, setup_what, err, errlen);
		o->given = cmdline;
		if (ret)
			return ret;
		ret = check_values(o, err, errlen);
		if (ret)
			return ret;
	}
	if (o->action == CTL_SETUP)	/* stores what was given, not defaults */
		return 0;
defaults:
	if (!o->session_dir)
		o->session_dir = DP_DEFAULT_SESSION_DIR;
	if (!o->collector)
		o->collector = ctl_default_collector(CTL_XEN_CAPS);
	return 0;
}

int ctl_parse_args(int argc, char *const *argv, struct ctl_opts *o, char *err, size_t errlen)
{
	return ctl_parse_args_setup(argc, argv, NULL, NULL, o, err, errlen);
}

const char *ctl_default_collector(const char *caps_path)
{
	char buf[256];
	size_t n;
	FILE *f;

#ifndef HAVE_XEN
	/* an oprofiled built without libxen has no xen collector */
	(void)caps_path;
	(void)buf;
	(void)n;
	(void)f;
	return "perf";
#else
	/* perf in dom0 sees dom0 alone: the other domains' vCPUs run under
	 * Xen, out of its reach; the xen collector reads them from here */
	f = fopen(caps_path, "re");
	if (!f)
		return "perf";
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, "control_d") ? "xen" : "perf";
#endif
}
