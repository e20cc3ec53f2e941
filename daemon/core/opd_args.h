/*
 * oprofiled's command line: its options into a struct opd_conf (and what
 * comes with it), its usage text.  The program itself is opd_main.c.
 */
#ifndef OPD_ARGS_H
#define OPD_ARGS_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "domprof/raw.h"
#include "opd_collector.h"
#include "opd_conf.h"

/* What the command line says. */
struct opd_opts {
	struct opd_conf conf;
	const struct opd_collector_ops *collector;
	const char *event_args[DP_RAW_MAX_EVENTS];
	unsigned int nr_event_args;
	bool max_files_given;
	char session_canon[PATH_MAX];	/* conf.session_dir once checked */
	char sdir_err[PATH_MAX + 256];
};

/*
 * Parse @argv into @o (zeroed by the caller), after the defaults and
 * DOMPROF_PRIVSEP.  0, 1 (usage error, said on stderr), 2 (--help),
 * 3 (--version) or 4 (--list-collectors).
 */
int opd_parse_opts(int argc, char **argv, struct opd_opts *o);

/* The usage text onto @f. */
void opd_usage(FILE *f);

#endif
