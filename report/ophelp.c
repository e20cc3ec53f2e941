/*
 * ophelp: list the events of a CPU type, check event specifications, and
 * give the default event, in OProfile's spelling.  Thin: lib/events does
 * the work.
 */
#include "config.h"

#include <getopt.h>
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

/* --check-events: each of @specs[0..@n) parsed, checked against @t and
 * printed in full; 0, or 1 at the first bad one (said). */
static int check_specs(const struct ev_table *t, char **specs, int n)
{
	char err[512];

	for (int i = 0; i < n; i++) {
		struct ev_spec s;

		if (ev_spec_parse(specs[i], &s, err, sizeof(err)) ||
		    ev_spec_check(t, &s, err, sizeof(err))) {
			fprintf(stderr, "ophelp: %s\n", err);
			return 1;
		}
		ev_spec_print(stdout, &s);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cpu_type = NULL, *dir = ev_default_dir();
	bool check = false, get_default = false, get_cpu = false;
	struct ev_table *t = NULL;
	char err[512];
	int c, ret = 1;

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
			du_cli_getopt_msg(err, sizeof(err), argv[optind - 1], options);
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
		ev_spec_print(stdout, &s);
	} else if (check) {
		if (check_specs(t, argv + optind, argc - optind))
			goto out_free_table;
	} else {
		ev_table_list(stdout, t);
	}
	ret = 0;
out_free_table:
	ev_table_free(t);
	return ret;
}
