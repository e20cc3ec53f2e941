#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_kernel.h"
#include "rep_sym.h"
#include "util/du_ksym.h"

struct ksym {
	uint64_t addr;
	char type;
	char *name;
	char *mod;		/* NULL for vmlinux */
	size_t seq;		/* line order, kept among equals by the sort */
};

struct kimage {
	char *name;
	uint64_t base;
	uint64_t size;		/* 0 if unknown */
	bool have_base;
	bool vmlinux;		/* the kernel proper: symbols without [mod] */
	size_t lo, hi;		/* its symbols: syms[lo..hi) */
	struct rep_bin *bin;	/* built lazily */
	bool tried;
};

/*
 * A guest writes these files, so every step is n log n in their size:
 * symbols are sorted by module once, images sorted by name and found by
 * binary search, and an image is built from its own run of symbols only
 * (80,000 lines of distinct modules took 8.2 s when each line searched the
 * image list and each image scanned every symbol).
 */

struct rep_kernel {
	struct ksym *syms;
	size_t nsyms;
	struct kimage *imgs;
	size_t nimgs;
};

static void ksym_free_all(struct rep_kernel *k)
{
	for (size_t i = 0; i < k->nsyms; i++) {
		free(k->syms[i].name);
		free(k->syms[i].mod);
	}
	free(k->syms);
}

void rep_kernel_free(struct rep_kernel *k)
{
	if (!k)
		return;
	ksym_free_all(k);
	for (size_t i = 0; i < k->nimgs; i++) {
		free(k->imgs[i].name);
		rep_bin_free(k->imgs[i].bin);
	}
	free(k->imgs);
	free(k);
}

static int cmp_img_name(const void *key, const void *elem)
{
	return strcmp(key, ((const struct kimage *)elem)->name);
}

static struct kimage *find_img(struct rep_kernel *k, const char *name)
{
	return bsearch(name, k->imgs, k->nimgs, sizeof(*k->imgs), cmp_img_name);
}

/* Append an image (not yet sorted): NULL on ENOMEM. */
static struct kimage *push_img(struct rep_kernel *k, size_t *cap, const char *name)
{
	struct kimage *im;

	if (k->nimgs == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct kimage *nv = realloc(k->imgs, ncap * sizeof(*nv));

		if (!nv)
			return NULL;
		k->imgs = nv;
		*cap = ncap;
	}
	im = &k->imgs[k->nimgs];
	memset(im, 0, sizeof(*im));
	im->name = strdup(name);
	if (!im->name)
		return NULL;
	k->nimgs++;
	return im;
}

/* A kallsyms line (util/du_ksym.h) into @out, its strings copied. */
static int parse_kallsyms_line(const char *line, struct ksym *out)
{
	struct du_ksym s;

	if (du_ksym_parse(line, &s))
		return -EINVAL;
	out->addr = s.addr;
	out->type = s.type;
	out->name = strndup(s.name, s.name_len);
	out->mod = s.mod ? strndup(s.mod, s.mod_len) : NULL;
	if (!out->name || (s.mod && !out->mod)) {
		free(out->name);
		free(out->mod);
		return -ENOMEM;
	}
	return 0;
}

static int load_kallsyms(struct rep_kernel *k, FILE *f, char *err, size_t errlen)
{
	char line[1024];
	size_t cap = 0;
	bool nonzero = false;

	while (fgets(line, sizeof(line), f)) {
		struct ksym s;

		if (!strchr(line, '\n') && !feof(f)) {
			int c;

			/* Over-long line: skip the rest of it. */
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		if (parse_kallsyms_line(line, &s))
			continue;
		if (k->nsyms == cap) {
			struct ksym *nv;

			cap = cap ? cap * 2 : 4096;
			nv = realloc(k->syms, cap * sizeof(*nv));
			if (!nv) {
				free(s.name);
				free(s.mod);
				snprintf(err, errlen, "out of memory");
				return -ENOMEM;
			}
			k->syms = nv;
		}
		s.seq = k->nsyms;
		k->syms[k->nsyms++] = s;
		if (s.addr)
			nonzero = true;
	}
	if (!k->nsyms) {
		snprintf(err, errlen, "no symbols");
		return -ENODATA;
	}
	if (!nonzero) {
		snprintf(err, errlen, "all addresses are zero (copied without privilege?)");
		return -ENODATA;
	}
	return 0;
}

/* /proc/modules (util/du_ksym.h): each module's load address and size */
static void load_modules(struct rep_kernel *k, FILE *f, size_t *cap)
{
	char line[4096], name[256];

	while (fgets(line, sizeof(line), f)) {
		struct du_kmod m;
		struct kimage *im;

		if (du_kmod_parse(line, &m) || m.name_len >= sizeof(name))
			continue;
		memcpy(name, m.name, m.name_len);
		name[m.name_len] = '\0';
		im = push_img(k, cap, name);
		if (!im)
			return;
		im->base = m.addr;
		im->size = m.size;
		im->have_base = true;
	}
}

/* Kernel proper (no module) first, then by module name, then address. */
static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	int c;

	if (!x->mod || !y->mod)
		c = !!x->mod - !!y->mod;
	else
		c = strcmp(x->mod, y->mod);
	if (c)
		return c;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* By name; of two images of one name, the one with symbols (or the kernel
 * proper) first, so it is the one kept. */
static int cmp_img(const void *a, const void *b)
{
	const struct kimage *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->vmlinux != y->vmlinux)
		return x->vmlinux ? -1 : 1;
	return (x->hi > x->lo) == (y->hi > y->lo) ? 0 : x->hi > x->lo ? -1 : 1;
}

/*
 * Sort the symbols, make one image per run of a module's symbols plus
 * vmlinux plus each line of @modules, sort the images by name and merge
 * those of one name (the symbols of one, the load address of a modules
 * line).  0 or -ENOMEM.
 */
static int index_images(struct rep_kernel *k, const char *modules, size_t *cap)
{
	struct kimage *im;
	size_t i = 0, o;
	FILE *f;

	qsort(k->syms, k->nsyms, sizeof(*k->syms), cmp_ksym);
	im = push_img(k, cap, "vmlinux");
	if (!im)
		return -ENOMEM;
	im->vmlinux = true;
	while (i < k->nsyms && !k->syms[i].mod)
		i++;
	im->hi = i;
	while (i < k->nsyms) {
		size_t lo = i;

		while (i < k->nsyms && !strcmp(k->syms[i].mod, k->syms[lo].mod))
			i++;
		im = push_img(k, cap, k->syms[lo].mod);
		if (!im)
			return -ENOMEM;
		im->lo = lo;
		im->hi = i;
	}
	f = modules ? fopen(modules, "r") : NULL;
	if (f) {
		load_modules(k, f, cap);
		fclose(f);
	}
	qsort(k->imgs, k->nimgs, sizeof(*k->imgs), cmp_img);
	for (i = 0, o = 0; i < k->nimgs; i++) {
		struct kimage *cur = &k->imgs[i];

		if (o && !strcmp(k->imgs[o - 1].name, cur->name)) {
			struct kimage *keep = &k->imgs[o - 1];

			/* a modules line gives the load address; the last one wins */
			if (cur->have_base && !cur->vmlinux && cur->hi == cur->lo) {
				keep->base = cur->base;
				keep->size = cur->size;
				keep->have_base = true;
			}
			free(cur->name);
			continue;
		}
		k->imgs[o++] = *cur;
	}
	k->nimgs = o;
	return 0;
}

struct rep_kernel *rep_kernel_load(const char *kallsyms, const char *modules,
				   char *err, size_t errlen)
{
	struct rep_kernel *k = calloc(1, sizeof(*k));
	size_t cap = 0;
	FILE *f;
	int rc;

	if (!k) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f = fopen(kallsyms, "r");
	if (!f) {
		rc = -errno;
		snprintf(err, errlen, "%s", strerror(errno));
		goto out_free;
	}
	rc = load_kallsyms(k, f, err, errlen);
	fclose(f);
	if (!rc)
		rc = index_images(k, modules, &cap);
	if (rc) {
		if (rc == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	return k;
out_free:
	rep_kernel_free(k);
	errno = -rc;
	return NULL;
}

static bool is_func(char t)
{
	return t == 't' || t == 'T';
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void build_image(struct rep_kernel *k, struct kimage *im)
{
	const char *mod = im->vmlinux ? NULL : im->name;
	uint64_t *bounds = NULL, lowest = UINT64_MAX;
	struct rep_sym *fs = NULL;
	size_t nb = 0, nf = 0, n = im->hi - im->lo;

	im->tried = true;
	bounds = malloc((n + 1) * sizeof(*bounds));
	fs = malloc((n + 1) * sizeof(*fs));
	if (!bounds || !fs)
		goto out_free;
	for (size_t i = im->lo; i < im->hi; i++) {
		const struct ksym *s = &k->syms[i];

		if (s->type == 'a' || s->type == 'A' || s->type == 'U' || !s->addr)
			continue;
		if (!mod && !strcmp(s->name, "_text")) {
			im->base = s->addr;
			im->have_base = true;
		}
		bounds[nb++] = s->addr;
		if (is_func(s->type)) {
			fs[nf].start = s->addr;
			fs[nf].end = 0;
			fs[nf].name = s->name;
			nf++;
			if (s->addr < lowest)
				lowest = s->addr;
		}
	}
	if (!nf)
		goto out_free;
	if (!im->have_base)
		im->base = lowest;
	qsort(bounds, nb, sizeof(*bounds), cmp_u64);
	for (size_t i = 0; i < nf; i++) {
		size_t lo = 0, hi = nb;

		/* First boundary strictly above the symbol ends it. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (bounds[mid] <= fs[i].start)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nb)
			fs[i].end = bounds[lo];
		else if (im->size && im->base + im->size > fs[i].start)
			fs[i].end = im->base + im->size;
	}
	im->bin = rep_bin_from_syms(fs, nf, im->base);
out_free:
	free(bounds);
	free(fs);
}

const struct rep_bin *rep_kernel_image(struct rep_kernel *k, const char *name)
{
	struct kimage *im = find_img(k, name);

	if (!im)
		return NULL;
	if (!im->tried)
		build_image(k, im);
	return im->bin;
}
