/*
 * Which file holds an image's binary: the candidates (-p, --root,
 * oparchive's copies, the path itself, a guest's image cache), the one
 * whose identity matches what the session recorded (rep_verify.h), each
 * (owner, vmm, path) asked once per report.
 */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rep_hash.h"
#include "rep_image.h"
#include "rep_image_int.h"
#include "rep_opts.h"
#include "rep_verify.h"
#include "rep_view.h"
#include "sfname/sfname.h"
#include "util/du_fs.h"
#include "util/du_log.h"

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

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Undo the \xHH escapes of a map file's guest path in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		int hi = s[0] == '\\' && s[1] == 'x' ? hexval(s[2]) : -1;
		int lo = hi >= 0 ? hexval(s[3]) : -1;

		/* both digits there (never past the NUL), and not a NUL */
		if (lo >= 0 && (hi || lo)) {
			*o++ = (char)(hi << 4 | lo);
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

	/* (the map is the daemon's worker's: no link followed, no FIFO) */
	if (sfn_escape_component(domain, strlen(domain), safe, sizeof(safe)) < 0 ||
	    asprintf(&map, "domains/%s/images", safe) < 0)
		return NULL;
	f = du_fopen_beneath(c->o->session_dir, map);
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

/* The files that may hold @path's binary, in the order of preference the
 * lookup always had (rep_image.h): -p by basename, --root, oparchive's
 * copy, the path itself, a guest's image cache.  Appended to @cands
 * (room for LOCATE_MAX; the pick skips those that do not exist).  The
 * new count. */
#define LOCATE_MAX 16
static size_t path_candidates(struct rep_images *c, const char *domain, bool vmm,
			      const char *path, char **cands, size_t n)
{
	const char *base = strrchr(path, '/');
	char *p = NULL;
	long i;

	base = base ? base + 1 : path;
	if (!c->scanned)
		scan_image_path(c);
	i = rep_strmap_get(c->basenames, base);
	if (i >= 0)
		cands[n++] = strdup(c->found[i]);
	if (c->o->root && asprintf(&p, "%s%s", c->o->root, path) >= 0)
		cands[n++] = p;
	/* A session made by oparchive carries its host binaries with it. */
	if ((!domain || vmm) && path[0] == '/' &&
	    asprintf(&p, "%s/" REP_ARCHIVE_DIR "%s", c->o->session_dir, path) >= 0)
		cands[n++] = p;
	if (!domain || vmm)
		cands[n++] = strdup(path);
	if (domain && !vmm)
		cands[n++] = locate_cached(c, domain, path);
	return n;
}

/* Copies by build id of each of @ids: oparchive's SESSION/archive/.build-id
 * store.  (The image cache is keyed by content, not build id, and is the
 * worker's to write: never a candidate for a host binary.) */
static size_t bid_candidates(struct rep_images *c, const struct rep_ident *ids, size_t nids,
			     char **cands, size_t n)
{
	for (size_t k = 0; k < nids && n + 1 <= LOCATE_MAX - 5; k++) {
		char *arch = NULL;

		if (asprintf(&arch, "%s/" REP_ARCHIVE_DIR, c->o->session_dir) >= 0)
			cands[n++] = rep_verify_bid_path(arch, ids[k].build_id, NULL);
		free(arch);
	}
	return n;
}

/* What rep_images_locate() found for @key before: 1 (*@out a copy, or
 * NULL when nothing was), 0 when it was not asked yet. */
static int located_before(struct rep_images *c, const char *key, char **out)
{
	long i = c->located ? rep_strmap_get(c->located, key) : -1;

	if (i < 0)
		return 0;
	*out = c->locs[i] ? strdup(c->locs[i]) : NULL;
	return 1;
}

static void remember_located(struct rep_images *c, const char *key, const char *file)
{
	char **nv = realloc(c->locs, (c->nlocs + 1) * sizeof(*nv));

	if (!c->located || !nv)
		return;
	c->locs = nv;
	nv[c->nlocs] = file ? strdup(file) : NULL;
	if (file && !nv[c->nlocs])
		return;
	/* a failed put only costs a second lookup later */
	if (!rep_strmap_put(c->located, key, c->nlocs))
		c->nlocs++;
	else
		free(nv[c->nlocs]);
}

static char *locate_once(struct rep_images *c, const char *domain, bool vmm, const char *path);

char *rep_images_locate(struct rep_images *c, const char *domain, bool vmm, const char *path)
{
	char *key = NULL, *file = NULL;

	if (asprintf(&key, "%s%c%d%c%s", domain ? domain : "", 1, vmm, 1, path) < 0)
		return locate_once(c, domain, vmm, path);
	if (!located_before(c, key, &file)) {
		file = locate_once(c, domain, vmm, path);
		remember_located(c, key, file);
	}
	free(key);
	return file;
}

static char *locate_once(struct rep_images *c, const char *domain, bool vmm, const char *path)
{
	char *cands[LOCATE_MAX] = { NULL };
	const struct rep_ident *ids = NULL;
	size_t n, nids = rep_vstore_recorded(c->vs, domain, vmm, path, &ids);
	struct rep_vpick pick;
	int rc;

	n = bid_candidates(c, ids, nids, cands, 0);
	n = path_candidates(c, domain, vmm, path, cands, n);
	rc = rep_vstore_pick(c->vs, path, ids, nids, cands, n, &pick);
	for (size_t i = 0; i < n; i++)
		free(cands[i]);
	if (rc)
		return NULL;
	rep_vstore_verdict(c->vs, domain, vmm, path, &pick);
	return pick.file;
}
