/*
 * The guest binaries one domain's mappings name: interned by sanitized
 * path, with the cookie and build id the agent gave; fetched from the
 * agent (one IMAGE_REQUEST at a time) when a sample first lands in one,
 * and filed in the session's image cache by the hash of its bytes; listed in
 * SESSION/domains/<esc>/images ("cache entry \t guest path") for opreport.
 */
#ifndef OPD_GUEST_IMAGES_H
#define OPD_GUEST_IMAGES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nettle/sha2.h>

#include "agent/agent.h"
#include "opd_guest_budget.h"
#include "opd_guest_hash.h"
#include "opd_guest_out.h"
#include "opd_image.h"
#include "opd_imgcache.h"
#include "opd_stats.h"
#include "util/du_hash.h"

#define OPD_GIMG_BUCKETS	4096	/* a power of two; never grown */
/* Distinct paths a domain's mappings may name (chains stay short). */
#define OPD_GIMG_MAX_PATHS	32768
#define OPD_GIMG_MAX_REQ	256

struct opd_gimg;

struct opd_gimgs {
	const char *name;		/* domain, for messages; borrowed */
	char *map_path;			/* SESSION/domains/<esc>/images */
	struct du_htab tab;		/* OPD_GIMG_BUCKETS, by keyed hash of the path */
	struct opd_ghkey key;
	struct opd_gimg *all;	/* every entry, for the walks (not the buckets) */
	size_t nr_paths;
	size_t nr_filed, max_filed;	/* interned as sample file images */
	struct opd_gimg *req[OPD_GIMG_MAX_REQ];
	size_t nr_req;
	struct opd_gimg *xfer;		/* requested, awaiting IMAGE_END */
	int xfer_fd;
	uint64_t xfer_bytes, bytes, max_bytes;
	char xfer_tmp[PATH_MAX];
	/* the SHA-256 of what was written so far: hashed as it comes, so
	 * no single chunk's cost (the CPU budget's unit) is a whole file's */
	struct sha256_ctx xfer_hash;
	struct opd_images *images;	/* borrowed, as the rest */
	struct opd_imgcache *cache;
	struct opd_gout *out;
	struct opd_gbudget *budget;
	struct opd_stats *st;
};

/* Over the domain directory @dir.  0 or -errno. */
int opd_gimgs_init(struct opd_gimgs *is, const char *name, const char *dir, size_t max_filed,
		   uint64_t max_bytes, struct opd_images *images, struct opd_imgcache *cache,
		   struct opd_gout *out, struct opd_gbudget *budget, struct opd_stats *st);
void opd_gimgs_fini(struct opd_gimgs *is);

/* The image of sanitized @path; NULL when capped (counted) or no memory. */
struct opd_gimg *opd_gimgs_get(struct opd_gimgs *is, const char *path, size_t len);

/* What an MMAP said of @x: its cookie (0: none) and build id. */
void opd_gimg_note(struct opd_gimg *x, uint32_t cookie, const uint8_t *bid, uint8_t bid_size);

/* @x as a sample file image ({root}PATH); NULL when capped (counted). */
struct opd_image *opd_gimgs_image(struct opd_gimgs *is, struct opd_gimg *x);

/* A sample landed in @x: ask the agent for it (@may_ask: its HELLO
 * offered images), once. */
void opd_gimgs_want(struct opd_gimgs *is, struct opd_gimg *x, bool may_ask);

/* Send the next queued request when none is in flight. */
void opd_gimgs_next_request(struct opd_gimgs *is);

/* IMAGE_DATA and IMAGE_END frames.  Bad ones are counted, never fatal. */
void opd_gimgs_data(struct opd_gimgs *is, const struct dp_ag_image_data *d, const uint8_t *b,
		    size_t len);
void opd_gimgs_end(struct opd_gimgs *is, const struct dp_ag_image_end *e);

/* The agent restarted: its cookies mean other files now. */
void opd_gimgs_agent_restart(struct opd_gimgs *is);
/* A new connection: the transfer in flight is lost; what was asked and
 * not queued is asked again. */
void opd_gimgs_reset(struct opd_gimgs *is);

#endif
