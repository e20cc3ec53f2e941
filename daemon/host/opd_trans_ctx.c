#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "opd_trans_int.h"

/* The transient context's tag (struct opd_trans_tag). */
static void ctx_tag(const struct opd_trans *t, struct opd_trans_tag *g)
{
	unsigned int sep = t->conf->separate;

	memset(g, 0, sizeof(*g));
	/* DOMAIN applies to guest samples only (doc/raw-stream.md), and of
	 * those only a guest user sample's resolution depends on the space
	 * (its {anon:guest-user:asN} bucket): a host sample's context left
	 * them in would be a new context for each guest run before it */
	if (t->mode == DP_MODE_GUEST_KERNEL || t->mode == DP_MODE_GUEST_USER) {
		g->domain_key = t->domain_key;
		g->domain_key_ns = t->domain_key_ns;
	}
	g->asid = t->mode == DP_MODE_GUEST_USER ? t->asid : 0;
	g->mode = t->mode;
	g->have_task = t->have_task;
	if (t->have_task) {
		g->pid = t->pid;
		g->tid = (sep & OPD_SEP_THREAD) ? t->tid : 0;
	}
	g->cpu = (sep & OPD_SEP_CPU) ? t->cpu : 0;
}

static size_t tag_hash(const struct opd_trans_tag *g)
{
	uint64_t h = g->domain_key * 31 + g->asid;

	h = h * 31 + ((uint64_t)g->pid << 32 | g->tid);
	h = h * 31 + ((uint64_t)g->cpu << 32 | g->mode << 8 | g->domain_key_ns << 1 | g->have_task);
	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> (64 - OPD_TRANS_CTX_BUCKET_BITS));
}

static inline __attribute__((always_inline)) bool tag_eq(const struct opd_trans_tag *a,
							const struct opd_trans_tag *b)
{
	return a->pid == b->pid && a->mode == b->mode && a->tid == b->tid && a->cpu == b->cpu &&
	       a->domain_key == b->domain_key && a->asid == b->asid &&
	       a->domain_key_ns == b->domain_key_ns && a->have_task == b->have_task;
}

/* Fetch the samples' cache entries of context @c (a line each) while its
 * tag is compared: after a switch of task they are cold, and a run's
 * samples would otherwise miss on them one after the other. */
static inline void ctx_prefetch(const struct opd_trans *t, const struct opd_trans_ctx *c)
{
	const struct opd_trans_cache *e = c->cache;

	__builtin_prefetch(&c->tag);
	for (size_t i = 0; i < (size_t)t->nr_events * OPD_TRANS_CACHE_WAYS; i++)
		__builtin_prefetch(&e[i]);
}

/* Whether @c, a guess, is a context of the pool now and has tag @g: a
 * guess may name a slot not made again since the pool started over. */
static bool ctx_guess_ok(const struct opd_trans *t, const struct opd_trans_ctx *c,
			 const struct opd_trans_tag *g)
{
	return c && (size_t)((const uint8_t *)c - t->ctx_pool) < t->ctx_used * t->ctx_size &&
	       tag_eq(&c->tag, g);
}

/* Make the current context's caches t->ctx: found among those kept, or
 * a new one (every entry stale: its generation is below t->gen). */
void opd_tr_ctx_select(struct opd_trans *t)
{
	struct opd_trans_tag g;
	struct opd_trans_ctx *c, *from = t->ctx;
	size_t h;

	t->ctx_dirty = false;
	if (!t->ctx_pool)
		return;
	ctx_tag(t, &g);
	/* a task's samples alternate between user and kernel mode: the
	 * context before is the likely one, and still in the cache */
	if (t->ctx_prev && tag_eq(&t->ctx_prev->tag, &g)) {
		c = t->ctx_prev;
		goto out;
	}
	if (from && tag_eq(&from->tag, &g))
		return;	/* changed and back, between two samples */
	/* else the one this task went to from here before: a run's first
	 * change of mode, which the hash would find one or two misses later
	 * (with thousands of contexts, a bucket and a chain out of the
	 * cache) */
	if (from && ctx_guess_ok(t, from->alt, &g)) {
		c = from->alt;
		ctx_prefetch(t, c);
		goto out;
	}
	h = tag_hash(&g);
	c = t->ctx_hash[h];
	if (c)
		ctx_prefetch(t, c);
	for (; c; c = c->next)
		if (tag_eq(&c->tag, &g))
			goto found;
	if (t->ctx_used == t->ctx_max) {
		/* full: start over; the bump makes the reused entries stale */
		memset(t->ctx_hash, 0, OPD_TRANS_CTX_BUCKETS * sizeof(*t->ctx_hash));
		t->ctx_used = 0;
		t->ctx = t->ctx_prev = from = NULL;
		t->gen++;
		t->st->context_resets++;
	}
	t->st->contexts++;
	c = (struct opd_trans_ctx *)(t->ctx_pool + t->ctx_used * t->ctx_size);
	c->frames = t->frame_pool + t->ctx_used++ * OPD_TRANS_CACHE_WAYS;
	c->tag = g;
	c->alt = NULL;
	c->next = t->ctx_hash[h];
	t->ctx_hash[h] = c;
found:
	/* (a switch to another task is the next run's: no guess for the
	 * one after) */
	if (from && from->tag.pid == g.pid && from->tag.domain_key == g.domain_key)
		from->alt = c;
out:
	if (c != t->ctx) {
		t->ctx_prev = t->ctx;
		t->ctx = c;
	}
}

void opd_tr_ctx_pool_free(struct opd_trans *t)
{
	if (t->ctx_pool)
		munmap(t->ctx_pool, t->ctx_pool_len);
	if (t->frame_pool)
		munmap(t->frame_pool, t->frame_pool_len);
	t->ctx_pool = NULL;
	t->frame_pool = NULL;
}

/* @len bytes of zero pages, untouched until used, not charged until then
 * where the system allows it; NULL if the system has not the room. */
static void *zero_pages(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	/* (no MADV_HUGEPAGE: with huge pages here or in the batch, a replay
	 * took three times the CPU on a paravirtualized guest,
	 * doc/performance.md) */
	return p == MAP_FAILED ? NULL : p;
}

/*
 * A pool of contexts for @nr events (the stream's header): as many as
 * OPD_TRANS_CTX_BYTES hold, up to OPD_TRANS_CTX_MAX, fewer where the
 * system will not map that much.  Only the contexts used cost memory
 * (each a tag and the lines its samples use: about 2 KiB with one event).
 * 0 or -ENOMEM.
 */
int opd_tr_ctx_pool_init(struct opd_trans *t, unsigned int nr)
{
	size_t size = sizeof(struct opd_trans_ctx) +
		      (size_t)(nr ? nr : 1) * (OPD_TRANS_CACHE_WAYS + 1) * sizeof(struct opd_trans_cache);
	size_t fsize = OPD_TRANS_CACHE_WAYS * sizeof(struct opd_trans_frame);
	size_t max = OPD_TRANS_CTX_BYTES / size;

	if (max > OPD_TRANS_CTX_MAX)
		max = OPD_TRANS_CTX_MAX;
	opd_tr_ctx_pool_free(t);
	for (; max >= 2; max /= 2) {
		t->ctx_pool = zero_pages(max * size);
		t->frame_pool = t->ctx_pool ? zero_pages(max * fsize) : NULL;
		t->ctx_pool_len = max * size;
		t->frame_pool_len = max * fsize;
		if (t->frame_pool)
			break;
		opd_tr_ctx_pool_free(t);
	}
	if (!t->ctx_hash)
		t->ctx_hash = calloc(OPD_TRANS_CTX_BUCKETS, sizeof(*t->ctx_hash));
	else
		memset(t->ctx_hash, 0, OPD_TRANS_CTX_BUCKETS * sizeof(*t->ctx_hash));
	t->ctx = t->ctx_prev = NULL;
	t->ctx_used = 0;
	t->ctx_size = size;
	t->ctx_max = max;
	t->ctx_dirty = true;
	if (!t->ctx_pool || !t->ctx_hash) {
		opd_tr_ctx_pool_free(t);
		return -ENOMEM;
	}
	return 0;
}
