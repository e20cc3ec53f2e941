#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd_guest_images.h"
#include "opd_imgproof.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

struct opd_gimg {
	struct du_hlink link;	/* opd_gimgs.tab: the keyed hash of the path */
	struct opd_gimg *all_next;	/* opd_gimgs.all */
	uint32_t cookie;	/* 0: none (or the agent restarted) */
	uint8_t bid[DP_AG_BUILD_ID_MAX];
	uint8_t bid_size;
	bool requested, mapped, queued;
	struct opd_image *img;	/* interned {root} path, made on first sample */
	size_t len;
	char path[];		/* sanitized, NUL-terminated */
};

int opd_gimgs_init(struct opd_gimgs *is, const char *name, const char *dir, size_t max_filed,
		   uint64_t max_bytes, struct opd_images *images, struct opd_imgcache *cache,
		   struct opd_gout *out, struct opd_gbudget *budget, struct opd_stats *st)
{
	memset(is, 0, sizeof(*is));
	is->xfer_fd = -1;
	is->name = name;
	is->max_filed = max_filed;
	is->max_bytes = max_bytes;
	is->images = images;
	is->cache = cache;
	is->out = out;
	is->budget = budget;
	is->st = st;
	opd_ghkey_init(&is->key);
	if (du_htab_init(&is->tab, OPD_GIMG_BUCKETS))
		return -ENOMEM;
	if (asprintf(&is->map_path, "%s/images", dir) < 0) {
		is->map_path = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void xfer_abort(struct opd_gimgs *is)
{
	if (is->xfer_fd >= 0) {
		close(is->xfer_fd);
		du_nf_unlink(is->xfer_tmp);
	}
	is->xfer_fd = -1;
	is->xfer_bytes = 0;
}

void opd_gimgs_fini(struct opd_gimgs *is)
{
	struct opd_gimg *x, *n;

	du_htab_fini(&is->tab, NULL);	/* the links go below, by the list */
	for (x = is->all; x; x = n) {
		n = x->all_next;
		opd_gbudget_give(is->budget, sizeof(*x) + x->len + 1);
		free(x);
	}
	is->all = NULL;
	is->nr_paths = 0;
	xfer_abort(is);
	free(is->map_path);
	is->map_path = NULL;
}

struct opd_gimg *opd_gimgs_get(struct opd_gimgs *is, const char *path, size_t len)
{
	/* keyed: FNV buckets let a guest pick paths that chain */
	uint32_t h = (uint32_t)opd_ghash(&is->key, path, len);
	struct opd_gimg *x;

	for (struct du_hlink *l = du_htab_chain(&is->tab, h); l; l = l->next) {
		x = du_container_of(l, struct opd_gimg, link);
		if (l->hash == h && x->len == len && !memcmp(x->path, path, len))
			return x;
	}
	if (is->nr_paths >= OPD_GIMG_MAX_PATHS) {
		is->st->guest_images_capped++;
		return NULL;
	}
	if (!opd_gbudget_take(is->budget, sizeof(*x) + len + 1))
		return NULL;
	x = calloc(1, sizeof(*x) + len + 1);
	if (!x) {
		opd_gbudget_give(is->budget, sizeof(*x) + len + 1);
		return NULL;
	}
	x->len = len;
	memcpy(x->path, path, len);
	is->nr_paths++;
	x->all_next = is->all;
	is->all = x;
	du_htab_add(&is->tab, &x->link, h);
	return x;
}

void opd_gimg_note(struct opd_gimg *x, uint32_t cookie, const uint8_t *bid, uint8_t bid_size)
{
	if (cookie)
		x->cookie = cookie;
	if (bid_size && !x->bid_size) {
		memcpy(x->bid, bid, bid_size);
		x->bid_size = bid_size;
	}
}

struct opd_image *opd_gimgs_image(struct opd_gimgs *is, struct opd_gimg *x)
{
	if (!x->img) {
		if (is->nr_filed >= is->max_filed) {
			is->st->guest_images_capped++;
			return NULL;
		}
		x->img = opd_image_get(is->images, SFN_ROOT, x->path, x->len);
		if (x->img)
			is->nr_filed++;
	}
	return x->img;
}

/* List @x's cache entry @rel in the map file.  A failed write leaves it
 * unmapped and not asked again (counted guest_images_failed): opreport
 * then shows the image without symbols, and a full disk is not hit once
 * per sample. */
static void image_map(struct opd_gimgs *is, struct opd_gimg *x, const char *rel)
{
	int ret = opd_imgcache_map_add(is->map_path, rel, x->path, x->len);

	if (ret) {
		is->st->guest_images_failed++;
		du_warn("domain %s: cannot write %s: %s", is->name, is->map_path, strerror(-ret));
		x->requested = true;
		return;
	}
	x->mapped = true;
}

/* One image request at a time: the agent sends one file at a time anyway,
 * and IMAGE_END then names what the bytes before it were. */
void opd_gimgs_next_request(struct opd_gimgs *is)
{
	while (!is->xfer && is->nr_req) {
		struct opd_gimg *x = is->req[0];

		memmove(is->req, is->req + 1, (is->nr_req - 1) * sizeof(is->req[0]));
		is->nr_req--;
		x->queued = false;
		if (!x->cookie || x->mapped)
			continue;
		is->xfer = x;
		is->st->guest_images_requested++;
		opd_gout_image_request(is->out, x->cookie);
	}
}

/*
 * Every domain uploads its own images, even one whose build id the cache
 * has seen: the build id is the guest's word (and its file's note, which
 * the guest writes too), so another domain's bytes under it could be
 * anything (issue 23, item 4).  The cache still stores the bytes once when
 * they hash the same (opd_imgcache_commit).
 */
void opd_gimgs_want(struct opd_gimgs *is, struct opd_gimg *x, bool may_ask)
{
	if (x->mapped || x->requested)
		return;
	if (!x->cookie || !may_ask)
		return;
	x->requested = true;
	if (is->nr_req == OPD_GIMG_MAX_REQ) {
		is->st->guest_images_failed++;
		return;
	}
	x->queued = true;
	is->req[is->nr_req++] = x;
	opd_gimgs_next_request(is);
}

static int xfer_open(struct opd_gimgs *is)
{
	if (snprintf(is->xfer_tmp, sizeof(is->xfer_tmp), "%s/.tmp-%d-%p",
		     opd_imgcache_dir(is->cache), (int)getpid(),
		     (void *)is) >= (int)sizeof(is->xfer_tmp))
		return -ENAMETOOLONG;
	is->xfer_fd = du_nf_open(is->xfer_tmp, O_WRONLY | O_CREAT | O_TRUNC, DU_SDIR_FILE_MODE,
				 false);
	is->xfer_bytes = 0;
	sha256_init(&is->xfer_hash);
	if (is->xfer_fd < 0) {
		int ret = is->xfer_fd;

		is->xfer_fd = -1;
		return ret;
	}
	return 0;
}

void opd_gimgs_data(struct opd_gimgs *is, const struct dp_ag_image_data *d, const uint8_t *b,
		    size_t len)
{
	if (!is->xfer || d->cookie != is->xfer->cookie) {
		is->st->guest_bad_values++;
		return;
	}
	if (is->xfer_fd < 0 && d->offset == 0 && xfer_open(is))
		return;
	if (is->xfer_fd < 0)
		return;
	if (d->offset != is->xfer_bytes || is->bytes + len > is->max_bytes) {
		if (d->offset != is->xfer_bytes)
			is->st->guest_bad_values++;
		else
			is->st->guest_bytes_capped++;
		xfer_abort(is);
		return;
	}
	if (write(is->xfer_fd, b, len) != (ssize_t)len) {
		xfer_abort(is);
		return;
	}
	sha256_update(&is->xfer_hash, len, b);
	is->xfer_bytes += len;
	is->bytes += len;
	is->st->guest_image_bytes += len;
}

static void xfer_commit(struct opd_gimgs *is, struct opd_gimg *x, const struct dp_ag_image_end *e)
{
	char rel[PATH_MAX];
	uint8_t sum[OPD_SHA256_SIZE];
	const uint8_t *bid = x->bid;
	size_t bid_size = x->bid_size;
	const char *base;
	int ret;

	close(is->xfer_fd);
	is->xfer_fd = -1;
	sha256_digest(&is->xfer_hash, sizeof(sum), sum);
	/* the claim, only counted when the file denies it: IMAGE_END's, else MMAP's */
	if (e->build_id_size && e->build_id_size <= DP_AG_BUILD_ID_MAX) {
		bid = e->build_id;
		bid_size = e->build_id_size;
	}
	base = strrchr(x->path, '/');
	base = base ? base + 1 : x->path;
	ret = opd_imgcache_commit(is->cache, is->xfer_tmp, sum, bid, bid_size, base, strlen(base),
				  rel, sizeof(rel));
	if (ret < 0) {
		is->st->guest_images_failed++;
		du_warn("domain %s: cannot cache image %s: %s", is->name, x->path, strerror(-ret));
	} else {
		image_map(is, x, rel);
	}
}

void opd_gimgs_end(struct opd_gimgs *is, const struct dp_ag_image_end *e)
{
	struct opd_gimg *x = is->xfer;

	if (!x || e->cookie != x->cookie) {
		is->st->guest_bad_values++;
		return;
	}
	is->xfer = NULL;
	if (e->status != DP_AG_IMAGE_SENT || is->xfer_fd < 0 || e->size != is->xfer_bytes) {
		is->st->guest_images_failed++;
		du_debug("domain %s: image %s not received (status %u)", is->name, x->path,
			 e->status);
		xfer_abort(is);
	} else {
		xfer_commit(is, x, e);
	}
	opd_gimgs_next_request(is);
}

void opd_gimgs_agent_restart(struct opd_gimgs *is)
{
	for (struct opd_gimg *x = is->all; x; x = x->all_next)
		if (!x->mapped) {
			x->cookie = 0;
			x->requested = false;
		}
	xfer_abort(is);
	is->xfer = NULL;
}

void opd_gimgs_reset(struct opd_gimgs *is)
{
	xfer_abort(is);
	is->xfer = NULL;
	/* what was asked on the old connection is asked again */
	for (struct opd_gimg *x = is->all; x; x = x->all_next)
		if (!x->mapped && !x->queued)
			x->requested = false;
}
