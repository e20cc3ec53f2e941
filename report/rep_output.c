#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_hash.h"
#include "rep_opts.h"
#include "rep_view.h"
#include "rep_output.h"
#include "rep_spec.h"
#include "rep_sym.h"

/* One printable row, whatever listing it belongs to. */
struct row {
	const uint64_t *counts;
	const char *domain;	/* label */
	char *app;		/* label, owned */
	char *image;		/* label, owned */
	const char *symbol;
	uint64_t vma;
	size_t group;		/* image listing: first group of the app; else the group */
	size_t src;		/* per-group or per-symbol rows: index in p->groups or p->rows */
};

struct sorter {
	const struct rep_opts *o;
	size_t nclasses;
};

/* qsort has no context; the report is single-threaded. */
static struct sorter sort_ctx;

void rep_format_pct(char *buf, size_t size, double pct)
{
	snprintf(buf, size, pct >= 99.99995 ? "%.3f" : "%.4f", pct);
}

static double pct_of(uint64_t x, uint64_t total)
{
	return total ? 100.0 * (double)x / (double)total : 0.0;
}

static char *domain_label(const struct rep_group *g)
{
	char *s = NULL;

	if (!g->domain)
		return strdup("host");
	if (asprintf(&s, "%s%s", g->domain, g->vmm ? "/vmm" : "") < 0)
		return NULL;
	return s;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	const struct rep_opts *o = sort_ctx.o;
	int r = 0;

	for (size_t k = 0; k < o->nsort && !r; k++) {
		switch (o->sort[k]) {
		case REP_SORT_SAMPLE:
			for (size_t c = 0; c < sort_ctx.nclasses && !r; c++)
				if (a->counts[c] != b->counts[c])
					r = a->counts[c] > b->counts[c] ? -1 : 1;
			break;
		case REP_SORT_IMAGE:
			r = cmp_str(a->image, b->image);
			break;
		case REP_SORT_APP:
			r = cmp_str(a->app, b->app);
			break;
		case REP_SORT_SYMBOL:
			r = cmp_str(a->symbol, b->symbol);
			break;
		case REP_SORT_VMA:
			r = a->vma < b->vma ? -1 : a->vma > b->vma;
			break;
		}
	}
	if (o->reverse)
		r = -r;
	/* Ties: a stable, total order so output never depends on hashing. */
	if (!r)
		r = cmp_str(a->domain, b->domain);
	if (!r)
		r = cmp_str(a->app, b->app);
	if (!r)
		r = cmp_str(a->image, b->image);
	if (!r)
		r = cmp_str(a->symbol, b->symbol);
	return r;
}

static void sort_rows(struct row *rows, size_t n, const struct rep_opts *o, size_t nclasses)
{
	sort_ctx.o = o;
	sort_ctx.nclasses = nclasses;
	qsort(rows, n, sizeof(*rows), cmp_row);
}

static bool above_threshold(const struct rep_opts *o, const struct rep_profile *p,
			    const uint64_t *counts)
{
	if (o->threshold <= 0)
		return true;
	for (size_t c = 0; c < p->nclasses; c++)
		if (pct_of(counts[c], p->totals[c]) >= o->threshold)
			return true;
	return false;
}

static void free_rows(struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(rows[i].app);
		free(rows[i].image);
		free((char *)rows[i].domain);
	}
	free(rows);
}

static void print_header(FILE *f, const struct rep_profile *p, const char *collector)
{
	if (collector)
		fprintf(f, "Profiling through the %s collector\n", collector);
	for (size_t c = 0; c < p->nclasses; c++)
		fprintf(f, "Counted %s events with a unit mask of 0x%02x count %" PRIu64 "\n",
			p->classes[c].event, p->classes[c].unit_mask, p->classes[c].count);
	for (size_t i = 0; i < p->nnotes; i++)
		fprintf(f, "Warning: %s\n", p->notes[i]);
	if (p->nnotes)
		fputs("Warning: rows marked \"" REP_UNVERIFIED "\" are named from a binary that may not "
		      "be the one profiled\n", f);
}

/* --- DOMAIN SUMMARY --------------------------------------------------- */

enum { DOM_TOTAL, DOM_GKERN, DOM_GUSER, DOM_VMM, DOM_NCOLS };

struct dom {
	const char *name;	/* NULL: host */
	uint64_t *v;		/* [nclasses][DOM_NCOLS] */
};

static int cmp_dom(const void *pa, const void *pb)
{
	const struct dom *a = pa, *b = pb;

	if (!a->name || !b->name)
		return a->name ? 1 : b->name ? -1 : 0;
	return strcmp(a->name, b->name);
}

/*
 * A domain's own (non-{vmm}) sample is guest kernel work when it fell in a
 * guest kernel image, or, until the agent's sideband lets the daemon name
 * guest images, in its {anon:guest-kernel} bucket.
 */
static bool is_guest_kernel(const struct sfn_image *dep)
{
	return dep->kind == SFN_KERN || (dep->kind == SFN_ANON && !strcmp(dep->name, "guest-kernel"));
}

/*
 * The domain summary: one entry per domain (the host first, when the
 * specification lets it in), sorted by name.  Free with free(*out): the
 * counts live in the same block.
 */
static int domain_totals(const struct rep_opts *o, const struct rep_profile *p,
			 struct dom **out, size_t *nout)
{
	size_t cap = p->ngroups + 1, stride = p->nclasses * DOM_NCOLS, nd = 0;
	struct dom *d = calloc(1, cap * (sizeof(*d) + stride * sizeof(uint64_t)));
	uint64_t *vals;

	if (!d)
		return -ENOMEM;
	vals = (uint64_t *)(d + cap);
	for (size_t k = 0; k < cap; k++)
		d[k].v = vals + k * stride;
	if (rep_spec_domain_ok(o->spec, NULL))
		d[nd++].name = NULL;
	for (size_t i = 0; i < p->ngroups; i++) {
		const struct rep_group *g = &p->groups[i];
		struct dom *t = NULL;

		for (size_t k = 0; k < nd && !t; k++)
			if (!cmp_str(d[k].name, g->domain) && (d[k].name || !g->domain))
				t = &d[k];
		if (!t) {
			t = &d[nd++];
			t->name = g->domain;
		}
		for (size_t c = 0; c < p->nclasses; c++) {
			uint64_t x = rep_counts(p, g->counts)[c], *v = t->v + c * DOM_NCOLS;

			v[DOM_TOTAL] += x;
			if (!g->domain)
				continue;
			if (g->vmm)
				v[DOM_VMM] += x;
			else if (is_guest_kernel(&g->dep))
				v[DOM_GKERN] += x;
			else
				v[DOM_GUSER] += x;
		}
	}
	qsort(d, nd, sizeof(*d), cmp_dom);
	*out = d;
	*nout = nd;
	return 0;
}

/* Width of a name column: @min, or under -w the longest entry's @len if more. */
static int col_width(const struct rep_opts *o, int min, size_t len)
{
	return o->wide && len > (size_t)min ? (int)len : min;
}

static int print_domains(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	struct dom *d;
	size_t nd, longest = 0;
	char pct[16];
	int rc = domain_totals(o, p, &d, &nd), dw;

	if (rc)
		return rc;
	for (size_t k = 0; k < nd; k++)
		if (d[k].name && strlen(d[k].name) > longest)
			longest = strlen(d[k].name);
	dw = col_width(o, 20, longest);
	for (size_t c = 0; c < p->nclasses; c++) {
		fprintf(f, "DOMAIN SUMMARY (%s:%" PRIu64 ")\n", p->classes[c].event,
			p->classes[c].count);
		fprintf(f, "%-*s %12s %8s %14s %14s %14s\n", dw, "domain", "samples", "%",
			"guest-kernel", "guest-user", "vmm");
		for (size_t k = 0; k < nd; k++) {
			const uint64_t *v = d[k].v + c * DOM_NCOLS;

			rep_format_pct(pct, sizeof(pct), pct_of(v[DOM_TOTAL], p->totals[c]));
			fprintf(f, "%-*s %12" PRIu64 " %8s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
				dw, d[k].name ? d[k].name : "host", v[DOM_TOTAL], pct, v[DOM_GKERN],
				v[DOM_GUSER], v[DOM_VMM]);
		}
		fputc('\n', f);
	}
	free(d);
	return 0;
}

/* --- image listing -------------------------------------------------------- */

static void print_col_header(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
			     const char *indent)
{
	char label[64];

	fputs(indent, f);
	for (size_t c = 0; c < p->nclasses; c++) {
		int n = snprintf(label, sizeof(label), "%s:%" PRIu64, p->classes[c].event,
				 p->classes[c].count);

		if (n > 17 && !o->wide)
			memcpy(label + 14, "...", 4);
		fprintf(f, "%17s|", label);
	}
	fprintf(f, "\n%s", indent);
	for (size_t c = 0; c < p->nclasses; c++)
		fputs("  samples|      %|", f);
	fprintf(f, "\n%s", indent);
	for (size_t c = 0; c < p->nclasses; c++)
		fputs("------------------", f);
	fputc('\n', f);
}

static void print_counts(FILE *f, const struct rep_profile *p, const uint64_t *counts,
			 const uint64_t *totals)
{
	char pct[16];

	for (size_t c = 0; c < p->nclasses; c++) {
		rep_format_pct(pct, sizeof(pct), pct_of(counts[c], totals[c]));
		fprintf(f, "%9" PRIu64 " %7s ", counts[c], pct);
	}
}

/* The identity of a group's application: everything but the dep. */
static char *app_key(const struct rep_group *g)
{
	char *k = NULL;

	if (asprintf(&k, "%s%c%d%c%d%c%s%c%" PRId64 ".%" PRId64 ".%" PRId64,
		     g->domain ? g->domain : "", 1, g->vmm + 2 * !g->domain, 1, (int)g->app.kind,
		     1, g->app.name, 1, g->tgid, g->tid, g->cpu) < 0)
		return NULL;
	return k;
}

/* A group whose application is its dep (no --separate=lib split). */
static bool same_dep(const struct rep_group *g)
{
	return g->dep.kind == g->app.kind && !strcmp(g->dep.name, g->app.name);
}

static int print_images(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	size_t n = p->nclasses, napps = 0, dlen = 0;
	size_t *app_of = calloc(p->ngroups, sizeof(*app_of));
	struct row *apps = calloc(p->ngroups, sizeof(*apps));
	uint64_t *sums = calloc(p->ngroups * n, sizeof(*sums));
	bool *has_deps = calloc(p->ngroups, sizeof(*has_deps));
	struct rep_strmap *ids = rep_strmap_new();
	int rc = -ENOMEM, dw;

	if (!app_of || !apps || !sums || !has_deps || !ids)
		goto out_free;
	for (size_t i = 0; i < p->ngroups; i++) {
		const struct rep_group *g = &p->groups[i];
		char *key = app_key(g);
		long found;
		size_t a;

		if (!key)
			goto out_free;
		found = rep_strmap_get(ids, key);
		a = found >= 0 ? (size_t)found : napps;
		if (found < 0 && rep_strmap_put(ids, key, a)) {
			free(key);
			goto out_free;
		}
		free(key);
		if (a == napps) {
			apps[a].group = i;
			apps[a].counts = sums + a * n;
			apps[a].domain = domain_label(g);
			apps[a].app = rep_view_app_label(g);
			apps[a].image = rep_view_image_label(&g->app);
			if (apps[a].app && same_dep(g) && g->unverified) {
				char *m = NULL;

				if (asprintf(&m, "%s " REP_UNVERIFIED, apps[a].app) < 0)
					m = NULL;
				free(apps[a].app);
				apps[a].app = m;
			}
			if (!apps[a].domain || !apps[a].app || !apps[a].image)
				goto out_free;
			napps++;
		}
		app_of[i] = a;
		for (size_t c = 0; c < n; c++)
			sums[a * n + c] += rep_counts(p, g->counts)[c];
		if (g->dep.kind != g->app.kind || strcmp(g->dep.name, g->app.name))
			has_deps[a] = true;
	}
	sort_rows(apps, napps, o, n);
	for (size_t a = 0; a < napps; a++)
		dlen = strlen(apps[a].domain) > dlen ? strlen(apps[a].domain) : dlen;
	dw = col_width(o, 16, dlen);
	print_col_header(f, o, p, "");
	for (size_t a = 0; a < napps; a++) {
		struct row *deps;
		size_t nd = 0, orig;

		if (!above_threshold(o, p, apps[a].counts))
			continue;
		print_counts(f, p, apps[a].counts, p->totals);
		if (p->has_domain)
			fprintf(f, "%-*s ", dw, apps[a].domain);
		fprintf(f, "%s\n", apps[a].app);
		orig = app_of[apps[a].group];
		if (!has_deps[orig])
			continue;
		deps = calloc(p->ngroups, sizeof(*deps));
		if (!deps)
			goto out_free;
		for (size_t i = 0; i < p->ngroups; i++) {
			if (app_of[i] != orig)
				continue;
			deps[nd].counts = rep_counts(p, p->groups[i].counts);
			deps[nd].image = rep_view_dep_label(&p->groups[i], &p->groups[i].dep);
			nd++;
		}
		sort_rows(deps, nd, o, n);
		print_col_header(f, o, p, "\t");
		for (size_t k = 0; k < nd; k++) {
			if (!above_threshold(o, p, deps[k].counts))
				continue;
			fputc('\t', f);
			print_counts(f, p, deps[k].counts, apps[a].counts);
			fprintf(f, "%s\n", deps[k].image ? deps[k].image : "?");
		}
		free_rows(deps, nd);
	}
	rc = 0;
out_free:
	/* app_of indexes were computed before sorting; apps own their labels. */
	if (apps)
		free_rows(apps, napps);
	free(app_of);
	free(sums);
	free(has_deps);
	rep_strmap_free(ids);
	return rc;
}

/* --- symbol listing --------------------------------------------------- */

/*
 * One row per symbol row of @p (@symbols) or per group, labelled as the
 * listings print them, in @p's order.  NULL on allocation failure.
 */
static struct row *make_rows(const struct rep_profile *p, bool symbols)
{
	size_t nr = symbols ? p->nrows : p->ngroups;
	struct row *rows = calloc(nr ? nr : 1, sizeof(*rows));

	if (!rows)
		return NULL;
	for (size_t i = 0; i < nr; i++) {
		const struct rep_symrow *s = symbols ? &p->rows[i] : NULL;
		size_t gi = s ? s->group : i;
		const struct rep_group *g = &p->groups[gi];
		const struct rep_sym *sym = s && s->sym >= 0 ? rep_bin_sym(s->bin, (size_t)s->sym) : NULL;

		rows[i].counts = rep_counts(p, s ? s->counts : g->counts);
		rows[i].domain = domain_label(g);
		rows[i].image = rep_view_dep_label(g, &g->dep);
		rows[i].app = rep_view_app_label(g);
		rows[i].symbol = sym ? sym->name : "(no symbols)";
		rows[i].vma = sym ? sym->start : 0;
		rows[i].group = gi;
		rows[i].src = i;
		if (!rows[i].domain || !rows[i].image || !rows[i].app) {
			free_rows(rows, i + 1);
			return NULL;
		}
	}
	return rows;
}

static int print_symbols(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	struct row *rows = make_rows(p, true);
	size_t n = p->nclasses, iw = 25, cw = 8, dlen = 0;
	uint64_t maxc = 0;
	char pct[16];
	int dw;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < p->nrows; i++) {
		if (strlen(rows[i].image) + 1 > iw)
			iw = strlen(rows[i].image) + 1;
		/* the app column shares the image column's width */
		if (o->wide && p->separate_lib && strlen(rows[i].app) + 1 > iw)
			iw = strlen(rows[i].app) + 1;
		if (strlen(rows[i].domain) > dlen)
			dlen = strlen(rows[i].domain);
		for (size_t c = 0; c < n; c++)
			if (rows[i].counts[c] > maxc)
				maxc = rows[i].counts[c];
	}
	while (maxc >= 10000000) {
		maxc /= 10;
		cw++;
	}
	if (iw > 40 && !o->wide)
		iw = 40;
	dw = col_width(o, 16, dlen);
	sort_rows(rows, p->nrows, o, n);
	for (size_t c = 0; c < n; c++)
		fprintf(f, "%-*s %-8s ", (int)cw, "samples", "%");
	if (p->has_domain)
		fprintf(f, "%-*s ", dw, "domain");
	fprintf(f, "%-*s ", (int)iw, "image name");
	if (p->separate_lib)
		fprintf(f, "%-*s ", (int)iw, "app name");
	fputs("symbol name\n", f);
	for (size_t i = 0; i < p->nrows; i++) {
		if (!above_threshold(o, p, rows[i].counts))
			continue;
		for (size_t c = 0; c < n; c++) {
			rep_format_pct(pct, sizeof(pct), pct_of(rows[i].counts[c], p->totals[c]));
			fprintf(f, "%-*" PRIu64 " %-8s ", (int)cw, rows[i].counts[c], pct);
		}
		if (p->has_domain)
			fprintf(f, "%-*s ", dw, rows[i].domain);
		fprintf(f, "%-*s ", (int)iw, rows[i].image);
		if (p->separate_lib)
			fprintf(f, "%-*s ", (int)iw, rows[i].app);
		fprintf(f, "%s\n", rows[i].symbol);
	}
	free_rows(rows, p->nrows);
	return 0;
}

/* --- call graph (-c) ---------------------------------------------------- */

struct cg_layout {
	size_t cw, iw;
	int dw;
};

/* Column widths as the symbol listing sizes them. */
static void cg_widths(const struct rep_opts *o, const struct rep_profile *p,
		      const struct row *rows, struct cg_layout *l)
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
	l->dw = col_width(o, 16, dlen);
}

static void cg_line(FILE *f, const struct rep_profile *p, const struct cg_layout *l,
		    const char *indent, const uint64_t *counts, const uint64_t *totals,
		    const struct row *r, const char *suffix)
{
	char pct[16];

	fputs(indent, f);
	for (size_t c = 0; c < p->nclasses; c++) {
		rep_format_pct(pct, sizeof(pct), pct_of(counts[c], totals[c]));
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
static bool cg_shown(const struct rep_opts *o, const struct rep_profile *p, const struct row *r,
		     size_t *idx, uint64_t *in, uint64_t *out)
{
	cg_arcs(p, r->src, true, idx, in);
	cg_arcs(p, r->src, false, idx, out);
	return above_threshold(o, p, r->counts) || above_threshold(o, p, in) ||
	       above_threshold(o, p, out);
}

/* One entry: callers above, the symbol, then [self] and its callees. */
static void cg_entry(FILE *f, const struct rep_profile *p, const struct cg_layout *l,
		     const struct row *rows, const size_t *pos, size_t i, size_t *idx,
		     uint64_t *in, uint64_t *out)
{
	const struct row *r = &rows[i];
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
static int print_callgraph(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	struct row *rows = make_rows(p, true);
	size_t n = p->nclasses, *pos = calloc(p->nrows + 1, sizeof(*pos));
	size_t *idx = calloc(p->narcs + 1, sizeof(*idx));
	uint64_t *in = calloc(n, sizeof(*in)), *out = calloc(n, sizeof(*out));
	struct cg_layout l;
	int rc = -ENOMEM;

	if (!rows || !pos || !idx || !in || !out)
		goto out_free;
	cg_widths(o, p, rows, &l);
	sort_rows(rows, p->nrows, o, n);
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
		if (cg_shown(o, p, &rows[i], idx, in, out))
			cg_entry(f, p, &l, rows, pos, i, idx, in, out);
	rc = 0;
out_free:
	if (rows)
		free_rows(rows, p->nrows);
	free(pos);
	free(idx);
	free(in);
	free(out);
	return rc;
}

/* --- JSON ----------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence of two or more bytes at @p, else 0. */
static size_t utf8_len(const unsigned char *p)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0xc2 || p[0] > 0xf4)
		return 0;
	n = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
	cp = p[0] & (0x7fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)	/* a NUL ends the string here too */
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * @s as a JSON string, NULL as null.  Names come from guests and binaries
 * and need not be UTF-8: a byte that is not part of valid UTF-8 is written
 * as \u00XX (its Latin-1 reading), so the document always parses.
 */
static void json_str(FILE *f, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*c) {
		size_t n = utf8_len(c);

		if (n) {
			fwrite(c, 1, n, f);
			c += n;
			continue;
		}
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c >= 0x7f)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
		c++;
	}
	fputc('"', f);
}

static void json_image(FILE *f, const char *key, const struct sfn_image *img)
{
	static const char *const kinds[] = { [SFN_ROOT] = "root", [SFN_KERN] = "kern",
					     [SFN_ANON] = "anon" };

	fprintf(f, ",\"%s\":{\"kind\":\"%s\",\"name\":", key, kinds[img->kind]);
	json_str(f, img->name);
	fputc('}', f);
}

/* "key":[v[0],v[stride],...] for the @n event classes. */
static void json_counts(FILE *f, const char *key, const uint64_t *v, size_t n, size_t stride)
{
	fprintf(f, "\"%s\":[", key);
	for (size_t c = 0; c < n; c++)
		fprintf(f, "%s%" PRIu64, c ? "," : "", v[c * stride]);
	fputc(']', f);
}

static void json_id(FILE *f, const char *key, int64_t v)
{
	if (v == SFN_ALL)
		fprintf(f, ",\"%s\":null", key);
	else
		fprintf(f, ",\"%s\":%" PRId64, key, v);
}

static void json_row(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		     const struct row *r)
{
	const struct rep_group *g = &p->groups[r->group];

	fputs("{\"domain\":", f);
	json_str(f, g->domain);
	fprintf(f, ",\"vmm\":%s", g->vmm ? "true" : "false");
	json_image(f, "app", &g->app);
	json_image(f, "image", &g->dep);
	json_id(f, "tgid", g->tgid);
	json_id(f, "tid", g->tid);
	json_id(f, "cpu", g->cpu);
	fprintf(f, ",\"unverified\":%s", g->unverified ? "true" : "false");
	if (o->symbols) {
		bool known = p->rows[r->src].sym >= 0;

		fputs(",\"symbol\":", f);
		json_str(f, known ? r->symbol : NULL);
		if (known)
			fprintf(f, ",\"vma\":%" PRIu64, r->vma);
		else
			fputs(",\"vma\":null", f);
	}
	if (o->callgraph && o->symbols)
		fprintf(f, ",\"id\":%zu", r->src);
	fputc(',', f);
	json_counts(f, "samples", r->counts, p->nclasses, 1);
	fputc('}', f);
}

/*
 * With -c: the call graph's arcs, caller to callee by the rows' "id"s,
 * each with its samples per class; only arcs between rows the document
 * lists (the threshold hides the others, as in the text report).
 */
static void json_arcs(FILE *f, const struct rep_profile *p, const bool *listed)
{
	size_t sep = 0;

	fputs(",\n\"arcs\":[", f);
	for (size_t a = 0; a < p->narcs; a++) {
		const struct rep_arc *arc = &p->arcs[a];

		if (!listed[arc->from] || !listed[arc->to])
			continue;
		fprintf(f, "%s{\"from\":%zu,\"to\":%zu,", sep++ ? ",\n" : "\n", arc->from, arc->to);
		json_counts(f, "samples", rep_counts(p, arc->counts), p->nclasses, 1);
		fputc('}', f);
	}
	fputc(']', f);
}

/* The report as one JSON document; doc/opreport.1 holds its schema. */
static int print_json(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		      const char *collector)
{
	size_t nr = o->symbols ? p->nrows : p->ngroups, nd, sep = 0, *idx = NULL;
	uint64_t *in = NULL, *out = NULL;
	bool *listed = NULL;
	struct row *rows;
	struct dom *d;
	int rc = domain_totals(o, p, &d, &nd);

	if (rc)
		return rc;
	rows = make_rows(p, o->symbols);
	if (o->callgraph && o->symbols) {
		listed = calloc(p->nrows ? p->nrows : 1, sizeof(*listed));
		idx = calloc(p->narcs + 1, sizeof(*idx));
		in = calloc(p->nclasses, sizeof(*in));
		out = calloc(p->nclasses, sizeof(*out));
		if (!listed || !idx || !in || !out)
			rc = -ENOMEM;
	}
	if (!rows || rc) {
		rc = -ENOMEM;
		goto out_free;
	}
	sort_rows(rows, nr, o, p->nclasses);
	fputs("{\"schema\":\"domprof-opreport/1\",\"collector\":", f);
	json_str(f, collector);
	fprintf(f, ",\"listing\":\"%s\",\n\"events\":[", o->symbols ? "symbols" : "images");
	for (size_t c = 0; c < p->nclasses; c++) {
		fputs(c ? ",\n{\"event\":" : "\n{\"event\":", f);
		json_str(f, p->classes[c].event);
		fprintf(f, ",\"count\":%" PRIu64 ",\"unit_mask\":%" PRIu32 ",\"total\":%" PRIu64 "}",
			p->classes[c].count, p->classes[c].unit_mask, p->totals[c]);
	}
	fputs("],\n\"warnings\":[", f);
	for (size_t i = 0; i < p->nnotes; i++) {
		fputs(i ? ",\n" : "\n", f);
		json_str(f, p->notes[i]);
	}
	fputs("],\n\"domains\":[", f);
	for (size_t k = 0; k < nd; k++) {
		fputs(k ? ",\n{\"domain\":" : "\n{\"domain\":", f);
		json_str(f, d[k].name);
		fputc(',', f);
		json_counts(f, "samples", d[k].v + DOM_TOTAL, p->nclasses, DOM_NCOLS);
		fputc(',', f);
		json_counts(f, "guest_kernel", d[k].v + DOM_GKERN, p->nclasses, DOM_NCOLS);
		fputc(',', f);
		json_counts(f, "guest_user", d[k].v + DOM_GUSER, p->nclasses, DOM_NCOLS);
		fputc(',', f);
		json_counts(f, "vmm", d[k].v + DOM_VMM, p->nclasses, DOM_NCOLS);
		fputc('}', f);
	}
	fputs("],\n\"rows\":[", f);
	for (size_t i = 0; i < nr; i++) {
		/* with -c, the rows the text call graph shows */
		if (listed ? !cg_shown(o, p, &rows[i], idx, in, out) :
			     !above_threshold(o, p, rows[i].counts))
			continue;
		fputs(sep++ ? ",\n" : "\n", f);
		json_row(f, o, p, &rows[i]);
		if (listed)
			listed[rows[i].src] = true;
	}
	fputc(']', f);
	if (listed)
		json_arcs(f, p, listed);
	fputs("}\n", f);
out_free:
	free(listed);
	free(idx);
	free(in);
	free(out);
	if (rows)
		free_rows(rows, nr);
	free(d);
	return rc;
}

int rep_output(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
	       const char *collector)
{
	int rc;

	if (o->json) {
		rc = print_json(f, o, p, collector);
		goto out_flush;
	}
	print_header(f, p, collector);
	if (p->has_domain) {
		rc = print_domains(f, o, p);
		if (rc)
			return rc;
	}
	if (o->callgraph && o->symbols)
		rc = print_callgraph(f, o, p);
	else
		rc = o->symbols ? print_symbols(f, o, p) : print_images(f, o, p);
out_flush:
	if (rc)
		return rc;
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
