/* Small open-addressing hash maps for aggregation: string -> index and
 * 64-bit key -> index.  Indexes are the caller's (into its own arrays). */
#ifndef REP_HASH_H
#define REP_HASH_H

#include <stddef.h>
#include <stdint.h>

struct rep_strmap;
struct rep_u64map;

struct rep_strmap *rep_strmap_new(void);		/* NULL, errno set */
void rep_strmap_free(struct rep_strmap *m);		/* NULL accepted */
/* Index of @key, or -1. */
long rep_strmap_get(const struct rep_strmap *m, const char *key);
/* Map @key (copied) to @val; 0 or -ENOMEM.  An existing key is overwritten. */
int rep_strmap_put(struct rep_strmap *m, const char *key, size_t val);

struct rep_u64map *rep_u64map_new(void);
void rep_u64map_free(struct rep_u64map *m);
/*
 * The slot for @key: *@created says whether it was just inserted (then the
 * value is @fresh).  Returns the value, or -ENOMEM.
 */
long rep_u64map_get_or_put(struct rep_u64map *m, uint64_t key, size_t fresh, int *created);

#endif
