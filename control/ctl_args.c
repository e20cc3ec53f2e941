#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domprof/agent.h"
#include "domprof/raw.h"

#include "ctl.h"
#include "ctl_libvirt.h"
#include "util/du_separate.h"

enum opt_id {
	OPT_START, OPT_STOP, OPT_DUMP, OPT_STATUS, OPT_RESET, OPT_HELP, OPT_VERSION,
	OPT_EVENT, OPT_SEPARATE, OPT_SESSION_DIR, OPT_COLLECTOR, OPT_DOMAINS,
	OPT_RECORD, OPT_EVENTS_DIR, OPT_VERBOSE, OPT_CALLGRAPH, OPT_NO_DOM0,
	OPT_GUEST_CPU, OPT_GUEST_CPU_TOTAL,
};

struct opt_def {
	const char *name;	/* long name without "--" */
	char shortname;		/* 0: none */
	enum opt_id id;
	bool has_arg;
	bool start_only;	/* meaningless with any other action */
};

static const struct opt_def opt_table[] = {
	{ "start",       0,   OPT_START,       false, false },
	{ "stop",        0,   OPT_STOP,        false, false },
	{ "dump",        0,   OPT_DUMP,        false, false },
	{ "status",      0,   OPT_STATUS,      false, false },
	{ "reset",       0,   OPT_RESET,       false, false },
	{ "help",        'h', OPT_HELP,        false, false },
	{ "version",     'v', OPT_VERSION,     false, false },
	{ "event",       'e', OPT_EVENT,       true,  true  },
	{ "separate",    0,   OPT_SEPARATE,    true,  true  },
	{ "session-dir", 0,   OPT_SESSION_DIR, true,  false },
	{ "collector",   0,   OPT_COLLECTOR,   true,  true  },
	{ "domains",     0,   OPT_DOMAINS,     true,  true  },
	{ "record",      0,   OPT_RECORD,      true,  true  },
	{ "events-dir",  0,   OPT_EVENTS_DIR,  true,  true  },
	{ "verbose",     0,   OPT_VERBOSE,     false, true  },
	{ "callgraph",   'c', OPT_CALLGRAPH,   true,  true  },
	{ "no-dom0",     0,   OPT_NO_DOM0,     false, true  },
	{ "guest-cpu",   0,   OPT_GUEST_CPU,   true,  true  },
	{ "guest-cpu-total", 0, OPT_GUEST_CPU_TOTAL, true, true },
};

static const struct {
	enum opt_id id;
	enum ctl_action action;
} action_map[] = {
	{ OPT_START, CTL_START }, { OPT_STOP, CTL_STOP }, { OPT_DUMP, CTL_DUMP },
	{ OPT_STATUS, CTL_STATUS }, { OPT_RESET, CTL_RESET }, { OPT_HELP, CTL_HELP },
	{ OPT_VERSION, CTL_VERSION },
};

static const char *action_name(enum ctl_action a)
{
	static const char *const names[] = {
		[CTL_NONE] = "none", [CTL_START] = "--start", [CTL_STOP] = "--stop",
		[CTL_DUMP] = "--dump", [CTL_STATUS] = "--status", [CTL_RESET] = "--reset",
		[CTL_HELP] = "--help", [CTL_VERSION] = "--version",
	};
	return names[a];
}

void ctl_usage(FILE *f)
{
	fprintf(f,
		"Usage: opcontrol ACTION [OPTION]...\n"
		"Control the domprof profiling daemon (oprofiled).\n"
		"\n"
		"Actions (exactly one):\n"
		"  --start              start profiling (starts oprofiled)\n"
		"  --stop               stop profiling; the daemon files everything and exits\n"
		"  --dump               make the daemon write out all samples so far\n"
		"  --status             show whether the daemon runs, and its statistics\n"
		"  --reset              move the current samples aside (daemon stopped)\n"
		"  -h, --help           show this help\n"
		"  -v, --version        show the version\n"
		"\n"
		"Options:\n"
		"  --session-dir=DIR    session directory [%s]\n"
		"\n"
		"Options of --start:\n"
		"  -e, --event=NAME:COUNT:UM:KERNEL:USER\n"
		"                       event to count (repeat for several; see ophelp)\n"
		"  --separate=LIST      " DU_SEP_WORDS "\n"
		"  --collector=NAME     perf, kmod or xen (default: xen on Xen's dom0,\n"
		"                       else perf)\n"
		"  --domains=LIST|all   domains (guests) to profile [all]\n"
		"  --record=FILE        also write the collector's raw stream to FILE\n"
		"  -c, --callgraph=DEPTH\n"
		"                       record call chains of at most DEPTH frames (0: off,\n"
		"                       the default; at most 127); frame pointers needed\n"
		"  --events-dir=DIR     event description files [%s]\n"
		"  --no-dom0            xen collector: the other domains only, not dom0's own\n"
		"                       work\n"
		"  --guest-cpu=MS       daemon CPU a second each domain's agent may take\n"
		"                       (1..%d) [%d]\n"
		"  --guest-cpu-total=MS the same for all domains together, in fair shares\n"
		"                       (1..%d) [%d]\n"
		"  --verbose            make the daemon log more\n",
		DP_DEFAULT_SESSION_DIR, DP_EVENTS_DIR, DP_AG_GUEST_CPU_MS_MAX, DP_AG_GUEST_CPU_MS,
		DP_AG_GUEST_CPU_MS_MAX, DP_AG_GUEST_CPU_TOTAL_MS);
	ctl_lv_usage(f);
}

static const struct opt_def *find_long(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(opt_table) / sizeof(opt_table[0]); i++)
		if (strlen(opt_table[i].name) == n && !strncmp(opt_table[i].name, name, n))
			return &opt_table[i];
	return NULL;
}

static const struct opt_def *find_short(char c)
{
	for (size_t i = 0; i < sizeof(opt_table) / sizeof(opt_table[0]); i++)
		if (opt_table[i].shortname == c)
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

static int apply(struct ctl_opts *o, const struct opt_def *d, const char *val,
		 bool *start_only_seen, const char **start_only_name, char *err, size_t errlen)
{
	if (d->start_only && !*start_only_seen) {
		*start_only_seen = true;
		*start_only_name = d->name;
	}
	for (size_t i = 0; i < sizeof(action_map) / sizeof(action_map[0]); i++) {
		if (action_map[i].id != d->id)
			continue;
		if (o->action != CTL_NONE && o->action != action_map[i].action) {
			snprintf(err, errlen, "only one action at a time: %s and %s",
				 action_name(o->action), action_name(action_map[i].action));
			return -EINVAL;
		}
		o->action = action_map[i].action;
		return 0;
	}
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
	case OPT_VERBOSE:
		o->verbose = true;
		return 0;
	case OPT_NO_DOM0:
		o->no_dom0 = true;
		return 0;
	case OPT_CALLGRAPH:
		return set_number(&o->callgraph, &o->callgraph_given, val, 0, DP_RAW_CC_MAX,
				  d->name, "a depth", err, errlen);
	case OPT_GUEST_CPU:
		return set_number(&o->guest_cpu_ms, &o->guest_cpu_given, val, 1, DP_AG_GUEST_CPU_MS_MAX, d->name,
				  "milliseconds", err, errlen);
	case OPT_GUEST_CPU_TOTAL:
		return set_number(&o->guest_cpu_total_ms, &o->guest_cpu_total_given, val, 1,
				  DP_AG_GUEST_CPU_MS_MAX, d->name, "milliseconds", err, errlen);
	default:
		break;
	}
	snprintf(err, errlen, "internal: unhandled option --%s", d->name);
	return -EINVAL;
}

int ctl_parse_args(int argc, char *const *argv, struct ctl_opts *o, char *err, size_t errlen)
{
	bool start_only_seen = false;
	const char *start_only_name = NULL;
	int ret;

	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const struct opt_def *d = NULL;
		const char *val = NULL;

		if (a[0] == '-' && a[1] == '-' && a[2]) {
			const char *eq = strchr(a + 2, '=');
			size_t n = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);

			d = find_long(a + 2, n);
			if (!d) {
				snprintf(err, errlen, "unknown option '%.*s'", (int)(n > 64 ? 64 : n) + 2, a);
				return -EINVAL;
			}
			if (eq && !d->has_arg) {
				snprintf(err, errlen, "--%s takes no value", d->name);
				return -EINVAL;
			}
			if (eq)
				val = eq + 1;
		} else if (a[0] == '-' && a[1] && a[1] != '-' && !a[2]) {
			d = find_short(a[1]);
			if (!d) {
				snprintf(err, errlen, "unknown option '%s'", a);
				return -EINVAL;
			}
		} else {
			snprintf(err, errlen, "unexpected argument '%.64s'", a);
			return -EINVAL;
		}
		if (d->has_arg && !val) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "--%s needs a value", d->name);
				return -EINVAL;
			}
			val = argv[++i];
		}
		ret = apply(o, d, val, &start_only_seen, &start_only_name, err, errlen);
		if (ret)
			return ret;
	}

	if (o->action == CTL_NONE) {
		snprintf(err, errlen, "no action given (one of --start, --stop, --dump, --status, --reset)");
		return -EINVAL;
	}
	if (o->action == CTL_HELP || o->action == CTL_VERSION)
		goto defaults;
	if (start_only_seen && o->action != CTL_START) {
		snprintf(err, errlen, "--%s only applies to --start, not %s",
			 start_only_name, action_name(o->action));
		return -EINVAL;
	}
	if (o->separate) {
		unsigned int bits;

		ret = du_separate_parse(o->separate, &bits, err, errlen);
		if (ret)
			return ret;
	}
	if (o->collector && strcmp(o->collector, "perf") && strcmp(o->collector, "kmod") &&
	    strcmp(o->collector, "xen")) {
		snprintf(err, errlen, "unknown collector '%.64s' (perf, kmod or xen)", o->collector);
		return -EINVAL;
	}
defaults:
	if (!o->session_dir)
		o->session_dir = DP_DEFAULT_SESSION_DIR;
	if (!o->collector)
		o->collector = ctl_default_collector(CTL_XEN_CAPS);
	return 0;
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
