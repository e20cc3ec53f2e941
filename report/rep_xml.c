/*
 * opreport -X: the report in OProfile's XML layout (profile, setup,
 * options, classes, binary, module, symbol, symboltable, detailtable),
 * with a domain element around each domain's binaries.  The schema is
 * doc/opreport.xsd; the layout is described in doc/opreport.1.
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
#include "rep_rows.h"
#include "rep_spec.h"
#include "rep_sym.h"

/* The XML schema's version: what doc/opreport.xsd describes. */
#define REP_XML_SCHEMA "1.0-domprof"

struct xml {
	FILE *f;
	const struct rep_opts *o;
	const struct rep_profile *p;
	const struct rep_info *in;
	struct rep_row *grows;		/* group rows, sorted */
	struct rep_row *srows;		/* symbol rows, sorted; NULL without -l */
	size_t *gsym_first;		/* [ngroups + 1]: group g's symbols in gsym */
	size_t *gsym;			/* indexes in srows, by group */
	bool *listed;			/* [nrows]: p->rows written (symboltable) */
	size_t *app_of;			/* [ngroups]: the app index of each group */
	size_t *app_first;		/* [ngroups]: first sorted group row of each app */
	size_t napps;
};

/*
 * @s as attribute text.  Names come from guests and binaries and need not
 * be UTF-8: a byte that is not part of valid UTF-8 is written as a
 * character reference (its Latin-1 reading), a control character XML
 * cannot hold as '?', so the document is always well-formed.
 */
static void xml_str(FILE *f, const char *s)
{
	const unsigned char *c = (const unsigned char *)s;

	while (*c) {
		size_t n = rep_utf8_len(c);

		if (n) {
			fwrite(c, 1, n, f);
			c += n;
			continue;
		}
		if (*c == '&')
			fputs("&amp;", f);
		else if (*c == '<')
			fputs("&lt;", f);
		else if (*c == '>')
			fputs("&gt;", f);
		else if (*c == '"')
			fputs("&quot;", f);
		else if (*c < 0x20 && *c != '\t')
			fputc('?', f);
		else if (*c >= 0x80)
			fprintf(f, "&#x%02x;", *c);
		else
			fputc(*c, f);
		c++;
	}
}

static void xml_attr(FILE *f, const char *name, const char *v)
{
	fprintf(f, " %s=\"", name);
	xml_str(f, v);
	fputc('"', f);
}

static void xml_counts(const struct xml *x, int indent, const uint64_t *counts)
{
	for (size_t c = 0; c < x->p->nclasses; c++)
		fprintf(x->f, "%*s<count class=\"c%zu\">%" PRIu64 "</count>\n", indent, "", c,
			counts[c]);
}

static void write_setup(const struct xml *x)
{
	const struct rep_profile *p = x->p;

	fputs(" <setup>\n", x->f);
	for (size_t c = 0; c < p->nclasses; c++) {
		fprintf(x->f, "  <eventsetup id=\"%zu\"", c);
		xml_attr(x->f, "eventname", p->classes[c].event);
		fprintf(x->f, " unitmask=\"%" PRIu32 "\" setupcount=\"%" PRIu64 "\"",
			p->classes[c].unit_mask, p->classes[c].count);
		if (x->in->event_desc && x->in->event_desc[c])
			xml_attr(x->f, "description", x->in->event_desc[c]);
		fputs("/>\n", x->f);
	}
	fputs(" </setup>\n", x->f);
}

/* The options that shaped the report, as OProfile's <options> lists them. */
static void write_options(const struct xml *x)
{
	const struct rep_opts *o = x->o;
	const char *session = rep_spec_session(o->spec);

	fputs(" <options", x->f);
	xml_attr(x->f, "sessiondir", o->session_dir);
	xml_attr(x->f, "session", session ? session : "current");
	if (o->debug_info)
		fputs(" debuginfo=\"true\"", x->f);
	if (o->details)
		fputs(" details=\"true\"", x->f);
	if (o->exclude_dependent)
		fputs(" excludedependent=\"true\"", x->f);
	if (o->exclude_syms)
		xml_attr(x->f, "excludesymbols", o->exclude_syms);
	if (o->include_syms)
		xml_attr(x->f, "includesymbols", o->include_syms);
	if (o->reverse)
		fputs(" reversesort=\"true\"", x->f);
	if (o->threshold > 0)
		fprintf(x->f, " threshold=\"%g\"", o->threshold);
	fputs("/>\n <classes>\n", x->f);
	for (size_t c = 0; c < x->p->nclasses; c++)
		fprintf(x->f, "  <class name=\"c%zu\" event=\"%zu\" mask=\"%" PRIu32 "\"/>\n", c, c,
			x->p->classes[c].unit_mask);
	fputs(" </classes>\n", x->f);
}

/* Group @g's symbols (in sorted order) over the threshold. */
static void write_symbols(struct xml *x, size_t g, int indent)
{
	for (size_t k = x->gsym_first[g]; k < x->gsym_first[g + 1]; k++) {
		const struct rep_row *r = &x->srows[x->gsym[k]];

		if (!rep_above_threshold(x->o, x->p, r->counts))
			continue;
		fprintf(x->f, "%*s<symbol idref=\"sym%zu\">\n", indent, "", r->src);
		xml_counts(x, indent + 1, r->counts);
		fprintf(x->f, "%*s</symbol>\n", indent, "");
		x->listed[r->src] = true;
	}
}

static void write_image(struct xml *x, const char *tag, const struct sfn_image *img,
			const struct rep_group *g, bool app)
{
	fprintf(x->f, "%s<%s", app ? "  " : "   ", tag);
	xml_attr(x->f, "name", img->name);
	if (img->kind != SFN_ROOT)
		fputs(img->kind == SFN_KERN ? " kind=\"kernel\"" : " kind=\"anon\"", x->f);
	if (app && g->vmm)
		fputs(" vmm=\"true\"", x->f);
	if (app && g->tgid != SFN_ALL)
		fprintf(x->f, " pid=\"%" PRId64 "\"", g->tgid);
	if (app && g->tid != SFN_ALL)
		fprintf(x->f, " tid=\"%" PRId64 "\"", g->tid);
	if (app && g->cpu != SFN_ALL)
		fprintf(x->f, " cpu=\"%" PRId64 "\"", g->cpu);
	if (g->unverified && (!app || rep_same_dep(g)))
		fputs(" unverified=\"true\"", x->f);
	fputs(">\n", x->f);
}

/* Application @a: a binary with its own symbols and its modules (the
 * libraries and kernel it used, under --separate=lib). */
static void write_app(struct xml *x, size_t a, const uint64_t *sums)
{
	const struct rep_group *first = &x->p->groups[x->grows[x->app_first[a]].group];

	write_image(x, "binary", &first->app, first, true);
	xml_counts(x, 3, sums);
	/* the schema's order: the binary's own symbols, then its modules */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < x->p->ngroups; i++) {
			const struct rep_row *r = &x->grows[i];
			const struct rep_group *g = &x->p->groups[r->group];

			if (x->app_of[r->group] != a || rep_same_dep(g) != !pass ||
			    !rep_above_threshold(x->o, x->p, r->counts))
				continue;
			if (!pass) {
				if (x->srows)
					write_symbols(x, r->group, 3);
				continue;
			}
			write_image(x, "module", &g->dep, g, false);
			xml_counts(x, 4, r->counts);
			if (x->srows)
				write_symbols(x, r->group, 4);
			fputs("   </module>\n", x->f);
		}
	}
	fputs("  </binary>\n", x->f);
}

static bool same_domain(const struct rep_group *g, const char *name)
{
	return name ? g->domain && !strcmp(g->domain, name) : !g->domain;
}

/* The applications in listing order: app rows (counts their sums). */
static struct rep_row *make_apps(struct xml *x, uint64_t **sums)
{
	const struct rep_profile *p = x->p;
	struct rep_strmap *ids = rep_strmap_new();
	struct rep_row *apps = calloc(p->ngroups + 1, sizeof(*apps));

	*sums = calloc((p->ngroups + 1) * p->nclasses, sizeof(**sums));
	if (!ids || !apps || !*sums)
		goto out_oom;
	for (size_t i = 0; i < p->ngroups; i++) {
		const struct rep_group *g = &p->groups[x->grows[i].group];
		char *key = rep_app_key(g);
		long a = key ? rep_strmap_get(ids, key) : -1;

		if (!key || (a < 0 && rep_strmap_put(ids, key, x->napps))) {
			free(key);
			goto out_oom;
		}
		free(key);
		if (a < 0) {
			a = (long)x->napps++;
			apps[a].group = x->grows[i].group;
			apps[a].src = i;
			apps[a].counts = *sums + (size_t)a * p->nclasses;
			apps[a].image = rep_rows_app_label(x->o, g);
			if (!apps[a].image)
				goto out_oom;
		}
		x->app_of[x->grows[i].group] = (size_t)a;
		for (size_t c = 0; c < p->nclasses; c++)
			(*sums)[(size_t)a * p->nclasses + c] += x->grows[i].counts[c];
	}
	rep_strmap_free(ids);
	rep_rows_sort(apps, x->napps, x->o, p->nclasses);
	return apps;
out_oom:
	rep_strmap_free(ids);
	rep_rows_free(apps, x->napps);
	return NULL;
}

static void write_domains(struct xml *x, struct rep_row *apps)
{
	const struct rep_profile *p = x->p;
	struct rep_dom *d;
	size_t nd;

	if (rep_domain_totals(x->o, p, &d, &nd))
		return;
	for (size_t k = 0; k < nd; k++) {
		fputs(" <domain", x->f);
		xml_attr(x->f, "name", d[k].name ? d[k].name : "host");
		fputs(d[k].name ? " kind=\"guest\">\n" : " kind=\"host\">\n", x->f);
		for (size_t c = 0; c < p->nclasses; c++)
			fprintf(x->f, "  <count class=\"c%zu\">%" PRIu64 "</count>\n", c,
				d[k].v[c * REP_DOM_NCOLS + REP_DOM_TOTAL]);
		for (size_t a = 0; a < x->napps; a++) {
			if (!same_domain(&p->groups[apps[a].group], d[k].name) ||
			    !rep_above_threshold(x->o, p, apps[a].counts))
				continue;
			x->app_first[x->app_of[apps[a].group]] = apps[a].src;
			write_app(x, x->app_of[apps[a].group], apps[a].counts);
		}
		fputs(" </domain>\n", x->f);
	}
	free(d);
}

static void write_tables(const struct xml *x)
{
	const struct rep_profile *p = x->p;
	const struct rep_info *in = x->in;

	fputs(" <symboltable>\n", x->f);
	for (size_t r = 0; x->srows && r < p->nrows; r++) {
		const struct rep_symrow *s = &p->rows[r];
		const struct rep_sym *sym = s->sym >= 0 ? rep_bin_sym(s->bin, (size_t)s->sym) : NULL;

		if (!x->listed[r])
			continue;
		fprintf(x->f, "  <symboldata id=\"sym%zu\"", r);
		xml_attr(x->f, "name", sym ? sym->name : "(no symbols)");
		if (sym)
			fprintf(x->f, " startingaddr=\"%" PRIx64 "\"", sym->start);
		if (in->src_file && in->src_file[r] && in->src_line[r]) {
			xml_attr(x->f, "file", in->src_file[r]);
			fprintf(x->f, " line=\"%u\"", in->src_line[r]);
		}
		fputs("/>\n", x->f);
	}
	fputs(" </symboltable>\n", x->f);
	if (!in->det_first)
		return;
	fputs(" <detailtable>\n", x->f);
	for (size_t r = 0; r < p->nrows; r++) {
		if (!x->listed[r] || in->det_first[r] == in->det_first[r + 1])
			continue;
		fprintf(x->f, "  <symboldetails id=\"sym%zu\">\n", r);
		for (size_t d = in->det_first[r]; d < in->det_first[r + 1]; d++) {
			fprintf(x->f, "   <detaildata vma=\"%" PRIx64 "\">\n", in->det_vma[d]);
			xml_counts(x, 4, in->det_counts + d * p->nclasses);
			fputs("   </detaildata>\n", x->f);
		}
		fputs("  </symboldetails>\n", x->f);
	}
	fputs(" </detailtable>\n", x->f);
}

/* Each group's symbol rows, in sorted order: gsym[gsym_first[g]..]. */
static void index_symbols(struct xml *x)
{
	const struct rep_profile *p = x->p;
	size_t *fill = x->app_first;	/* scratch, set again per domain */

	for (size_t i = 0; i < p->nrows; i++)
		x->gsym_first[x->srows[i].group + 1]++;
	for (size_t g = 0; g < p->ngroups; g++) {
		x->gsym_first[g + 1] += x->gsym_first[g];
		fill[g] = x->gsym_first[g];
	}
	for (size_t i = 0; i < p->nrows; i++)
		x->gsym[fill[x->srows[i].group]++] = i;
}

static void write_profile(struct xml *x, struct rep_row *apps)
{
	const struct rep_info *in = x->in;

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<profile", x->f);
	xml_attr(x->f, "title", x->o->symbols ? "opreport --xml --symbols" : "opreport --xml");
	fputs(" schemaversion=\"" REP_XML_SCHEMA "\"", x->f);
	xml_attr(x->f, "cputype", in->cpu_type ? in->cpu_type : "unknown");
	fprintf(x->f, " mhz=\"%g\"", in->mhz);
	if (in->collector)
		xml_attr(x->f, "collector", in->collector);
	fputs(">\n", x->f);
	write_setup(x);
	write_options(x);
	write_domains(x, apps);
	write_tables(x);
	fputs("</profile>\n", x->f);
}

int rep_xml_print(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		  const struct rep_info *in)
{
	struct xml x = { .f = f, .o = o, .p = p, .in = in };
	size_t ng = p->ngroups + 1, nr = p->nrows + 1;
	struct rep_row *apps = NULL;
	uint64_t *sums = NULL;
	int rc = -ENOMEM;

	x.grows = rep_rows_make(o, p, false);
	x.srows = o->symbols ? rep_rows_make(o, p, true) : NULL;
	x.gsym_first = calloc(ng, sizeof(*x.gsym_first));
	x.gsym = calloc(nr, sizeof(*x.gsym));
	x.listed = calloc(nr, sizeof(*x.listed));
	x.app_of = calloc(ng, sizeof(*x.app_of));
	x.app_first = calloc(ng, sizeof(*x.app_first));
	if (!x.grows || (o->symbols && !x.srows) || !x.gsym_first || !x.gsym || !x.listed ||
	    !x.app_of || !x.app_first)
		goto out;
	rep_rows_sort(x.grows, p->ngroups, o, p->nclasses);
	if (x.srows) {
		rep_rows_sort(x.srows, p->nrows, o, p->nclasses);
		index_symbols(&x);
	}
	apps = make_apps(&x, &sums);
	if (!apps)
		goto out;
	write_profile(&x, apps);
	rc = 0;
out:
	rep_rows_free(apps, x.napps);
	rep_rows_free(x.grows, p->ngroups);
	rep_rows_free(x.srows, p->nrows);
	free(sums);
	free(x.gsym_first);
	free(x.gsym);
	free(x.listed);
	free(x.app_of);
	free(x.app_first);
	return rc;
}
