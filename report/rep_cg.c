/* opreport -c: the call graph, laid out as OProfile's. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_opts.h"
#include "rep_output.h"
#include "rep_rows.h"

struct cg_layout {
	size_t cw, iw;
	int dw;
};

/* Column widths as the symbol listing sizes them. */
static void cg_widths(const struct rep_opts *o, const struct rep_profile *p,
		      const struct rep_row *rows, struct cg_layout *l)
{
	size_t dlen = 0;
	uint64_t maxc = 0;

	l->cw = 8;
	l->iw = 25;
	for (size_t i = 0; i < p->nrows; i++) {
		if (strlen(rows[i].image) + 1 > l->iw)
			l->iw = strlen(rows[i].image) + 1;
		if (strlen(rows[i].domain) > dlen)
			dlen = strlen(rows[i].domain);
		for (size_t c = 0; c < p->nclasses; c++)
			if (rows[i].counts[c] > maxc)
				maxc = rows[i].counts[c];
	}
	for (size_t a = 0; a < p->narcs; a++)
		for (size_t c = 0; c < p->nclasses; c++)
			if (rep_counts(p, p->arcs[a].counts)[c] > maxc)
				maxc = rep_counts(p, p->arcs[a].counts)[c];
	while (maxc >= 10000000) {
		maxc /= 10;
		l->cw++;
	}
	if (l->iw > 40 && !o->wide)
		l->iw = 40;
	l->dw = o->wide && dlen > 16 ? (int)dlen : 16;
}

static void cg_line(FILE *f, const struct rep_profile *p, const struct cg_layout *l,
		    const char *indent, const uint64_t *counts, const uint64_t *totals,
		    const struct rep_row *r, const char *suffix)
{
	char pct[16];

	fputs(indent, f);
	for (size_t c = 0; c < p->nclasses; c++) {
		rep_format_pct(pct, sizeof(pct), rep_pct_of(counts[c], totals[c]));
		fprintf(f, "%-*" PRIu64 " %-8s ", (int)l->cw, counts[c], pct);
	}
	if (p->has_domain)
		fprintf(f, "%-*s ", l->dw, r->domain);
	fprintf(f, "%-*s ", (int)l->iw, r->image);
	if (p->separate_lib)
		fprintf(f, "%-*s ", (int)l->iw, r->app);
	fprintf(f, "%s%s\n", r->symbol, suffix);
}

/* qsort context: the profile whose arcs are sorted, by first class. */
static const struct rep_profile *arc_sort_p;

static int cmp_arc(const void *pa, const void *pb)
{
	const struct rep_arc *a = &arc_sort_p->arcs[*(const size_t *)pa];
	const struct rep_arc *b = &arc_sort_p->arcs[*(const size_t *)pb];
	uint64_t x = rep_counts(arc_sort_p, a->counts)[0], y = rep_counts(arc_sort_p, b->counts)[0];

	return x > y ? -1 : x < y ? 1 : (a->from < b->from ? -1 : a->from > b->from);
}

/* The arcs into (@into) or out of row @src, sorted, and their sums. */
static size_t cg_arcs(const struct rep_profile *p, size_t src, bool into, size_t *idx,
		      uint64_t *sum)
{
	size_t n = 0;

	memset(sum, 0, p->nclasses * sizeof(*sum));
	for (size_t a = 0; a < p->narcs; a++) {
		if ((into ? p->arcs[a].to : p->arcs[a].from) != src)
			continue;
		idx[n++] = a;
		for (size_t c = 0; c < p->nclasses; c++)
			sum[c] += rep_counts(p, p->arcs[a].counts)[c];
	}
	arc_sort_p = p;
	qsort(idx, n, sizeof(*idx), cmp_arc);
	return n;
}

/* Is row @r shown in a call graph: its own samples, or its calls in or
 * out (summed into @in and @out by cg_arcs), over the threshold? */
bool rep_cg_shown(const struct rep_opts *o, const struct rep_profile *p, const struct rep_row *r,
		     size_t *idx, uint64_t *in, uint64_t *out)
{
	cg_arcs(p, r->src, true, idx, in);
	cg_arcs(p, r->src, false, idx, out);
	return rep_above_threshold(o, p, r->counts) || rep_above_threshold(o, p, in) ||
	       rep_above_threshold(o, p, out);
}

/* One entry: callers above, the symbol, then [self] and its callees. */
static void cg_entry(FILE *f, const struct rep_profile *p, const struct cg_layout *l,
		     const struct rep_row *rows, const size_t *pos, size_t i, size_t *idx,
		     uint64_t *in, uint64_t *out)
{
	const struct rep_row *r = &rows[i];
	size_t src = r->src, n;

	n = cg_arcs(p, src, true, idx, in);
	for (size_t k = 0; k < n; k++)
		cg_line(f, p, l, "  ", rep_counts(p, p->arcs[idx[k]].counts), in,
			&rows[pos[p->arcs[idx[k]].from]], "");
	cg_line(f, p, l, "", r->counts, p->totals, r, "");
	n = cg_arcs(p, src, false, idx, out);
	for (size_t c = 0; c < p->nclasses; c++)
		out[c] += r->counts[c];
	cg_line(f, p, l, "  ", r->counts, out, r, " [self]");
	for (size_t k = 0; k < n; k++)
		cg_line(f, p, l, "  ", rep_counts(p, p->arcs[idx[k]].counts), out,
			&rows[pos[p->arcs[idx[k]].to]], "");
	fputs("-------------------------------------------------------------------------------\n",
	      f);
}

/*
 * OProfile's call-graph layout: per symbol (sorted as -l sorts), its
 * callers indented above it (% of all its callers' arcs), the symbol's own
 * samples (% of the total), then indented its [self] samples and its
 * callees (% of self plus all its callees' arcs).  --threshold keeps an
 * entry whose own samples, callers' or callees' arcs reach it.
 */
int rep_cg_print(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	struct rep_row *rows = rep_rows_make(o, p, true);
	size_t n = p->nclasses, *pos = calloc(p->nrows + 1, sizeof(*pos));
	size_t *idx = calloc(p->narcs + 1, sizeof(*idx));
	uint64_t *in = calloc(n, sizeof(*in)), *out = calloc(n, sizeof(*out));
	struct cg_layout l;
	int rc = -ENOMEM;

	if (!rows || !pos || !idx || !in || !out)
		goto out_free;
	cg_widths(o, p, rows, &l);
	rep_rows_sort(rows, p->nrows, o, n);
	for (size_t i = 0; i < p->nrows; i++)
		pos[rows[i].src] = i;
	for (size_t c = 0; c < n; c++)
		fprintf(f, "%-*s %-8s ", (int)l.cw, "samples", "%");
	if (p->has_domain)
		fprintf(f, "%-*s ", l.dw, "domain");
	fprintf(f, "%-*s ", (int)l.iw, "image name");
	if (p->separate_lib)
		fprintf(f, "%-*s ", (int)l.iw, "app name");
	fputs("symbol name\n", f);
	fputs("-------------------------------------------------------------------------------\n",
	      f);
	for (size_t i = 0; i < p->nrows; i++)
		if (rep_cg_shown(o, p, &rows[i], idx, in, out))
			cg_entry(f, p, &l, rows, pos, i, idx, in, out);
	rc = 0;
out_free:
	if (rows)
		rep_rows_free(rows, p->nrows);
	free(pos);
	free(idx);
	free(in);
	free(out);
	return rc;
}

