/*
 * oppprof's tables: strings, mappings (a binary each, with its build id
 * and code range), functions (one per symbol, or per inlined function and
 * file) and locations (an address in a symbol), each made on first use.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rep_hash.h"
#include "rep_image.h"
#include "rep_pprof_int.h"
#include "rep_sym.h"
#include "rep_verify.h"
#include "util/du_elfid.h"

int pp_vec_push(struct vec *v, void *x)
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

/*
 * pprof calls the first mapping the profile's main binary ("File:" in its
 * reports): the one whose code took the most samples goes first, not the
 * first one met (often the vDSO or the kernel).
 */
void pp_main_mapping_first(struct builder *b)
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

int64_t pp_str_id(struct builder *b, const char *s)
{
	long i = rep_strmap_get(b->strs, s);
	char *copy;

	if (i >= 0)
		return i;
	copy = strdup(s);
	if (pp_vec_push(&b->str, copy) || rep_strmap_put(b->strs, s, b->str.n - 1))
		return -1;
	return (int64_t)(b->str.n - 1);
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

int64_t pp_mapping_id(struct builder *b, const struct rep_group *g, bool has_syms)
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
	m->filename = pp_str_id(b, file);
	/* the range from the bounded program-header reader; the build-id
	 * its parser child read, else that reader's */
	elfbid[0] = '\0';
	if (located)
		mapping_elf(m, located, elfbid, sizeof(elfbid));
	if (located && g->dep.kind == SFN_ROOT)
		rep_images_info(b->images, g->domain, g->vmm, &g->dep, &bid, &dbg);
	m->build_id = pp_str_id(b, bid && *bid ? bid : elfbid);
	/* Every location carries its function (or "(no symbols)"): nothing
	 * is left for pprof to symbolize, whether the binary had symbols or not. */
	m->has_functions = true;
	if (m->filename < 0 || m->build_id < 0 || pp_vec_push(&b->mapping, m))
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
	f->name = f->system_name = pp_str_id(b, name);
	f->filename = filename;
	f->start_line = start_line;
	if (f->name < 0 || pp_vec_push(&b->function, f) || rep_strmap_put(b->funcs, key, b->function.n - 1)) {
		free(key);
		return -ENOMEM;
	}
	free(key);
	return (int64_t)b->function.n;
}

int64_t pp_function_id(struct builder *b, const char *name, int64_t filename,
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
 * the binary until pp_fill_lines() gives it its source file and first line.
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

int64_t pp_location_id(struct builder *b, int64_t mid, const struct rep_bin *bin, long sym,
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
		: pp_function_id(b, "(no symbols)", m->filename, 0);
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
	if (pp_vec_push(&b->location, loc) || rep_strmap_put(b->locs, key, b->location.n - 1))
		return -ENOMEM;
	return (int64_t)b->location.n;
}
