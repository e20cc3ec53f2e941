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
	bool seen;
};

struct cx_slot {
	struct cx_dom dom;
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
};

/* A look's call chain: frames[0..res.nr) and how the walk ended. */
struct cx_chain {
	uint64_t frames[DP_RAW_CC_MAX];
	struct gwalk_res res;
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

void cx_engine_forget(struct cx_engine *e)
{
	e->cur_valid = false;
	e->asid_valid = false;
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
 * dates the samples, is left to that). */
static uint64_t cx_clock(const struct cx_engine *e)
{
	struct timespec ts;

	(void)e;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The context of a vCPU (and with call graphs its chain, the domain
 * paused meanwhile when the source can).  0 or -errno. */
static int cx_read_vcpu(struct cx_engine *e, const struct cx_slot *s, unsigned int v,
			struct cx_ctx *c, struct cx_chain *ch)
{
	bool walk = e->cc_depth && e->sops->read_mem;
	uint64_t t0 = walk ? cx_clock(e) : 0, t1;
	bool paused = walk && e->sops->pause && !e->sops->pause(e->src, s->dom.domid, true);
	int rc;

	if (paused) {
		e->st.pause_ns += cx_clock(e) - t0;
		e->st.pauses++;
	}
	rc = e->sops->vcpu_ctx(e->src, s->dom.domid, v, s->dom.hvm, c);
	ch->res = (struct gwalk_res){ 0 };
	if (!rc && walk) {
		t0 = cx_clock(e);
		cx_walk(e, s->dom.domid, c, ch);
		e->st.walk_ns += cx_clock(e) - t0;
	}
	if (paused) {
		t0 = cx_clock(e);
		e->sops->pause(e->src, s->dom.domid, false);
		t1 = cx_clock(e);
		e->st.pause_ns += t1 - t0;
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
	uint64_t now, count, t0, r0;

	r0 = cx_clock(e);
	if (e->sops->vcpu_time(e->src, s->dom.domid, v, &now) < 0)
		return 0;	/* offline, or the domain just went */
	e->st.look_ns += cx_clock(e) - r0;
	e->st.looks++;
	if (!cv->seen || now < cv->last_ns) {
		cv->seen = true;
		cv->last_ns = now;
		return 0;
	}
	cv->carry_ns += now - cv->last_ns;
	s->used_ns += now - cv->last_ns;
	cv->last_ns = now;
	if (cv->carry_ns < e->period_ns)
		return 0;	/* idle, or not a period's worth yet */
	count = cv->carry_ns / e->period_ns;
	cv->carry_ns -= count * e->period_ns;
	t0 = e->sops->clock ? e->sops->clock(e->src) : 0;
	r0 = cx_clock(e);
	if (cx_read_vcpu(e, s, v, &c, &ch) < 0) {
		e->st.ctx_errors++;
		e->st.lost += count;
		return 0;
	}
	r0 = cx_clock(e) - r0;
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

/* ---- the collector: libxenctrl source, jittered timer ---------------------- */

#ifdef HAVE_XEN
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/timerfd.h>

#include <sys/mman.h>

#include "events/ev.h"
#include "opd_collector.h"
#include "collect_xen_xc.h"

/* The sampling period without a TIMER event on the command line: 1 kHz. */
#define CX_DEFAULT_PERIOD_NS 1000000ull

struct cx_collector {
	const struct opd_collector_args *a;
	struct cx_xc *x;
	struct cx_xen_counts at_start;
	struct cx_engine *e;
	struct raw_writer *w;
	int tfd;
	uint64_t period_ns;	/* of vCPU time per sample, and of the timer */
	uint64_t rng;
	uint64_t next_rescan;
	/* dom0's own work: the perf collector writing into this stream
	 * (opd_collector_args.embedded), its TIMER at our period so that a
	 * sample is the same CPU time on both sides.  NULL: not sampled. */
	void *d0;
	struct opd_conf d0_conf;
	struct ev_table *d0_tab;
	struct opd_collector_args d0_args;
	size_t d0_nfds;		/* its pollfds after our timer's */
	uint64_t d0_next_read;
};

/* dom0's rings are read at least this often (besides their watermark),
 * so that a dump sees dom0's recent work too */
#define CX_D0_READ_NS 100000000ull

/* The run in Xen's own accounting, into the log: pCPU time busy, dom0's,
 * each domU's (with its samples) and what is left: Xen itself. */
static void cx_report_usage(struct cx_collector *c)
{
	struct cx_dom_use u[CX_MAX_DOMS];
	struct cx_xen_counts end;
	double busy, dom0, domus = 0;
	size_t n = cx_engine_usage(c->e, u, CX_MAX_DOMS);

	for (size_t i = 0; i < n; i++) {
		domus += (double)u[i].used_ns / 1e9;
		du_info("xen collector: domain %u: %.3f s of vCPU time (Xen's cpu_time), %llu samples",
			(unsigned int)u[i].domid, (double)u[i].used_ns / 1e9,
			(unsigned long long)u[i].samples);
	}
	cx_xen_counts(c->x, &end);
	if (!c->at_start.ok || !end.ok || end.nr_cpus != c->at_start.nr_cpus)
		return;
	busy = (double)(end.wall_ns - c->at_start.wall_ns) / 1e9 * end.nr_cpus -
	       (double)(end.idle_ns - c->at_start.idle_ns) / 1e9;
	dom0 = (double)(end.dom0_ns - c->at_start.dom0_ns) / 1e9;
	du_info("xen collector: over %.3f s on %d pCPU(s): busy %.3f s, dom0 %.3f s, domUs %.3f s, "
		"Xen itself and unaccounted %.3f s",
		(double)(end.wall_ns - c->at_start.wall_ns) / 1e9, end.nr_cpus, busy, dom0, domus,
		busy - dom0 - domus);
}

/* What a look costs, into the log (doc/performance.md, xen-overhead). */
static void cx_report_cost(const struct cx_stats *st)
{
	double look = st->looks ? st->look_ns / 1e3 / st->looks : 0;
	double read = st->reads ? st->read_ns / 1e3 / st->reads : 0;

	du_info("xen collector: cost: %.1f us a vCPU time read (%llu), %.1f us a context read "
		"(%llu), %.3f s in all", look, (unsigned long long)st->looks, read,
		(unsigned long long)st->reads, (st->look_ns + st->read_ns) / 1e9);
	if (st->cc_walks)
		du_info("xen collector: cost with call chains: %.1f us to pause and resume (%llu), "
			"%.1f us a walk (%llu)", st->pauses ? st->pause_ns / 1e3 / st->pauses : 0,
			(unsigned long long)st->pauses, st->walk_ns / 1e3 / st->cc_walks,
			(unsigned long long)st->cc_walks);
}

static int cx_sink(void *ctx, const void *buf, size_t len)
{
	const struct opd_raw_sink *s = ctx;

	return s->feed(s->ctx, buf, len);
}

/* Arm the timer for the next look: the period scaled by [0.75, 1.25). */
static int cx_arm(struct cx_collector *c)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t d;

	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	d = c->period_ns * 3 / 4 + c->rng % (c->period_ns / 2 + 1);
	its.it_value.tv_sec = (time_t)(d / 1000000000ull);
	its.it_value.tv_nsec = (long)(d % 1000000000ull);
	return timerfd_settime(c->tfd, 0, &its, NULL) ? -errno : 0;
}

static void cx_close(void *state)
{
	struct cx_collector *c = state;

	if (!c)
		return;
	if (c->d0)
		opd_collector_perf.close(c->d0);
	ev_table_free(c->d0_tab);
	cx_engine_free(c->e);
	raw_writer_close(c->w);
	if (c->tfd >= 0)
		close(c->tfd);
	free(c);
}

/* dom0 through the perf collector, embedded; without it (logged) the
 * domUs are sampled all the same. */
static void cx_open_dom0(struct cx_collector *c)
{
	const struct opd_collector_args *a = c->a;
	struct ev_spec *ev = &c->d0_conf.events[0];
	char err[256];

	if (!a->conf->xen_dom0)
		return;
	c->d0_tab = ev_table_load(a->conf->events_dir, "timer", err, sizeof(err));
	if (!c->d0_tab) {
		du_warn("xen collector: dom0 not sampled: no timer event: %s", err);
		return;
	}
	c->d0_conf = *a->conf;
	memset(ev, 0, sizeof(*ev));
	snprintf(ev->name, sizeof(ev->name), "TIMER");
	ev->count = c->period_ns;
	ev->kernel = ev->user = true;
	c->d0_conf.nr_events = 1;
	c->d0_args = *a;
	c->d0_args.conf = &c->d0_conf;
	c->d0_args.events = c->d0_tab;
	c->d0_args.embedded = true;
	if (opd_collector_perf.open(&c->d0_args, &c->d0)) {
		c->d0 = NULL;
		du_warn("xen collector: dom0 not sampled (the perf collector, above, cannot run)");
		return;
	}
	du_info("xen collector: dom0 sampled by the perf collector in the same stream "
		"(TIMER every %llu ns of CPU time)", (unsigned long long)c->period_ns);
}

static int cx_open(const struct opd_collector_args *a, void **state)
{
	struct cx_collector *c;
	struct cx_xc *x;
	int rc;

	if (access("/proc/xen/privcmd", F_OK) != 0 && access("/dev/xen/privcmd", F_OK) != 0) {
		du_err("xen collector: not Xen's dom0 (no privcmd)");
		return -ENODEV;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->a = a;
	c->tfd = -1;
	c->period_ns = CX_DEFAULT_PERIOD_NS;
	if (a->conf->nr_events > 0 && a->conf->events[0].count > 0)
		c->period_ns = a->conf->events[0].count;
	c->rng = cx_now() | 1;
	rc = cx_xc_open(a->conf->callgraph_depth != 0, &x);
	if (rc) {
		goto out_close;
	}
	c->x = x;
	c->e = cx_engine_new(&cx_xc_ops, x, c->period_ns);
	if (c->e && cx_xc_has_mem(x))
		cx_engine_set_callgraph(c->e, a->conf->callgraph_depth);
	c->w = raw_writer_new(cx_sink, (void *)a->sink, 64 * 1024);
	c->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (!c->e || !c->w || c->tfd < 0) {
		rc = c->tfd < 0 ? -errno : -ENOMEM;
		du_err("xen collector: %s", strerror(-rc));
		goto out_close;
	}
	cx_open_dom0(c);
	*state = c;
	return 0;

out_close:
	cx_close(c);
	return rc;
}

static size_t cx_pollfds(void *state, struct pollfd *pfd, size_t max)
{
	struct cx_collector *c = state;

	if (max < 1)
		return 0;
	pfd[0].fd = c->tfd;
	pfd[0].events = POLLIN;
	c->d0_nfds = c->d0 ? opd_collector_perf.pollfds(c->d0, pfd + 1, max - 1) : 0;
	return 1 + c->d0_nfds;
}

static int cx_start(void *state)
{
	struct cx_collector *c = state;
	struct dp_raw_event ev;
	int rc;

	memset(&ev, 0, sizeof(ev));
	snprintf(ev.name, sizeof(ev.name), "TIMER");
	ev.count = c->period_ns;
	ev.flags = DP_RAW_EV_KERNEL | DP_RAW_EV_USER;
	rc = raw_put_header(c->w, DP_RAW_F_TIMESTAMPS, DP_RAW_COLLECTOR_XEN, cx_now(), &ev, 1);
	if (!rc)
		rc = cx_engine_rescan(c->e);
	if (!rc)
		rc = raw_writer_flush(c->w);
	/* dom0's present (its tasks and mappings) after our header */
	if (!rc && c->d0 && opd_collector_perf.start(c->d0)) {
		du_warn("xen collector: dom0 not sampled (its perf collector did not start)");
		opd_collector_perf.close(c->d0);
		c->d0 = NULL;
	}
	if (!rc)
		rc = cx_arm(c);
	cx_xen_counts(c->x, &c->at_start);
	if (rc)
		du_err("xen collector: cannot start: %s", strerror(-rc));
	c->next_rescan = cx_now() + 1000000000ull;
	return rc;
}

/* dom0's rings, when one reached its watermark or it is time. */
static int cx_read_dom0(struct cx_collector *c, const struct pollfd *pfd, size_t n)
{
	bool ready = cx_now() >= c->d0_next_read;
	int rc;

	for (size_t i = 0; i < n && !ready; i++)
		ready = pfd[i].revents != 0;
	if (!ready)
		return 0;
	rc = opd_collector_perf.read(c->d0, pfd, n);
	c->d0_next_read = cx_now() + CX_D0_READ_NS;
	cx_engine_forget(c->e);	/* its records came between ours */
	return rc;
}

static int cx_read(void *state, const struct pollfd *pfd, size_t n)
{
	struct cx_collector *c = state;
	uint64_t expirations, now;
	int rc;

	if (c->d0 && n > 1) {
		rc = cx_read_dom0(c, pfd + 1, n - 1 < c->d0_nfds ? n - 1 : c->d0_nfds);
		if (rc)
			return rc;
	}
	if (n < 1 || !(pfd[0].revents & POLLIN))
		return 0;
	if (read(c->tfd, &expirations, sizeof(expirations)) < 0)
		return errno == EAGAIN ? 0 : -errno;
	now = cx_now();
	/* New and destroyed domains; the domain backend follows them by
	 * xenstore watches, sampling only needs the list now and then. */
	if (now >= c->next_rescan) {
		rc = cx_engine_rescan(c->e);
		if (rc)
			du_err("xen collector: domain list: %s", strerror(-rc));
		c->next_rescan = now + 1000000000ull;
	}
	rc = raw_put_time(c->w, now);
	if (!rc)
		rc = cx_engine_tick(c->e, c->w);
	if (!rc)
		rc = raw_writer_flush(c->w);
	if (!rc)
		rc = cx_arm(c);
	return rc;
}

static int cx_stop(void *state)
{
	struct cx_collector *c = state;
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };
	struct cx_stats st;
	int rc;

	timerfd_settime(c->tfd, 0, &off, NULL);
	/* dom0's last records first: ours then re-state the context */
	rc = c->d0 ? opd_collector_perf.stop(c->d0) : 0;
	cx_engine_forget(c->e);
	cx_engine_stats(c->e, &st);
	if (!rc && st.lost)
		rc = raw_put_lost(c->w, st.lost);
	if (!rc)
		rc = raw_writer_flush(c->w);
	du_info("xen collector: %llu ticks, %llu looks, %llu samples from %llu context reads "
		"(worth %.0f independent ones), %llu lost, %llu context errors",
		(unsigned long long)st.ticks, (unsigned long long)st.looks,
		(unsigned long long)st.samples, (unsigned long long)st.reads,
		st.weight_sq ? (double)st.samples * st.samples / st.weight_sq : 0.0,
		(unsigned long long)st.lost, (unsigned long long)st.ctx_errors);
	if (st.cc_walks)
		du_info("xen collector: call chains: %llu walks, %llu chains, %llu frames, "
			"%llu truncated, %llu empty",
			(unsigned long long)st.cc_walks, (unsigned long long)st.cc_chains,
			(unsigned long long)st.cc_frames, (unsigned long long)st.cc_truncated,
			(unsigned long long)st.cc_empty);
	if (st.tsc_reads || st.tsc_errors)
		du_info("xen collector: guest TSC read %llu times (%llu failed)",
			(unsigned long long)st.tsc_reads, (unsigned long long)st.tsc_errors);
	cx_report_cost(&st);
	cx_report_usage(c);
	return rc;
}

const struct opd_collector_ops opd_collector_xen = {
	.name = "xen",
	.caps = OPD_CAP_LIVE | OPD_CAP_CALLCHAIN | OPD_CAP_EVENTS_OPT | OPD_CAP_MONITOR,
	.open = cx_open,
	.pollfds = cx_pollfds,
	.start = cx_start,
	.read = cx_read,
	.stop = cx_stop,
	.close = cx_close,
};
#endif
