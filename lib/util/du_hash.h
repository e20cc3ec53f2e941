/*
 * Hashing helpers shared by the daemon's tables: FNV-1a over bytes and an
 * intrusive chained hash table (the caller embeds a struct du_hlink in its
 * node, keeps the full hash in it, and compares keys itself).
 */
#ifndef DU_HASH_H
#define DU_HASH_H

#include <stddef.h>
#include <stdint.h>

#define DU_FNV32_BASIS 2166136261u

/* FNV-1a (32-bit) of @len bytes at @p, continuing from @h (start: DU_FNV32_BASIS). */
static inline uint32_t du_fnv1a32(uint32_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

#define DU_FNV64_BASIS 14695981039346656037ull

/* FNV-1a (64-bit) of @len bytes at @p, continuing from @h (start: DU_FNV64_BASIS). */
static inline uint64_t du_fnv1a64(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

#define du_container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

struct du_hlink {
	struct du_hlink *next;
	uint32_t hash;
};

/* Buckets are a power of two; the caller decides when to grow. */
struct du_htab {
	struct du_hlink **buckets;
	size_t mask;		/* number of buckets - 1 */
	size_t count;		/* links in the table */
};

/* Empty table of @nr_buckets (a power of two) buckets. 0 or -ENOMEM. */
int du_htab_init(struct du_htab *t, size_t nr_buckets);

/*
 * Hand every link to @free_link (may be NULL), then free the buckets.
 * Accepts a table whose init failed or that was zeroed.
 */
void du_htab_fini(struct du_htab *t, void (*free_link)(struct du_hlink *l));

/* Double the buckets, keeping every link. 0, or -ENOMEM with @t unchanged. */
int du_htab_grow(struct du_htab *t);

/* First link of the chain that holds @hash; follow ->next. */
static inline struct du_hlink *du_htab_chain(const struct du_htab *t, uint32_t hash)
{
	return t->buckets[hash & t->mask];
}

/* Put @l at the head of its chain (no check for an equal key). */
static inline void du_htab_add(struct du_htab *t, struct du_hlink *l, uint32_t hash)
{
	struct du_hlink **b = &t->buckets[hash & t->mask];

	l->hash = hash;
	l->next = *b;
	*b = l;
	t->count++;
}

/* Take @l, which must be in @t, out of its chain. */
void du_htab_del(struct du_htab *t, struct du_hlink *l);

#endif
