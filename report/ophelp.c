/*
 * ophelp: list the events of a CPU type, check event specifications, and
 * give the default event, in OProfile's spelling.  Thin: lib/events does
 * the work.
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/ev.h"
#include "util/du_cli.h"
#include "util/du_log.h"

enum { OPT_EVENTS_DIR = 256 };

static const struct option options[] = {
	{ "cpu-type", required_argument, NULL, 'c' },
	{ "check-events", no_argument, NULL, 'e' },
	{ "get-default-event", no_argument, NULL, 'd' },
	{ "get-cpu-type", no_argument, NULL, 'r' },
	{ "events-dir", required_argument, NULL, OPT_EVENTS_DIR },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: ophelp [OPTION]...\n"
		"       ophelp --check-events SPEC...\n"
		"List the events of this CPU (or of --cpu-type), check event\n"
		"specifications, or print the default event.\n"
		"\n"
		"  -c, --cpu-type=TYPE      use TYPE's table (x86-64/arch, timer) instead\n"
		"                           of detecting it\n"
		"  -e, --check-events       check each SPEC (NAME[:COUNT[:UM[:KERNEL[:USER]]]]);\n"
		"                           print it completed with defaults, or say what\n"
		"                           is wrong with the first bad one and exit 1\n"
		"  -d, --get-default-event  print the default event as NAME:COUNT:UM:1:1\n"
		"  -r, --get-cpu-type       print the CPU type\n"
		"      --events-dir=DIR     read event tables from DIR (default %s)\n"
		"  -h, --help               this help\n"
		"  -v, -V, --version        print the version\n",
		DP_EVENTS_DIR);
}

static void print_spec(const struct ev_spec *s)
{
	printf("%s:%" PRIu64 ":", s->name, s->count);
	if (s->unit_mask)
		printf("0x%" PRIx32, s->unit_mask);
	else
		putchar('0');
	printf(":%d:%d\n", s->kernel, s->user);
}

static void print_counters(uint32_t m)
{
	bool first = true;
	int i;

	for (i = 0; i < 32; i++) {
		if (!(m & (1u << i)))
			continue;
		printf("%s%d", first ? "" : ",", i);
		first = false;
	}
}

static void list_events(const struct ev_table *t)
{
	const struct ev_info *e;
	struct ev_spec def;
	size_t i, j;

	printf("domprof: available events for CPU type \"%s\"\n", ev_table_cpu_type(t));
	if (ev_default_spec(t, &def) == 0) {
		printf("Default event: ");
		print_spec(&def);
	}
	printf("\nEvent specification: NAME[:COUNT[:UM[:KERNEL[:USER]]]] (opcontrol --event);\n"
	       "COUNT is the number of events between two samples%s.\n\n",
	       strcmp(ev_table_cpu_type(t), "timer") ? "" : " (for TIMER: nanoseconds of CPU time)");

	for (i = 0; (e = ev_table_get(t, i)); i++) {
		uint32_t v, um_default = 0;
		const char *desc;
		bool plain;
		struct ev_spec s = { 0 };

		printf("%s: (counter: ", e->name);
		print_counters(e->counters);
		printf(")\n\t%s (min count: %" PRIu64 ", default: %" PRIu64 ")\n",
		       e->desc, e->minimum, e->default_count);

		/* the default unit mask, as a spec without one gets it */
		snprintf(s.name, sizeof(s.name), "%s", e->name);
		s.kernel = s.user = true;
		if (ev_spec_check(t, &s, NULL, 0) == 0)
			um_default = s.unit_mask;

		/* like OProfile, say nothing of a lone "no unit mask" 0x0 */
		plain = ev_unit_mask_get(t, e, 0, &v) && v == 0 && !ev_unit_mask_get(t, e, 1, NULL);
		if (plain)
			continue;
		printf("\tUnit masks (default 0x%" PRIx32 ")\n\t----------\n", um_default);
		for (j = 0; (desc = ev_unit_mask_get(t, e, j, &v)); j++)
			printf("\t0x%02" PRIx32 ": %s\n", v, desc);
	}
}

int main(int argc, char **argv)
{
	const char *cpu_type = NULL, *dir = ev_default_dir();
	bool check = false, get_default = false, get_cpu = false;
	struct ev_table *t = NULL;
	char err[512];
	int c, i, ret = 1;

	du_log_set_prog("ophelp");
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:edrhvV", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			cpu_type = optarg;
			break;
		case 'e':
			check = true;
			break;
		case 'd':
			get_default = true;
			break;
		case 'r':
			get_cpu = true;
			break;
		case OPT_EVENTS_DIR:
			dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'v':
		case 'V':
			du_cli_version(stdout, "ophelp");
			return 0;
		default:
			snprintf(err, sizeof(err), "unknown or malformed option \"%s\"", argv[optind - 1]);
			du_cli_usage_error(stderr, "ophelp", err);
			return 1;
		}
	}
	if (check + get_default + get_cpu > 1 || (check && optind >= argc) ||
	    (!check && optind < argc)) {
		du_cli_usage_error(stderr, "ophelp",
				   check ? "--check-events takes event specifications, and only them" :
				   "these options do not go together, or take no arguments");
		return 1;
	}

	t = ev_table_load(dir, cpu_type, err, sizeof(err));
	if (!t) {
		fprintf(stderr, "ophelp: %s\n", err);
		return 1;
	}
	if (get_cpu) {
		printf("%s\n", ev_table_cpu_type(t));
	} else if (get_default) {
		struct ev_spec s;

		if (ev_default_spec(t, &s)) {
			fprintf(stderr, "ophelp: no default event for CPU type %s\n", ev_table_cpu_type(t));
			goto out_free_table;
		}
		print_spec(&s);
	} else if (check) {
		for (i = optind; i < argc; i++) {
			struct ev_spec s;

			if (ev_spec_parse(argv[i], &s, err, sizeof(err)) ||
			    ev_spec_check(t, &s, err, sizeof(err))) {
				fprintf(stderr, "ophelp: %s\n", err);
				goto out_free_table;
			}
			print_spec(&s);
		}
	} else {
		list_events(t);
	}
	ret = 0;
out_free_table:
	ev_table_free(t);
	return ret;
}
