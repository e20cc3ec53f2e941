#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rep_hash.h"
#include "rep_image.h"
#include "rep_kernel.h"
#include "rep_opts.h"
#include "rep_sym.h"
#include "util/du_log.h"

struct rep_images {
	const struct rep_opts *o;
	struct rep_strmap *by_key;	/* cache key -> index in bins (SIZE_MAX-free) */
	struct cached {
		const struct rep_bin *bin;	/* NULL: tried, nothing found */
		struct rep_bin *owned;		/* kernel tables belong to kernel */
	} *bins;
	size_t nbins;
	struct rep_strmap *basenames;	/* -p: basename -> index in found */
	char **found;
	size_t nfound;
	bool scanned;
	struct rep_kernel *kernel;
	bool kernel_tried;
	struct dom_kernel {
		char *domain;
		struct rep_kernel *kernel;	/* NULL: none found */
	} *dkern;
	size_t ndkern;
};

struct rep_images *rep_images_new(const struct rep_opts *o)
{
	struct rep_images *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = o;
	c->by_key = rep_strmap_new();
	c->basenames = rep_strmap_new();
	if (!c->by_key || !c->basenames) {
		rep_images_free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void rep_images_free(struct rep_images *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbins; i++)
		rep_bin_free(c->bins[i].owned);
	free(c->bins);
	for (size_t i = 0; i < c->nfound; i++)
		free(c->found[i]);
	free(c->found);
	rep_strmap_free(c->by_key);
	rep_strmap_free(c->basenames);
	rep_kernel_free(c->kernel);
	for (size_t i = 0; i < c->ndkern; i++) {
		free(c->dkern[i].domain);
		rep_kernel_free(c->dkern[i].kernel);
	}
	free(c->dkern);
	free(c);
}

/* nftw has no context argument; the scan is single-threaded and short. */
static struct rep_images *scan_target;

static int scan_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct rep_images *c = scan_target;
	const char *base = path + ftw->base;
	char **nv;

	if (type != FTW_F || !S_ISREG(st->st_mode) || rep_strmap_get(c->basenames, base) >= 0)
		return 0;
	nv = realloc(c->found, (c->nfound + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	c->found = nv;
	nv[c->nfound] = strdup(path);
	if (!nv[c->nfound] || rep_strmap_put(c->basenames, base, c->nfound))
		return -1;
	c->nfound++;
	return 0;
}

static void scan_image_path(struct rep_images *c)
{
	c->scanned = true;
	scan_target = c;
	for (size_t i = 0; i < c->o->nimage_path; i++)
		if (nftw(c->o->image_path[i], scan_one, 16, FTW_PHYS) < 0)
			du_warn("cannot search image path %s: %s", c->o->image_path[i],
				strerror(errno));
	scan_target = NULL;
}


static bool is_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* Undo the \xHH escapes of a map file's guest path in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned int v;

		if (s[0] == '\\' && s[1] == 'x' && sscanf(s + 2, "%2x", &v) == 1 && v) {
			*o++ = (char)v;
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/*
 * A guest binary from the session's image cache: SESSION/domains/<esc>/images
 * maps guest paths to images/<id>/<name> (written by oprofiled).  Only
 * entries that name a file below SESSION/images/ are followed.
 */
static char *locate_cached(struct rep_images *c, const char *domain, const char *path)
{
	char safe[512], *map = NULL, *line = NULL, *found = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	if (sfn_escape_component(domain, strlen(domain), safe, sizeof(safe)) < 0 ||
	    asprintf(&map, "%s/domains/%s/images", c->o->session_dir, safe) < 0)
		return NULL;
	f = fopen(map, "r");
	free(map);
	if (!f)
		return NULL;
	while (!found && (n = getline(&line, &cap, f)) > 0) {
		char *tab = strchr(line, '\t');

		line[strcspn(line, "\n")] = '\0';
		if (!tab || strncmp(line, "images/", 7) || strstr(line, "/../") ||
		    strstr(line, "/./"))
			continue;
		*tab = '\0';
		unescape(tab + 1);
		if (strcmp(tab + 1, path))
			continue;
		if (asprintf(&found, "%s/%s", c->o->session_dir, line) < 0)
			found = NULL;
		else if (!is_file(found)) {
			free(found);
			found = NULL;
		}
	}
	free(line);
	fclose(f);
	return found;
}

char *rep_images_locate(struct rep_images *c, const char *domain, bool vmm, const char *path)
{
	const char *base = strrchr(path, '/');
	char *p = NULL;
	long i;

	base = base ? base + 1 : path;
	if (!c->scanned)
		scan_image_path(c);
	i = rep_strmap_get(c->basenames, base);
	if (i >= 0)
		return strdup(c->found[i]);
	if (c->o->root) {
		if (asprintf(&p, "%s%s", c->o->root, path) < 0)
			return NULL;
		if (is_file(p))
			return p;
		free(p);
	}
	/* A session made by oparchive carries its host binaries with it. */
	if ((!domain || vmm) && path[0] == '/') {
		if (asprintf(&p, "%s/archive%s", c->o->session_dir, path) < 0)
			return NULL;
		if (is_file(p))
			return p;
		free(p);
	}
	if ((!domain || vmm) && is_file(path))
		return strdup(path);
	if (domain && !vmm)
		return locate_cached(c, domain, path);
	return NULL;
}

/* Kernel symbols in @dir/kallsyms and @dir/modules, warning when absent. */
static struct rep_kernel *load_kernel(const char *dir, const char *who)
{
	char *ks = NULL, *mods = NULL;
	struct rep_kernel *k = NULL;
	char err[256];

	if (asprintf(&ks, "%s/kallsyms", dir) < 0 || asprintf(&mods, "%s/modules", dir) < 0)
		goto out;
	k = rep_kernel_load(ks, mods, err, sizeof(err));
	if (!k)
		du_warn("no kernel symbols for %s: %s: %s", who, ks, err);
out:
	free(ks);
	free(mods);
	return k;
}

static struct rep_kernel *host_kernel(struct rep_images *c)
{
	if (!c->kernel_tried) {
		c->kernel_tried = true;
		c->kernel = load_kernel(c->o->session_dir, "the host");
	}
	return c->kernel;
}

/* A guest's kernel symbols: SESSION/domains/NAME/{kallsyms,modules}. */
static struct rep_kernel *guest_kernel(struct rep_images *c, const char *domain)
{
	char safe[512], *dir = NULL, *who = NULL;
	struct dom_kernel *nv;
	struct rep_kernel *k = NULL;

	for (size_t i = 0; i < c->ndkern; i++)
		if (!strcmp(c->dkern[i].domain, domain))
			return c->dkern[i].kernel;
	if (sfn_escape_component(domain, strlen(domain), safe, sizeof(safe)) < 0)
		return NULL;
	if (asprintf(&dir, "%s/domains/%s", c->o->session_dir, safe) >= 0 &&
	    asprintf(&who, "domain %s", domain) >= 0)
		k = load_kernel(dir, who);
	free(dir);
	free(who);
	nv = realloc(c->dkern, (c->ndkern + 1) * sizeof(*nv));
	if (!nv)
		goto out_free;
	c->dkern = nv;
	nv[c->ndkern].domain = strdup(domain);
	if (!nv[c->ndkern].domain)
		goto out_free;
	nv[c->ndkern++].kernel = k;
	return k;
out_free:
	rep_kernel_free(k);
	return NULL;
}

static const struct rep_bin *lookup_kernel(struct rep_images *c, const char *domain, bool vmm,
					   const char *name)
{
	struct rep_kernel *k = domain && !vmm ? guest_kernel(c, domain) : host_kernel(c);
	const struct rep_bin *b;

	if (!k)
		return NULL;
	b = rep_kernel_image(k, name);
	if (!b)
		du_warn("no symbols for kernel image %s%s%s in its kallsyms", name,
			domain && !vmm ? " of domain " : "", domain && !vmm ? domain : "");
	return b;
}

static struct rep_bin *load_root(struct rep_images *c, const char *domain, bool vmm,
				 const char *path)
{
	char *file = rep_images_locate(c, domain, vmm, path);
	struct rep_bin *b;
	char err[256];

	if (!file) {
		du_warn("binary %s%s%s not found: reported without symbols", path,
			domain ? " of domain " : "", domain ? domain : "");
		return NULL;
	}
	b = rep_bin_open_elf(file, err, sizeof(err));
	if (!b)
		du_warn("cannot read symbols of %s: %s", file, err);
	free(file);
	return b;
}

const struct rep_bin *rep_images_get(struct rep_images *c, const char *domain, bool vmm,
				     const struct sfn_image *img)
{
	/* Host and vmm images are the same binaries: cache them together. */
	const char *owner = domain && !vmm ? domain : "";
	const struct rep_bin *kb = NULL;
	struct rep_bin *b = NULL;
	struct cached *nv;
	char *key = NULL;
	long i;

	if (img->kind == SFN_ANON)
		return NULL;
	if (asprintf(&key, "%s%c%d%c%s", owner, 1, (int)img->kind, 1, img->name) < 0)
		return NULL;
	i = rep_strmap_get(c->by_key, key);
	if (i >= 0) {
		free(key);
		return c->bins[i].bin;
	}
	if (img->kind == SFN_KERN)
		kb = lookup_kernel(c, domain, vmm, img->name);
	else
		b = load_root(c, domain, vmm, img->name);
	nv = realloc(c->bins, (c->nbins + 1) * sizeof(*nv));
	if (!nv) {
		rep_bin_free(b);
		free(key);
		return NULL;
	}
	c->bins = nv;
	c->bins[c->nbins].bin = b ? b : kb;
	c->bins[c->nbins].owned = b;
	/* A failed put only costs a second lookup later, never a leak. */
	c->nbins++;
	rep_strmap_put(c->by_key, key, c->nbins - 1);
	free(key);
	return b ? b : kb;
}
