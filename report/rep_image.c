/*
 * The image cache (rep_image.h): each binary's symbol table loaded once,
 * in a parser child, with its debug info (debug link, build-id
 * directory, debuginfod within a time budget); the host's and guests'
 * kernel symbols.  Which file holds a binary: rep_image_locate.c.
 */
#include "config.h"

#include <errno.h>
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
#include "rep_image_int.h"
#include "rep_kernel.h"
#include "rep_opts.h"
#include "rep_sym.h"
#include "rep_verify.h"
#include "rep_view.h"
#include "util/du_log.h"

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
