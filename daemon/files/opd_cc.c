#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "opd_batch.h"
#include "opd_cc.h"
#include "sfname/sfname.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_sdir.h"
#include "util/du_array.h"

struct cc_pframe {
	struct opd_image *dep;
	uint64_t off;
};

/* The {cg} files of the arcs filed last.  All the arcs of a chain share
 * its leaf's context (domain, vmm, event, tgid, tid, cpu), so the context
 * is compared once a chain, among the last few seen (each given a serial
 * number when it is taken in), and an arc's file is then found by its
 * three binaries and the context's serial alone: a hit costs no lookup
 * among all the sample files and no compare of a whole key.  An entry
 * holds while the files' evictions count (for @db) or releases count (for
 * @id, with a batch) is unchanged. */
#define CC_ARC_CACHE	512
#define CC_ARC_CTXS	16

struct cc_arc_file {
	struct opd_image *image, *dep, *cg;
	uint32_t serial;	/* the context's; 0: empty */
	uint32_t id;
	struct odb *db;
	uint64_t gen;
};

/* A context of chains: the leaf's key without its binaries. */
struct cc_arc_ctx {
	struct opd_sfile_key key;	/* image, dep, cg: NULL */
	uint32_t serial;		/* 0: empty */
};

/*
 * The callers of the last chain filed in a context (its frames 1..n),
 * with the files and keys of the arcs among them (from frame 2 on; the
 * arc into frame 0 is the leaf's own).  Consecutive chains of a thread
 * mostly share their callers, only the leaf moves: a chain with the same
 * callers in the same context has the same arcs there, so the batch
 * counts them as a repeat group instead of queueing them again (with a
 * batch only).  Valid while the releases count is @gen (the indexes hold)
 * and the context keeps its slot.
 */
struct cc_callers {
	uint32_t n;		/* callers; 0: nothing remembered */
	uint32_t narcs;		/* arcs with a file and key: ids, keys */
	uint32_t ndropped;	/* arcs without a key (too far) */
	uint32_t rep;		/* the batch's repeat group, while flushes holds */
	uint64_t flushes;
	uint64_t gen;
	struct opd_cc_frame f[DP_RAW_CC_MAX];
	uint32_t ids[DP_RAW_CC_MAX];
	uint64_t keys[DP_RAW_CC_MAX];
};

/* One distinct stack: its leaf's sample file key and offset, its callers
 * in the frame pool. */
struct cc_stack {
	uint64_t hash;
	uint64_t count;
	struct opd_sfile_key leaf;
	uint64_t leaf_off;
	uint32_t first;		/* in pool */
	uint32_t n;		/* callers */
};

struct opd_cc {
	struct opd_sfiles *sfiles;
	struct opd_stats *st;
	struct opd_batch *batch;	/* arcs are queued here when set */
	char dir[PATH_MAX];	/* SESSION/samples/current/{stacks} */
	char name[64];		/* <start>.<pid> */
	struct cc_stack *stacks;
	size_t nstacks, cap;
	struct cc_pframe *pool;
	size_t npool, pool_cap;
	/* open addressing: the high 32 bits of a stack's hash, then its
	 * index + 1 into stacks (0: empty), so that a probe past another
	 * stack reads no stack */
	uint64_t *slots;
	size_t nslots;		/* power of 2, > 2 * nstacks */
	/* guest chains held with their samples: held[id - 1], free ids */
	struct opd_cc_chain **held;
	uint32_t *free_ids;
	uint32_t nfree, nheld_ever;
	struct cc_arc_file arcs[CC_ARC_CACHE];
	struct cc_arc_ctx ctxs[CC_ARC_CTXS];
	struct cc_callers callers[CC_ARC_CTXS];	/* callers[i]: ctxs[i]'s */
	const struct cc_arc_ctx *ctx;	/* the chain's, being filed */
	uint32_t next_serial;
	uint64_t gen;			/* arc_gen() when last read */
};

struct opd_cc *opd_cc_new(const char *session_dir, struct opd_sfiles *sfiles,
			  struct opd_stats *st)
{
	struct opd_cc *cc = calloc(1, sizeof(*cc));

	if (!cc)
		return NULL;
	cc->sfiles = sfiles;
	cc->st = st;
	if (snprintf(cc->dir, sizeof(cc->dir), "%s/samples/current/{stacks}", session_dir) >=
	    (int)sizeof(cc->dir)) {
		free(cc);
		errno = ENAMETOOLONG;
		return NULL;
	}
	snprintf(cc->name, sizeof(cc->name), "%lld.%d", (long long)time(NULL), (int)getpid());
	return cc;
}

void opd_cc_free(struct opd_cc *cc)
{
	if (!cc)
		return;
	free(cc->stacks);
	free(cc->pool);
	free(cc->slots);
	for (uint32_t i = 0; i < cc->nheld_ever; i++)
		free(cc->held[i]);
	free(cc->held);
	free(cc->free_ids);
	free(cc);
}

void opd_cc_restart(struct opd_cc *cc)
{
	cc->nstacks = 0;
	cc->npool = 0;
	if (cc->slots)
		memset(cc->slots, 0, cc->nslots * sizeof(*cc->slots));
}

/* ---- guest chains held with their samples ---- */

uint32_t opd_cc_hold(struct opd_cc *cc, const struct opd_cc_chain *ch)
{
	struct opd_cc_chain *c;
	uint32_t id;

	if (!ch->nr)
		return 0;
	if (!cc->held) {
		cc->held = calloc(OPD_CC_MAX_HELD, sizeof(*cc->held));
		cc->free_ids = calloc(OPD_CC_MAX_HELD, sizeof(*cc->free_ids));
		if (!cc->held || !cc->free_ids) {
			free(cc->held);
			free(cc->free_ids);
			cc->held = NULL;
			cc->free_ids = NULL;
			goto out_drop;
		}
	}
	if (cc->nfree) {
		id = cc->free_ids[--cc->nfree];
	} else if (cc->nheld_ever < OPD_CC_MAX_HELD) {
		id = ++cc->nheld_ever;
	} else {
		goto out_drop;
	}
	c = cc->held[id - 1];
	if (!c) {
		c = malloc(sizeof(*c));
		if (!c) {
			cc->free_ids[cc->nfree++] = id;
			goto out_drop;
		}
		cc->held[id - 1] = c;
	}
	c->nr = ch->nr > DP_RAW_CC_MAX ? DP_RAW_CC_MAX : ch->nr;
	c->nk = ch->nk > c->nr ? c->nr : ch->nk;
	c->flags = ch->flags;
	memcpy(c->f, ch->f, c->nr * sizeof(c->f[0]));
	return id;	/* in use while nr > 0 */

out_drop:
	cc->st->cc_chains_dropped++;
	return 0;
}

bool opd_cc_take(struct opd_cc *cc, uint32_t id, struct opd_cc_chain *out)
{
	struct opd_cc_chain *c;

	if (!cc || !cc->held || !id || id > cc->nheld_ever)
		return false;
	c = cc->held[id - 1];
	if (!c || !c->nr)
		return false;
	out->nr = c->nr;
	out->nk = c->nk;
	out->flags = c->flags;
	memcpy(out->f, c->f, c->nr * sizeof(c->f[0]));
	c->nr = 0;
	cc->free_ids[cc->nfree++] = id;
	return true;
}

/* ---- arcs ---- */

/* Forget every remembered {cg} file and context. */
static void arcs_forget(struct opd_cc *cc)
{
	memset(cc->arcs, 0, sizeof(cc->arcs));
	memset(cc->ctxs, 0, sizeof(cc->ctxs));
	for (size_t i = 0; i < CC_ARC_CTXS; i++)
		cc->callers[i].n = 0;
	cc->ctx = NULL;
	cc->next_serial = 0;
}

void opd_cc_set_batch(struct opd_cc *cc, struct opd_batch *batch)
{
	cc->batch = batch;
	arcs_forget(cc);
}

/* What makes a remembered {cg} file stale: its index is dropped when
 * entries are released; its odb pointer also when a file is closed. */
static uint64_t arc_gen(const struct opd_cc *cc)
{
	return cc->batch ? opd_sfiles_releases(cc->sfiles) : opd_sfiles_evictions(cc->sfiles);
}

static bool ctx_eq(const struct opd_sfile_key *a, const struct opd_sfile_key *b)
{
	return a->domain == b->domain && a->vmm == b->vmm && a->event == b->event &&
	       a->tgid == b->tgid && a->tid == b->tid && a->cpu == b->cpu;
}

/* The context of a chain of @leaf: the last chain's, else one kept, else
 * taken in under a new serial (the arcs remembered under the serial of
 * the context it replaces no longer match). */
static const struct cc_arc_ctx *arc_ctx(struct opd_cc *cc, const struct opd_sfile_key *leaf)
{
	uint64_t h = (uintptr_t)leaf->domain ^ (uint64_t)leaf->tgid ^ (uint64_t)leaf->tid << 21 ^
		     (uint64_t)leaf->cpu << 42 ^ (uint64_t)leaf->event << 9 ^ leaf->vmm;
	struct cc_arc_ctx *c;

	if (cc->ctx && ctx_eq(&cc->ctx->key, leaf))
		return cc->ctx;
	c = &cc->ctxs[(h * 0x9e3779b97f4a7c15ULL) >> 60];
	_Static_assert(CC_ARC_CTXS == 16, "the slot is the hash's top 4 bits");
	if (c->serial && ctx_eq(&c->key, leaf))
		return c;
	if (!++cc->next_serial) {	/* wrapped: no old serial may match */
		arcs_forget(cc);
		cc->next_serial = 1;
	}
	memset(&c->key, 0, sizeof(c->key));
	c->key.domain = leaf->domain;
	c->key.vmm = leaf->vmm;
	c->key.event = leaf->event;
	c->key.tgid = leaf->tgid;
	c->key.tid = leaf->tid;
	c->key.cpu = leaf->cpu;
	c->serial = cc->next_serial;
	cc->callers[c - cc->ctxs].n = 0;
	return c;
}

static size_t arc_slot(uint32_t serial, const struct opd_cc_frame *from,
		       const struct opd_cc_frame *to)
{
	uint64_t h = (uintptr_t)from->dep ^ (uintptr_t)to->dep << 7 ^
		     (uintptr_t)from->image << 13 ^ serial;

	_Static_assert((CC_ARC_CACHE & (CC_ARC_CACHE - 1)) == 0, "a power of 2");
	return (size_t)((h * 0x9e3779b97f4a7c15ULL) >> 40) & (CC_ARC_CACHE - 1);
}

/* The {cg} file of the arc @from -> @to of the chain being filed (its
 * context cc->ctx, of @leaf): remembered, else found (opd_sfile_id with a
 * batch, else opened, opd_sfile_get_id).  False if it cannot be filed. */
static bool arc_file(struct opd_cc *cc, const struct opd_sfile_key *leaf,
		     const struct opd_cc_frame *from, const struct opd_cc_frame *to,
		     struct cc_arc_file **out)
{
	uint32_t serial = cc->ctx->serial;
	struct cc_arc_file *e = &cc->arcs[arc_slot(serial, from, to)];
	struct opd_sfile_key k;
	bool ok;

	*out = e;
	if (e->serial == serial && e->gen == cc->gen && e->dep == from->dep &&
	    e->cg == to->dep && e->image == from->image)
		return true;
	k = *leaf;
	k.image = from->image;
	k.dep = from->dep;
	k.cg = to->dep;
	if (cc->batch) {
		e->db = NULL;
		ok = opd_sfile_id(cc->sfiles, &k, &e->id);
	} else {
		e->db = opd_sfile_get_id(cc->sfiles, &k, &e->id);
		ok = e->db != NULL;
	}
	e->image = from->image;
	e->dep = from->dep;
	e->cg = to->dep;
	e->serial = ok ? serial : 0;
	/* (an open may evict others: the count after it) */
	cc->gen = arc_gen(cc);
	e->gen = cc->gen;
	return ok;
}

/* The key in its {cg} file of the arc @from -> @to; false if the arc has
 * no key (too far: counted cc_arcs_dropped). */
static bool arc_key(struct opd_cc *cc, const struct opd_cc_frame *from,
		    const struct opd_cc_frame *to, uint64_t *key)
{
	/* OProfile's key: two 32-bit offsets; a binary larger than 4 GiB,
	 * or an address of nothing known (keyed by itself), does not fit */
	if (from->off > UINT32_MAX || to->off > UINT32_MAX) {
		cc->st->cc_arcs_dropped++;
		return false;
	}
	*key = from->off << 32 | to->off;
	return true;
}

static void add_arc(struct opd_cc *cc, struct odb *db, uint64_t key)
{
	if (!db || odb_add(db, key, 1))
		cc->st->cc_arcs_dropped++;
	else
		cc->st->cc_arcs++;
}

/*
 * If the callers of the chain @f of @n frames are @c's, count their arcs
 * again (filed and dropped, as queueing them would) as a repeat in the
 * batch, and say so: only the leaf's arc is left to queue.  The first
 * chain with these callers queued each arc, so each key has its place in
 * its file before the repeats are added (opd_batch_repeat_new).
 */
static bool callers_repeat(struct opd_cc *cc, struct cc_callers *c,
			   const struct opd_cc_frame *f, size_t n)
{
	struct opd_batch *b = cc->batch;

	if (c->n != n - 1 || c->gen != cc->gen || memcmp(c->f, f + 1, (n - 1) * sizeof(*f)))
		return false;
	cc->st->cc_arcs += c->narcs;
	cc->st->cc_arcs_dropped += c->ndropped;
	if (!c->narcs)
		return true;
	if (c->rep && c->flushes == opd_batch_flushes(b)) {
		opd_batch_repeat_add(b, c->rep);
		return true;
	}
	c->rep = opd_batch_repeat_new(b, c->ids, c->keys, c->narcs);
	c->flushes = opd_batch_flushes(b);
	if (!c->rep)
		for (uint32_t i = 0; i < c->narcs; i++)
			opd_batch_add(b, c->ids[i], c->keys[i]);
	return true;
}

/*
 * The arcs of a chain of @n frames, in order, queued in the batch (which
 * applies them by file, as samples); its callers' arcs are remembered for
 * the context's next chain, or counted as a repeat of its last one.
 */
static void queue_arcs(struct opd_cc *cc, const struct opd_sfile_key *leaf,
		       const struct opd_cc_frame *f, size_t n)
{
	struct cc_callers *c = &cc->callers[cc->ctx - cc->ctxs];
	bool keep = n > 2;
	struct cc_arc_file *e;
	uint64_t key;

	if (keep && callers_repeat(cc, c, f, n)) {
		n = 2;
		keep = false;
	} else if (keep) {
		c->n = c->narcs = c->ndropped = c->rep = 0;
	}
	for (size_t i = 1; i < n; i++) {
		if (!arc_key(cc, &f[i], &f[i - 1], &key)) {
			c->ndropped += keep && i > 1;
			continue;
		}
		if (!arc_file(cc, leaf, &f[i], &f[i - 1], &e)) {
			/* (not remembered: a file may fail once only) */
			cc->st->cc_arcs_dropped++;
			keep = false;
			continue;
		}
		/* counted filed now; the batch moves what it cannot file to
		 * cc_arcs_dropped */
		cc->st->cc_arcs++;
		opd_batch_add(cc->batch, e->id, key);
		if (keep && i > 1) {
			c->ids[c->narcs] = e->id;
			c->keys[c->narcs++] = key;
		}
	}
	if (keep) {
		memcpy(c->f, f + 1, (n - 1) * sizeof(*f));
		c->n = (uint32_t)(n - 1);
		c->gen = cc->gen;
	}
}

/*
 * The arcs of a chain of @n frames, in order, added at once (no batch).
 * Their tables are far apart in memory: every bucket is fetched first,
 * then every node, then the adds, so the misses overlap instead of
 * following one another.  If opening a file evicted another on the way,
 * a file found before may be closed: then each arc's file is found again
 * just before its add.
 */
static void file_arcs(struct opd_cc *cc, const struct opd_sfile_key *leaf,
		      const struct opd_cc_frame *f, size_t n)
{
	uint64_t key[DP_RAW_CC_MAX + 1], ev = opd_sfiles_evictions(cc->sfiles);
	struct odb *db[DP_RAW_CC_MAX + 1];
	struct cc_arc_file *e;
	bool ok[DP_RAW_CC_MAX + 1];

	for (size_t i = 1; i < n; i++) {
		ok[i] = arc_key(cc, &f[i], &f[i - 1], &key[i]);
		db[i] = ok[i] && arc_file(cc, leaf, &f[i], &f[i - 1], &e) ? e->db : NULL;
		if (db[i])
			odb_prefetch(db[i], key[i], 0);
	}
	if (ev != opd_sfiles_evictions(cc->sfiles)) {
		for (size_t i = 1; i < n; i++)
			if (ok[i])
				add_arc(cc, arc_file(cc, leaf, &f[i], &f[i - 1], &e) ? e->db : NULL,
					key[i]);
		return;
	}
	for (size_t i = 1; i < n; i++)
		if (db[i])
			odb_prefetch(db[i], key[i], 1);
	for (size_t i = 1; i < n; i++)
		if (ok[i])
			add_arc(cc, db[i], key[i]);
}

/* ---- stacks ---- */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xbf58476d1ce4e5b9ULL;
}

static uint64_t stack_hash(const struct opd_sfile_key *k, const struct opd_cc_frame *f, size_t n)
{
	uint64_t h = mix(0, (uintptr_t)k->domain);

	h = mix(h, (uintptr_t)k->image);
	h = mix(h, k->vmm);
	h = mix(h, k->event);
	h = mix(h, (uint64_t)k->tgid);
	h = mix(h, (uint64_t)k->tid);
	h = mix(h, (uint64_t)k->cpu);
	/* two chains of one multiply a frame, the even frames' and the odd
	 * ones', each half as long as one; a frame's own mixing of dep and
	 * offset runs beside them */
	uint64_t g = h ^ 0x94d049bb133111ebULL;

	for (size_t i = 0; i + 1 < n; i += 2) {
		uint64_t v = f[i].off * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)f[i].dep;
		uint64_t w = f[i + 1].off * 0x9e3779b97f4a7c15ULL ^ (uintptr_t)f[i + 1].dep;

		h = ((h << 23 | h >> 41) ^ v) * 0xbf58476d1ce4e5b9ULL;
		g = ((g << 23 | g >> 41) ^ w) * 0xbf58476d1ce4e5b9ULL;
	}
	if (n & 1)
		h = ((h << 23 | h >> 41) ^ (f[n - 1].off * 0x9e3779b97f4a7c15ULL ^
					    (uintptr_t)f[n - 1].dep)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (g << 29 | g >> 35) ^ n) * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 31;
	return h ? h : 1;
}

static bool stack_eq(const struct opd_cc *cc, const struct cc_stack *s,
		     const struct opd_sfile_key *k, const struct opd_cc_frame *f, size_t n)
{
	const struct opd_sfile_key *a = &s->leaf;

	if (s->n != n - 1 || s->leaf_off != f[0].off || a->domain != k->domain ||
	    a->image != k->image || a->dep != k->dep || a->vmm != k->vmm ||
	    a->event != k->event || a->tgid != k->tgid || a->tid != k->tid || a->cpu != k->cpu)
		return false;
	for (size_t i = 1; i < n; i++) {
		const struct cc_pframe *p = &cc->pool[s->first + i - 1];

		if (p->dep != f[i].dep || p->off != f[i].off)
			return false;
	}
	return true;
}

static inline uint64_t slot_of(uint64_t hash, size_t i)
{
	return (hash & ~(uint64_t)UINT32_MAX) | (uint32_t)(i + 1);
}

static int grow_slots(struct opd_cc *cc)
{
	size_t n = cc->nslots ? cc->nslots * 2 : 1024;
	uint64_t *sl = calloc(n, sizeof(*sl));

	if (!sl)
		return -ENOMEM;
	for (size_t i = 0; i < cc->nstacks; i++) {
		size_t j = cc->stacks[i].hash & (n - 1);

		while (sl[j])
			j = (j + 1) & (n - 1);
		sl[j] = slot_of(cc->stacks[i].hash, i);
	}
	free(cc->slots);
	cc->slots = sl;
	cc->nslots = n;
	return 0;
}

/* Room for one more stack of @callers frames; false at the caps. */
static bool stack_room(struct opd_cc *cc, size_t callers)
{
	if (cc->nstacks >= OPD_CC_MAX_STACKS || cc->npool + callers > OPD_CC_MAX_FRAMES)
		return false;
	if ((cc->nstacks + 1) * 2 >= cc->nslots && grow_slots(cc))
		return false;
	if (cc->nstacks == cc->cap) {
		size_t ncap = cc->cap ? cc->cap * 2 : 256;
		struct cc_stack *ns = realloc(cc->stacks, ncap * sizeof(*ns));

		if (!ns)
			return false;
		cc->stacks = ns;
		cc->cap = ncap;
	}
	return !DU_GROW(cc->pool, cc->pool_cap, cc->npool + callers, 4096);
}

static void add_stack(struct opd_cc *cc, const struct opd_sfile_key *leaf,
		      const struct opd_cc_frame *f, size_t n, uint64_t h)
{
	struct cc_stack *s;
	size_t j;

	if (cc->nslots) {
		for (j = h & (cc->nslots - 1); cc->slots[j]; j = (j + 1) & (cc->nslots - 1)) {
			if ((cc->slots[j] ^ h) >> 32)
				continue;
			s = &cc->stacks[(uint32_t)cc->slots[j] - 1];
			if (s->hash == h && stack_eq(cc, s, leaf, f, n)) {
				s->count++;
				return;
			}
		}
	}
	if (!stack_room(cc, n - 1)) {
		cc->st->cc_stacks_dropped++;
		return;
	}
	s = &cc->stacks[cc->nstacks];
	memset(s, 0, sizeof(*s));
	s->hash = h;
	s->count = 1;
	s->leaf = *leaf;
	s->leaf.cg = NULL;
	s->leaf_off = f[0].off;
	s->first = (uint32_t)cc->npool;
	s->n = (uint32_t)(n - 1);
	for (size_t i = 1; i < n; i++) {
		cc->pool[cc->npool].dep = f[i].dep;
		cc->pool[cc->npool++].off = f[i].off;
	}
	for (j = h & (cc->nslots - 1); cc->slots[j]; j = (j + 1) & (cc->nslots - 1))
		;
	cc->slots[j] = slot_of(h, cc->nstacks++);
	cc->st->cc_stacks = cc->nstacks;
}

void opd_cc_file(struct opd_cc *cc, const struct opd_sfile_key *leaf,
		 const struct opd_cc_frame *f, size_t n)
{
	uint64_t h;

	if (n < 2)
		return;
	/* the stack's slot is far in memory: on its way while the arcs go */
	h = stack_hash(leaf, f, n);
	if (cc->nslots)
		__builtin_prefetch(&cc->slots[h & (cc->nslots - 1)]);
	cc->ctx = arc_ctx(cc, leaf);
	cc->gen = arc_gen(cc);
	if (cc->batch)
		queue_arcs(cc, leaf, f, n);
	else
		file_arcs(cc, leaf, f, n);
	add_stack(cc, leaf, f, n, h);
}

/* ---- the stacks file ---- */

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static size_t image_index(struct opd_image *const *imgs, size_t n, struct opd_image *im)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if ((uintptr_t)imgs[mid] < (uintptr_t)im)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The distinct caller images, sorted by pointer; their count in *@n. */
static struct opd_image **caller_images(const struct opd_cc *cc, size_t *n)
{
	struct opd_image **imgs = malloc((cc->npool + 1) * sizeof(*imgs));
	size_t k = 0;

	if (!imgs)
		return NULL;
	for (size_t i = 0; i < cc->npool; i++)
		imgs[i] = cc->pool[i].dep;
	qsort(imgs, cc->npool, sizeof(*imgs), cmp_ptr);
	for (size_t i = 0; i < cc->npool; i++)
		if (!k || imgs[k - 1] != imgs[i])
			imgs[k++] = imgs[i];
	*n = k;
	return imgs;
}

static int write_images(FILE *f, struct opd_image *const *imgs, size_t n)
{
	char buf[SFN_MAX_PATH + 1];

	for (size_t i = 0; i < n; i++) {
		struct sfn_image im = { imgs[i]->kind, imgs[i]->name };

		if (sfn_mangle_image(&im, buf, sizeof(buf)) < 0)
			snprintf(buf, sizeof(buf), "{anon:unknown}");
		fprintf(f, "image %zu %s\n", i, buf);
	}
	return 0;
}

static void write_stacks(const struct opd_cc *cc, FILE *f, struct opd_image *const *imgs,
			 size_t nimgs)
{
	char name[SFN_MAX_PATH + 1];

	for (size_t i = 0; i < cc->nstacks; i++) {
		const struct cc_stack *s = &cc->stacks[i];
		const struct opd_event_desc *ev = opd_sfiles_event(cc->sfiles, s->leaf.event);

		if (!ev || opd_sfile_name(&s->leaf, ev, name, sizeof(name)) < 0)
			continue;
		fprintf(f, "stack %" PRIu64 " %s %#" PRIx64, s->count, name, s->leaf_off);
		for (uint32_t j = 0; j < s->n; j++) {
			const struct cc_pframe *p = &cc->pool[s->first + j];

			fprintf(f, " %zu:%#" PRIx64, image_index(imgs, nimgs, p->dep), p->off);
		}
		fputc('\n', f);
	}
}

int opd_cc_write(struct opd_cc *cc)
{
	char path[PATH_MAX + 80], tmp[PATH_MAX + 80];
	struct opd_image **imgs;
	size_t nimgs = 0, len = 0;
	char *buf = NULL;
	FILE *f;
	int ret;

	if (!cc || !cc->nstacks)
		return 0;
	/* in the session: no link followed, and in the worker below the
	 * directory it was handed (util/du_sdir.h) */
	ret = du_nf_mkdirs(cc->dir);
	if (ret)
		goto out_err;
	snprintf(path, sizeof(path), "%s/%s", cc->dir, cc->name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", cc->dir, cc->name);
	imgs = caller_images(cc, &nimgs);
	if (!imgs) {
		ret = -ENOMEM;
		goto out_err;
	}
	f = open_memstream(&buf, &len);
	if (!f) {
		ret = -errno;
		free(imgs);
		goto out_err;
	}
	fprintf(f, "domprof-stacks 1\n");
	write_images(f, imgs, nimgs);
	write_stacks(cc, f, imgs, nimgs);
	free(imgs);
	errno = 0;
	ret = ferror(f) | fclose(f) ? (errno ? -errno : -ENOMEM) :
		du_nf_write_atomic(path, tmp, buf, len, DU_SDIR_FILE_MODE);
	free(buf);
	if (ret)
		goto out_err;
	return 0;

out_err:
	du_err("cannot write the stacks file in %s: %s", cc->dir, strerror(-ret));
	return ret;
}
