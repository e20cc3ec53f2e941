#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rep_child.h"
#include "rep_debug.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_kernel.h"
#include "rep_opts.h"
#include "rep_sym.h"
#include "rep_verify.h"
#include "rep_view.h"
#include "util/du_log.h"

struct rep_images {
	const struct rep_opts *o;
	struct rep_strmap *by_key;	/* cache key -> index in bins (SIZE_MAX-free) */
	struct rep_strmap *by_bid;	/* owner, build-id -> index of the entry owning its table */
	struct cached {
		const struct rep_bin *bin;	/* NULL: tried, nothing found */
		struct rep_bin *owned;		/* kernel tables belong to kernel */
		char *build_id;			/* hex, as its parser child read it */
		char *debug_file;		/* where its debug info was found */
	} *bins;
	size_t nbins;
	struct rep_strmap *basenames;	/* -p: basename -> index in found */
	/* each (owner, vmm, path) located once: a candidate's identity is
	 * read once per report, whatever number of views ask */
	struct rep_strmap *located;	/* key -> index in locs */
	char **locs;			/* NULL: nothing found */
	size_t nlocs;
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
	struct rep_vstore *vs;		/* recorded identities, verdicts */
	struct rep_child_cfg cfg;	/* how parser children run */
	bool cfg_ready;
	char *archive_debug;		/* SESSION/archive/usr/lib/debug */
	bool dbgd_started;
	/* images without debug info: the first NODEBUG_SAID said each with
	 * where it was looked for, the others named in one line at the end */
	size_t nodebug;
	char nodebug_more[512];
	size_t nodebug_listed;		/* names in nodebug_more */
	unsigned int dbgd_left_ms;	/* debuginfod time left to this report */
	unsigned int dbgd_image_ms;	/* and for one image */
};

struct rep_images *rep_images_new(const struct rep_opts *o)
{
	struct rep_images *c = calloc(1, sizeof(*c));
	char *samples;

	if (!c)
		return NULL;
	c->o = o;
	c->by_key = rep_strmap_new();
	c->by_bid = rep_strmap_new();
	c->basenames = rep_strmap_new();
	c->located = rep_strmap_new();
	samples = rep_samples_path(o, NULL);
	if (samples)
		c->vs = rep_vstore_new(o->session_dir, samples);
	free(samples);
	if (!c->by_key || !c->by_bid || !c->basenames || !c->vs) {
		rep_images_free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

/* How many images without debug info get a line of their own. */
#define NODEBUG_SAID 3

/* The images without debug info that had no line of their own, in one. */
static void say_nodebug_more(const struct rep_images *c)
{
	size_t more = c->nodebug - NODEBUG_SAID;

	du_warn("%zu more image%s without debug info, named by %s dynamic symbols: %s%s", more,
		more == 1 ? "" : "s", more == 1 ? "its" : "their", c->nodebug_more,
		c->nodebug_listed < more ? ", ..." : "");
}

void rep_images_free(struct rep_images *c)
{
	if (!c)
		return;
	if (c->nodebug > NODEBUG_SAID)
		say_nodebug_more(c);
	for (size_t i = 0; i < c->nbins; i++) {
		rep_bin_free(c->bins[i].owned);
		free(c->bins[i].build_id);
		free(c->bins[i].debug_file);
	}
	free(c->bins);
	for (size_t i = 0; i < c->nfound; i++)
		free(c->found[i]);
	free(c->found);
	rep_strmap_free(c->by_key);
	rep_strmap_free(c->by_bid);
	rep_strmap_free(c->basenames);
	rep_strmap_free(c->located);
	for (size_t i = 0; i < c->nlocs; i++)
		free(c->locs[i]);
	free(c->locs);
	rep_kernel_free(c->kernel);
	for (size_t i = 0; i < c->ndkern; i++) {
		free(c->dkern[i].domain);
		rep_kernel_free(c->dkern[i].kernel);
	}
	free(c->dkern);
	rep_vstore_free(c->vs);
	free(c->archive_debug);
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

bool rep_images_unverified(struct rep_images *c, const char *domain, bool vmm,
			   const struct sfn_image *img)
{
	int st;

	if (img->kind != SFN_ROOT)
		return false;
	st = rep_vstore_state(c->vs, domain, vmm, img->name);
	if (st < 0) {
		free(rep_images_locate(c, domain, vmm, img->name));
		st = rep_vstore_state(c->vs, domain, vmm, img->name);
	}
	return st == REP_V_UNVERIFIED || st == REP_V_MIXED;
}

struct rep_vstore *rep_images_vstore(struct rep_images *c)
{
	return c->vs;
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

/*
 * The debuginfod time a report may spend, over all its images, and per
 * image; a child's wall clock beyond its debuginfod bound.
 */
#define DEBUGINFOD_BUDGET_MS	30000u
#define DEBUGINFOD_IMAGE_MS	15000u
#define PARSE_WALL_MS		30000u

struct load {
	const char *file;
	int fd;
	struct rep_debug_opts dopts;
	struct rep_images *c;
	const char *owner;	/* "" host, or the domain */
	long shared;		/* an entry with the same owner and build-id, or -1 */
};

/*
 * A guest image's copy in the session's image cache, SESSION/images/
 * h<SHA-256 of its bytes>/NAME: that directory is proof that two domains'
 * copies are the same bytes, so one parse serves every domain that maps
 * it (a build-id is only the guest's claim; this is the daemon's hash).
 * The key, or NULL for any other file.
 */
static char *content_key(const struct rep_images *c, const char *file)
{
	size_t n = strlen(c->o->session_dir);
	const char *h = file + n + sizeof("/images/") - 1, *end;
	char *k = NULL;

	if (strncmp(file, c->o->session_dir, n) || strncmp(file + n, "/images/h", 9))
		return NULL;
	end = strchr(h, '/');
	if (!end || end - h != 65 || strspn(h + 1, "0123456789abcdef") != 64)
		return NULL;
	return asprintf(&k, "%c%.65s", 2, h) < 0 ? NULL : k;
}

static char *bid_key(const char *owner, const char *bid)
{
	char *k = NULL;

	return asprintf(&k, "%s%c%s", owner, 1, bid) < 0 ? NULL : k;
}

/*
 * The child's question: its image's build-id.  A table already read for
 * that build-id, by the same owner, is used again: one parse per build-id
 * and report.  Never across domains, where a build-id is only a claim.
 */
static int ask_shared(void *ctx, const char *q, size_t n)
{
	struct load *l = ctx;
	char *k;

	if (!n || strnlen(q, n) != n)
		return 'y';
	k = bid_key(l->owner, q);
	l->shared = k ? rep_strmap_get(l->c->by_bid, k) : -1;
	free(k);
	return l->shared >= 0 ? 'n' : 'y';
}

static int put_str(int out, const char *s)
{
	uint16_t n = (uint16_t)strnlen(s, 1024);

	return write(out, &n, 2) == 2 && write(out, s, n) == n ? 0 : -EIO;
}

/*
 * In the confined child: the debug-info lookup (files opened, debuginfod
 * asked), then seccomp, then the parse.  The reply: u32 source, refused,
 * flags (1 debuginfod asked, 2 it timed out), ms spent on debuginfod;
 * build-id, debug file and reasons as u16-counted strings; the table.
 */
static int load_child(void *ctx, int out, int in)
{
	struct load *l = ctx;
	struct rep_debug_found f;
	uint32_t head[4];
	struct rep_bin *b;
	char err[256];
	int rc;

	rc = rep_debug_find(l->fd, l->file, &l->dopts, &f);
	/* the build-id first: the parent may have its table already */
	if (rep_child_ask(out, in, rc ? "" : f.build_id, rc ? 0 : strlen(f.build_id)) == 'n')
		return 0;
	if (rc) {
		snprintf(err, sizeof(err), "not an ELF file");
		goto fail;
	}
	if (rep_child_confine()) {
		snprintf(err, sizeof(err), "cannot install its seccomp filter");
		goto fail;
	}
	head[0] = f.src;
	head[1] = f.refused;
	head[2] = (f.debuginfod_asked ? 1 : 0) | (f.debuginfod_timeout ? 2 : 0);
	head[3] = f.debuginfod_spent_ms;
	b = rep_bin_open_split(l->file, l->fd, f.fd, f.src == REP_DEBUG_MINI, l->c->o->demangle, err,
			       sizeof(err));
	if (!b)
		goto fail;
	if (write(out, head, sizeof(head)) != sizeof(head) || put_str(out, f.build_id) ||
	    put_str(out, f.path) || put_str(out, f.why))
		return 3;
	return rep_bin_write(b, out) ? 3 : 0;
fail:
	rc = (int)write(out, "\0", 1);
	rc += (int)write(out, err, strnlen(err, sizeof(err)));
	return rc > 0 ? 2 : 3;
}

static bool get_str(const char **p, size_t *left, char *buf, size_t size)
{
	uint16_t n;

	if (*left < 2)
		return false;
	memcpy(&n, *p, 2);
	if (n >= size || n > *left - 2 || memchr(*p + 2, 0, n))
		return false;
	memcpy(buf, *p + 2, n);
	buf[n] = '\0';
	for (uint16_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	*p += 2 + n;
	*left -= 2 + (size_t)n;
	return true;
}

/* The child's reply into @b's table and @e's facts; false when malformed. */
/* Lowercase hex of an even length, 2 to 128 digits. */
static bool hex_id(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n >= 2 && n <= 128 && !(n & 1) && !s[n];
}

static struct rep_bin *read_load_reply(const char *reply, size_t len, struct cached *e,
				       struct rep_debug_found *f)
{
	uint32_t head[4];
	const char *p = reply + sizeof(head);
	size_t left = len - sizeof(head);

	if (len < sizeof(head))
		return NULL;
	memcpy(head, reply, sizeof(head));
	if (head[0] > REP_DEBUG_DEBUGINFOD || !get_str(&p, &left, f->build_id, sizeof(f->build_id)) ||
	    !get_str(&p, &left, f->path, sizeof(f->path)) ||
	    !get_str(&p, &left, f->why, sizeof(f->why)))
		return NULL;
	f->src = head[0];
	f->refused = head[1];
	f->debuginfod_asked = head[2] & 1;
	f->debuginfod_timeout = head[2] & 2;
	f->debuginfod_spent_ms = head[3];
	/* the child's word: a build id only as lowercase hex (it keys the
	 * tables and names files), a debug file only as an absolute path */
	if (!hex_id(f->build_id))
		f->build_id[0] = '\0';
	if (f->path[0] != '/' || strstr(f->path, "/../"))
		f->path[0] = '\0';
	e->build_id = f->build_id[0] ? strdup(f->build_id) : NULL;
	e->debug_file = f->path[0] ? strdup(f->path) : NULL;
	return rep_bin_read(p, left);
}

/*
 * The debuginfod time this image may take, from what the report has left:
 * DEBUGINFOD_TIMEOUT's seconds (the client's own per-transfer bound) when
 * shorter than ours, as an overall bound here.
 */
static unsigned int debuginfod_ms(struct rep_images *c)
{
	const char *t = getenv("DEBUGINFOD_TIMEOUT");
	unsigned int per = DEBUGINFOD_IMAGE_MS;
	char *end;

	if (!c->dbgd_started) {
		unsigned long v = t ? strtoul(t, &end, 10) : 0;

		c->dbgd_started = true;
		c->dbgd_left_ms = DEBUGINFOD_BUDGET_MS;
		c->dbgd_image_ms = t && *t && !*end && v && v * 1000 < per ? (unsigned int)v * 1000 : per;
	}
	per = c->dbgd_image_ms;
	return c->dbgd_left_ms < per ? c->dbgd_left_ms : per;
}

static void say_lookup(struct rep_images *c, const char *file, const struct rep_debug_found *f)
{
	const char *bid = f->build_id[0] ? f->build_id : "none";

	if (f->debuginfod_asked) {
		c->dbgd_left_ms -= f->debuginfod_spent_ms < c->dbgd_left_ms ?
				   f->debuginfod_spent_ms : c->dbgd_left_ms;
		if (f->debuginfod_timeout) {
			c->dbgd_left_ms = 0;	/* a server that hangs hangs for every image */
			du_warn("debuginfod did not answer in time: not asked again in this report");
		}
	}
	if (f->src == REP_DEBUG_NONE && ++c->nodebug <= NODEBUG_SAID) {
		du_warn("no debug info for %s (build-id %s): %s; named by its dynamic symbols", file,
			bid, f->why);
	} else if (f->src == REP_DEBUG_NONE) {
		size_t n = strlen(c->nodebug_more);
		const char *base = strrchr(file, '/');

		base = base ? base + 1 : file;
		/* a name that does not fit is left out, and said to be */
		if (n + strlen(base) + 2 < sizeof(c->nodebug_more)) {
			snprintf(c->nodebug_more + n, sizeof(c->nodebug_more) - n, "%s%s",
				 n ? ", " : "", base);
			c->nodebug_listed++;
		}
	}
	else if (f->refused)
		du_warn("debug info for %s (build-id %s) from %s, after %u refused: %s", file, bid,
			rep_debug_src_name(f->src), f->refused, f->why);
}

/*
 * An image's symbols, with its debug info found and read by a confined
 * child (rep_child.h): host and guest binaries alike are untrusted bytes
 * to the report.  Only ELF files get as far as the parser.
 */
static void load_shared(struct rep_images *c, long i, struct cached *e)
{
	e->bin = c->bins[i].bin;
	e->build_id = c->bins[i].build_id ? strdup(c->bins[i].build_id) : NULL;
	e->debug_file = c->bins[i].debug_file ? strdup(c->bins[i].debug_file) : NULL;
}

/*
 * An image's symbols into @e, with its debug info found and read by a
 * confined child (rep_child.h): host and guest binaries alike are
 * untrusted bytes to the report.  Only ELF files get as far as the parser.
 */
static int load_image(struct rep_images *c, const char *owner, const char *file, struct cached *e,
		      char *err, size_t errlen)
{
	struct load l = { .file = file, .c = c, .owner = owner, .shared = -1 };
	char *ck = content_key(c, file);
	long same = ck ? rep_strmap_get(c->by_bid, ck) : -1;
	struct rep_debug_found f;
	char *reply = NULL, *k;
	size_t len;
	int rc = -EINVAL;

	if (same >= 0) {
		free(ck);
		load_shared(c, same, e);
		return 0;
	}
	if (!c->cfg_ready) {
		if (rep_child_cfg_init(&c->cfg)) {
			free(ck);
			snprintf(err, errlen, "no unprivileged user to parse it as");
			return -ENOENT;
		}
		c->cfg_ready = true;
		/* an archive's debug files (oparchive stores them by build-id) */
		if (asprintf(&c->archive_debug, "%s/" REP_ARCHIVE_DIR REP_DEBUG_DIR,
			     c->o->session_dir) < 0)
			c->archive_debug = NULL;
	}
	l.fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (l.fd < 0) {
		rc = -errno;
		free(ck);
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	/* not one byte of it read here: the child says when it is no ELF file */
	l.dopts.debug_dir = c->o->debug_dir;
	l.dopts.first_dir = c->archive_debug;
	l.dopts.debuginfod_ms = debuginfod_ms(c);
	if (rep_child_run_ask(&c->cfg, l.fd, load_child, &l, ask_shared, &l,
			      PARSE_WALL_MS + l.dopts.debuginfod_ms, &reply, &len, err, errlen))
		goto out;
	rc = 0;
	if (l.shared >= 0) {
		load_shared(c, l.shared, e);
		goto out;
	}
	memset(&f, 0, sizeof(f));
	e->owned = read_load_reply(reply, len, e, &f);
	e->bin = e->owned;
	if (!e->owned) {
		snprintf(err, errlen, "its parser sent a bad table");
		rc = -EBADMSG;
		goto out;
	}
	say_lookup(c, file, &f);
	/* shared only when as good as any copy's: found by build-id, or the
	 * binary's own full table; a stripped copy's poorer names are not */
	k = e->build_id && f.src != REP_DEBUG_NONE && f.src != REP_DEBUG_MINI ?
		    bid_key(owner, e->build_id) : NULL;
	/* a failed put costs a second parse later, nothing else */
	if (k)
		rep_strmap_put(c->by_bid, k, e - c->bins);
	free(k);
	/* the same bytes, whatever domain maps them: always the same table */
	if (ck)
		rep_strmap_put(c->by_bid, ck, e - c->bins);
out:
	free(ck);
	free(reply);
	close(l.fd);
	return rc;
}

static void load_root(struct rep_images *c, const char *domain, bool vmm, const char *path,
		      struct cached *e)
{
	char *file = rep_images_locate(c, domain, vmm, path);
	char err[256];

	if (!file) {
		du_warn("binary %s%s%s not found: reported without symbols", path,
			domain ? " of domain " : "", domain ? domain : "");
		return;
	}
	if (load_image(c, domain && !vmm ? domain : "", file, e, err, sizeof(err)))
		du_warn("cannot read symbols of %s: %s", file, err);
	free(file);
}

/* The cache entry of @img, loaded on first use: its index, or -1. */
static long image_entry(struct rep_images *c, const char *domain, bool vmm,
			const struct sfn_image *img)
{
	/* Host and vmm images are the same binaries: cache them together. */
	const char *owner = domain && !vmm ? domain : "";
	struct cached *nv;
	char *key = NULL;
	long i;

	if (img->kind == SFN_ANON)
		return -1;
	if (asprintf(&key, "%s%c%d%c%s", owner, 1, (int)img->kind, 1, img->name) < 0)
		return -1;
	i = rep_strmap_get(c->by_key, key);
	if (i >= 0) {
		free(key);
		return i;
	}
	nv = realloc(c->bins, (c->nbins + 1) * sizeof(*nv));
	if (!nv) {
		free(key);
		return -1;
	}
	c->bins = nv;
	memset(&c->bins[c->nbins], 0, sizeof(*nv));
	if (img->kind == SFN_KERN)
		c->bins[c->nbins].bin = lookup_kernel(c, domain, vmm, img->name);
	else
		load_root(c, domain, vmm, img->name, &c->bins[c->nbins]);
	/* A failed put only costs a second lookup later, never a leak. */
	c->nbins++;
	rep_strmap_put(c->by_key, key, c->nbins - 1);
	free(key);
	return (long)c->nbins - 1;
}

const struct rep_bin *rep_images_get(struct rep_images *c, const char *domain, bool vmm,
				     const struct sfn_image *img)
{
	long i = image_entry(c, domain, vmm, img);

	return i >= 0 ? c->bins[i].bin : NULL;
}

void rep_images_info(struct rep_images *c, const char *domain, bool vmm,
		     const struct sfn_image *img, const char **build_id, const char **debug_file)
{
	long i = image_entry(c, domain, vmm, img);

	*build_id = i >= 0 ? c->bins[i].build_id : NULL;
	*debug_file = i >= 0 ? c->bins[i].debug_file : NULL;
}
