/*
 * The rows of opreport's listings, shared by its writers (text, call
 * graph, JSON, XML): one printable row per group or symbol row of a
 * profile, labelled, sorted as --sort says, and the domain summary.
 * Internal to opreport's output.
 */
#ifndef REP_ROWS_H
#define REP_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rep_opts;
struct rep_profile;
struct rep_group;
struct sfn_image;

/* One printable row, whatever listing it belongs to. */
struct rep_row {
	const uint64_t *counts;
	const char *domain;	/* label, owned */
	char *app;		/* label, owned */
	char *image;		/* label, owned */
	const char *symbol;	/* borrowed from the profile's binaries */
	uint64_t vma;
	size_t group;		/* image listing: first group of the app; else the group */
	size_t src;		/* per-group or per-symbol rows: index in p->groups or p->rows */
};

/* 100 * @x / @total, 0 when @total is 0. */
double rep_pct_of(uint64_t x, uint64_t total);

/* "host", "NAME" or "NAME/vmm", malloc'd (NULL: out of memory). */
char *rep_domain_label(const struct rep_group *g);

/* Image labels as the listings print them: basenames, or whole paths
 * with -f (@o->long_names); the dep's marked " (unverified)". */
char *rep_rows_image_label(const struct rep_opts *o, const struct sfn_image *img);
char *rep_rows_dep_label(const struct rep_opts *o, const struct rep_group *g,
			 const struct sfn_image *img);
char *rep_rows_app_label(const struct rep_opts *o, const struct rep_group *g);

/*
 * One row per symbol row of @p (@symbols) or per group, labelled as the
 * listings print them, in @p's order.  NULL on allocation failure.
 * Free with rep_rows_free(rows, n) (n: p->nrows or p->ngroups).
 */
struct rep_row *rep_rows_make(const struct rep_opts *o, const struct rep_profile *p,
			      bool symbols);
void rep_rows_free(struct rep_row *rows, size_t n);	/* NULL accepted */

/* The identity of @g's application (everything but the dep), as a
 * malloc'd key (NULL: out of memory); and whether @g's dep is its
 * application (no --separate=lib split). */
char *rep_app_key(const struct rep_group *g);
bool rep_same_dep(const struct rep_group *g);

/* Sort @rows by @o->sort (-r reverses), ties in a stable total order. */
void rep_rows_sort(struct rep_row *rows, size_t n, const struct rep_opts *o, size_t nclasses);

/* Whether @counts reach --threshold in some class. */
bool rep_above_threshold(const struct rep_opts *o, const struct rep_profile *p,
			 const uint64_t *counts);

/* The domain summary's columns. */
enum { REP_DOM_TOTAL, REP_DOM_GKERN, REP_DOM_GUSER, REP_DOM_VMM, REP_DOM_NCOLS };

struct rep_dom {
	const char *name;	/* NULL: host; borrowed from the profile */
	uint64_t *v;		/* [nclasses][REP_DOM_NCOLS] */
};

/*
 * The domain summary: one entry per domain (the host first, when the
 * specification lets it in), sorted by name.  Free with free(*out): the
 * counts live in the same block.  0 or -ENOMEM.
 */
int rep_domain_totals(const struct rep_opts *o, const struct rep_profile *p,
		      struct rep_dom **out, size_t *nout);

/* --- the writers besides the text (rep_output.c) --- */

struct rep_info;
/* Length of the valid UTF-8 sequence of two or more bytes at @p, else 0. */
size_t rep_utf8_len(const unsigned char *p);
/* Is row @r shown in a call graph: its own samples, or its calls in or out
 * (summed into @in and @out; @idx room for p->narcs), over the threshold? */
bool rep_cg_shown(const struct rep_opts *o, const struct rep_profile *p, const struct rep_row *r,
		  size_t *idx, uint64_t *in, uint64_t *out);
/* The call graph (-c), laid out as OProfile's.  0 or -ENOMEM. */
int rep_cg_print(FILE *f, const struct rep_opts *o, const struct rep_profile *p);
/* --json; doc/opreport.1 holds its schema.  0 or -ENOMEM. */
int rep_json_print(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		   const char *collector);
/* -X: OProfile's XML report; doc/opreport.xsd holds its schema.  0 or -ENOMEM. */
int rep_xml_print(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		  const struct rep_info *in);

#endif
