/*
 * The session's content-addressed image cache (DESIGN.md section 5):
 * SESSION/images/<id>/<basename>, where <id> is the hex GNU build id of
 * the binary ("b" + hex) when the file's own note proves it, else the
 * SHA-256 of its bytes ("h" + hex).  Shared by every domain: a binary that two guests run is
 * stored once.  Each domain has a map file SESSION/domains/<esc>/images
 * whose lines are "images/<id>/<basename>\t<guest path>", the guest path
 * with bytes outside '!'..'~' and '\' written as \xHH; opreport reads it
 * to find a guest's binaries.
 *
 * Nothing here trusts the guest: ids are hex of bytes, basenames are
 * escaped by sfn_escape_component(), every file is created below SESSION.
 */
#ifndef OPD_IMGCACHE_H
#define OPD_IMGCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd_stats.h"

/* Longest cache id: "h" + 64 hex digits of SHA-256 (a build id is
 * shorter: "b" + 2 * DP_AG_BUILD_ID_MAX), NUL. */
#define OPD_IMG_ID_MAX 72

struct opd_imgcache;

/* @session_dir and @st are borrowed.  NULL with errno set. */
struct opd_imgcache *opd_imgcache_new(const char *session_dir, struct opd_stats *st);
void opd_imgcache_free(struct opd_imgcache *c);	/* NULL accepted */

/* The cache id of a build id ("b" + hex) into @id.  false if @size is 0. */
bool opd_imgcache_build_id(const uint8_t *bid, size_t size, char id[OPD_IMG_ID_MAX]);

/*
 * The entry for @id, if the cache holds it: its path relative to SESSION
 * ("images/<id>/<basename>") into @rel.  True when present.
 */
bool opd_imgcache_lookup(struct opd_imgcache *c, const char *id, char *rel, size_t size);

/*
 * A file received whole into @tmp (a path below SESSION/images): move it
 * into the cache as images/<id>/<escaped @base>, or drop it when the
 * cache already holds that id.  <id> is the build id @id the guest
 * claims only when the file's own build-id note says the same (only then
 * may other domains find it by build id); else the SHA-256 of its bytes,
 * so what a guest uploads is shared only with a guest that uploaded the
 * same bytes (a claim the file denies is counted
 * guest_hostile_image_mismatch).  @rel gets
 * the entry's relative path.  Returns 1 stored, 0 already present
 * (deduplicated), or -errno (@tmp is removed in every case).
 */
int opd_imgcache_commit(struct opd_imgcache *c, const char *tmp, const char *id,
			const char *base, size_t base_len, char *rel, size_t size);

/* SESSION/images, for temporary files of transfers in progress. */
const char *opd_imgcache_dir(const struct opd_imgcache *c);

/*
 * Append "@rel\t<escaped @guest_path>" to the map file @map_path (a
 * domain's SESSION/domains/<esc>/images).  0 or -errno.
 */
int opd_imgcache_map_add(const char *map_path, const char *rel, const char *guest_path,
			 size_t len);

#endif
