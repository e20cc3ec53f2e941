#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "opd_cc.h"
#include "opd_gpipe.h"
#include "opd_guest_asid.h"
#include "opd_trans.h"
#include "util/du_log.h"

#define OPD_TRANS_CACHE_BITS	5
#define OPD_TRANS_CACHE_WAYS	(1 << OPD_TRANS_CACHE_BITS)
#define OPD_TRANS_CACHE_SHIFT	21
/* Contexts whose caches are kept: at most this many bytes of them, and
 * this many hash buckets to find them. */
#define OPD_TRANS_CTX_BYTES	(16u << 20)
#define OPD_TRANS_CTX_MAX	16384
#define OPD_TRANS_CTX_BUCKETS	4096
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

/* What a resolution depends on besides the tables (which the generation
 * covers): the fields of the transient context that --separate and the
 * mode make relevant (zero where they are not). */
struct opd_trans_tag {
	uint64_t domain_key, asid;
	uint32_t pid, tid, cpu, mode, domain_key_ns, have_task;
};

/* A context's caches, kept while the stream switches between contexts
 * (tasks, modes, CPUs), so a switch back finds its resolutions. */
struct opd_trans_ctx {
	struct opd_trans_tag tag;
	struct opd_trans_ctx *next;	/* in its hash chain */
	struct opd_trans_frame frames[OPD_TRANS_CACHE_WAYS];
	struct opd_trans_cache cache[];	/* [nr_events][OPD_TRANS_CACHE_WAYS] */
};

struct opd_trans {
	const struct opd_conf *conf;
	struct opd_stats *st;
	struct opd_images *images;
	struct opd_procs *procs;
	struct opd_kernel *kernel;
	struct opd_sfiles *sfiles;
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

/* The transient context's tag (struct opd_trans_tag). */
static void ctx_tag(const struct opd_trans *t, struct opd_trans_tag *g)
{
	unsigned int sep = t->conf->separate;

	memset(g, 0, sizeof(*g));
	g->domain_key = t->domain_key;
	g->domain_key_ns = t->domain_key_ns;
	g->asid = t->asid;
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
	return (size_t)(h >> 52) & (OPD_TRANS_CTX_BUCKETS - 1);
}

static bool tag_eq(const struct opd_trans_tag *a, const struct opd_trans_tag *b)
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

/* Make the current context's caches t->ctx: found among those kept, or
 * a new one (every entry stale: its generation is below t->gen). */
static void ctx_select(struct opd_trans *t)
{
	struct opd_trans_tag g;
	struct opd_trans_ctx *c;
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
	h = tag_hash(&g);
	c = t->ctx_hash[h];
	if (c)
		ctx_prefetch(t, c);
	for (; c; c = c->next)
		if (tag_eq(&c->tag, &g))
			goto out;
	if (t->ctx_used == t->ctx_max) {
		/* full: start over; the bump makes the reused entries stale */
		memset(t->ctx_hash, 0, OPD_TRANS_CTX_BUCKETS * sizeof(*t->ctx_hash));
		t->ctx_used = 0;
		t->ctx = t->ctx_prev = NULL;
		t->gen++;
	}
	c = (struct opd_trans_ctx *)(t->ctx_pool + t->ctx_used++ * t->ctx_size);
	c->tag = g;
	c->next = t->ctx_hash[h];
	t->ctx_hash[h] = c;
out:
	if (c != t->ctx) {
		t->ctx_prev = t->ctx;
		t->ctx = c;
	}
}

/* The context changed (a record of the stream): its caches are found at
 * the next sample.  @task: the process changed too. */
static inline void ctx_changed(struct opd_trans *t, bool task)
{
	t->ctx_dirty = true;
	if (task)
		t->proc = NULL;
}

static void ctx_pool_free(struct opd_trans *t)
{
	if (t->ctx_pool)
		munmap(t->ctx_pool, t->ctx_pool_len);
	t->ctx_pool = NULL;
}

/* A pool of contexts for @nr events (the stream's header).  0 or -ENOMEM. */
static int ctx_pool_init(struct opd_trans *t, unsigned int nr)
{
	size_t size = sizeof(struct opd_trans_ctx) +
		      (size_t)(nr ? nr : 1) * OPD_TRANS_CACHE_WAYS * sizeof(struct opd_trans_cache);
	size_t max = OPD_TRANS_CTX_BYTES / size;
	void *pool;

	if (max > OPD_TRANS_CTX_MAX)
		max = OPD_TRANS_CTX_MAX;
	if (max < 2)
		max = 2;
	ctx_pool_free(t);
	/* zero pages, untouched until contexts are used */
	pool = mmap(NULL, max * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pool != MAP_FAILED) {
		/* (no MADV_HUGEPAGE: with huge pages here or in the batch, a
		 * replay took three times the CPU on a paravirtualized guest,
		 * doc/performance.md) */
		t->ctx_pool = pool;
		t->ctx_pool_len = max * size;
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
		ctx_pool_free(t);
		return -ENOMEM;
	}
	return 0;
}

void opd_trans_invalidate(struct opd_trans *t)
{
	trans_bump(t);
}

static uint64_t *mode_counter(struct opd_trans *t, uint32_t mode)
{
	switch (mode) {
	case DP_MODE_HOST_KERNEL:
		return &t->st->samples_host_kernel;
	case DP_MODE_HOST_USER:
		return &t->st->samples_host_user;
	case DP_MODE_GUEST_KERNEL:
		return &t->st->samples_guest_kernel;
	case DP_MODE_GUEST_USER:
		return &t->st->samples_guest_user;
	default:
		return &t->st->samples_bad_mode;
	}
}

struct opd_trans *opd_trans_new(const struct opd_conf *conf, struct opd_stats *st,
				struct opd_images *images, struct opd_procs *procs,
				struct opd_kernel *kernel, struct opd_sfiles *sfiles)
{
	struct opd_trans *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->conf = conf;
	t->st = st;
	t->images = images;
	t->procs = procs;
	t->kernel = kernel;
	t->sfiles = sfiles;
	t->filer.sfiles = sfiles;
	t->filer.st = st;
	t->proc_root = "/proc";
	t->mode = DP_MODE_HOST_USER;
	t->mode_counter = mode_counter(t, t->mode);
	t->gen = 1;
	t->anon_unknown = opd_image_get(images, SFN_ANON, "unknown", 7);
	t->anon_kernel = opd_image_get(images, SFN_ANON, "kernel", 6);
	t->guest_kernel = opd_image_get(images, SFN_ANON, "guest-kernel", 12);
	t->guest_user = opd_image_get(images, SFN_ANON, "guest-user", 10);
	t->dom_unknown = opd_image_get(images, SFN_ANON, "unknown", 7);
	if (!t->anon_unknown || !t->anon_kernel || !t->guest_kernel || !t->guest_user ||
	    !t->dom_unknown) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void opd_trans_free(struct opd_trans *t)
{
	if (!t)
		return;
	opd_gasid_doms_free(t->asid_doms);
	ctx_pool_free(t);
	free(t->ctx_hash);
	free(t);
}

/* The {anon:guest-user:asN} bucket of the current ASID in @domain, for
 * guest-user samples filed without an agent channel; NULL: the one
 * {anon:guest-user} bucket (no ASID, a table full, out of memory). */
static struct opd_image *asid_bucket(struct opd_trans *t, struct opd_image *domain)
{
	struct opd_gasid *a;

	if (!t->asid)
		return NULL;
	if (!t->asid_doms)
		t->asid_doms = opd_gasid_doms_new(t->images);
	a = t->asid_doms ? opd_gasid_doms_get(t->asid_doms, domain) : NULL;
	return a ? opd_gasid_bucket(a, t->asid) : NULL;
}

void opd_trans_set_domains(struct opd_trans *t, struct opd_domains *domains)
{
	t->domains = domains;
	trans_bump(t);
}

void opd_trans_set_gpipe(struct opd_trans *t, struct opd_gpipe *gpipe)
{
	t->gpipe = gpipe;
	trans_bump(t);
}

struct opd_stats *opd_trans_stats(const struct opd_trans *t)
{
	return t->st;
}

void opd_trans_set_maps_source(struct opd_trans *t, opd_maps_src_fn fn, void *ctx)
{
	t->maps_src = fn;
	t->maps_ctx = ctx;
}

/* What makes cached sample files stale: with a batch the caches hold
 * file indexes, dropped when entries are released; without, odb
 * pointers, dropped also when a file is closed under the cap. */
static uint64_t files_gen(const struct opd_trans *t)
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

void opd_trans_begin_window(struct opd_trans *t)
{
	files_check(t);
}

void opd_trans_set_batch(struct opd_trans *t, struct opd_batch *batch)
{
	t->filer.batch = batch;
	t->sfile_gen = files_gen(t);
	trans_bump(t);
	if (t->cc)
		opd_cc_set_batch(t->cc, batch);
}

void opd_trans_set_cc(struct opd_trans *t, struct opd_cc *cc)
{
	t->cc = cc;
	if (cc)
		opd_cc_set_batch(cc, t->filer.batch);
}

int opd_trans_set_events(struct opd_trans *t, const struct raw_header *h)
{
	unsigned int n = h->nr_events > DP_RAW_MAX_EVENTS ? DP_RAW_MAX_EVENTS : h->nr_events;
	int ret;

	for (unsigned int i = 0; i < n; i++) {
		memset(&t->events[i], 0, sizeof(t->events[i]));
		snprintf(t->events[i].name, sizeof(t->events[i].name), "%s", h->events[i].name);
		t->events[i].count = h->events[i].count;
		t->events[i].unit_mask = h->events[i].unit_mask;
	}
	t->nr_events = n;
	trans_bump(t);
	ret = ctx_pool_init(t, n);
	if (ret) {
		t->nr_events = 0;	/* samples are then counted unresolved_bad_event */
		return ret;
	}
	return opd_sfiles_set_events(t->sfiles, t->events, n);
}

/* Where a sample goes: filled by the resolvers, then filed by file_sample. */
struct resolution {
	struct opd_sfile_key key;
	uint64_t start, len, delta;
	uint64_t *unresolved;
	uint64_t *extra;
	bool skip;		/* counted, not filed */
};

static void sep_ids(const struct opd_trans *t, struct opd_sfile_key *k)
{
	unsigned int sep = t->conf->separate;

	k->tgid = k->tid = SFN_ALL;
	if ((sep & OPD_SEP_THREAD) && t->have_task) {
		k->tgid = t->pid;
		k->tid = t->tid;
	}
	k->cpu = (sep & OPD_SEP_CPU) ? (int64_t)t->cpu : SFN_ALL;
}

/*
 * Hand the sample (@pc, @event) of the current context, in @dom whose
 * vCPU is @vcpu (-1 unknown), to the guest pipeline, with its guest chain.
 * False when @dom has no agent channel: the caller files it as before.
 */
static bool defer_guest(struct opd_trans *t, const struct opd_dom *dom, int vcpu, uint64_t pc,
			uint32_t event)
{
	struct opd_guest_sample s = { 0 };
	bool chain = t->chain_busy && (t->chain.flags & DP_RAW_CC_GUEST);
	bool taken;

	s.host_ns = t->now_ns;
	s.spread_us = t->time_spread_ns >= (uint64_t)UINT32_MAX * 1000 ? UINT32_MAX :
		      (uint32_t)((t->time_spread_ns + 999) / 1000);
	s.pc = pc;
	s.event = event;
	s.cpu = t->cpu;
	s.vcpu = vcpu;
	s.mode = (uint8_t)t->mode;
	s.asid = t->asid;
	taken = opd_gpipe_take(t->gpipe, dom, &s, chain ? &t->chain : NULL);
	if (taken && chain)
		t->chain_held = true;
	/* an older sample filed to make room may have released files */
	files_check(t);
	return taken;
}

/*
 * Guest samples: the domain is the DOMAIN record's key (the hypervisor's
 * pid) when the collector gave one, else the sampled task's process (the
 * vCPU thread's QEMU).  Until the guest agent's sideband exists they are
 * filed as {anon:guest-kernel|guest-user} of the domain, key = pc, so that
 * later symbolization can still place them.  Replay has no domain table:
 * domain "pid-<key>".  A pid that is no domain: domain "unknown", counted.
 */
static int resolve_guest(struct opd_trans *t, uint64_t pc, struct resolution *r)
{
	uint64_t key = t->domain_key ? t->domain_key : (t->have_task ? t->pid : 0);
	const struct opd_dom *dom = NULL;
	char name[32];
	int vcpu;

	(void)pc;
	if (t->domains) {
		if (key)
			dom = opd_domains_lookup(t->domains,
						 t->domain_key ? t->domain_key_ns : DP_DOMKEY_HOST_PID, key,
						 t->domain_key ? t->vcpu : DP_RAW_VCPU_UNKNOWN, t->tid, &vcpu);
		if (!dom) {
			r->key.domain = t->dom_unknown;
			r->unresolved = &t->st->unresolved_no_domain;
			opd_domains_want_scan(t->domains);
		} else if (!dom->selected) {
			t->st->samples_domain_unselected++;
			r->skip = true;
			return 0;
		} else {
			r->key.domain = dom->name;
			/* held until the agent's sideband explains it */
			if (t->gpipe && defer_guest(t, dom, vcpu, pc, r->key.event)) {
				r->skip = true;
				return 0;
			}
		}
	} else {
		if (key)
			snprintf(name, sizeof(name), t->domain_key_ns == DP_DOMKEY_XEN_DOMID ? "domid-%llu" :
				 "pid-%llu", (unsigned long long)key);
		else
			snprintf(name, sizeof(name), "unknown");
		r->key.domain = opd_image_get(t->images, SFN_ANON, name, strlen(name));
		if (!r->key.domain)
			return -ENOMEM;
	}
	r->key.image = r->key.dep = t->mode == DP_MODE_GUEST_KERNEL ? t->guest_kernel : t->guest_user;
	if (t->mode == DP_MODE_GUEST_USER) {
		struct opd_image *b = asid_bucket(t, r->key.domain);

		if (b)
			r->key.image = r->key.dep = b;
	}
	sep_ids(t, &r->key);
	r->key.tgid = r->key.tid = SFN_ALL;	/* host ids say nothing inside a guest */
	r->start = 0;
	r->len = UINT64_MAX;
	r->delta = 0;
	return 0;
}

/*
 * Host work in a domain's QEMU process (any thread, user or kernel mode)
 * is that domain's virtualization overhead: resolved like any host sample,
 * filed under {domain}/NAME/{vmm}/.  An unselected domain's stays host work.
 */
static void mark_vmm(struct opd_trans *t, struct resolution *r)
{
	const struct opd_dom *dom;
	int vcpu;

	if (!t->domains || !t->have_task)
		return;
	dom = opd_domains_lookup_pid(t->domains, t->pid, t->tid, &vcpu);
	if (!dom)
		return;
	if (!dom->selected) {
		r->extra = &t->st->samples_domain_unselected;
		return;
	}
	r->key.domain = dom->name;
	r->key.vmm = true;
	r->extra = &t->st->samples_vmm;
}

static struct opd_proc *current_proc(struct opd_trans *t)
{
	if (!t->have_task)
		return NULL;
	if (!t->proc)
		t->proc = opd_proc_find(t->procs, t->pid);
	return t->proc;
}

static void resolve_kernel(struct opd_trans *t, uint64_t pc, struct resolution *r)
{
	const struct opd_kernel_range *kr;
	uint64_t gs = 0, ge = UINT64_MAX;
	struct opd_proc *p;

	kr = opd_kernel_find(t->kernel, pc, &gs, &ge);
	if (kr) {
		r->key.dep = kr->image;
		r->start = kr->start;
		r->len = kr->end - kr->start;
		r->delta = -kr->start;
	} else {
		/* Documented choice: pcs outside every kernel range go to
		 * {anon:kernel} keyed by pc, counted unresolved_kernel. */
		r->key.dep = t->anon_kernel;
		r->start = gs;
		r->len = ge - gs;
		r->delta = 0;
		r->unresolved = &t->st->unresolved_kernel;
	}
	r->key.image = r->key.dep;
	if ((t->conf->separate & OPD_SEP_KERNEL) && (p = current_proc(t)) && opd_proc_main_image(p))
		r->key.image = opd_proc_main_image(p);
	sep_ids(t, &r->key);
}

static int resolve_user(struct opd_trans *t, uint64_t pc, struct resolution *r)
{
	const struct opd_map *m = NULL;
	uint64_t gs = 0, ge = UINT64_MAX;
	struct opd_proc *p = NULL;

	if (!t->have_task) {
		r->unresolved = &t->st->unresolved_no_task;
	} else {
		p = current_proc(t);
		if (!p) {
			p = opd_proc_get(t->procs, t->pid);
			if (!p)
				return -ENOMEM;
			t->proc = p;
		}
		if (!opd_proc_nr_maps(p) && t->conf->live_proc_lookup && t->maps_src)
			opd_proc_lookup_via(t->procs, p, pc, t->maps_src, t->maps_ctx);
		else if (!opd_proc_nr_maps(p) && t->conf->live_proc_lookup)
			opd_proc_lookup_live(t->procs, p, t->proc_root);
		m = opd_proc_find_map(p, pc, &gs, &ge);
		if (!m) {
			r->unresolved = &t->st->unresolved_no_mapping;
			du_debug("pid %u: pc %#llx in no mapping (%zu mappings)", t->pid,
				 (unsigned long long)pc, opd_proc_nr_maps(p));
		}
	}
	if (m) {
		r->key.dep = m->image;
		r->start = m->start;
		r->len = m->end - m->start;
		r->delta = m->image->kind == SFN_ROOT ? m->pgoff - m->start : 0;
	} else {
		r->key.dep = t->anon_unknown;
		r->start = gs;
		r->len = ge - gs;
		r->delta = 0;
	}
	r->key.image = r->key.dep;
	if ((t->conf->separate & OPD_SEP_LIB) && p && opd_proc_main_image(p))
		r->key.image = opd_proc_main_image(p);
	sep_ids(t, &r->key);
	return 0;
}

static inline int file_sample(struct opd_trans *t, const struct opd_trans_cache *c, uint64_t pc)
{
	opd_filer_add(&t->filer, c->db, c->id, pc + c->delta);
	return 0;
}

static int sample_slow(struct opd_trans *t, uint64_t pc, uint32_t event)
{
	struct resolution r;
	struct opd_trans_cache *c;
	bool ok;
	int ret = 0;

	if (event >= t->nr_events) {
		t->st->unresolved_bad_event++;
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.key.event = event;
	r.unresolved = &t->dummy;
	r.extra = &t->dummy;
	switch (t->mode) {
	case DP_MODE_HOST_KERNEL:
		resolve_kernel(t, pc, &r);
		mark_vmm(t, &r);
		break;
	case DP_MODE_HOST_USER:
		ret = resolve_user(t, pc, &r);
		if (!ret)
			mark_vmm(t, &r);
		break;
	case DP_MODE_GUEST_KERNEL:
	case DP_MODE_GUEST_USER:
		ret = resolve_guest(t, pc, &r);
		break;
	default:
		return 0;	/* counted in samples_bad_mode */
	}
	if (ret)
		return ret;
	c = cache_slot(t, event, pc);
	if (r.skip) {
		c->gen = 0;
		return 0;
	}
	(*r.unresolved)++;
	(*r.extra)++;
	ok = opd_filer_file(&t->filer, &r.key, &c->db, &c->id);
	files_check(t);
	if (!ok) {
		c->gen = 0;
		return 0;
	}
	c->gen = t->gen;
	c->start = r.start;
	c->len = r.len;
	c->delta = r.delta;
	c->unresolved = r.unresolved;
	c->extra = r.extra;
	return file_sample(t, c, pc);
}

static int sample_chain(struct opd_trans *t, uint64_t pc, uint32_t event);

static int trans_sample(void *ctx, uint64_t pc, uint32_t event)
{
	struct opd_trans *t = ctx;

	if (__builtin_expect(t->chain.nr != 0, 0) && !t->chain_busy)
		return sample_chain(t, pc, event);
	t->st->samples_received++;
	(*t->mode_counter)++;
	if (__builtin_expect(t->ctx_dirty, 0))
		ctx_select(t);
	if (event < t->nr_events) {
		struct opd_trans_cache *c = cache_slot(t, event, pc);

		if (c->gen == t->gen && pc - c->start < c->len) {
			(*c->unresolved)++;
			(*c->extra)++;
			return file_sample(t, c, pc);
		}
	}
	return sample_slow(t, pc, event);
}

/* ---- call chains (opd_cc.h) ---- */

static int trans_callchain(void *ctx, uint32_t nr, uint32_t nk, uint32_t flags,
			   const uint8_t *frames)
{
	struct opd_trans *t = ctx;

	if (t->chain.nr)
		t->st->cc_chains_orphan++;	/* no sample took the last one */
	t->st->cc_chains++;
	t->st->cc_frames += nr;
	if (flags & DP_RAW_CC_TRUNCATED)
		t->st->cc_chains_truncated++;
	if (flags & DP_RAW_CC_GUEST)
		t->st->cc_chains_guest++;
	for (uint32_t i = 0; i < nr; i++)
		t->chain.f[i] = raw_cc_frame(frames, i);
	t->chain.nr = nr;
	t->chain.nk = nk;
	t->chain.flags = flags;
	return 0;
}

/*
 * Address @a (@kernel: against the kernel ranges, else the task's
 * mappings) as a sample's pc would be resolved: binary, dep and key into
 * @f; true if nothing explained it.  Remembered per context and region as
 * samples are, so the frames of the next chains cost a range check.
 * -errno (out of memory) as resolve_user.
 */
static int resolve_addr(struct opd_trans *t, uint64_t a, bool kernel, struct opd_cc_frame *f,
			bool *unresolved)
{
	struct opd_trans_frame none, *e = t->ctx ? &t->ctx->frames[region_slot(a)] : &none;
	struct resolution r;
	int ret = 0;

	if (e != &none && e->gen == t->gen && e->kernel == kernel && a - e->start < e->len)
		goto out;
	memset(&r, 0, sizeof(r));
	r.unresolved = &t->dummy;
	if (kernel)
		resolve_kernel(t, a, &r);
	else
		ret = resolve_user(t, a, &r);
	if (ret)
		return ret;
	e->gen = t->gen;
	e->start = r.start;
	e->len = r.len;
	e->delta = r.delta;
	e->image = r.key.image;
	e->dep = r.key.dep;
	e->kernel = kernel;
	e->unresolved = r.unresolved != &t->dummy;
out:
	f->image = e->image;
	f->dep = e->dep;
	f->off = a + e->delta;
	*unresolved = e->unresolved;
	return 0;
}

/*
 * A host frame as the sample's pc would be resolved (@kernel: against the
 * kernel ranges, else the task's mappings).  A return address is the
 * instruction after the call: the call site is one byte before it.
 */
static void resolve_frame(struct opd_trans *t, uint64_t ret, bool kernel, struct opd_cc_frame *f)
{
	uint64_t a = ret - 1;
	bool unresolved = false;

	if (resolve_addr(t, a, kernel, f, &unresolved)) {
		f->image = f->dep = t->anon_unknown;
		f->off = a;
	}
	if (unresolved)
		t->st->cc_frames_unresolved++;
}

/* The chain of the host sample (@pc, @event) just filed. */
static void file_host_chain(struct opd_trans *t, uint64_t pc, uint32_t event)
{
	struct opd_cc_frame f[DP_RAW_CC_MAX + 1];
	struct resolution r;
	bool unresolved;
	size_t n = 1;

	memset(&r, 0, sizeof(r));
	r.key.event = event;
	r.unresolved = &t->dummy;
	r.extra = &t->dummy;
	if (resolve_addr(t, pc, t->mode == DP_MODE_HOST_KERNEL, &f[0], &unresolved))
		return;
	r.key.image = f[0].image;
	r.key.dep = f[0].dep;
	sep_ids(t, &r.key);
	mark_vmm(t, &r);
	for (uint32_t i = 0; i < t->chain.nr; i++)
		resolve_frame(t, t->chain.f[i], i < t->chain.nk, &f[n++]);
	opd_cc_file(t->cc, &r.key, f, n);
}

/* A sample with a call chain: filed as any sample, then its chain. */
static int sample_chain(struct opd_trans *t, uint64_t pc, uint32_t event)
{
	uint32_t mode = t->mode;
	bool host = mode == DP_MODE_HOST_KERNEL || mode == DP_MODE_HOST_USER;
	int ret;

	/* the sample itself takes the usual path; a guest's takes its chain
	 * along when it is held (defer_guest) */
	t->chain_busy = true;
	t->chain_held = false;
	ret = trans_sample(t, pc, event);
	t->chain_busy = false;
	if (!ret && t->cc && event < t->nr_events && host &&
	    !(t->chain.flags & DP_RAW_CC_GUEST)) {
		file_host_chain(t, pc, event);
		files_check(t);
	} else if (!t->chain_held) {
		/* a guest sample filed without its agent (replay, no channel,
		 * an unselected domain), or frames of the other side */
		t->st->cc_chains_dropped++;
	}
	t->chain.nr = 0;
	return ret;
}

static int trans_cpu(void *ctx, uint32_t cpu)
{
	struct opd_trans *t = ctx;

	if (t->asid) {
		/* re-stated after a CPU record when known (doc/raw-stream.md) */
		t->asid = 0;
		ctx_changed(t, false);
	}
	if (cpu != t->cpu) {
		t->cpu = cpu;
		if (t->conf->separate & OPD_SEP_CPU)
			ctx_changed(t, false);
	}
	return 0;
}

static int trans_task(void *ctx, uint32_t pid, uint32_t tid)
{
	struct opd_trans *t = ctx;

	if (t->have_task && pid == t->pid && (tid == t->tid || !(t->conf->separate & OPD_SEP_THREAD))) {
		t->tid = tid;
		return 0;
	}
	ctx_changed(t, !t->have_task || pid != t->pid);
	t->have_task = true;
	t->pid = pid;
	t->tid = tid;
	return 0;
}

static int trans_mode(void *ctx, uint32_t mode)
{
	struct opd_trans *t = ctx;

	if (mode != t->mode) {
		t->mode = mode;
		t->mode_counter = mode_counter(t, mode);
		ctx_changed(t, false);
	}
	return 0;
}

static int trans_domain(void *ctx, uint64_t key, uint32_t vcpu, uint32_t key_ns)
{
	struct opd_trans *t = ctx;

	t->vcpu = vcpu;
	if (key != t->domain_key || key_ns != t->domain_key_ns) {
		t->domain_key = key;
		t->domain_key_ns = key_ns;
		ctx_changed(t, false);
	}
	return 0;
}

static int trans_asid(void *ctx, uint64_t asid)
{
	struct opd_trans *t = ctx;

	if (asid != t->asid) {
		t->asid = asid;
		ctx_changed(t, false);
	}
	return 0;
}

static int trans_time_spread(void *ctx, uint64_t ns)
{
	struct opd_trans *t = ctx;

	t->time_spread_ns = ns;
	return 0;
}

static int trans_lost(void *ctx, uint64_t count)
{
	struct opd_trans *t = ctx;

	t->st->samples_lost += count;
	return 0;
}

static int trans_time(void *ctx, uint64_t ns)
{
	struct opd_trans *t = ctx;

	t->now_ns = ns;
	if (opd_procs_reap(t->procs, ns) > 0)
		trans_bump(t);
	return 0;
}

static int trans_mmap(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t len)
{
	struct opd_trans *t = ctx;
	int ret = opd_proc_mmap(t->procs, m, path, len);

	if (ret < 0)
		return ret;
	if (ret > 0 || (t->have_task && m->pid == t->pid))
		trans_bump(t);
	return 0;
}

static int trans_comm(void *ctx, uint32_t pid, uint32_t tid, uint32_t flags, const char *comm,
		      size_t len)
{
	struct opd_trans *t = ctx;
	int ret = opd_proc_comm(t->procs, pid, tid, flags, comm, len);

	if (ret < 0)
		return ret;
	if (ret > 0 || (t->have_task && pid == t->pid))
		trans_bump(t);
	return 0;
}

static int trans_fork(void *ctx, const struct dp_raw_task_ev *ev)
{
	struct opd_trans *t = ctx;
	int ret = opd_proc_fork(t->procs, ev);

	if (ret < 0)
		return ret;
	if (ret > 0 || (t->have_task && ev->pid == t->pid))
		trans_bump(t);
	return 0;
}

static int trans_exit(void *ctx, const struct dp_raw_task_ev *ev)
{
	struct opd_trans *t = ctx;
	int ret = opd_proc_exit(t->procs, ev, t->now_ns);

	if (ret < 0)
		return ret;
	if (ret > 0)
		trans_bump(t);
	return 0;
}

static int trans_kmod(void *ctx, uint64_t start, uint64_t size, const char *name, size_t len)
{
	struct opd_trans *t = ctx;
	int ret = opd_kernel_add(t->kernel, start, size, name, len);

	if (ret == -EINVAL) {
		t->st->stream_bad_records++;
		return 0;
	}
	if (ret)
		return ret;
	t->st->kernel_images++;
	trans_bump(t);
	return 0;
}

/* The hypervisor's read of a domain's guest TSC: kept in its guest clock,
 * which relates the agent's TSC pairs by it (opd_gtscline.h).  Nothing
 * to keep for a domain with no agent channel, or on replay. */
static int trans_guest_tsc(void *ctx, const struct dp_raw_guest_tsc *rec)
{
	struct opd_trans *t = ctx;
	const struct opd_dom *dom;
	int vcpu;

	if (!t->domains || !t->gpipe)
		return 0;
	dom = opd_domains_lookup(t->domains, rec->key_ns, rec->key, DP_RAW_VCPU_UNKNOWN, 0, &vcpu);
	if (dom)
		opd_gpipe_guest_tsc(t->gpipe, dom, rec);
	return 0;
}

const struct raw_ops opd_trans_ops = {
	.sample = trans_sample,
	.cpu = trans_cpu,
	.task = trans_task,
	.mode = trans_mode,
	.domain = trans_domain,
	.asid = trans_asid,
	.lost = trans_lost,
	.time = trans_time,
	.mmap = trans_mmap,
	.comm = trans_comm,
	.fork = trans_fork,
	.exit = trans_exit,
	.kmod = trans_kmod,
	.callchain = trans_callchain,
	.guest_tsc = trans_guest_tsc,
	.time_spread = trans_time_spread,
};
