#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_opts.h"
#include "rep_rows.h"
#include "rep_spec.h"
#include "rep_sym.h"
#include "rep_view.h"

struct sorter {
	const struct rep_opts *o;
	size_t nclasses;
};

/* qsort has no context; the report is single-threaded. */
static struct sorter sort_ctx;

double rep_pct_of(uint64_t x, uint64_t total)
{
	return total ? 100.0 * (double)x / (double)total : 0.0;
}

char *rep_domain_label(const struct rep_group *g)
{
	char *s = NULL;

	if (!g->domain)
		return strdup("host");
	if (asprintf(&s, "%s%s", g->domain, g->vmm ? "/vmm" : "") < 0)
		return NULL;
	return s;
}

char *rep_rows_image_label(const struct rep_opts *o, const struct sfn_image *img)
{
	return rep_view_image_name(img, o->long_names);
}

char *rep_rows_dep_label(const struct rep_opts *o, const struct rep_group *g,
			 const struct sfn_image *img)
{
	return rep_view_dep_name(g, img, o->long_names);
}

char *rep_rows_app_label(const struct rep_opts *o, const struct rep_group *g)
{
	return rep_view_app_name(g, o->long_names);
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct rep_row *a = pa, *b = pb;
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

void rep_rows_sort(struct rep_row *rows, size_t n, const struct rep_opts *o, size_t nclasses)
{
	sort_ctx.o = o;
	sort_ctx.nclasses = nclasses;
	qsort(rows, n, sizeof(*rows), cmp_row);
}

bool rep_above_threshold(const struct rep_opts *o, const struct rep_profile *p,
			 const uint64_t *counts)
{
	if (o->threshold <= 0)
		return true;
	for (size_t c = 0; c < p->nclasses; c++)
		if (rep_pct_of(counts[c], p->totals[c]) >= o->threshold)
			return true;
	return false;
}

void rep_rows_free(struct rep_row *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++) {
		free(rows[i].app);
		free(rows[i].image);
		free((char *)rows[i].domain);
	}
	free(rows);
}

struct rep_row *rep_rows_make(const struct rep_opts *o, const struct rep_profile *p,
			      bool symbols)
{
	size_t nr = symbols ? p->nrows : p->ngroups;
	struct rep_row *rows = calloc(nr ? nr : 1, sizeof(*rows));

	if (!rows)
		return NULL;
	for (size_t i = 0; i < nr; i++) {
		const struct rep_symrow *s = symbols ? &p->rows[i] : NULL;
		size_t gi = s ? s->group : i;
		const struct rep_group *g = &p->groups[gi];
		const struct rep_sym *sym = s && s->sym >= 0 ? rep_bin_sym(s->bin, (size_t)s->sym) : NULL;

		rows[i].counts = rep_counts(p, s ? s->counts : g->counts);
		rows[i].domain = rep_domain_label(g);
		rows[i].image = rep_rows_dep_label(o, g, &g->dep);
		rows[i].app = rep_rows_app_label(o, g);
		rows[i].symbol = sym ? sym->name : "(no symbols)";
		rows[i].vma = sym ? sym->start : 0;
		rows[i].group = gi;
		rows[i].src = i;
		if (!rows[i].domain || !rows[i].image || !rows[i].app) {
			rep_rows_free(rows, i + 1);
			return NULL;
		}
	}
	return rows;
}


/* The identity of a group's application: everything but the dep. */
char *rep_app_key(const struct rep_group *g)
{
	char *k = NULL;

	if (asprintf(&k, "%s%c%d%c%d%c%s%c%" PRId64 ".%" PRId64 ".%" PRId64,
		     g->domain ? g->domain : "", 1, g->vmm + 2 * !g->domain, 1, (int)g->app.kind,
		     1, g->app.name, 1, g->tgid, g->tid, g->cpu) < 0)
		return NULL;
	return k;
}

/* A group whose application is its dep (no --separate=lib split). */
bool rep_same_dep(const struct rep_group *g)
{
	return g->dep.kind == g->app.kind && !strcmp(g->dep.name, g->app.name);
}/* --- the domain summary ------------------------------------------------ */

static int cmp_dom(const void *pa, const void *pb)
{
	const struct rep_dom *a = pa, *b = pb;

	if (!a->name || !b->name)
		return a->name ? 1 : b->name ? -1 : 0;
	return strcmp(a->name, b->name);
}

/* The summary entry of @g's domain in @d (@nd of them), added if new. */
static struct rep_dom *dom_of(struct rep_dom *d, size_t *nd, const struct rep_group *g)
{
	for (size_t k = 0; k < *nd; k++)
		if (!cmp_str(d[k].name, g->domain) && (d[k].name || !g->domain))
			return &d[k];
	d[*nd].name = g->domain;
	return &d[(*nd)++];
}

int rep_domain_totals(const struct rep_opts *o, const struct rep_profile *p,
		      struct rep_dom **out, size_t *nout)
{
	size_t cap = p->ngroups + 1, stride = p->nclasses * REP_DOM_NCOLS, nd = 0;
	struct rep_dom *d = calloc(1, cap * (sizeof(*d) + stride * sizeof(uint64_t)));
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
		struct rep_dom *t = dom_of(d, &nd, g);

		for (size_t c = 0; c < p->nclasses; c++) {
			uint64_t x = rep_counts(p, g->counts)[c], *v = t->v + c * REP_DOM_NCOLS;

			v[REP_DOM_TOTAL] += x;
			if (!g->domain)
				continue;
			if (g->vmm)
				v[REP_DOM_VMM] += x;
			else if (rep_view_is_guest_kernel(&g->dep))
				v[REP_DOM_GKERN] += x;
			else
				v[REP_DOM_GUSER] += x;
		}
	}
	qsort(d, nd, sizeof(*d), cmp_dom);
	*out = d;
	*nout = nd;
	return 0;
}
