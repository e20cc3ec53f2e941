/* opreport's command line, parsed into one configuration struct. */
#ifndef REP_OPTS_H
#define REP_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rep_sym.h"

struct rep_spec;

enum rep_merge {
	REP_MERGE_LIB = 1 << 0,
	REP_MERGE_CPU = 1 << 1,
	REP_MERGE_TID = 1 << 2,
	REP_MERGE_TGID = 1 << 3,
	REP_MERGE_UNITMASK = 1 << 4,
	REP_MERGE_ALL = (1 << 5) - 1,
};

enum rep_sort_key { REP_SORT_SAMPLE, REP_SORT_IMAGE, REP_SORT_APP, REP_SORT_SYMBOL, REP_SORT_VMA };

#define REP_MAX_SORT 5

struct rep_opts {
	const char *session_dir;	/* borrowed from argv or a default */
	unsigned merge;			/* REP_MERGE_* */
	bool symbols;			/* -l */
	bool reverse;			/* -r: smallest first */
	double threshold;		/* percent; rows below are hidden */
	enum rep_sort_key sort[REP_MAX_SORT];
	size_t nsort;
	char **image_path;		/* -p directories, owned */
	size_t nimage_path;
	const char *root;		/* --root, borrowed */
	const char *debug_dir;		/* --debug-dir, borrowed; NULL: /usr/lib/debug */
	struct rep_spec *spec;		/* owned */
	const char *output;		/* -o FILE, borrowed; NULL: stdout */
	bool wide;			/* --wide: columns as wide as their longest entry */
	bool json;			/* --json: the machine-readable report */
	bool xml;			/* -X: OProfile's XML report (doc/opreport.xsd) */
	bool show_address;		/* -w: a vma column */
	bool debug_info;		/* -g: the source file and line of each symbol */
	bool details;			/* -d: samples per instruction under each symbol */
	bool long_names;		/* -f: whole paths, not basenames */
	bool no_header;			/* -n: no header, no column titles */
	bool accumulated;		/* -a: cumulated samples and percentages */
	bool global_percent;		/* -%: percentages of the whole profile */
	bool exclude_dependent;		/* -x: only the applications' own images */
	const char *exclude_syms;	/* -e: comma list, borrowed; NULL none */
	const char *include_syms;	/* -i: comma list, borrowed; NULL all */
	enum rep_demangle demangle;	/* -D */
	bool callgraph;			/* -c: callers and callees ({cg} files) */
	const char *flamegraph;		/* --flamegraph=FILE, borrowed: opflame's SVG */
};

/*
 * Parse @argv.  0: run; 1: --help or --version was printed to @out, exit 0; -EINVAL: a
 * message and the usage were printed to @err, exit 1.  Release @o after
 * any return.
 */
int rep_opts_parse(struct rep_opts *o, int argc, char **argv, FILE *out, FILE *err);
void rep_opts_release(struct rep_opts *o);
void rep_usage(FILE *f);

/*
 * The sample directory the report reads: SESSION/samples/NAME, NAME from
 * the specification's session: tag, else "current"; with "/@sub" after it
 * when @sub is not NULL.  malloc'd; NULL when out of memory.
 */
char *rep_samples_path(const struct rep_opts *o, const char *sub);

/*
 * Check that the sample directory is there and readable; else say which
 * (a saved session by its name, a permission problem as one) with
 * du_err() and return -errno.
 */
int rep_samples_check(const struct rep_opts *o);

/* Parse a --merge list ("lib,cpu,tid,tgid,unitmask,all") into REP_MERGE_* bits. */
int rep_parse_merge(const char *s, unsigned *out);
/* Parse a --sort list into @o->sort. */
int rep_parse_sort(const char *s, struct rep_opts *o);

#endif
