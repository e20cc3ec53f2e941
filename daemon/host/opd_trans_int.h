/*
 * The translator's parts (opd_trans.h), for its files only: the context
 * and its caches (opd_trans.c: the records and the sample's hot path;
 * opd_trans_ctx.c: the caches kept per context; opd_trans_resolve.c: where
 * a pc resolves, host or guest; opd_trans_cc.c: call chains).
 */
#ifndef OPD_TRANS_INT_H
#define OPD_TRANS_INT_H

#include "opd_cc.h"
#include "opd_filer.h"
#include "opd_guest_asid.h"
#include "opd_trans.h"

#define OPD_TRANS_CACHE_BITS	5
#define OPD_TRANS_CACHE_WAYS	(1 << OPD_TRANS_CACHE_BITS)
#define OPD_TRANS_CACHE_SHIFT	21
/* Contexts whose caches are kept: at most this many bytes of them (their
 * call-chain frames, 1,792 bytes a context, in a pool of their own beside
 * it, touched only by chains), at most OPD_TRANS_CTX_MAX, and this many
 * hash buckets to find them. */
#define OPD_TRANS_CTX_BYTES	(256u << 20)
#define OPD_TRANS_CTX_MAX	65536
#define OPD_TRANS_CTX_BUCKET_BITS	16
#define OPD_TRANS_CTX_BUCKETS	(1u << OPD_TRANS_CTX_BUCKET_BITS)
/* A line each (the pool is page-aligned): a lookup costs one miss. */
struct __attribute__((aligned(64))) opd_trans_cache {
	uint64_t gen;
	uint64_t start, len;	/* pc in [start, start + len) */
	uint64_t delta;		/* key = pc + delta (mod 2^64) */
	struct odb *db;
	uint32_t id;		/* db's index in opd_sfiles (for the batch) */
	uint64_t *unresolved;	/* counter bumped per sample, or a dummy */
	uint64_t *extra;	/* a second one ({vmm}, unselected), or a dummy */
};

/* A call chain frame's resolution (resolve_frame), per 2 MiB region as
 * the samples' cache. */
struct opd_trans_frame {
	uint64_t gen;
	uint64_t start, len, delta;
	struct opd_image *image, *dep;
	bool kernel;		/* resolved against the kernel ranges */
	bool unresolved;
};

/* The last host chain's callers, resolved (opd_trans_cc.c): the same
 * return addresses in the same context and generation resolve the same,
 * so a chain whose callers are the last one's is not resolved again
 * (consecutive samples of a task mostly share their callers).  f[0] is
 * left for the sample itself, so the frames go to opd_cc_file as they
 * are.  Valid while nr > 0. */
struct opd_trans_lastcc {
	const struct opd_trans_ctx *ctx;
	uint64_t gen;
	uint32_t nr, nk, unresolved;
	uint64_t ret[DP_RAW_CC_MAX];
	struct opd_cc_frame f[DP_RAW_CC_MAX + 1];
};

/* What a resolution depends on besides the tables (which the generation
 * covers): the fields of the transient context that --separate and the
 * mode make relevant (zero where they are not). */
struct opd_trans_tag {
	uint64_t domain_key, asid;
	uint32_t pid, tid, cpu, mode, domain_key_ns, have_task;
};

/* A context's caches, kept while the stream switches between contexts
 * (tasks, modes, CPUs), so a switch back finds its resolutions.  Its call
 * chain frames' are apart (frames, in a pool of their own that only
 * chains touch), so a context without chains is a tag and a few lines. */
struct opd_trans_ctx {
	struct opd_trans_tag tag;
	struct opd_trans_ctx *next;	/* in its hash chain */
	/* the same task's (and domain's) context the stream went to from
	 * this one the last time it had to look it up: mostly its other
	 * mode; a guess, checked against the tag */
	struct opd_trans_ctx *alt;
	struct opd_trans_frame *frames;	/* [OPD_TRANS_CACHE_WAYS] */
	/* [nr_events][OPD_TRANS_CACHE_WAYS], then [nr_events] resolutions
	 * that hold for every pc (a guest's bucket: whole_slot) */
	struct opd_trans_cache cache[];
};

struct opd_trans {
	const struct opd_conf *conf;
	struct opd_stats *st;
	struct opd_images *images;
	struct opd_procs *procs;
	struct opd_kernel *kernel;
	const char *proc_root;	/* for live lookups, "/proc" */
	opd_maps_src_fn maps_src;	/* instead, when set (privsep worker) */
	void *maps_ctx;
	/* Live domains (NULL in replay: guest samples then go to domain
	 * "pid-<hypervisor pid>", and no host work is {vmm}). */
	struct opd_domains *domains;
	/* Where guest samples of live domains go (NULL: filed at once
	 * under {anon:guest-*}).  opd_gpipe.h. */
	struct opd_gpipe *gpipe;
	/* Where resolved samples are counted: their files, and the batch
	 * they are queued in when the daemon set one. */
	struct opd_filer filer;

	/* the transient context */
	uint32_t cpu;
	uint32_t pid, tid;
	bool have_task;
	uint32_t mode;
	uint64_t domain_key;
	uint32_t domain_key_ns;	/* enum dp_domkey_ns of domain_key */
	uint32_t vcpu;
	uint64_t asid;		/* DP_RAW_ASID of the guest samples that follow */
	uint64_t time_spread_ns;	/* DP_RAW_TIME_SPREAD: now_ns is good to +- this */
	uint32_t guest_task;	/* DP_RAW_GUEST_TASK for the next sample, 0 none */
	uint32_t witness;	/* ... taken by the sample being filed (defer_guest) */
	uint64_t now_ns;
	unsigned int nr_events;
	struct opd_event_desc events[DP_RAW_MAX_EVENTS];

	/* caches */
	uint64_t gen;
	uint64_t *mode_counter;
	struct opd_proc *proc;		/* current task's process, NULL: look up */
	uint64_t sfile_gen;		/* files_gen() the caches were made at */
	uint64_t dummy;
	/* The current context's caches: per event, one entry per 2 MiB
	 * region of pc (direct-mapped), so a task that alternates between its
	 * binary and its libraries stays on the fast path.  NULL until the
	 * events are known; ctx_dirty: the context changed, find it again. */
	struct opd_trans_ctx *ctx;
	struct opd_trans_ctx *ctx_prev;	/* the one before (a task's other mode) */
	bool ctx_dirty;
	/* every context's caches: a pool of ctx_max, ctx_size bytes each,
	 * ctx_used of them in use, found through ctx_hash; when the pool is
	 * full it starts over (a generation bump drops what it held) */
	uint8_t *ctx_pool;	/* mapped: page-aligned, untouched until used */
	size_t ctx_pool_len;
	struct opd_trans_frame *frame_pool;	/* ctx_max x OPD_TRANS_CACHE_WAYS */
	size_t frame_pool_len;
	size_t ctx_size, ctx_max, ctx_used;
	struct opd_trans_ctx **ctx_hash;	/* OPD_TRANS_CTX_BUCKETS */
	struct opd_image *anon_unknown, *anon_kernel, *guest_kernel, *guest_user;
	struct opd_image *dom_unknown;	/* domain "unknown": guest pc of no domain */

	/* call graphs: where chains go (NULL: counted, not filed), and the
	 * chain of the next sample (nr 0: none) */
	struct opd_cc *cc;
	struct opd_cc_chain chain;
	bool chain_busy;	/* its sample is being filed */
	bool chain_held;	/* ...and the chain went with it (a guest's) */
	struct opd_trans_lastcc lastcc;
	/* guest-user samples split per address space, for domains with no
	 * agent (opd_guest_asid.h); lazily */
	struct opd_gasid_doms *asid_doms;
};

static inline void trans_bump(struct opd_trans *t)
{
	t->gen++;
	t->proc = NULL;
}

static inline size_t region_slot(uint64_t pc)
{
	/* Multiplicative hash of the region: mappings laid out at regular
	 * strides must not all land on one entry. */
	uint64_t h = (pc >> OPD_TRANS_CACHE_SHIFT) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> (64 - OPD_TRANS_CACHE_BITS));
}

static inline struct opd_trans_cache *cache_slot(struct opd_trans *t, uint32_t event, uint64_t pc)
{
	return &t->ctx->cache[(size_t)event * OPD_TRANS_CACHE_WAYS + region_slot(pc)];
}

/* The current context's resolution of @event that holds for every pc,
 * once one was made: a region's first sample copies it into its way
 * instead of resolving again. */
static inline struct opd_trans_cache *whole_slot(struct opd_trans *t, uint32_t event)
{
	return &t->ctx->cache[(size_t)t->nr_events * OPD_TRANS_CACHE_WAYS + event];
}

/* The context changed (a record of the stream): its caches are found at
 * the next sample.  @task: the process changed too. */
static inline void ctx_changed(struct opd_trans *t, bool task)
{
	t->ctx_dirty = true;
	if (task)
		t->proc = NULL;
}

/* What makes cached sample files stale: with a batch the caches hold
 * file indexes, dropped when entries are released; without, odb
 * pointers, dropped also when a file is closed under the cap. */
static inline uint64_t files_gen(const struct opd_trans *t)
{
	return opd_filer_gen(&t->filer);
}

/* After anything that may have opened or released sample files. */
static inline void files_check(struct opd_trans *t)
{
	uint64_t g = files_gen(t);

	if (g != t->sfile_gen) {
		t->sfile_gen = g;
		trans_bump(t);
	}
}

/* Where a sample goes: filled by the resolvers, then filed by file_sample. */
struct resolution {
	struct opd_sfile_key key;
	uint64_t start, len, delta;
	uint64_t *unresolved;
	uint64_t *extra;
	bool skip;		/* counted, not filed */
};

/* opd_trans_ctx.c: make the current context's caches t->ctx (found among
 * those kept, or a new one); the pool of contexts for @nr events
 * (0 or -ENOMEM), and its freeing. */
void opd_tr_ctx_select(struct opd_trans *t);
int opd_tr_ctx_pool_init(struct opd_trans *t, unsigned int nr);
void opd_tr_ctx_pool_free(struct opd_trans *t);

/* opd_trans_resolve.c: where pc resolves in the current context, by mode;
 * the --separate ids of a key; a QEMU's host work marked {vmm}.  The
 * int ones return 0 or -errno (out of memory). */
void opd_tr_sep_ids(const struct opd_trans *t, struct opd_sfile_key *k);
void opd_tr_resolve_kernel(struct opd_trans *t, uint64_t pc, struct resolution *r);
int opd_tr_resolve_user(struct opd_trans *t, uint64_t pc, struct resolution *r);
int opd_tr_resolve_guest(struct opd_trans *t, uint64_t pc, struct resolution *r);
void opd_tr_mark_vmm(struct opd_trans *t, struct resolution *r);

/* opd_trans.c: the sample handler (raw_ops.sample). */
int opd_tr_sample(void *ctx, uint64_t pc, uint32_t event);

/* opd_trans_cc.c: a CALLCHAIN record (raw_ops.callchain), and a sample
 * that has one: filed as any sample, then its chain. */
int opd_tr_callchain(void *ctx, uint32_t nr, uint32_t nk, uint32_t flags, const uint8_t *frames);
int opd_tr_sample_chain(struct opd_trans *t, uint64_t pc, uint32_t event);

#endif
