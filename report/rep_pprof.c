/*
 * oppprof: a session as a pprof profile.  Here the samples (per row and
 * address, and the recorded stacks above them), the message they make,
 * and the program; the tables they point into are rep_pprof_table.c's.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "rep_addr.h"
#include "rep_child.h"
#include "rep_collect.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_pprof.h"
#include "rep_pprof_int.h"
#include "rep_stacks.h"
#include "rep_sym.h"
#include "rep_view.h"
#include "util/du_log.h"

static int add_value_type(struct builder *b, const char *type, const char *unit)
{
	ValueType *vt = malloc(sizeof(*vt));
	int64_t t = pp_str_id(b, type), u = pp_str_id(b, unit);

	if (!vt || t < 0 || u < 0) {
		free(vt);
		return -ENOMEM;
	}
	domprof__pprof__value_type__init(vt);
	vt->type = t;
	vt->unit = u;
	return pp_vec_push(&b->vt, vt);
}

static int add_label(struct builder *b, Sample *s, const char *key, const char *str, int64_t num)
{
	Label *l = malloc(sizeof(*l));

	if (!l)
		return -ENOMEM;
	domprof__pprof__label__init(l);
	s->label[s->n_label++] = l;
	l->key = pp_str_id(b, key);
	if (str)
		l->str = pp_str_id(b, str);
	else
		l->num = num;
	return l->key < 0 || l->str < 0 ? -ENOMEM : 0;
}

/* A sample of group @g at locations @lids[0..@nl) (leaf first), with
 * counts @c[nclasses]. */
static int add_sample(struct builder *b, const struct rep_group *g, const uint64_t *lids,
		      size_t nl, const uint64_t *c)
{
	const struct rep_profile *p = b->p;
	char *comm = NULL;
	Sample *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	domprof__pprof__sample__init(s);
	s->location_id = malloc(nl * sizeof(*s->location_id));
	s->value = calloc(2 * p->nclasses, sizeof(*s->value));
	s->label = calloc(7, sizeof(*s->label));
	if (!s->location_id || !s->value || !s->label || pp_vec_push(&b->sample, s)) {
		free(s->location_id);
		free(s->value);
		free(s->label);
		free(s);
		return -ENOMEM;
	}
	memcpy(s->location_id, lids, nl * sizeof(*lids));
	s->n_location_id = nl;
	for (size_t k = 0; k < p->nclasses; k++) {
		s->value[2 * k] = (int64_t)c[k];
		s->value[2 * k + 1] = (int64_t)(c[k] * p->classes[k].count);
	}
	s->n_value = 2 * p->nclasses;
	comm = rep_view_image_label(&g->app);
	if (!comm || add_label(b, s, "domain", g->domain ? g->domain : "host", 0) ||
	    add_label(b, s, "vmm", g->vmm ? "true" : "false", 0) ||
	    add_label(b, s, "comm", g->vmm ? "{vmm}" : comm, 0) ||
	    (g->tgid != SFN_ALL && add_label(b, s, "pid", NULL, g->tgid)) ||
	    (g->tid != SFN_ALL && add_label(b, s, "tid", NULL, g->tid)) ||
	    (g->cpu != SFN_ALL && add_label(b, s, "cpu", NULL, g->cpu)) ||
	    (g->unverified && add_label(b, s, "unverified", "true", 0))) {
		free(comm);
		return -ENOMEM;
	}
	free(comm);
	return 0;
}

/* Row @r's samples that no recorded stack took, by address. */
static int add_row_keys(struct builder *b, const struct rep_symrow *r, int64_t mid)
{
	const struct rep_profile *p = b->p;
	long i;

	for (i = rep_addrs_first(b->k, r->group, r->sym); i >= 0; i = rep_addrs_at(b->k, i)->next) {
		const struct rep_addr *e = rep_addrs_at(b->k, i);
		bool any = false;
		int64_t lid;
		uint64_t l;
		int rc;

		for (size_t c = 0; c < p->nclasses; c++)
			any |= e->c[c] != 0;
		if (!any)
			continue;
		lid = pp_location_id(b, mid, r->bin, r->sym, &e->key);
		if (lid < 0)
			return (int)lid;
		l = (uint64_t)lid;
		rc = add_sample(b, &p->groups[r->group], &l, 1, e->c);
		if (rc)
			return rc;
	}
	return 0;
}

/* A row's samples that no recorded stack took: one location, its symbol. */
static int add_row(struct builder *b, size_t i)
{
	const struct rep_profile *p = b->p;
	const struct rep_symrow *r = &p->rows[i];
	const struct rep_group *g = &p->groups[r->group];
	const uint64_t *c = b->left ? b->left + i * p->nclasses : rep_counts(p, r->counts);
	int64_t mid, lid;
	uint64_t l;
	bool any = false;

	for (size_t k = 0; k < p->nclasses; k++)
		any |= c[k] != 0;
	if (!any)
		return 0;
	mid = pp_mapping_id(b, g, r->bin != NULL);
	if (mid < 0)
		return (int)mid;
	if (b->k)
		return add_row_keys(b, r, mid);
	lid = pp_location_id(b, mid, r->bin, r->sym, NULL);
	if (lid < 0)
		return (int)lid;
	l = (uint64_t)lid;
	return add_sample(b, g, &l, 1, c);
}

/* ---- recorded stacks (rep_stacks.h): samples with their callers ---- */

static char *row_id(const struct rep_group *g, long sym)
{
	char *k = NULL;

	if (asprintf(&k, "%s\x01%d\x01%d\x01%s\x01%d\x01%s\x01%" PRId64 ".%" PRId64 ".%" PRId64
		     "\x01%ld", g->domain ? g->domain : "", g->domain ? g->vmm : 2,
		     (int)g->app.kind, g->app.name, (int)g->dep.kind, g->dep.name, g->tgid, g->tid,
		     g->cpu, sym) < 0)
		return NULL;
	return k;
}

static int index_rows(struct builder *b)
{
	const struct rep_profile *p = b->p;

	b->rowids = rep_strmap_new();
	b->left = malloc((p->nrows ? p->nrows : 1) * p->nclasses * sizeof(*b->left));
	if (!b->rowids || !b->left)
		return -ENOMEM;
	for (size_t i = 0; i < p->nrows; i++) {
		char *k = row_id(&p->groups[p->rows[i].group], p->rows[i].sym);

		if (!k || rep_strmap_put(b->rowids, k, i)) {
			free(k);
			return -ENOMEM;
		}
		free(k);
		memcpy(b->left + i * p->nclasses, rep_counts(p, p->rows[i].counts),
		       p->nclasses * sizeof(*b->left));
	}
	return 0;
}

/* The class of @l in the profile, or -1. */
static long leaf_class(const struct builder *b, const struct sfn_name *l)
{
	for (size_t k = 0; k < b->p->nclasses; k++) {
		const struct rep_class *c = &b->p->classes[k];

		if (!strcmp(c->event, l->event) && c->count == l->count &&
		    ((b->o->merge & REP_MERGE_UNITMASK) || c->unit_mask == l->unit_mask))
			return (long)k;
	}
	return -1;
}

/* One stack: a sample whose locations are its symbol's, then its callers'. */
static int add_stack(void *ctx, const struct rep_stack *st)
{
	struct builder *b = ctx;
	const struct rep_profile *p = b->p;
	const struct sfn_name *l = st->leaf;
	unsigned merge = b->o->merge;
	struct rep_group g = {
		.domain = l->domain, .vmm = l->vmm, .dep = l->dep,
		.app = merge & REP_MERGE_LIB ? l->dep : l->image,
		.tgid = merge & REP_MERGE_TGID ? SFN_ALL : l->tgid,
		.tid = merge & REP_MERGE_TID ? SFN_ALL : l->tid,
		.cpu = merge & REP_MERGE_CPU ? SFN_ALL : l->cpu,
	};
	uint64_t lids[1 + 128], *c = calloc(p->nclasses, sizeof(*c)), *left;
	const struct rep_bin *bin = rep_images_get(b->images, l->domain, l->vmm, &l->dep);
	long cls = leaf_class(b, l), row, sym = bin ? rep_bin_lookup_key(bin, st->leaf_key) : -1;
	char *k = row_id(&g, sym);
	size_t n = 0;
	int rc = -ENOMEM;

	if (!c || !k)
		goto out;
	rc = 0;
	row = rep_strmap_get(b->rowids, k);
	if (cls < 0 || row < 0)
		goto out;
	left = b->left + (size_t)row * p->nclasses + cls;
	if (b->k) {
		struct rep_addr *e = rep_addrs_find(b->k, p->rows[row].group, sym, st->leaf_key);

		left = e ? &e->c[cls] : NULL;
	}
	c[cls] = left && st->count < *left ? st->count : left ? *left : 0;
	if (!c[cls])
		goto out;
	*left -= c[cls];
	g.unverified = p->groups[p->rows[row].group].unverified;
	for (size_t i = 0; i <= st->n && i < 1 + 128; i++) {
		struct rep_group fg = g;
		int64_t mid, lid;

		if (i)
			fg.dep = *st->img[i - 1];
		bin = i ? rep_images_get(b->images, l->domain, l->vmm, &fg.dep) : bin;
		mid = pp_mapping_id(b, &fg, bin != NULL);
		lid = mid < 0 ? mid : pp_location_id(b, mid, bin, i ? (bin ? rep_bin_lookup_key(
						 bin, st->key[i - 1]) : -1) : sym,
						 i ? &st->key[i - 1] : &st->leaf_key);
		if (lid < 0) {
			rc = (int)lid;
			goto out;
		}
		lids[n++] = (uint64_t)lid;
	}
	rc = add_sample(b, &g, lids, n, c);
out:
	free(c);
	free(k);
	return rc;
}

static void free_builder(struct builder *b)
{
	for (size_t i = 0; i < b->sample.n; i++) {
		Sample *s = b->sample.v[i];

		for (size_t k = 0; k < s->n_label; k++)
			free(s->label[k]);
		free(s->label);
		free(s->location_id);
		free(s->value);
		free(s);
	}
	for (size_t i = 0; i < b->location.n; i++) {
		Location *l = b->location.v[i];

		free(l->line[0]);
		free(l->line);
		free(l);
	}
	for (size_t i = 0; i < b->str.n; i++)
		free(b->str.v[i]);
	for (size_t i = 0; i < b->vt.n; i++)
		free(b->vt.v[i]);
	for (size_t i = 0; i < b->mapping.n; i++)
		free(b->mapping.v[i]);
	free(b->fsym);
	for (size_t i = 0; b->ml && i < b->mapping.n; i++) {
		free(b->ml[i].located);
	}
	free(b->ml);
	for (size_t i = 0; i < b->function.n; i++)
		free(b->function.v[i]);
	free(b->sample.v);
	free(b->location.v);
	free(b->str.v);
	free(b->vt.v);
	free(b->mapping.v);
	free(b->function.v);
	rep_strmap_free(b->strs);
	rep_strmap_free(b->maps);
	rep_strmap_free(b->locs);
	rep_strmap_free(b->funcs);
	rep_strmap_free(b->rowids);
	free(b->left);
	free(b->comments);
}

/* When the session started and how long it ran, as far as its files say. */
static void session_times(const struct rep_opts *o, int64_t *start, int64_t *duration)
{
	char *conf = NULL, *samples = rep_samples_path(o, NULL);
	struct stat a, z;

	*start = *duration = 0;
	if (asprintf(&conf, "%s/session.conf", o->session_dir) < 0) {
		free(samples);
		return;
	}
	if (samples && !stat(conf, &a) && !stat(samples, &z)) {
		*start = (int64_t)a.st_mtim.tv_sec * 1000000000 + a.st_mtim.tv_nsec;
		if (z.st_mtim.tv_sec >= a.st_mtim.tv_sec)
			*duration = ((int64_t)z.st_mtim.tv_sec - a.st_mtim.tv_sec) * 1000000000;
	}
	free(conf);
	free(samples);
}

static int build(struct builder *b, Profile *prof)
{
	const struct rep_profile *p = b->p;
	struct rep_progress pr;
	char name[160];
	int rc = 0;

	b->strs = rep_strmap_new();
	b->maps = rep_strmap_new();
	b->locs = rep_strmap_new();
	b->funcs = rep_strmap_new();
	if (!b->strs || !b->maps || !b->locs || !b->funcs || pp_str_id(b, "") != 0)
		return -ENOMEM;
	for (size_t k = 0; k < p->nclasses && !rc; k++) {
		if (p->nclasses == 1)
			snprintf(name, sizeof(name), "samples");
		else
			snprintf(name, sizeof(name), "samples_%s", p->classes[k].event);
		rc = add_value_type(b, name, "count");
		if (!rc)
			rc = add_value_type(b, p->classes[k].event, "events");
	}
	rc = rc ? rc : index_rows(b);
	rc = rc ? rc : rep_stacks_foreach(b->o, add_stack, b, NULL);
	rep_progress_begin(&pr, "oppprof", p->nrows);
	for (size_t i = 0; i < p->nrows && !rc; i++) {
		rep_progress_step(&pr, i);
		rc = add_row(b, i);
	}
	rep_progress_end(&pr);
	if (rc)
		return rc;
	pp_fill_lines(b);
	pp_main_mapping_first(b);
	prof->n_sample_type = b->vt.n;
	prof->sample_type = (ValueType **)b->vt.v;
	prof->n_sample = b->sample.n;
	prof->sample = (Sample **)b->sample.v;
	prof->n_mapping = b->mapping.n;
	prof->mapping = (Mapping **)b->mapping.v;
	prof->n_location = b->location.n;
	prof->location = (Location **)b->location.v;
	prof->n_function = b->function.n;
	prof->function = (Function **)b->function.v;
	prof->period_type = b->vt.v[1];
	prof->period = (int64_t)p->classes[0].count;
	prof->default_sample_type = ((ValueType *)b->vt.v[0])->type;
	session_times(b->o, &prof->time_nanos, &prof->duration_nanos);
	b->comments = calloc(p->nnotes + 1, sizeof(*b->comments));
	if (!b->comments)
		return -ENOMEM;
	for (size_t i = 0; i < p->nnotes; i++)
		if ((b->comments[i] = pp_str_id(b, p->notes[i])) < 0)
			return -ENOMEM;
	prof->n_comment = p->nnotes;
	prof->comment = b->comments;
	prof->n_string_table = b->str.n;
	prof->string_table = (char **)b->str.v;
	return 0;
}

static int pack(const struct rep_opts *o, struct rep_images *images, const struct rep_profile *p,
		struct rep_addrs *k, uint8_t **buf, size_t *len)
{
	Profile prof = DOMPROF__PPROF__PROFILE__INIT;
	struct builder b = { .o = o, .images = images, .p = p, .k = k };
	int rc = build(&b, &prof);

	*buf = NULL;
	*len = 0;
	if (!rc) {
		*len = domprof__pprof__profile__get_packed_size(&prof);
		*buf = malloc(*len ? *len : 1);
		if (*buf)
			domprof__pprof__profile__pack(&prof, *buf);
		else
			rc = -ENOMEM;
	}
	free_builder(&b);
	return rc;
}

int rep_pprof_pack(const struct rep_opts *o, struct rep_images *images,
		   const struct rep_profile *p, uint8_t **buf, size_t *len)
{
	return pack(o, images, p, NULL, buf, len);
}

static int write_gz(const char *path, const uint8_t *buf, size_t len)
{
	gzFile gz;
	int rc = 0;

	gz = strcmp(path, "-") ? gzopen(path, "wb") : gzdopen(dup(STDOUT_FILENO), "wb");
	if (!gz)
		return errno ? -errno : -ENOMEM;
	/* gzwrite takes an unsigned int: big profiles go in chunks. */
	while (len && !rc) {
		unsigned int n = len > (1u << 30) ? (1u << 30) : (unsigned int)len;

		if (gzwrite(gz, buf, n) != (int)n)
			rc = -EIO;
		buf += n;
		len -= n;
	}
	if (gzclose(gz) != Z_OK && !rc)
		rc = -EIO;
	return rc;
}

struct pprof_args {
	const char *output;
};

static void usage(FILE *f)
{
	fputs("Usage: oppprof -o FILE.pb.gz [OPTION]... [PROFILE SPECIFICATION]...\n"
	      "Write the samples of a domprof session as a gzipped pprof profile, for\n"
	      "go tool pprof, Pyroscope, Parca.  Labels: domain, vmm, comm, and pid, tid,\n"
	      "cpu where the session separated them.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output=FILE       the file to write (\"-\": standard output)\n", f);
	fputs(rep_view_common_usage, f);
}

static int pprof_opt(void *ctx, int c, const char *arg, char *err, size_t errlen)
{
	struct pprof_args *a = ctx;

	if (c == 'o') {
		a->output = arg;
		return 0;
	}
	if (c == 0 && a->output)
		return 0;
	snprintf(err, errlen, c ? "unknown option" : "give the output file with -o FILE.pb.gz");
	return -EINVAL;
}

int rep_pprof_main(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct pprof_args args = { 0 };
	struct rep_addrs *k = NULL;
	struct rep_key_sink sink = { .key = rep_addrs_sink };
	struct rep_images *images = NULL;
	struct rep_profile *p = NULL;
	uint8_t *buf = NULL;
	size_t len;
	struct rep_opts o;
	int rc, status = 1;

	du_log_set_prog("oppprof");
	rc = rep_view_parse("oppprof", &o, argc, argv, extra, "o:", pprof_opt, &args, usage);
	if (rc) {
		status = rc == 1 ? 0 : 1;
		goto out;
	}
	/* by address: every sample key with its counts */
	images = rep_images_new(&o);
	k = sink.ctx = rep_addrs_new();
	if (!images || !k) {
		du_err("out of memory");
		goto out;
	}
	if (rep_collect_keys(&o, images, &sink, &p))
		goto out;
	rc = pack(&o, images, p, k, &buf, &len);
	if (!rc)
		rc = write_gz(args.output, buf, len);
	if (rc) {
		du_err("cannot write %s: %s", args.output, strerror(-rc));
		goto out;
	}
	status = 0;
out:
	free(buf);
	rep_addrs_free(k);
	rep_profile_free(p);
	rep_images_free(images);
	rep_opts_release(&o);
	return status;
}
