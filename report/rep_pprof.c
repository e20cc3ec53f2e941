#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pprof.pb-c.h"
#include "rep_addr.h"
#include "rep_annot_child.h"
#include "rep_child.h"
#include "rep_collect.h"
#include "rep_debug.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_pprof.h"
#include "rep_stacks.h"
#include "rep_sym.h"
#include "rep_verify.h"
#include "rep_view.h"
#include "util/du_elfid.h"
#include "util/du_log.h"

typedef Domprof__Pprof__Profile Profile;
typedef Domprof__Pprof__ValueType ValueType;
typedef Domprof__Pprof__Sample Sample;
typedef Domprof__Pprof__Label Label;
typedef Domprof__Pprof__Mapping Mapping;
typedef Domprof__Pprof__Location Location;
typedef Domprof__Pprof__Line Line;
typedef Domprof__Pprof__Function Function;

/* Pointer arrays that grow; every element is malloc'd on its own. */
struct vec {
	void **v;
	size_t n, cap;
};

static int vec_push(struct vec *v, void *x)
{
	if (!x)
		return -ENOMEM;
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 64;
		void **nv = realloc(v->v, cap * sizeof(*nv));

		if (!nv) {
			free(x);
			return -ENOMEM;
		}
		v->v = nv;
		v->cap = cap;
	}
	v->v[v->n++] = x;
	return 0;
}

struct builder {
	const struct rep_opts *o;
	struct rep_images *images;
	const struct rep_profile *p;
	struct rep_strmap *strs, *maps, *locs, *funcs;
	struct vec str, vt, sample, mapping, location, function;
	/* recorded stacks: each row's counts not yet given to a stack
	 * ([nrows][nclasses]), rows by identity */
	uint64_t *left;
	struct rep_strmap *rowids;
	struct rep_addrs *k;	/* NULL: a location per symbol, at its start */
	int64_t *comments;	/* the report's warnings (unverified images) */
	/* per mapping (by id - 1): where its binary is (NULL: no symbols
	 * to give lines to) */
	struct maplines {
		char *located;
	} *ml;
	/* per function (by id - 1) made for a symbol: its mapping id and
	 * start address, for its source file and first line (0: none) */
	struct fsym {
		uint64_t mid, start;
	} *fsym;
	size_t fsym_cap;
	struct rep_child_cfg cfg;
	bool cfg_ready;
};

static int64_t str_id(struct builder *b, const char *s);
static int64_t function_id(struct builder *b, const char *name, int64_t filename,
			   uint32_t start_line);

/* A binary with more addresses than this gets no source lines (a parse
 * has its limits). */
#define LINES_MAX_VMAS 200000u

/*
 * Location @loc's lines from the chain @f[0..@nf) its address has
 * (innermost first): the last entry stays its function, at the line the
 * chain gives; each frame inlined into it becomes an entry before it,
 * the function whose code it is, in its own source file.  A lone frame
 * in another file than its function's (no inline info) changes nothing.
 */
static int set_lines(struct builder *b, Location *loc, const struct rep_annot_frame *f,
		     unsigned int nf)
{
	Line *own = loc->line[0], **lines;
	const Function *fn = b->function.v[own->function_id - 1];

	if (!nf || !f[nf - 1].line)
		return 0;
	if (nf == 1) {
		if (f[0].file && str_id(b, f[0].file) == fn->filename)
			own->line = f[0].line;
		return 0;
	}
	lines = calloc(nf, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (unsigned int k = 0; k + 1 < nf; k++) {
		int64_t file = f[k].file ? str_id(b, f[k].file) : 0;
		int64_t fid = file < 0 ? file : function_id(b, f[k].func ? f[k].func : "(inlined)", file, 0);

		lines[k] = malloc(sizeof(**lines));
		if (fid < 0 || !lines[k]) {
			for (unsigned int j = 0; j <= k; j++)
				free(lines[j]);
			free(lines);
			return -ENOMEM;
		}
		domprof__pprof__line__init(lines[k]);
		lines[k]->function_id = (uint64_t)fid;
		lines[k]->line = f[k].line;
	}
	own->line = f[nf - 1].line;
	lines[nf - 1] = own;
	free(loc->line);
	loc->line = lines;
	loc->n_line = nf;
	return 0;
}

/*
 * Function @f's source file and first line from the chain at its start:
 * the outermost frame's (code inlined at a function's first instruction
 * is not where the function stands).
 */
static void set_function(struct builder *b, Function *f, const struct rep_annot_frame *fr,
			 unsigned int nf)
{
	int64_t file;

	if (!nf || !fr[nf - 1].file || !fr[nf - 1].line)
		return;
	file = str_id(b, fr[nf - 1].file);
	if (file < 0)
		return;
	f->filename = file;
	f->start_line = fr[nf - 1].line;
}

/*
 * Source files and lines from a mapping's binary: its functions' starts
 * and its locations' addresses, in one confined parser child (the same as
 * opannotate's: this process reads no ELF).  Each function gets its
 * source file and first line, so that pprof -list shows its source; each
 * location its own line and the frames inlined there, so that -list,
 * -lines and -disasm give counts per line and inlined code its own
 * function.
 */
static void fill_mapping(struct builder *b, uint64_t mid, const struct rep_debug_opts *dopts)
{
	struct rep_annot_req r = { .file = b->ml[mid - 1].located, .dopts = dopts, .fd = -1,
				   .inlines = true };
	size_t cap = b->function.n + b->location.n, n = 0, nf = 0;
	void **at = calloc(cap ? cap : 1, sizeof(*at));
	uint64_t *vmas = calloc(cap ? cap : 1, sizeof(*vmas));
	struct rep_annot_res res;
	char err[256];

	for (size_t i = 0; at && vmas && i < b->function.n && i < b->fsym_cap; i++) {
		if (b->fsym[i].mid == mid) {
			at[n] = b->function.v[i];
			vmas[n++] = b->fsym[i].start;
		}
	}
	nf = n;
	for (size_t i = 0; at && vmas && i < b->location.n; i++) {
		Location *loc = b->location.v[i];

		if (loc->mapping_id == mid && loc->address) {
			at[n] = loc;
			vmas[n++] = loc->address;
		}
	}
	if (n && n <= LINES_MAX_VMAS)
		r.fd = open(r.file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	r.vmas = vmas;
	r.nvmas = n;
	if (r.fd >= 0 && !rep_annot_run(&b->cfg, &r, &res, err, sizeof(err))) {
		/* the functions first: a location's lone line is kept only in
		 * its function's file */
		for (size_t j = 0; res.have_lines && res.frames && j < nf; j++)
			set_function(b, at[j], res.frames[j], res.nframes[j]);
		for (size_t j = nf; res.have_lines && res.frames && j < n; j++)
			if (set_lines(b, at[j], res.frames[j], res.nframes[j]))
				break;
		rep_annot_res_free(&res, n);
	}
	if (r.fd >= 0)
		close(r.fd);
	free(at);
	free(vmas);
}

static void fill_lines(struct builder *b)
{
	struct rep_debug_opts dopts = { .debug_dir = b->o->debug_dir, .need_lines = true };

	if (getenv("DEBUGINFOD_URLS"))
		dopts.debuginfod_ms = 15000;
	if (!b->cfg_ready && rep_child_cfg_init(&b->cfg))
		return;
	b->cfg_ready = true;
	for (size_t m = 0; m < b->mapping.n; m++)
		if (b->ml[m].located)
			fill_mapping(b, m + 1, &dopts);
}

/*
 * pprof calls the first mapping the profile's main binary ("File:" in its
 * reports): the one whose code took the most samples goes first, not the
 * first one met (often the vDSO or the kernel).
 */
static void main_mapping_first(struct builder *b)
{
	uint64_t *n = calloc(b->mapping.n ? b->mapping.n : 1, sizeof(*n));
	size_t best = 0;
	Mapping *m;

	if (!n)
		return;
	for (size_t i = 0; i < b->sample.n; i++) {
		const Sample *s = b->sample.v[i];
		const Location *loc = s->n_location_id ? b->location.v[s->location_id[0] - 1] : NULL;

		if (loc && loc->mapping_id && s->n_value)
			n[loc->mapping_id - 1] += (uint64_t)s->value[0];
	}
	for (size_t i = 1; i < b->mapping.n; i++)
		if (n[i] > n[best])
			best = i;
	free(n);
	if (!best)
		return;
	for (size_t i = 0; i < b->location.n; i++) {
		Location *loc = b->location.v[i];

		if (loc->mapping_id == 1)
			loc->mapping_id = best + 1;
		else if (loc->mapping_id == best + 1)
			loc->mapping_id = 1;
	}
	m = b->mapping.v[0];
	b->mapping.v[0] = b->mapping.v[best];
	b->mapping.v[best] = m;
	((Mapping *)b->mapping.v[0])->id = 1;
	((Mapping *)b->mapping.v[best])->id = best + 1;
}

/* Index of @s in the string table, added on first use; -1: no memory. */
static int64_t str_id(struct builder *b, const char *s)
{
	long i = rep_strmap_get(b->strs, s);
	char *copy;

	if (i >= 0)
		return i;
	copy = strdup(s);
	if (vec_push(&b->str, copy) || rep_strmap_put(b->strs, s, b->str.n - 1))
		return -1;
	return (int64_t)(b->str.n - 1);
}

static int add_value_type(struct builder *b, const char *type, const char *unit)
{
	ValueType *vt = malloc(sizeof(*vt));
	int64_t t = str_id(b, type), u = str_id(b, unit);

	if (!vt || t < 0 || u < 0) {
		free(vt);
		return -ENOMEM;
	}
	domprof__pprof__value_type__init(vt);
	vt->type = t;
	vt->unit = u;
	return vec_push(&b->vt, vt);
}

/* The file name a mapping shows: host binaries by path, guest binaries by
 * their copy in the image cache, kernels and anonymous code by a tag. */
static char *mapping_file(struct builder *b, const struct rep_group *g, char **located)
{
	const struct sfn_image *img = &g->dep;
	bool guest = g->domain && !g->vmm;
	char *s = NULL;

	*located = NULL;
	switch (img->kind) {
	case SFN_KERN:
		if (asprintf(&s, "[%skernel] %s", guest ? "guest " : "", img->name) < 0)
			s = NULL;
		return s;
	case SFN_ANON:
		if (asprintf(&s, "{anon:%s}", img->name) < 0)
			s = NULL;
		return s;
	default:
		*located = rep_images_locate(b->images, g->domain, g->vmm, img->name);
		return strdup(guest && *located ? *located : img->name);
	}
}

/*
 * @m's build id (into @bid) and range from ELF file @file, read by the
 * bounded reader in a parser child: the code segment's vaddr, end and
 * file offset, so that pprof's base (start - offset + segment offset -
 * segment vaddr) is 0 and a location's address is the binary's own vma,
 * as perf's are.
 */
static void mapping_elf(Mapping *m, const char *file, char *bid, size_t size)
{
	struct du_elf_load seg;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), has = 0;

	if (fd < 0)
		return;
	if (rep_elf_probe(fd, bid, size, &seg, &has) || bid[0] == '?')
		bid[0] = '\0';
	if (has && seg.vaddr + seg.memsz > seg.vaddr) {
		m->memory_start = seg.vaddr;
		m->memory_limit = seg.vaddr + seg.memsz;
		m->file_offset = seg.offset;
	}
	close(fd);
}

/* The mapping id (1-based) of group @g's binary. */
static int64_t mapping_id(struct builder *b, const struct rep_group *g, bool has_syms)
{
	char *key = NULL, *file = NULL, *located = NULL;
	const char *bid = NULL, *dbg = NULL;
	char elfbid[2 * 64 + 1];
	struct maplines *nml;
	Mapping *m = NULL;
	long i;

	if (asprintf(&key, "%s\x01%d\x01%d\x01%s", g->domain && !g->vmm ? g->domain : "",
		     g->vmm, (int)g->dep.kind, g->dep.name) < 0)
		return -ENOMEM;
	i = rep_strmap_get(b->maps, key);
	if (i >= 0) {
		free(key);
		return i + 1;
	}
	file = mapping_file(b, g, &located);
	m = malloc(sizeof(*m));
	if (!file || !m)
		goto out_oom;
	domprof__pprof__mapping__init(m);
	m->id = b->mapping.n + 1;
	m->filename = str_id(b, file);
	/* the range from the bounded program-header reader; the build-id
	 * its parser child read, else that reader's */
	elfbid[0] = '\0';
	if (located)
		mapping_elf(m, located, elfbid, sizeof(elfbid));
	if (located && g->dep.kind == SFN_ROOT)
		rep_images_info(b->images, g->domain, g->vmm, &g->dep, &bid, &dbg);
	m->build_id = str_id(b, bid && *bid ? bid : elfbid);
	/* Every location carries its function (or "(no symbols)"): nothing
	 * is left for pprof to symbolize, whether the binary had symbols or not. */
	m->has_functions = true;
	if (m->filename < 0 || m->build_id < 0 || vec_push(&b->mapping, m))
		goto out_oom_pushed;
	nml = realloc(b->ml, b->mapping.n * sizeof(*nml));
	if (!nml)
		goto out_oom_pushed;
	b->ml = nml;
	memset(&nml[b->mapping.n - 1], 0, sizeof(*nml));
	if (g->dep.kind == SFN_ROOT && has_syms) {
		nml[b->mapping.n - 1].located = located;
		located = NULL;
	}
	if (rep_strmap_put(b->maps, key, b->mapping.n - 1))
		goto out_oom_pushed;
	free(key);
	free(file);
	free(located);
	return (int64_t)b->mapping.n;
out_oom:
	free(m);
out_oom_pushed:
	free(key);
	free(file);
	free(located);
	return -ENOMEM;
}

/* The function keyed @key (taken: freed here), made on first use with
 * @name, @filename and @start_line. */
static int64_t function_by_key(struct builder *b, char *key, const char *name, int64_t filename,
			       uint32_t start_line)
{
	Function *f;
	long i;

	if (!key)
		return -ENOMEM;
	i = rep_strmap_get(b->funcs, key);
	if (i >= 0) {
		free(key);
		return i + 1;
	}
	f = malloc(sizeof(*f));
	if (!f) {
		free(key);
		return -ENOMEM;
	}
	domprof__pprof__function__init(f);
	f->id = b->function.n + 1;
	f->name = f->system_name = str_id(b, name);
	f->filename = filename;
	f->start_line = start_line;
	if (f->name < 0 || vec_push(&b->function, f) || rep_strmap_put(b->funcs, key, b->function.n - 1)) {
		free(key);
		return -ENOMEM;
	}
	free(key);
	return (int64_t)b->function.n;
}

/* The function @name of source file @filename (an inlined frame's). */
static int64_t function_id(struct builder *b, const char *name, int64_t filename,
			   uint32_t start_line)
{
	char *key = NULL;

	if (asprintf(&key, "%s\x01%" PRId64, name, filename) < 0)
		key = NULL;
	return function_by_key(b, key, name, filename, start_line);
}

/*
 * The function of symbol @name at @start in mapping @mid: one per symbol
 * (two static functions of one name in one binary stay two), named by
 * the binary until fill_lines() gives it its source file and first line.
 */
static int64_t sym_function_id(struct builder *b, const char *name, uint64_t mid,
			       uint64_t start)
{
	int64_t bin = ((Mapping *)b->mapping.v[mid - 1])->filename, fid;
	size_t before = b->function.n;
	char *key = NULL;

	if (asprintf(&key, "%s\x02%" PRIu64 ":%" PRIu64, name, mid, start) < 0)
		key = NULL;
	fid = function_by_key(b, key, name, bin, 0);
	if (fid < 0 || b->function.n == before)
		return fid;
	/* as long as the function vector can hold, grown when it grows */
	if (b->fsym_cap < b->function.cap) {
		struct fsym *nv = realloc(b->fsym, b->function.cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		memset(nv + b->fsym_cap, 0, (b->function.cap - b->fsym_cap) * sizeof(*nv));
		b->fsym = nv;
		b->fsym_cap = b->function.cap;
	}
	b->fsym[fid - 1] = (struct fsym){ .mid = mid, .start = start };
	return fid;
}

/*
 * The location of sample key *@skey (NULL: of the symbol's start) in
 * symbol @sym (-1: none) of @bin in mapping @mid.  Its address is the
 * key's vma in @bin (the key itself, a file offset, without symbols).
 */
static int64_t location_id(struct builder *b, int64_t mid, const struct rep_bin *bin, long sym,
			   const uint64_t *skey)
{
	const struct rep_sym *s = sym >= 0 ? rep_bin_sym(bin, (size_t)sym) : NULL;
	const Mapping *m = b->mapping.v[mid - 1];
	uint64_t addr = s ? s->start : 0;
	char key[96];
	Location *loc;
	Line *line, **lines;
	int64_t fid;
	long i;

	if (skey && !(bin && rep_bin_key_to_vma(bin, *skey, &addr)))
		addr = *skey;
	snprintf(key, sizeof(key), "%" PRId64 ":%ld:%" PRIu64, mid, sym, addr);
	i = rep_strmap_get(b->locs, key);
	if (i >= 0)
		return i + 1;
	fid = s ? sym_function_id(b, s->name, (uint64_t)mid, s->start)
		: function_id(b, "(no symbols)", m->filename, 0);
	if (fid < 0)
		return fid;
	loc = malloc(sizeof(*loc));
	line = malloc(sizeof(*line));
	lines = malloc(sizeof(*lines));
	if (!loc || !line || !lines) {
		free(loc);
		free(line);
		free(lines);
		return -ENOMEM;
	}
	domprof__pprof__location__init(loc);
	domprof__pprof__line__init(line);
	line->function_id = (uint64_t)fid;
	loc->line = lines;
	loc->line[0] = line;
	loc->n_line = 1;
	loc->id = b->location.n + 1;
	loc->mapping_id = (uint64_t)mid;
	loc->address = addr;
	if (vec_push(&b->location, loc) || rep_strmap_put(b->locs, key, b->location.n - 1))
		return -ENOMEM;
	return (int64_t)b->location.n;
}

static int add_label(struct builder *b, Sample *s, const char *key, const char *str, int64_t num)
{
	Label *l = malloc(sizeof(*l));

	if (!l)
		return -ENOMEM;
	domprof__pprof__label__init(l);
	s->label[s->n_label++] = l;
	l->key = str_id(b, key);
	if (str)
		l->str = str_id(b, str);
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
	if (!s->location_id || !s->value || !s->label || vec_push(&b->sample, s)) {
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
		lid = location_id(b, mid, r->bin, r->sym, &e->key);
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
	mid = mapping_id(b, g, r->bin != NULL);
	if (mid < 0)
		return (int)mid;
	if (b->k)
		return add_row_keys(b, r, mid);
	lid = location_id(b, mid, r->bin, r->sym, NULL);
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
		mid = mapping_id(b, &fg, bin != NULL);
		lid = mid < 0 ? mid : location_id(b, mid, bin, i ? (bin ? rep_bin_lookup_key(
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
	if (!b->strs || !b->maps || !b->locs || !b->funcs || str_id(b, "") != 0)
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
	fill_lines(b);
	main_mapping_first(b);
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
		if ((b->comments[i] = str_id(b, p->notes[i])) < 0)
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
