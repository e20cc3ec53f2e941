#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opd_gpipe.h"
#include "opd_trans_int.h"

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
	opd_tr_ctx_pool_free(t);
	free(t->ctx_hash);
	free(t);
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
	ret = opd_tr_ctx_pool_init(t, n);
	if (ret) {
		t->nr_events = 0;	/* samples are then counted unresolved_bad_event */
		return ret;
	}
	return opd_sfiles_set_events(t->filer.sfiles, t->events, n);
}

static inline int file_sample(struct opd_trans *t, const struct opd_trans_cache *c, uint64_t pc)
{
	opd_filer_add(&t->filer, c->db, c->id, pc + c->delta);
	return 0;
}

/* A sample of a cached resolution @c: its counters, then the file. */
static inline int file_cached(struct opd_trans *t, const struct opd_trans_cache *c, uint64_t pc)
{
	(*c->unresolved)++;
	(*c->extra)++;
	return file_sample(t, c, pc);
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
	c = whole_slot(t, event);
	if (c->gen == t->gen) {
		struct opd_trans_cache *w = c;

		c = cache_slot(t, event, pc);
		*c = *w;
		return file_cached(t, c, pc);
	}
	memset(&r, 0, sizeof(r));
	r.key.event = event;
	r.unresolved = &t->dummy;
	r.extra = &t->dummy;
	switch (t->mode) {
	case DP_MODE_HOST_KERNEL:
		opd_tr_resolve_kernel(t, pc, &r);
		opd_tr_mark_vmm(t, &r);
		break;
	case DP_MODE_HOST_USER:
		ret = opd_tr_resolve_user(t, pc, &r);
		if (!ret)
			opd_tr_mark_vmm(t, &r);
		break;
	case DP_MODE_GUEST_KERNEL:
	case DP_MODE_GUEST_USER:
		ret = opd_tr_resolve_guest(t, pc, &r);
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
	/* one resolution for every pc (a guest's bucket): it serves the
	 * context's other regions too, which would each take this path */
	if (r.start == 0 && r.len == UINT64_MAX)
		*whole_slot(t, event) = *c;
	return file_sample(t, c, pc);
}

static int sample_witnessed(struct opd_trans *t, uint64_t pc, uint32_t event);

int opd_tr_sample(void *ctx, uint64_t pc, uint32_t event)
{
	struct opd_trans *t = ctx;

	if (__builtin_expect(t->guest_task != 0, 0))
		return sample_witnessed(t, pc, event);
	if (__builtin_expect(t->chain.nr != 0, 0) && !t->chain_busy)
		return opd_tr_sample_chain(t, pc, event);
	t->st->samples_received++;
	(*t->mode_counter)++;
	if (__builtin_expect(t->ctx_dirty, 0))
		opd_tr_ctx_select(t);
	if (event < t->nr_events) {
		struct opd_trans_cache *c = cache_slot(t, event, pc);

		if (c->gen == t->gen && pc - c->start < c->len)
			return file_cached(t, c, pc);
	}
	return sample_slow(t, pc, event);
}

/* The sample right after a GUEST_TASK record carries it (defer_guest),
 * whatever becomes of it; no later one does. */
static int sample_witnessed(struct opd_trans *t, uint64_t pc, uint32_t event)
{
	int rc;

	t->witness = t->guest_task;
	t->guest_task = 0;
	rc = opd_tr_sample(t, pc, event);
	t->witness = 0;
	return rc;
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
	t->guest_task = 0;	/* of the look before */
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

	t->guest_task = 0;	/* of the look before */
	if (asid != t->asid) {
		t->asid = asid;
		ctx_changed(t, false);
	}
	return 0;
}

static int trans_guest_task(void *ctx, uint32_t tgid)
{
	struct opd_trans *t = ctx;

	t->guest_task = tgid;	/* rides on the look's first sample */
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
	.sample = opd_tr_sample,
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
	.callchain = opd_tr_callchain,
	.guest_tsc = trans_guest_tsc,
	.time_spread = trans_time_spread,
	.guest_task = trans_guest_task,
};
