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
	size_t group;		/* image listing: first group of the app */
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

static char *image_label(const struct sfn_image *img)
{
	const char *base;
	char *s = NULL;

	switch (img->kind) {
	case SFN_ROOT:
		base = strrchr(img->name, '/');
		return strdup(base && base[1] ? base + 1 : img->name);
	case SFN_KERN:
		return strdup(img->name);
	default:
		if (asprintf(&s, "{anon:%s}", img->name) < 0)
			return NULL;
		return s;
	}
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

/* "bash (tgid:12 tid:13 cpu:0)" for separated profiles. */
static char *app_label(const struct rep_group *g, const struct sfn_image *img)
{
	char *base = image_label(img), *s = NULL;
	char extra[96] = "";
	size_t n = 0;

	if (!base)
		return NULL;
	if (g->tgid != SFN_ALL)
		n += snprintf(extra + n, sizeof(extra) - n, " tgid:%" PRId64, g->tgid);
	if (g->tid != SFN_ALL)
		n += snprintf(extra + n, sizeof(extra) - n, " tid:%" PRId64, g->tid);
	if (g->cpu != SFN_ALL)
		n += snprintf(extra + n, sizeof(extra) - n, " cpu:%" PRId64, g->cpu);
	if (!n)
		return base;
	if (asprintf(&s, "%s (%s)", base, extra + 1) < 0)
		s = NULL;
	free(base);
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
}

/* --- DOMAIN SUMMARY --------------------------------------------------- */

struct dom {
	const char *name;	/* NULL: host */
	uint64_t total, gkern, guser, vmm;
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

static int print_domains(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	struct dom *d = calloc(p->ngroups + 1, sizeof(*d));
	size_t nd = 0;
	char pct[16];

	if (!d)
		return -ENOMEM;
	for (size_t c = 0; c < p->nclasses; c++) {
		nd = 0;
		if (rep_spec_domain_ok(o->spec, NULL))
			d[nd++] = (struct dom){ .name = NULL };
		for (size_t i = 0; i < p->ngroups; i++) {
			const struct rep_group *g = &p->groups[i];
			uint64_t x = rep_counts(p, g->counts)[c];
			struct dom *t = NULL;

			for (size_t k = 0; k < nd && !t; k++)
				if (!cmp_str(d[k].name, g->domain) && (d[k].name || !g->domain))
					t = &d[k];
			if (!t) {
				t = &d[nd++];
				*t = (struct dom){ .name = g->domain };
			}
			t->total += x;
			if (!g->domain)
				continue;
			if (g->vmm)
				t->vmm += x;
			else if (is_guest_kernel(&g->dep))
				t->gkern += x;
			else
				t->guser += x;
		}
		qsort(d, nd, sizeof(*d), cmp_dom);
		fprintf(f, "DOMAIN SUMMARY (%s:%" PRIu64 ")\n", p->classes[c].event,
			p->classes[c].count);
		fprintf(f, "%-20s %12s %8s %14s %14s %14s\n", "domain", "samples", "%",
			"guest-kernel", "guest-user", "vmm");
		for (size_t k = 0; k < nd; k++) {
			rep_format_pct(pct, sizeof(pct), pct_of(d[k].total, p->totals[c]));
			fprintf(f, "%-20s %12" PRIu64 " %8s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
				d[k].name ? d[k].name : "host", d[k].total, pct, d[k].gkern,
				d[k].guser, d[k].vmm);
		}
		fputc('\n', f);
	}
	free(d);
	return 0;
}

/* --- image listing -------------------------------------------------------- */

static void print_col_header(FILE *f, const struct rep_profile *p, const char *indent)
{
	char label[64];

	fputs(indent, f);
	for (size_t c = 0; c < p->nclasses; c++) {
		int n = snprintf(label, sizeof(label), "%s:%" PRIu64, p->classes[c].event,
				 p->classes[c].count);

		if (n > 17)
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

static int print_images(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	size_t n = p->nclasses, napps = 0;
	size_t *app_of = calloc(p->ngroups, sizeof(*app_of));
	struct row *apps = calloc(p->ngroups, sizeof(*apps));
	uint64_t *sums = calloc(p->ngroups * n, sizeof(*sums));
	bool *has_deps = calloc(p->ngroups, sizeof(*has_deps));
	struct rep_strmap *ids = rep_strmap_new();
	int rc = -ENOMEM;

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
			apps[a].app = app_label(g, &g->app);
			apps[a].image = image_label(&g->app);
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
	print_col_header(f, p, "");
	for (size_t a = 0; a < napps; a++) {
		struct row *deps;
		size_t nd = 0, orig;

		if (!above_threshold(o, p, apps[a].counts))
			continue;
		print_counts(f, p, apps[a].counts, p->totals);
		if (p->has_domain)
			fprintf(f, "%-16s ", apps[a].domain);
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
			deps[nd].image = image_label(&p->groups[i].dep);
			nd++;
		}
		sort_rows(deps, nd, o, n);
		print_col_header(f, p, "\t");
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

static int print_symbols(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	struct row *rows = calloc(p->nrows ? p->nrows : 1, sizeof(*rows));
	size_t n = p->nclasses, iw = 25, cw = 8;
	uint64_t maxc = 0;
	char pct[16];
	int rc = -ENOMEM;

	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < p->nrows; i++) {
		const struct rep_symrow *s = &p->rows[i];
		const struct rep_group *g = &p->groups[s->group];
		const struct rep_sym *sym = s->sym >= 0 ? rep_bin_sym(s->bin, (size_t)s->sym) : NULL;

		rows[i].counts = rep_counts(p, s->counts);
		rows[i].domain = domain_label(g);
		rows[i].image = image_label(&g->dep);
		rows[i].app = app_label(g, &g->app);
		rows[i].symbol = sym ? sym->name : "(no symbols)";
		rows[i].vma = sym ? sym->start : 0;
		if (!rows[i].domain || !rows[i].image || !rows[i].app)
			goto out_free;
		if (strlen(rows[i].image) + 1 > iw)
			iw = strlen(rows[i].image) + 1;
		for (size_t c = 0; c < n; c++)
			if (rows[i].counts[c] > maxc)
				maxc = rows[i].counts[c];
	}
	while (maxc >= 10000000) {
		maxc /= 10;
		cw++;
	}
	if (iw > 40)
		iw = 40;
	sort_rows(rows, p->nrows, o, n);
	for (size_t c = 0; c < n; c++)
		fprintf(f, "%-*s %-8s ", (int)cw, "samples", "%");
	if (p->has_domain)
		fprintf(f, "%-16s ", "domain");
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
			fprintf(f, "%-16s ", rows[i].domain);
		fprintf(f, "%-*s ", (int)iw, rows[i].image);
		if (p->separate_lib)
			fprintf(f, "%-*s ", (int)iw, rows[i].app);
		fprintf(f, "%s\n", rows[i].symbol);
	}
	rc = 0;
out_free:
	free_rows(rows, p->nrows);
	return rc;
}

int rep_output(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
	       const char *collector)
{
	int rc;

	print_header(f, p, collector);
	if (p->has_domain) {
		rc = print_domains(f, o, p);
		if (rc)
			return rc;
	}
	rc = o->symbols ? print_symbols(f, o, p) : print_images(f, o, p);
	if (rc)
		return rc;
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
