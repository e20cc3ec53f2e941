/*
 * The xen collector's ops (collect_xen.h): the libxenctrl source under the
 * sampling engine of collect_xen.c, driven by a jittered timer, with dom0's
 * own work sampled by the embedded perf collector.
 */
#include "config.h"

#ifdef HAVE_XEN
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>

#include "domprof/raw.h"
#include "collect_xen.h"
#include "collect_xen_xc.h"
#include "events/ev.h"
#include "opd_collector.h"
#include "util/du_log.h"

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
	uint64_t next_flush;	/* our stream goes to the daemon then */
};

/* Our stream goes to the daemon at the first look this long after the
 * last flush (and when the writer's buffer fills), as dom0's rings are
 * read (CX_D0_READ_NS): a write each tick woke the daemon's worker a
 * thousand times a second at 1 kHz, most of them for a TIME record, and
 * every 20 ms fifty times. */
#define CX_FLUSH_NS 100000000ull

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
	if (st->witnesses || st->wit_errors)
		du_info("xen collector: %llu address spaces named by the guest's memory, %llu reads "
			"failed; %.1f us a pause to read one, read and resume (%llu)",
			(unsigned long long)st->witnesses, (unsigned long long)st->wit_errors,
			st->wit_pauses ? st->wit_ns / 1e3 / (double)st->wit_pauses : 0.0,
			(unsigned long long)st->wit_pauses);
	if (st->reads && st->stride_max > 1)
		du_info("xen collector: the read budget: a read stood for %.1f periods on average "
			"(reads cost more than the budget gives a period), a stride of %llu at most%s",
			(double)st->samples / st->reads, (unsigned long long)st->stride_max,
			st->stride_capped ? ", held at its cap: the budget not kept" : "");
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

/*
 * Arm the timer for the next look.  Reading every period, a period
 * scaled by [0.75, 1.25), so that the looks keep no phase to the guest's
 * own periodic work.  Under the read budget (a read every few periods,
 * each at a jittered point already), when the first vCPU can be due
 * (cx_engine_wait), up to a quarter later: a look before that would only
 * read the vCPUs' times, and each look is a wake-up of dom0 and a
 * hypercall a vCPU, which an emulated dom0 pays dearly.
 */
static int cx_arm(struct cx_collector *c)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	uint64_t d;

	if (c->e && cx_engine_stride(c->e) > 1) {
		d = cx_engine_wait(c->e);
		d += cx_xorshift(&c->rng) % (d / 4 + 1);
	} else {
		d = c->period_ns;
		d = d * 3 / 4 + cx_xorshift(&c->rng) % (d / 2 + 1);
	}
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
	rc = cx_xc_open(&x);
	if (rc) {
		goto out_close;
	}
	c->x = x;
	c->e = cx_engine_new(&cx_xc_ops, x, c->period_ns);
	if (c->e && cx_xc_has_mem(x))
		cx_engine_set_callgraph(c->e, a->conf->callgraph_depth);
	if (c->e && a->conf->xen_read_budget_ppm >= 0)
		cx_engine_set_budget(c->e, (uint32_t)a->conf->xen_read_budget_ppm);
	if (c->e)
		cx_engine_seed(c->e, c->rng);
	if (c->e)
		du_info("xen collector: context reads may hold a vCPU %.0f%% of its time "
			"(--xen-read-budget; 0: a read every period)",
			(a->conf->xen_read_budget_ppm >= 0 ? a->conf->xen_read_budget_ppm :
			 (int)CX_READ_BUDGET_PPM) / 1e4);
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
	/* ours first: the two writers share the daemon's stream */
	rc = raw_writer_flush(c->w);
	if (!rc)
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
	if (!rc && now >= c->next_flush) {
		rc = raw_writer_flush(c->w);
		c->next_flush = now + CX_FLUSH_NS;
	}
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
	/* what we hold, then dom0's last records: ours then re-state the
	 * context */
	rc = raw_writer_flush(c->w);
	if (!rc && c->d0)
		rc = opd_collector_perf.stop(c->d0);
	cx_engine_forget(c->e);
	if (!rc)
		rc = cx_engine_drain(c->e, c->w);
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

static void cx_task_layout(void *state, uint32_t key_ns, uint64_t key,
			   const struct dp_ag_task_layout *l)
{
	struct cx_collector *c = state;
	int rc;

	if (key_ns != DP_DOMKEY_XEN_DOMID || key > UINT32_MAX || !c->e)
		return;
	if (!cx_xc_has_mem(c->x)) {
		du_warn("xen collector: domain %llu's task layout not used: no foreign memory "
			"mappings", (unsigned long long)key);
		return;
	}
	rc = cx_engine_set_layout(c->e, (uint32_t)key, l->current, l->tgid_off);
	if (rc)
		du_warn("xen collector: domain %llu's task layout not used: %s",
			(unsigned long long)key, rc == -EINVAL ? "implausible numbers" : strerror(-rc));
	else
		du_info("xen collector: domain %llu: its processes are read from its memory "
			"(task pointer at per-CPU +0x%llx, tgid at +%u)", (unsigned long long)key,
			(unsigned long long)l->current, l->tgid_off);
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
	.task_layout = cx_task_layout,
};
#endif
