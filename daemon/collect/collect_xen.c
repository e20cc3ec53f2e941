/*
 * The xen collector (collect_xen.h): the sampling engine, which only
 * knows a source and a raw writer, then the libxenctrl source and the
 * collector ops around it (a jittered timer driving the engine).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "domprof/raw.h"
#include "collect_xen.h"
#include "gwalk.h"
#include "util/du_log.h"

struct cx_vcpu {
	uint64_t last_ns;	/* cpu_time at the previous look */
	uint64_t carry_ns;	/* consumed time not yet turned into samples */
	uint64_t need_ns;	/* carry the next read waits for (0: a period) */
	bool seen;
	bool ran;		/* its time grew since the look before */
	bool off;		/* its time could not be read at the last look */
};

/* An address space's last witness (cx_witness): its CR3 and when. */
struct cx_seen {
	uint64_t cr3, ns;
};

struct cx_slot {
	struct cx_dom dom;
	/* where the guest keeps its running task (cx_engine_set_layout) */
	uint64_t lay_current;
	uint32_t lay_tgid_off;
	bool lay_set;
	/* pauses to read its task in the current second (CX_WITNESS_MAX_PER_S) */
	uint64_t wit_sec;
	uint32_t wit_in_sec;
	struct cx_seen seen[CX_WITNESS_SLOTS];	/* by CR3, direct-mapped */
	struct cx_vcpu *vcpu;	/* dom.nr_vcpus */
	uint64_t used_ns;	/* vCPU time seen consumed, all vCPUs */
	uint64_t samples;	/* emitted for it */
	uint64_t next_tsc_ns;	/* host time its guest TSC is read next */
	bool tsc_err_said;	/* a failed read logged */
	bool live;
};

struct cx_engine {
	const struct cx_src_ops *sops;
	void *src;
	uint64_t period_ns;
	uint64_t max_burst;	/* samples one look may emit (CX_MAX_BURST_NS) */
	struct cx_slot *slots;
	size_t n;
	struct cx_dom *list;	/* CX_MAX_DOMS, reused by rescan */
	struct cx_stats st;
	/* context last written to the stream, to skip repeats */
	uint64_t cur_dom, cur_asid;
	uint32_t cur_vcpu, cur_mode;
	bool cur_valid, asid_valid;
	uint64_t cur_spread;	/* DP_RAW_TIME_SPREAD last stated */
	bool spread_valid;
	unsigned int cc_depth;	/* 0: no call chains */
	uint32_t cc_dom;	/* the domain being walked (for read_mem) */
	/* the read budget (cx_engine_set_budget): parts per million of a
	 * vCPU's time its reads may hold it (0: read every period); the
	 * reads' running mean cost; the jitter's state */
	uint32_t budget_ppm;
	uint64_t read_avg_ns;
	uint64_t rng;
	/* the stride in force (0: none yet), set from the running mean at
	 * most once a CX_STRIDE_EVERY_NS (cx_next_read), and when */
	uint64_t stride, stride_at;
	bool draining;	/* cx_engine_drain: the budget's waits set aside */
};

/* A look's call chain: frames[0..res.nr) and how the walk ended, and
 * the process the guest's memory named (0: none read). */
struct cx_chain {
	uint64_t frames[DP_RAW_CC_MAX];
	struct gwalk_res res;
	uint32_t tgid;
};

struct cx_engine *cx_engine_new(const struct cx_src_ops *sops, void *src, uint64_t period_ns)
{
	struct cx_engine *e;

	if (!period_ns) {
		sops->close(src);
		errno = EINVAL;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (e)
		e->list = calloc(CX_MAX_DOMS, sizeof(*e->list));
	if (!e || !e->list) {
		free(e);
		sops->close(src);
		errno = ENOMEM;
		return NULL;
	}
	e->sops = sops;
	e->src = src;
	e->period_ns = period_ns;
	e->max_burst = CX_MAX_BURST_NS / period_ns;
	if (e->max_burst < CX_MAX_BURST)
		e->max_burst = CX_MAX_BURST;
	if (e->max_burst > CX_MAX_BURST_CAP)
		e->max_burst = CX_MAX_BURST_CAP;
	e->budget_ppm = CX_READ_BUDGET_PPM;
	e->rng = 0x9e3779b97f4a7c15ULL ^ period_ns;
	return e;
}

void cx_engine_free(struct cx_engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->slots[i].vcpu);
	free(e->slots);
	free(e->list);
	e->sops->close(e->src);
	free(e);
}

static struct cx_slot *cx_find(struct cx_engine *e, uint32_t domid)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->slots[i].dom.domid == domid)
			return &e->slots[i];
	return NULL;
}

int cx_engine_rescan(struct cx_engine *e)
{
	int n = e->sops->list(e->src, e->list, CX_MAX_DOMS);
	size_t keep = 0;

	if (n < 0)
		return n;
	for (size_t i = 0; i < e->n; i++)
		e->slots[i].live = false;
	for (int i = 0; i < n; i++) {
		struct cx_dom *d = &e->list[i];
		unsigned int nv = d->nr_vcpus > CX_MAX_VCPUS ? CX_MAX_VCPUS : d->nr_vcpus;
		struct cx_slot *s = cx_find(e, d->domid);
		struct cx_vcpu *vc;

		if (s && s->dom.nr_vcpus == nv) {
			s->live = true;
			continue;
		}
		/* new, or its vCPU count changed: start its vCPUs afresh */
		vc = calloc(nv ? nv : 1, sizeof(*vc));
		if (!vc)
			return -ENOMEM;
		if (!s) {
			struct cx_slot *ns = realloc(e->slots, (e->n + 1) * sizeof(*ns));

			if (!ns) {
				free(vc);
				return -ENOMEM;
			}
			e->slots = ns;
			s = &e->slots[e->n++];
			memset(s, 0, sizeof(*s));
		}
		free(s->vcpu);
		s->vcpu = vc;
		s->dom = *d;
		s->dom.nr_vcpus = nv;
		s->live = true;
	}
	for (size_t i = 0; i < e->n; i++) {
		if (!e->slots[i].live) {
			free(e->slots[i].vcpu);
			continue;
		}
		e->slots[keep++] = e->slots[i];
	}
	e->n = keep;
	e->cur_valid = false;	/* a domid may have been reused */
	return 0;
}

void cx_engine_set_callgraph(struct cx_engine *e, unsigned int depth)
{
	e->cc_depth = depth < DP_RAW_CC_MAX ? depth : DP_RAW_CC_MAX;
}

void cx_engine_set_budget(struct cx_engine *e, uint32_t ppm)
{
	e->budget_ppm = ppm > 1000000 ? 1000000 : ppm;
}

/* Periods a read stands for under the budget: its mean cost over the
 * time the budget gives a period, rounded up, at least 1, at most half
 * the burst a look may emit (counted: stride_capped). */
static uint64_t cx_stride(struct cx_engine *e)
{
	uint64_t allow, n;

	if (!e->budget_ppm || !e->read_avg_ns)
		return 1;
	allow = e->period_ns / 1000000 * e->budget_ppm +
		e->period_ns % 1000000 * e->budget_ppm / 1000000;
	if (!allow)
		allow = 1;
	n = (e->read_avg_ns + allow - 1) / allow;
	if (n > e->max_burst / 2) {
		n = e->max_burst / 2;
		e->st.stride_capped++;
	}
	return n ? n : 1;
}

/* After a read that cost @ns at @now (cx_clock): the running mean of the
 * reads' cost, and the carry the vCPU's next read waits for.  The stride
 * is taken from the mean at most once a CX_STRIDE_EVERY_NS: one that
 * followed each read's own cost would set the gap after a costly state
 * apart from the gap after a cheap one, and weight the states unequally.
 * The stride's periods are scaled by [0.5, 1.5] so that the reads keep
 * no fixed phase to the guest's own periodic work (a read every n
 * periods would see one moment of a loop of n periods). */
static void cx_next_read(struct cx_engine *e, struct cx_vcpu *cv, uint64_t ns, uint64_t now)
{
	uint64_t stride;

	e->read_avg_ns = e->read_avg_ns ? e->read_avg_ns - e->read_avg_ns / 8 + ns / 8 : ns;
	if (!e->stride || now - e->stride_at >= CX_STRIDE_EVERY_NS) {
		e->stride = cx_stride(e);
		e->stride_at = now;
	}
	stride = e->stride;
	if (stride > e->st.stride_max)
		e->st.stride_max = stride;
	if (stride == 1) {
		cv->need_ns = 0;
		return;
	}
	cv->need_ns = e->period_ns * stride / 2 + cx_xorshift(&e->rng) % (e->period_ns * stride + 1);
}

uint64_t cx_engine_stride(const struct cx_engine *e)
{
	return e->stride ? e->stride : 1;
}

uint64_t cx_engine_wait(const struct cx_engine *e)
{
	uint64_t stride = cx_engine_stride(e), idle = e->period_ns * (stride + stride / 2);
	uint64_t wait = idle;

	for (size_t i = 0; i < e->n; i++) {
		const struct cx_slot *s = &e->slots[i];

		for (unsigned int v = 0; v < s->dom.nr_vcpus; v++) {
			const struct cx_vcpu *cv = &s->vcpu[v];
			uint64_t need = cv->need_ns > e->period_ns ? cv->need_ns : e->period_ns;
			uint64_t left;

			if (cv->off || (cv->seen && !cv->ran))
				left = idle;	/* as long as a read waits at most */
			else if (!cv->seen)
				left = 0;	/* its first look notes its time */
			else
				left = cv->carry_ns < need ? need - cv->carry_ns : 0;
			if (left < wait)
				wait = left;
		}
	}
	/* at least half a stride (a vCPU that runs a little, just short of
	 * its need, would call a look a period), and a period */
	if (wait < e->period_ns * (stride / 2))
		wait = e->period_ns * (stride / 2);
	if (wait < e->period_ns)
		wait = e->period_ns;
	return wait;
}

void cx_engine_seed(struct cx_engine *e, uint64_t seed)
{
	e->rng = seed ? seed : 1;
}

void cx_engine_forget(struct cx_engine *e)
{
	e->cur_valid = false;
	e->asid_valid = false;
}

int cx_engine_set_layout(struct cx_engine *e, uint32_t domid, uint64_t current, uint32_t tgid_off)
{
	struct cx_slot *s = cx_find(e, domid);

	if (!cx_layout_plausible(current, tgid_off))
		return -EINVAL;
	if (!s && !cx_engine_rescan(e))
		s = cx_find(e, domid);
	if (!s)
		return -ENOENT;
	s->lay_current = current;
	s->lay_tgid_off = tgid_off;
	s->lay_set = true;
	memset(s->seen, 0, sizeof(s->seen));
	return 0;
}

static int cx_read_mem(void *ctx, uint64_t addr, void *buf, unsigned long len)
{
	struct cx_engine *e = ctx;

	return e->sops->read_mem(e->src, e->cc_dom, addr, buf, len);
}

/* The call chain at @c, counted in the stats. */
static void cx_walk(struct cx_engine *e, uint32_t domid, const struct cx_ctx *c, struct cx_chain *ch)
{
	struct gwalk_req r = {
		.read = cx_read_mem, .ctx = e,
		.root = c->cr3 & CX_CR3_MASK, .levels = c->la57 ? 5 : 4,
		.fp = c->fp, .sp = c->sp, .user = !c->kernel,
	};

	e->cc_dom = domid;
	gwalk(&r, ch->frames, e->cc_depth, &ch->res);
	if (e->sops->mem_done)
		e->sops->mem_done(e->src);
	e->st.cc_walks++;
	e->st.cc_truncated += ch->res.truncated;
	e->st.cc_empty += !ch->res.nr;
	e->st.cc_chains += !!ch->res.nr;
	e->st.cc_frames += ch->res.nr;
}

/* The host's clock, for what the looks cost (the source's clock, which
 * dates the samples, is left to that) and the read budget. */
static uint64_t cx_clock(const struct cx_engine *e)
{
	struct timespec ts;

	if (e->sops->cost_clock)
		return e->sops->cost_clock(e->src);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* @c's address space's entry in @s's table of spaces tried. */
static struct cx_seen *cx_seen_of(struct cx_slot *s, const struct cx_ctx *c)
{
	return &s->seen[((c->cr3 & CX_CR3_MASK) >> 12) % CX_WITNESS_SLOTS];
}

/* Whether a look at @c should read which process runs (cx_witness):
 * guest user mode, a layout known, its space not tried within
 * CX_WITNESS_EVERY_NS, and (unless @charged: this look's pause was) the
 * domain's budget not spent. */
static bool cx_witness_due(struct cx_engine *e, struct cx_slot *s, const struct cx_ctx *c,
			   uint64_t now, bool charged)
{
	const struct cx_seen *sn = cx_seen_of(s, c);

	if (!s->lay_set || c->kernel || !c->gs_kernel || !e->sops->read_mem)
		return false;
	if (sn->cr3 == (c->cr3 & CX_CR3_MASK) && now - sn->ns < CX_WITNESS_EVERY_NS)
		return false;
	return charged || now / 1000000000ull != s->wit_sec ||
	       s->wit_in_sec < CX_WITNESS_MAX_PER_S;
}

/* A pause (or a paused look's read) for a witness, charged to the
 * domain's second. */
static void cx_witness_charge(struct cx_slot *s, uint64_t now)
{
	if (now / 1000000000ull != s->wit_sec) {
		s->wit_sec = now / 1000000000ull;
		s->wit_in_sec = 0;
	}
	s->wit_in_sec++;
}

/* The pointer to the running task, by the space's own page tables; under
 * page-table isolation a user CR3 maps no per-CPU data, its kernel twin
 * (bit 12 clear) does. */
static int cx_task_ptr(const struct cx_slot *s, struct gwalk_req *r, const struct cx_ctx *c,
		       uint64_t *task)
{
	uint64_t at = c->gs_kernel + s->lay_current;

	if (!gwalk_read_kernel(r, at, task))
		return 0;
	if (!(r->root & CX_CR3_PTI_USER))
		return -EFAULT;
	r->root &= ~CX_CR3_PTI_USER;
	return gwalk_read_kernel(r, at, task);
}

/* Which process runs in the paused vCPU's space @c, from the guest's
 * memory: the tgid of the task its CPU points to, 0 when it cannot be
 * read or is not a pid. */
static uint32_t cx_witness(struct cx_engine *e, struct cx_slot *s, const struct cx_ctx *c,
			   uint64_t now)
{
	struct gwalk_req r = {
		.read = cx_read_mem, .ctx = e,
		.root = c->cr3 & CX_CR3_MASK, .levels = c->la57 ? 5 : 4,
	};
	struct cx_seen *sn = cx_seen_of(s, c);
	uint64_t task = 0, word = 0, at;
	uint32_t tgid = 0;

	/* tried: a space whose read fails waits as long as one read */
	sn->cr3 = c->cr3 & CX_CR3_MASK;
	sn->ns = now;
	e->cc_dom = s->dom.domid;
	if (!cx_task_ptr(s, &r, c, &task)) {
		at = task + s->lay_tgid_off;
		if (at >= task && !gwalk_read_kernel(&r, at & ~7ull, &word))
			tgid = (uint32_t)(word >> ((at & 4) * 8));
	}
	if (e->sops->mem_done)
		e->sops->mem_done(e->src);
	if (!tgid || tgid > CX_PID_MAX) {
		e->st.wit_errors++;
		return 0;
	}
	e->st.witnesses++;
	return tgid;
}

/* The context of a vCPU (and with call graphs its chain, the domain
 * paused meanwhile when the source can; so too when the process running
 * in its space is to be read).  0 or -errno. */
static int cx_read_vcpu(struct cx_engine *e, struct cx_slot *s, unsigned int v,
			struct cx_ctx *c, struct cx_chain *ch)
{
	bool walk = e->cc_depth && e->sops->read_mem;
	uint64_t t0 = cx_clock(e), t1, w0 = 0;
	bool paused = false;
	int rc;

	ch->res = (struct gwalk_res){ 0 };
	ch->tgid = 0;
	if (!walk) {
		/* a plain look; paused again only to name its process */
		rc = e->sops->vcpu_ctx(e->src, s->dom.domid, v, s->dom.hvm, c);
		if (rc || !cx_witness_due(e, s, c, t0, false) || !e->sops->pause)
			return rc;
		t0 = w0 = cx_clock(e);
		cx_witness_charge(s, t0);
	}
	paused = e->sops->pause && !e->sops->pause(e->src, s->dom.domid, true);
	if (paused) {
		e->st.pause_ns += cx_clock(e) - t0;
		e->st.pauses++;
	}
	rc = e->sops->vcpu_ctx(e->src, s->dom.domid, v, s->dom.hvm, c);
	if (!rc && walk) {
		t0 = cx_clock(e);
		cx_walk(e, s->dom.domid, c, ch);
		e->st.walk_ns += cx_clock(e) - t0;
	}
	if (!rc && paused && cx_witness_due(e, s, c, t0, !walk)) {
		if (walk)
			cx_witness_charge(s, t0);
		ch->tgid = cx_witness(e, s, c, t0);
	}
	if (paused) {
		t0 = cx_clock(e);
		e->sops->pause(e->src, s->dom.domid, false);
		t1 = cx_clock(e);
		e->st.pause_ns += t1 - t0;
		if (!walk) {
			e->st.wit_ns += t1 - w0;
			e->st.wit_pauses++;
		}
	}
	return rc;
}

static int cx_emit(struct cx_engine *e, struct raw_writer *w, uint32_t domid, unsigned int vcpu,
		   const struct cx_ctx *c, const struct cx_chain *ch, uint64_t count)
{
	uint32_t ccflags = DP_RAW_CC_GUEST | (ch->res.truncated ? DP_RAW_CC_TRUNCATED : 0);
	uint32_t mode = c->kernel ? DP_MODE_GUEST_KERNEL : DP_MODE_GUEST_USER;
	/* the page-table root names the address space: the low bits (PCID,
	 * flags) and the no-flush bit 63 are not part of it */
	uint64_t asid = c->cr3 & CX_CR3_MASK;
	int rc = 0;

	if (!e->cur_valid || e->cur_dom != domid || e->cur_vcpu != vcpu) {
		struct dp_raw_domain dr = {
			.key = domid, .vcpu = vcpu, .key_ns = DP_DOMKEY_XEN_DOMID,
		};

		rc = raw_put_record(w, DP_RAW_DOMAIN, &dr, sizeof(dr));
		e->cur_dom = domid;
		e->cur_vcpu = vcpu;
		e->cur_valid = false;	/* the mode follows the domain */
	}
	if (!rc && (!e->cur_valid || e->cur_mode != mode))
		rc = raw_put_mode(w, mode);
	if (!rc && (!e->cur_valid || !e->asid_valid || e->cur_asid != asid)) {
		rc = raw_put_asid(w, asid);
		e->cur_asid = asid;
		e->asid_valid = !rc;
	}
	if (!rc && ch->tgid)
		rc = raw_put_guest_task(w, ch->tgid);
	if (rc)
		return rc;
	e->cur_mode = mode;
	e->cur_valid = true;
	for (uint64_t i = 0; i < count && !rc; i++) {
		/* a chain belongs to the one sample after it */
		if (ch->res.nr)
			rc = raw_put_callchain(w, ch->res.nr, ch->res.nr_kernel, ccflags, ch->frames);
		if (!rc)
			rc = raw_put_sample(w, c->pc, 0);
	}
	return rc;
}

static int cx_look(struct cx_engine *e, struct raw_writer *w, struct cx_slot *s, unsigned int v)
{
	struct cx_vcpu *cv = &s->vcpu[v];
	struct cx_ctx c;
	struct cx_chain ch;
	uint64_t now, count, t0, r1, r0, w0, cost;

	r0 = cx_clock(e);
	cv->off = e->sops->vcpu_time(e->src, s->dom.domid, v, &now) < 0;
	if (cv->off)
		return 0;	/* offline, or the domain just went */
	e->st.look_ns += cx_clock(e) - r0;
	e->st.looks++;
	if (!cv->seen || now < cv->last_ns) {
		cv->ran = true;	/* unknown yet: not taken for idle */
		cv->seen = true;
		cv->last_ns = now;
		return 0;
	}
	cv->ran = now > cv->last_ns;
	cv->carry_ns += now - cv->last_ns;
	s->used_ns += now - cv->last_ns;
	cv->last_ns = now;
	if (cv->carry_ns < e->period_ns || (!e->draining && cv->carry_ns < cv->need_ns))
		return 0;	/* idle, or not a period's (the budget's) worth yet */
	count = cv->carry_ns / e->period_ns;
	cv->carry_ns -= count * e->period_ns;
	t0 = e->sops->clock ? e->sops->clock(e->src) : 0;
	r0 = cx_clock(e);
	w0 = e->st.wit_ns;
	if (cx_read_vcpu(e, s, v, &c, &ch) < 0) {
		e->st.ctx_errors++;
		e->st.lost += count;
		return 0;
	}
	r1 = cx_clock(e);
	r0 = r1 - r0;
	/* the budget's cost of the read: a pause to name a space is bounded
	 * apart (CX_WITNESS_MAX_PER_S); a read that paused the domain (to
	 * walk its stack) held each of its vCPUs */
	cost = r0 - (e->st.wit_ns - w0);
	if (e->cc_depth && e->sops->read_mem && s->dom.nr_vcpus > 1)
		cost *= s->dom.nr_vcpus;
	cx_next_read(e, cv, cost, r1);
	if (e->sops->clock) {
		uint64_t t1 = e->sops->clock(e->src);
		int rc = raw_put_time(w, t0 + (t1 - t0) / 2);

		/* the context is of some moment of the read: +- half of it,
		 * and CX_LOOK_SLACK_NS for what the read does not show */
		uint64_t spread = (t1 - t0 + 1) / 2 + CX_LOOK_SLACK_NS;

		if (!rc && (!e->spread_valid || e->cur_spread != spread)) {
			e->cur_spread = spread;
			rc = raw_put_time_spread(w, e->cur_spread);
			e->spread_valid = !rc;
		}
		if (rc)
			return rc;
	}
	if (count > e->max_burst) {
		e->st.lost += count - e->max_burst;
		count = e->max_burst;
	}
	e->st.samples += count;
	e->st.reads++;
	e->st.read_ns += r0;
	e->st.weight_sq += count * count;
	s->samples += count;
	return cx_emit(e, w, s->dom.domid, v, &c, &ch, count);
}

/* The domain's guest TSC, when due (cx_src_ops.guest_tsc): the best
 * dated of CX_TSC_TRIES reads (a busy dom0 may stop between the clock
 * reads around one). */
static int cx_tsc(struct cx_engine *e, struct raw_writer *w, struct cx_slot *s)
{
	struct dp_raw_guest_tsc g = { .key = s->dom.domid, .key_ns = DP_DOMKEY_XEN_DOMID };
	uint64_t t0, t1, tsc;
	uint32_t khz;
	int rc = 0, got = 0;

	if (!e->sops->guest_tsc || !e->sops->clock || e->sops->clock(e->src) < s->next_tsc_ns)
		return 0;
	for (int k = 0; k < CX_TSC_TRIES && !rc; k++) {
		t0 = e->sops->clock(e->src);
		rc = e->sops->guest_tsc(e->src, s->dom.domid, s->dom.hvm, &tsc, &khz);
		t1 = e->sops->clock(e->src);
		if (rc == -EAGAIN) {	/* the source is ready now: the next try */
			rc = 0;
			continue;
		}
		if (rc || !khz || (got && t1 - t0 >= g.window_ns))
			continue;
		g = (struct dp_raw_guest_tsc){ .key = s->dom.domid, .key_ns = DP_DOMKEY_XEN_DOMID,
					       .khz = khz, .tsc = tsc, .host_ns = t0 + (t1 - t0) / 2,
					       .window_ns = t1 - t0 };
		got = 1;
	}
	if (!got && (rc == -EOPNOTSUPP || !rc)) {
		s->next_tsc_ns = UINT64_MAX;	/* not for this domain */
		du_info("xen collector: domain %u: its TSC is not read (%s): its clock is by "
			"ping/pong", s->dom.domid, rc ? "Xen gives no moving value" : "no rate");
		return 0;
	}
	if (!got && !s->tsc_err_said) {
		s->tsc_err_said = true;
		du_info("xen collector: domain %u: reading its TSC failed: %s", s->dom.domid,
			strerror(-rc));
	}
	s->next_tsc_ns = e->sops->clock(e->src) + CX_TSC_EVERY_NS;
	if (!got) {
		e->st.tsc_errors++;
		return 0;
	}
	e->st.tsc_reads++;
	return raw_put_guest_tsc(w, &g);
}

int cx_engine_tick(struct cx_engine *e, struct raw_writer *w)
{
	e->st.ticks++;
	for (size_t i = 0; i < e->n; i++) {
		int rc = cx_tsc(e, w, &e->slots[i]);

		for (unsigned int v = 0; !rc && v < e->slots[i].dom.nr_vcpus; v++)
			rc = cx_look(e, w, &e->slots[i], v);
		if (rc)
			return rc;
	}
	return 0;
}

int cx_engine_drain(struct cx_engine *e, struct raw_writer *w)
{
	int rc;

	e->draining = true;
	rc = cx_engine_tick(e, w);
	e->draining = false;
	return rc;
}

void cx_engine_stats(const struct cx_engine *e, struct cx_stats *st)
{
	*st = e->st;
}

size_t cx_engine_usage(const struct cx_engine *e, struct cx_dom_use *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < e->n && n < max; i++, n++) {
		out[n].domid = e->slots[i].dom.domid;
		out[n].used_ns = e->slots[i].used_ns;
		out[n].samples = e->slots[i].samples;
	}
	return n;
}

