/* opreport -d and -g: samples per instruction, and symbols' source lines
 * (rep_info.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rep_annot_child.h"
#include "rep_child.h"
#include "rep_collect.h"
#include "rep_debug.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_info.h"
#include "rep_opts.h"
#include "rep_sym.h"
#include "util/du_log.h"

/* One sample key as collected: its group (before filtering) and symbol. */
struct key {
	size_t group, row, cls;
	long sym;
	uint64_t vma, count;
};

struct rep_keys {
	struct key *k;
	size_t n, cap;
};

static int on_key(void *ctx, const struct rep_profile *p, size_t group, size_t cls,
		  const struct rep_bin *bin, long sym, uint64_t key, uint64_t count)
{
	struct rep_keys *ks = ctx;
	uint64_t vma = key;

	(void)p;
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 1024;
		struct key *nk = realloc(ks->k, cap * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		ks->k = nk;
		ks->cap = cap;
	}
	if (bin && !rep_bin_key_to_vma(bin, key, &vma))
		vma = key;
	ks->k[ks->n++] = (struct key){ .group = group, .cls = cls, .sym = sym, .vma = vma,
				       .count = count };
	return 0;
}

struct rep_keys *rep_keys_new(struct rep_key_sink *sink)
{
	struct rep_keys *k = calloc(1, sizeof(*k));

	sink->key = on_key;
	sink->ctx = k;
	return k;
}

void rep_keys_free(struct rep_keys *k)
{
	if (!k)
		return;
	free(k->k);
	free(k);
}

static uint64_t row_key(size_t group, long sym)
{
	return (uint64_t)group << 32 | (uint32_t)(sym + 1);
}

static int cmp_key(const void *x, const void *y)
{
	const struct key *a = x, *b = y;

	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	return a->vma < b->vma ? -1 : a->vma > b->vma;
}

/* Each key's row in @p, SIZE_MAX when its group or symbol was filtered out. */
static int find_rows(const struct rep_profile *p, struct rep_keys *k, const long *gmap)
{
	struct rep_u64map *m = rep_u64map_new();
	int created;

	if (!m)
		return -ENOMEM;
	for (size_t r = 0; r < p->nrows; r++)
		if (rep_u64map_get_or_put(m, row_key(p->rows[r].group, p->rows[r].sym), r,
					  &created) < 0)
			goto out_oom;
	for (size_t i = 0; i < k->n; i++) {
		long g = gmap ? gmap[k->k[i].group] : (long)k->k[i].group, r;

		k->k[i].row = SIZE_MAX;
		if (g < 0)
			continue;
		r = rep_u64map_get_or_put(m, row_key((size_t)g, k->k[i].sym), p->nrows, &created);
		if (r < 0)
			goto out_oom;
		if ((size_t)r < p->nrows)
			k->k[i].row = (size_t)r;
	}
	rep_u64map_free(m);
	return 0;
out_oom:
	rep_u64map_free(m);
	return -ENOMEM;
}

int rep_info_details(struct rep_info *in, const struct rep_profile *p,
		     const struct rep_keys *keys, const long *gmap)
{
	struct rep_keys *k = (struct rep_keys *)keys;
	size_t nd = 0, n = p->nclasses;
	int rc = find_rows(p, k, gmap);

	if (rc)
		return rc;
	qsort(k->k, k->n, sizeof(*k->k), cmp_key);
	in->det_first = calloc(p->nrows + 1, sizeof(*in->det_first));
	in->det_vma = calloc(k->n + 1, sizeof(*in->det_vma));
	in->det_counts = calloc((k->n + 1) * n, sizeof(*in->det_counts));
	if (!in->det_first || !in->det_vma || !in->det_counts)
		return -ENOMEM;
	for (size_t i = 0; i < k->n && k->k[i].row != SIZE_MAX; i++) {
		const struct key *e = &k->k[i];

		if (!i || e->row != k->k[i - 1].row || e->vma != k->k[i - 1].vma) {
			in->det_vma[nd++] = e->vma;
			in->det_first[e->row + 1]++;	/* counts, summed below */
		}
		in->det_counts[(nd - 1) * n + e->cls] += e->count;
	}
	for (size_t r = 0; r < p->nrows; r++)
		in->det_first[r + 1] += in->det_first[r];
	in->ndet = nd;
	return 0;
}

/* --- -g ------------------------------------------------------------------ */

/* The lines of the symbol rows @rows (@n of them, all of one binary; the
 * first one's group says where it is) from a parser child; a binary it cannot read leaves them
 * without. */
static int bin_lines(struct rep_info *in, const struct rep_opts *o, const struct rep_profile *p,
		     struct rep_images *images, const struct rep_child_cfg *cfg,
		     const size_t *rows, size_t n)
{
	const struct rep_group *g = &p->groups[p->rows[rows[0]].group];
	struct rep_debug_opts dopts = { .debug_dir = o->debug_dir, .need_lines = true };
	struct rep_annot_req r = { .dopts = &dopts, .nvmas = n };
	struct rep_annot_res res;
	uint64_t *vmas = calloc(n, sizeof(*vmas));
	char *file = rep_images_locate(images, g->domain, g->vmm, g->dep.name), err[256];
	int rc = -ENOMEM;

	if (!vmas)
		goto out;
	rc = 0;
	r.fd = file ? open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (r.fd < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		vmas[i] = rep_bin_sym(p->rows[rows[i]].bin, (size_t)p->rows[rows[i]].sym)->start;
	r.file = file;
	r.vmas = vmas;
	if (rep_annot_run(cfg, &r, &res, err, sizeof(err))) {
		du_warn("no source lines for %s: %s", file, err);
		goto out_close;
	}
	for (size_t i = 0; i < n && res.have_lines; i++) {
		in->src_line[rows[i]] = res.lines[i];
		if (res.files[i] && !(in->src_file[rows[i]] = strdup(res.files[i])))
			rc = -ENOMEM;
	}
	rep_annot_res_free(&res, n);
out_close:
	close(r.fd);
out:
	free(file);
	free(vmas);
	return rc;
}

int rep_info_lines(struct rep_info *in, const struct rep_opts *o, const struct rep_profile *p,
		   struct rep_images *images)
{
	size_t *rows = calloc(p->nrows + 1, sizeof(*rows));
	bool *done = calloc(p->nrows + 1, sizeof(*done));
	struct rep_child_cfg cfg;
	int rc = -ENOMEM;

	in->src_file = calloc(p->nrows + 1, sizeof(*in->src_file));
	in->src_line = calloc(p->nrows + 1, sizeof(*in->src_line));
	if (!rows || !done || !in->src_file || !in->src_line)
		goto out;
	rc = rep_child_cfg_init(&cfg);
	if (rc) {
		du_warn("no source lines: no user to parse binaries as (%s)", strerror(-rc));
		rc = 0;
		goto out;
	}
	/* one child per binary: its symbol rows together */
	for (size_t i = 0; i < p->nrows && !rc; i++) {
		const struct rep_symrow *s = &p->rows[i];
		size_t n = 0;

		if (done[i] || s->sym < 0 || p->groups[s->group].dep.kind != SFN_ROOT)
			continue;
		for (size_t j = i; j < p->nrows; j++)
			if (p->rows[j].bin == s->bin && p->rows[j].sym >= 0) {
				rows[n++] = j;
				done[j] = true;
			}
		rc = bin_lines(in, o, p, images, &cfg, rows, n);
	}
out:
	free(rows);
	free(done);
	return rc;
}
