/*
 * The session's content-addressed image cache (doc/trust.md, "The image
 * cache"; issue 23, item 4): SESSION/images/<id>/<basename>, where <id> is
 * always "h" + the hex SHA-256 of the bytes the host received.  Shared by
 * every domain only through that hash: a binary that two guests upload is
 * stored once, and what one guest uploads is never used for another guest
 * that did not upload the same bytes.  Each domain has a map file
 * SESSION/domains/<esc>/images whose lines are "images/<id>/<basename>\t
 * <guest path>", the guest path with bytes outside '!'..'~' and '\'
 * written as \xHH, naming the entry of the bytes that domain uploaded;
 * opreport reads it to find a guest's binaries.
 *
 * A build id is only a hint: SESSION/images/by-build-id/<hex> lists, one
 * a line, the ids of the entries whose own GNU build-id note says <hex>
 * (candidates for a reader that looks a binary up by build id, to be
 * checked; never a proof, since a guest writes its files' notes).
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

/* A cache id: "h" + 64 hex digits of SHA-256, NUL (and room to spare). */
#define OPD_IMG_ID_MAX 72

struct opd_imgcache;

/* @session_dir and @st are borrowed.  NULL with errno set. */
struct opd_imgcache *opd_imgcache_new(const char *session_dir, struct opd_stats *st);
void opd_imgcache_free(struct opd_imgcache *c);	/* NULL accepted */

/*
 * The entry for @id (a content id), if the cache holds it: its path
 * relative to SESSION ("images/<id>/<basename>") into @rel.  True when
 * present.
 */
bool opd_imgcache_lookup(struct opd_imgcache *c, const char *id, char *rel, size_t size);

/*
 * A file received whole into @tmp (a path below SESSION/images): move it
 * into the cache as images/<SHA-256 of its bytes>/<escaped @base>, or drop
 * it when the cache already holds those bytes (another domain uploaded
 * the same file).  @bid (@bid_size bytes, 0: none) is the build id the
 * guest claimed for it: a claim that the file's own note denies is
 * counted guest_hostile_image_mismatch and changes nothing else; the
 * note (not the claim) goes into the build-id hint index.  @sum is the
 * SHA-256 of @tmp's bytes when the caller hashed them as it wrote them
 * (NULL: hashed here, a whole file's CPU at once).  @rel gets the
 * entry's relative path.  Returns 1 stored, 0 already present
 * (deduplicated), or -errno (@tmp is removed in every case).
 */
int opd_imgcache_commit(struct opd_imgcache *c, const char *tmp, const uint8_t *sum,
			const uint8_t *bid, size_t bid_size, const char *base, size_t base_len,
			char *rel, size_t size);

/* SESSION/images, for temporary files of transfers in progress. */
const char *opd_imgcache_dir(const struct opd_imgcache *c);

/*
 * Append "@rel\t<escaped @guest_path>" to the map file @map_path (a
 * domain's SESSION/domains/<esc>/images).  0 or -errno.
 */
int opd_imgcache_map_add(const char *map_path, const char *rel, const char *guest_path,
			 size_t len);

#endif
