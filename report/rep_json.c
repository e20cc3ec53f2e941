/* opreport --json: the report as one JSON document (schema in doc/opreport.1). */
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

/* Length of the valid UTF-8 sequence of two or more bytes at @p, else 0. */
size_t rep_utf8_len(const unsigned char *p)
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
		size_t n = rep_utf8_len(c);

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
		     const struct rep_row *r)
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
int rep_json_print(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
		      const char *collector)
{
	size_t nr = o->symbols ? p->nrows : p->ngroups, nd, sep = 0, *idx = NULL;
	uint64_t *in = NULL, *out = NULL;
	bool *listed = NULL;
	struct rep_row *rows;
	struct rep_dom *d;
	int rc = rep_domain_totals(o, p, &d, &nd);

	if (rc)
		return rc;
	rows = rep_rows_make(o, p, o->symbols);
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
	rep_rows_sort(rows, nr, o, p->nclasses);
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
		json_counts(f, "samples", d[k].v + REP_DOM_TOTAL, p->nclasses, REP_DOM_NCOLS);
		fputc(',', f);
		json_counts(f, "guest_kernel", d[k].v + REP_DOM_GKERN, p->nclasses, REP_DOM_NCOLS);
		fputc(',', f);
		json_counts(f, "guest_user", d[k].v + REP_DOM_GUSER, p->nclasses, REP_DOM_NCOLS);
		fputc(',', f);
		json_counts(f, "vmm", d[k].v + REP_DOM_VMM, p->nclasses, REP_DOM_NCOLS);
		fputc('}', f);
	}
	fputs("],\n\"rows\":[", f);
	for (size_t i = 0; i < nr; i++) {
		/* with -c, the rows the text call graph shows */
		if (listed ? !rep_cg_shown(o, p, &rows[i], idx, in, out) :
			     !rep_above_threshold(o, p, rows[i].counts))
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
		rep_rows_free(rows, nr);
	free(d);
	return rc;
}

