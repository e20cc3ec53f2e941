/*
 * oprofiled's command line (opd_args.h): the options, checked one by one
 * and then together against the collector's capabilities.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dom_backend.h"
#include "domprof/agent.h"
#include "opd_args.h"
#include "util/du_cli.h"

void opd_usage(FILE *f)
{
	char coll[128], back[128];

	opd_collector_names(coll, sizeof(coll));
	dom_backend_names(back, sizeof(back));
	fprintf(f,
		"usage: oprofiled --session-dir=DIR [options]\n"
		"  --session-dir=DIR      session directory (created if missing)\n"
		"  --collector=NAME       where samples come from: %s (default perf)\n"
		"  --input=FILE           raw stream to replay (--collector=file)\n"
		"  --event=NAME:COUNT:UM:K:U  event to sample (repeatable; perf)\n"
		"  --separate=LIST        comma list of none, lib, library, kernel, thread, cpu, all\n"
		"  --record=FILE          also write the raw stream to FILE\n"
		"  --events-dir=DIR       event tables (default: the installed ones)\n"
		"  --domains=LIST         domains to profile: all, or comma list of names or UUIDs\n"
		"  --domain-backend=NAME  how domains are found: auto|%s (default auto)\n"
		"  --libvirt-uri=URI      libvirt backend's connection (default qemu:///system)\n"
		"  --max-open-files=N     sample files kept open at once (default: from limits)\n"
		"  --callgraph=DEPTH      record call chains of at most DEPTH frames (0: off;\n"
		"                         at most 127; the collector asks for them)\n"
		"  --privsep[=USER]       after setup run the loop as USER (default domprof, never\n"
		"                         nobody) under seccomp, beside a root monitor; on by\n"
		"                         default as root (DOMPROF_PRIVSEP=USER names the user)\n"
		"  --no-privsep           run the loop as root (also DOMPROF_PRIVSEP=0)\n"
		"  --no-dom0              xen collector: sample the other domains only, not\n"
		"                         dom0's own work (the perf collector in its stream)\n"
		"  --xen-read-budget=PCT  xen collector: the share of a vCPU's time its context\n"
		"                         reads may hold it (0..100, default 5; 0: a read each\n"
		"                         period); past it a read stands for several periods\n"
		"  --hypervisor-user=LIST users QEMU may run as besides root (default libvirt-qemu,qemu)\n"
		"  --guest-cpu=MS         daemon CPU a second each domain's agent frames may take\n"
		"                         (1..%d, default %d); past it the domain's channel\n"
		"                         waits for the next second\n"
		"  --guest-cpu-total=MS   the same for all domains together (1..%d, default\n"
		"                         %d), in fair shares: each busy domain gets at least\n"
		"                         MS / its number, what one leaves goes to the others\n"
		"  --foreground           stay in the foreground, log to stderr too\n"
		"  --verbose              log debug messages\n"
		"  --list-collectors      the collectors, one a line with what each needs\n"
		"                         and gives (what opcontrol asks)\n"
		"  --help                 this text\n"
		"  --version              the version\n", coll, back, DP_AG_GUEST_CPU_MS_MAX,
		DP_AG_GUEST_CPU_MS, DP_AG_GUEST_CPU_MS_MAX, DP_AG_GUEST_CPU_TOTAL_MS);
}

enum {
	OPT_SESSION = 256, OPT_COLLECTOR, OPT_INPUT, OPT_EVENT, OPT_SEPARATE, OPT_RECORD,
	OPT_EVENTS_DIR, OPT_DOMAINS, OPT_FOREGROUND, OPT_VERBOSE, OPT_MAX_FILES, OPT_HELP, OPT_VERSION,
	OPT_DOMAIN_BACKEND, OPT_LIBVIRT_URI, OPT_CALLGRAPH, OPT_VM_USERS, OPT_PRIVSEP,
	OPT_NO_PRIVSEP, OPT_NO_DOM0, OPT_GUEST_CPU, OPT_GUEST_CPU_TOTAL, OPT_LIST_COLLECTORS,
	OPT_XEN_BUDGET,
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
	{ "domain-backend", required_argument, NULL, OPT_DOMAIN_BACKEND },
	{ "libvirt-uri", required_argument, NULL, OPT_LIBVIRT_URI },
	{ "hypervisor-user", required_argument, NULL, OPT_VM_USERS },
	{ "privsep", optional_argument, NULL, OPT_PRIVSEP },
	{ "no-privsep", no_argument, NULL, OPT_NO_PRIVSEP },
	{ "no-dom0", no_argument, NULL, OPT_NO_DOM0 },
	{ "xen-read-budget", required_argument, NULL, OPT_XEN_BUDGET },
	{ "guest-cpu", required_argument, NULL, OPT_GUEST_CPU },
	{ "guest-cpu-total", required_argument, NULL, OPT_GUEST_CPU_TOTAL },
	{ "foreground", no_argument, NULL, OPT_FOREGROUND },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "max-open-files", required_argument, NULL, OPT_MAX_FILES },
	{ "callgraph", required_argument, NULL, OPT_CALLGRAPH },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "list-collectors", no_argument, NULL, OPT_LIST_COLLECTORS },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* A positive decimal number, all of @s: 0 or -EINVAL. */
static int parse_count(const char *s, unsigned int *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || !v || v > UINT_MAX)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

/* --callgraph=DEPTH, 0..DP_RAW_CC_MAX: 0 or 1 (usage error). */
static int parse_callgraph(const char *s, unsigned int *depth)
{
	if (!strcmp(s, "0")) {
		*depth = 0;
		return 0;
	}
	if (parse_count(s, depth) || *depth > DP_RAW_CC_MAX) {
		fprintf(stderr, "oprofiled: bad --callgraph depth '%s' (0..%d)\n", s, DP_RAW_CC_MAX);
		return 1;
	}
	return 0;
}

/* --xen-read-budget=PCT, 0..100, into parts per million: 0 or 1 (usage
 * error, said). */
static int parse_budget(const char *s, int *ppm)
{
	unsigned int pct = 0;

	if (strcmp(s, "0") && (parse_count(s, &pct) || pct > 100)) {
		fprintf(stderr, "oprofiled: bad --xen-read-budget '%s' (a percentage, 0..100)\n", s);
		return 1;
	}
	*ppm = (int)pct * 10000;
	return 0;
}

/* The trust options: 0, or 1 for an unknown one. */
static int parse_trust(int opt, struct opd_conf *c)
{
	switch (opt) {
	case OPT_VM_USERS:
		c->vm_users = optarg;
		return 0;
	case OPT_PRIVSEP:
		c->privsep = true;
		if (optarg)
			c->privsep_user = optarg;
		return 0;
	case OPT_NO_PRIVSEP:
		c->privsep = false;
		return 0;
	case OPT_NO_DOM0:
		c->xen_dom0 = false;
		return 0;
	case OPT_XEN_BUDGET:
		return parse_budget(optarg, &c->xen_read_budget_ppm);
	case OPT_GUEST_CPU:
		if (parse_count(optarg, &c->guest_cpu_ms) || c->guest_cpu_ms > DP_AG_GUEST_CPU_MS_MAX) {
			fprintf(stderr, "oprofiled: bad --guest-cpu '%s' (milliseconds, 1..%d)\n",
				optarg, DP_AG_GUEST_CPU_MS_MAX);
			return 1;
		}
		return 0;
	case OPT_GUEST_CPU_TOTAL:
		if (parse_count(optarg, &c->guest_cpu_total_ms) ||
		    c->guest_cpu_total_ms > DP_AG_GUEST_CPU_MS_MAX) {
			fprintf(stderr, "oprofiled: bad --guest-cpu-total '%s' (milliseconds, 1..%d)\n",
				optarg, DP_AG_GUEST_CPU_MS_MAX);
			return 1;
		}
		return 0;
	default:
		return 1;
	}
}

/* One option: 0, 1 (usage error, said), 2 (--help) or 3 (--version). */
static int parse_one(int opt, struct opd_opts *o)
{
	struct opd_conf *c = &o->conf;

	switch (opt) {
	case OPT_SESSION:
		c->session_dir = optarg;
		break;
	case OPT_COLLECTOR:
		o->collector = opd_collector_find(optarg);
		if (!o->collector) {
			char names[128];

			opd_collector_names(names, sizeof(names));
			fprintf(stderr, "oprofiled: unknown collector '%s' (%s)\n", optarg, names);
			return 1;
		}
		c->collector = o->collector->name;
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
	case OPT_LIBVIRT_URI:
		c->libvirt_uri = optarg;
		break;
	case OPT_DOMAIN_BACKEND:
		if (strcmp(optarg, "auto") && !dom_backend_find(optarg)) {
			fprintf(stderr, "oprofiled: unknown domain backend '%s'\n", optarg);
			return 1;
		}
		c->domain_backend = strcmp(optarg, "auto") ? optarg : NULL;
		break;
	case OPT_FOREGROUND:
		c->foreground = true;
		break;
	case OPT_VERBOSE:
		c->verbose = true;
		break;
	case OPT_MAX_FILES:
		if (parse_count(optarg, &c->max_open_files)) {
			fprintf(stderr, "oprofiled: bad --max-open-files '%s'\n", optarg);
			return 1;
		}
		o->max_files_given = true;
		break;
	case OPT_CALLGRAPH:
		return parse_callgraph(optarg, &c->callgraph_depth);
	case OPT_HELP:
		return 2;
	case OPT_VERSION:
		return 3;
	case OPT_LIST_COLLECTORS:
		return 4;
	default:
		return parse_trust(opt, c);
	}
	return 0;
}

int opd_parse_opts(int argc, char **argv, struct opd_opts *o)
{
	struct opd_conf *c = &o->conf;
	unsigned int caps;
	const char *env;
	int opt, ret;

	opd_conf_defaults(c);
	o->collector = opd_collector_find(c->collector);
	/* the environment changes the default, options come after it */
	env = getenv("DOMPROF_PRIVSEP");
	if (env && (!strcmp(env, "0") || !strcmp(env, "no"))) {
		c->privsep = false;
	} else if (env && *env) {
		c->privsep = true;
		c->privsep_user = strcmp(env, "1") ? env : NULL;
	}
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (opt == '?') {
			char msg[256];

			du_cli_getopt_msg(msg, sizeof(msg), argv[optind - 1], long_opts);
			fprintf(stderr, "oprofiled: %s\n", msg);
			return 1;
		}
		ret = parse_one(opt, o);
		if (ret)
			return ret;
	}
	if (optind < argc) {
		fprintf(stderr, "oprofiled: unexpected argument '%s'\n", argv[optind]);
		return 1;
	}
	caps = o->collector->caps;
	if ((caps & OPD_CAP_INPUT) && !c->input) {
		fprintf(stderr, "oprofiled: --collector=%s needs --input=FILE\n", c->collector);
		return 1;
	}
	if (!(caps & OPD_CAP_INPUT) && c->input) {
		fprintf(stderr, "oprofiled: --input is for --collector=file\n");
		return 1;
	}
	if (!(caps & OPD_CAP_CALLCHAIN) && c->callgraph_depth) {
		fprintf(stderr, "oprofiled: --callgraph: the %s collector records no call chains "
			"(a replay has those of its stream)\n", c->collector);
		return 1;
	}
	c->live_proc_lookup = caps & OPD_CAP_LIVE;
	c->track_domains = caps & OPD_CAP_LIVE;
	return 0;
}
