/*
 * opreport's text report, laid out as OProfile's: the header, the domain
 * summary, the image listing or the symbol listing (with -w, -a, -g, -d).
 * The call graph, JSON and XML writers are rep_cg.c, rep_json.c and
 * rep_xml.c.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_hash.h"
#include "rep_info.h"
#include "rep_opts.h"
#include "rep_output.h"
#include "rep_rows.h"

void rep_format_pct(char *buf, size_t size, double pct)
{
	snprintf(buf, size, pct >= 99.99995 ? "%.3f" : "%.4f", pct);
}

/*
 * OProfile's header: the CPU and its speed, the collector, then per event
 * class "Counted EVENT events (description) with a unit mask of 0xUM
 * (description) count N"; then the warnings about unverified images.
 */
static void print_header(FILE *f, const struct rep_profile *p, const struct rep_info *in)
{
	if (in->cpu_type && in->mhz > 0)
		fprintf(f, "CPU: %s, speed %g MHz (estimated)\n", in->cpu_type, in->mhz);
	else if (in->cpu_type)
		fprintf(f, "CPU: %s\n", in->cpu_type);
	if (in->collector)
		fprintf(f, "Profiling through the %s collector\n", in->collector);
	for (size_t c = 0; c < p->nclasses; c++) {
		const char *ed = in->event_desc ? in->event_desc[c] : NULL;
		const char *ud = in->um_desc ? in->um_desc[c] : NULL;

		fprintf(f, "Counted %s events%s%s%s with a unit mask of 0x%02x%s%s%s count %" PRIu64 "\n",
			p->classes[c].event, ed ? " (" : "", ed ? ed : "", ed ? ")" : "",
			p->classes[c].unit_mask, ud ? " (" : "", ud ? ud : "", ud ? ")" : "",
			p->classes[c].count);
	}
	for (size_t i = 0; i < p->nnotes; i++)
		fprintf(f, "Warning: %s\n", p->notes[i]);
	if (p->nnotes)
		fputs("Warning: rows marked \"" REP_UNVERIFIED "\" are named from a binary that may not "
		      "be the one profiled\n", f);
}

/* Width of a name column: @min, or under --wide the longest entry's @len if more. */
static int col_width(const struct rep_opts *o, int min, size_t len)
{
	return o->wide && len > (size_t)min ? (int)len : min;
}

static int print_domains(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	struct rep_dom *d;
	size_t nd, longest = 0;
	char pct[16];
	int rc = rep_domain_totals(o, p, &d, &nd), dw;

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
			const uint64_t *v = d[k].v + c * REP_DOM_NCOLS;

			rep_format_pct(pct, sizeof(pct), rep_pct_of(v[REP_DOM_TOTAL], p->totals[c]));
			fprintf(f, "%-*s %12" PRIu64 " %8s %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
				dw, d[k].name ? d[k].name : "host", v[REP_DOM_TOTAL], pct,
				v[REP_DOM_GKERN], v[REP_DOM_GUSER], v[REP_DOM_VMM]);
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

	if (o->no_header)
		return;
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
		rep_format_pct(pct, sizeof(pct), rep_pct_of(counts[c], totals[c]));
		fprintf(f, "%9" PRIu64 " %7s ", counts[c], pct);
	}
}

/* Row @r for the application of group @i (@g), its counts @counts: its
 * labels, an unverified binary marked.  0 or -ENOMEM. */
static int app_row(struct rep_row *r, const struct rep_opts *o, const struct rep_group *g,
		   size_t i, const uint64_t *counts)
{
	r->group = i;
	r->counts = counts;
	r->domain = rep_domain_label(g);
	r->app = rep_rows_app_label(o, g);
	r->image = rep_rows_image_label(o, &g->app);
	if (r->app && rep_same_dep(g) && g->unverified) {
		char *m = NULL;

		if (asprintf(&m, "%s " REP_UNVERIFIED, r->app) < 0)
			m = NULL;
		free(r->app);
		r->app = m;
	}
	if (!r->domain || !r->app || !r->image)
		return -ENOMEM;
	return 0;
}

/* Under application @orig's line (its counts @app_counts), the binaries
 * of every group that is its (@app_of), sorted.  0 or -ENOMEM. */
static int print_deps(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		      const size_t *app_of, size_t orig, const uint64_t *app_counts)
{
	struct rep_row *deps = calloc(p->ngroups, sizeof(*deps));
	size_t nd = 0;

	if (!deps)
		return -ENOMEM;
	for (size_t i = 0; i < p->ngroups; i++) {
		if (app_of[i] != orig)
			continue;
		deps[nd].counts = rep_counts(p, p->groups[i].counts);
		deps[nd].image = rep_rows_dep_label(o, &p->groups[i], &p->groups[i].dep);
		nd++;
	}
	rep_rows_sort(deps, nd, o, p->nclasses);
	print_col_header(f, o, p, "\t");
	for (size_t k = 0; k < nd; k++) {
		if (!rep_above_threshold(o, p, deps[k].counts))
			continue;
		fputc('\t', f);
		print_counts(f, p, deps[k].counts, o->global_percent ? p->totals : app_counts);
		fprintf(f, "%s\n", deps[k].image ? deps[k].image : "?");
	}
	rep_rows_free(deps, nd);
	return 0;
}

static int print_images(FILE *f, const struct rep_opts *o, const struct rep_profile *p)
{
	size_t n = p->nclasses, napps = 0, dlen = 0;
	size_t *app_of = calloc(p->ngroups, sizeof(*app_of));
	struct rep_row *apps = calloc(p->ngroups, sizeof(*apps));
	uint64_t *sums = calloc(p->ngroups * n, sizeof(*sums));
	bool *has_deps = calloc(p->ngroups, sizeof(*has_deps));
	struct rep_strmap *ids = rep_strmap_new();
	int rc = -ENOMEM, dw;

	if (!app_of || !apps || !sums || !has_deps || !ids)
		goto out_free;
	for (size_t i = 0; i < p->ngroups; i++) {
		const struct rep_group *g = &p->groups[i];
		char *key = rep_app_key(g);
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
			if (app_row(&apps[a], o, g, i, sums + a * n))
				goto out_free;
			napps++;
		}
		app_of[i] = a;
		for (size_t c = 0; c < n; c++)
			sums[a * n + c] += rep_counts(p, g->counts)[c];
		if (g->dep.kind != g->app.kind || strcmp(g->dep.name, g->app.name))
			has_deps[a] = true;
	}
	rep_rows_sort(apps, napps, o, n);
	for (size_t a = 0; a < napps; a++)
		dlen = strlen(apps[a].domain) > dlen ? strlen(apps[a].domain) : dlen;
	dw = col_width(o, 16, dlen);
	print_col_header(f, o, p, "");
	for (size_t a = 0; a < napps; a++) {
		size_t orig;

		if (!rep_above_threshold(o, p, apps[a].counts))
			continue;
		print_counts(f, p, apps[a].counts, p->totals);
		if (p->has_domain)
			fprintf(f, "%-*s ", dw, apps[a].domain);
		fprintf(f, "%s\n", apps[a].app);
		orig = app_of[apps[a].group];
		if (has_deps[orig] && print_deps(f, o, p, app_of, orig, apps[a].counts))
			goto out_free;
	}
	rc = 0;
out_free:
	/* app_of indexes were computed before sorting; apps own their labels. */
	if (apps)
		rep_rows_free(apps, napps);
	free(app_of);
	free(sums);
	free(has_deps);
	rep_strmap_free(ids);
	return rc;
}


/* --- symbol listing --------------------------------------------------- */

struct sym_layout {
	size_t cw, iw;		/* count column, image (and app) column */
	int dw;			/* domain column */
	int vw;			/* -w: hex digits of the vma column */
	int lw;			/* -g: the linenr info column */
};

/* -g's text for row @src: "file:line", the file's basename unless -f. */
static void line_info(const struct rep_opts *o, const struct rep_info *in, size_t src,
		      char *buf, size_t size)
{
	const char *file = in->src_file ? in->src_file[src] : NULL, *base;

	if (!file || !in->src_line[src]) {
		snprintf(buf, size, "(no location information)");
		return;
	}
	base = strrchr(file, '/');
	snprintf(buf, size, "%s:%u", o->long_names || !base ? file : base + 1, in->src_line[src]);
}

static void sym_widths(const struct rep_opts *o, const struct rep_profile *p,
		       const struct rep_info *in, const struct rep_row *rows, struct sym_layout *l)
{
	size_t dlen = 0;
	uint64_t maxc = 0, maxv = 0;
	char li[512];

	*l = (struct sym_layout){ .cw = 8, .iw = 25, .vw = 8, .lw = 25 };
	for (size_t i = 0; i < p->nrows; i++) {
		if (strlen(rows[i].image) + 1 > l->iw)
			l->iw = strlen(rows[i].image) + 1;
		/* the app column shares the image column's width */
		if (o->wide && p->separate_lib && strlen(rows[i].app) + 1 > l->iw)
			l->iw = strlen(rows[i].app) + 1;
		if (strlen(rows[i].domain) > dlen)
			dlen = strlen(rows[i].domain);
		for (size_t c = 0; c < p->nclasses; c++)
			maxc = rows[i].counts[c] > maxc ? rows[i].counts[c] : maxc;
		maxv = rows[i].vma > maxv ? rows[i].vma : maxv;
		if (o->debug_info) {
			line_info(o, in, rows[i].src, li, sizeof(li));
			l->lw = strlen(li) + 1 > (size_t)l->lw ? (int)strlen(li) + 1 : l->lw;
		}
	}
	for (size_t i = 0; in->det_vma && i < in->ndet; i++)
		maxv = in->det_vma[i] > maxv ? in->det_vma[i] : maxv;
	if (maxv > 0xffffffffULL)
		l->vw = 16;
	for (l->cw += o->accumulated; maxc >= 10000000; maxc /= 10)
		l->cw++;
	if (l->iw > 40 && !o->wide)
		l->iw = 40;
	l->dw = col_width(o, 16, dlen);
}

static void sym_titles(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		       const struct sym_layout *l)
{
	if (o->show_address || o->details)
		fprintf(f, "%-*s ", l->vw, "vma");
	for (size_t c = 0; c < p->nclasses; c++) {
		fprintf(f, "%-*s ", (int)l->cw, "samples");
		if (o->accumulated)
			fprintf(f, "%-*s ", (int)l->cw, "cum. samples");
		fprintf(f, "%-8s ", "%");
		if (o->accumulated)
			fprintf(f, "%-8s ", "cum. %");
	}
	if (o->debug_info)
		fprintf(f, "%-*s ", l->lw, "linenr info");
	if (p->has_domain)
		fprintf(f, "%-*s ", l->dw, "domain");
	fprintf(f, "%-*s ", (int)l->iw, "image name");
	if (p->separate_lib)
		fprintf(f, "%-*s ", (int)l->iw, "app name");
	fputs("symbol name\n", f);
}

/* -d: row @r's instructions, each with its share of the symbol's samples. */
static void sym_details(FILE *f, const struct rep_profile *p, const struct rep_info *in,
			const struct sym_layout *l, const struct rep_row *r)
{
	char pct[16];

	for (size_t d = in->det_first[r->src]; d < in->det_first[r->src + 1]; d++) {
		fprintf(f, "  %0*" PRIx64 " ", l->vw, in->det_vma[d]);
		for (size_t c = 0; c < p->nclasses; c++) {
			uint64_t x = in->det_counts[d * p->nclasses + c];

			rep_format_pct(pct, sizeof(pct), rep_pct_of(x, r->counts[c]));
			fprintf(f, "%-*" PRIu64 " %-8s ", (int)l->cw, x, pct);
		}
		fputc('\n', f);
	}
}

static int print_symbols(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
			 const struct rep_info *in)
{
	struct rep_row *rows = rep_rows_make(o, p, true);
	uint64_t *cum = calloc(p->nclasses + 1, sizeof(*cum));
	struct sym_layout l;
	char pct[16], li[512];

	if (!rows || !cum) {
		rep_rows_free(rows, p->nrows);
		free(cum);
		return -ENOMEM;
	}
	sym_widths(o, p, in, rows, &l);
	rep_rows_sort(rows, p->nrows, o, p->nclasses);
	if (!o->no_header)
		sym_titles(f, o, p, &l);
	for (size_t i = 0; i < p->nrows; i++) {
		if (!rep_above_threshold(o, p, rows[i].counts))
			continue;
		if (o->show_address || o->details)
			fprintf(f, "%0*" PRIx64 " ", l.vw, rows[i].vma);
		for (size_t c = 0; c < p->nclasses; c++) {
			rep_format_pct(pct, sizeof(pct), rep_pct_of(rows[i].counts[c], p->totals[c]));
			fprintf(f, "%-*" PRIu64 " ", (int)l.cw, rows[i].counts[c]);
			cum[c] += rows[i].counts[c];
			if (o->accumulated)
				fprintf(f, "%-*" PRIu64 " ", (int)l.cw, cum[c]);
			fprintf(f, "%-8s ", pct);
			rep_format_pct(pct, sizeof(pct), rep_pct_of(cum[c], p->totals[c]));
			if (o->accumulated)
				fprintf(f, "%-8s ", pct);
		}
		if (o->debug_info) {
			line_info(o, in, rows[i].src, li, sizeof(li));
			fprintf(f, "%-*s ", l.lw, li);
		}
		if (p->has_domain)
			fprintf(f, "%-*s ", l.dw, rows[i].domain);
		fprintf(f, "%-*s ", (int)l.iw, rows[i].image);
		if (p->separate_lib)
			fprintf(f, "%-*s ", (int)l.iw, rows[i].app);
		fprintf(f, "%s\n", rows[i].symbol);
		if (o->details && in->det_first)
			sym_details(f, p, in, &l, &rows[i]);
	}
	rep_rows_free(rows, p->nrows);
	free(cum);
	return 0;
}

int rep_output(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
	       const struct rep_info *in)
{
	int rc;

	if (o->xml) {
		rc = rep_xml_print(f, o, p, in);
		goto out_flush;
	}
	if (o->json) {
		rc = rep_json_print(f, o, p, in->collector);
		goto out_flush;
	}
	if (!o->no_header) {
		print_header(f, p, in);
		if (p->has_domain) {
			rc = print_domains(f, o, p);
			if (rc)
				return rc;
		}
	}
	if (o->callgraph && o->symbols)
		rc = rep_cg_print(f, o, p);
	else
		rc = o->symbols ? print_symbols(f, o, p, in) : print_images(f, o, p);
out_flush:
	if (rc)
		return rc;
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
