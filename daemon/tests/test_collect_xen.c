/*
 * CUnit tests of the xen collector's sampling engine (collect_xen.c) over
 * a fake hypervisor: vCPU times and contexts set by the test, the stream
 * read back word by word.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "domprof/raw.h"
#include "collect_xen.h"
#include "util/du_test.h"

#define FX_DOMS 4
#define FX_VCPUS 4

struct fake {
	struct cx_dom dom[FX_DOMS];
	size_t ndom;
	uint64_t ns[FX_DOMS][FX_VCPUS];
	unsigned int offline[FX_DOMS];	/* vCPUs whose time is not read (a mask) */
	struct cx_ctx ctx[FX_DOMS][FX_VCPUS];
	int ctx_err;
	unsigned int ctx_reads;
	bool kernel_when_paused;	/* a paused read finds the vCPU in its kernel */
	/* guest memory for call chains: "machine" addresses 0..FX_MEM */
	unsigned char *mem;
	unsigned int mem_reads, mem_dones, pauses, unpauses;
	bool paused;
	uint32_t read_dom;	/* the domain of the last read */
	uint64_t next_table;	/* the next free page-table page */
	unsigned int tsc_asks[FX_DOMS];
	int tsc_err;
	uint64_t tsc_delay[3];	/* each ask of three takes so long (fx_clock) */
	uint64_t ctx_cost_ns;	/* a context read takes so long (fx_cost_clock) */
	uint64_t ctx_cost_kernel_ns;	/* and so much more in kernel mode */
	uint64_t cost_ns;	/* fx_cost_clock's time */
	/* the test's tick number, and per gap (in ticks) between two reads
	 * of web's vCPU 0, whether it was seen (gaps of 64 and more in one) */
	unsigned int tick, last_read_tick;
	bool gap_seen[64];
};

/* The engine's cost clock: moved only by the context reads. */
static uint64_t fx_cost_clock(void *src)
{
	return ((struct fake *)src)->cost_ns;
}

static size_t fx_idx(struct fake *f, uint32_t domid)
{
	for (size_t i = 0; i < f->ndom; i++)
		if (f->dom[i].domid == domid)
			return i;
	return FX_DOMS;
}

static int fx_list(void *src, struct cx_dom *out, size_t max)
{
	struct fake *f = src;

	memcpy(out, f->dom, f->ndom * sizeof(*out));
	return (int)f->ndom;
}

static int fx_time(void *src, uint32_t domid, unsigned int v, uint64_t *ns)
{
	struct fake *f = src;
	size_t i = fx_idx(f, domid);

	if (i == FX_DOMS || v >= f->dom[i].nr_vcpus || (f->offline[i] >> v & 1))
		return -ENOENT;
	*ns = f->ns[i][v];
	return 0;
}

static int fx_ctx(void *src, uint32_t domid, unsigned int v, bool hvm, struct cx_ctx *c)
{
	struct fake *f = src;
	size_t i = fx_idx(f, domid);

	f->ctx_reads++;
	f->cost_ns += f->ctx_cost_ns;
	if (i < FX_DOMS && v < FX_VCPUS && f->ctx[i][v].kernel)
		f->cost_ns += f->ctx_cost_kernel_ns;
	if (domid == 2 && v == 0) {
		unsigned int gap = f->tick - f->last_read_tick;

		f->gap_seen[gap < 64 ? gap : 63] = true;
		f->last_read_tick = f->tick;
	}
	if (f->ctx_err)
		return f->ctx_err;
	*c = f->ctx[i][v];
	if (f->paused && f->kernel_when_paused)
		c->kernel = true;
	return 0;
}

static void fx_close(void *src)
{
}

#define FX_MEM (1u << 20)

static int fx_read_mem(void *src, uint32_t domid, uint64_t addr, void *buf, unsigned long len)
{
	struct fake *f = src;

	f->mem_reads++;
	f->read_dom = domid;
	/* a read only while the domain stands still */
	CU_ASSERT_TRUE(f->paused);
	if (!f->mem || addr >= FX_MEM || len > FX_MEM - addr)
		return -EFAULT;
	memcpy(buf, f->mem + addr, len);
	return 0;
}

static void fx_mem_done(void *src)
{
	((struct fake *)src)->mem_dones++;
}

static int fx_pause(void *src, uint32_t domid, bool on)
{
	struct fake *f = src;

	(void)domid;
	CU_ASSERT_NOT_EQUAL(f->paused, on);	/* balanced */
	f->paused = on;
	if (on)
		f->pauses++;
	else
		f->unpauses++;
	return 0;
}

static const struct cx_src_ops fx_ops = {
	.list = fx_list, .vcpu_time = fx_time, .vcpu_ctx = fx_ctx, .close = fx_close,
	.read_mem = fx_read_mem, .mem_done = fx_mem_done, .pause = fx_pause,
};

/* The stream, in memory. */
struct buf {
	unsigned char *p;
	size_t len;
};

static int buf_sink(void *ctx, const void *data, size_t len)
{
	struct buf *b = ctx;
	unsigned char *n = realloc(b->p, b->len + len);

	if (!n)
		return -ENOMEM;
	memcpy(n + b->len, data, len);
	b->p = n;
	b->len += len;
	return 0;
}

/* Samples per (domid, vcpu, mode, pc) found by walking the words. */
struct tally {
	uint64_t samples[8][FX_VCPUS][DP_MODE_NR];
	uint64_t last_pc, last_asid;
	uint64_t asid[4];		/* the address spaces, as first stated */
	uint64_t by_asid[4];		/* samples under asid[i] */
	unsigned int domains, modes, asids, nasid;
	unsigned int times, timed_samples;	/* TIME records; samples after one */
	uint64_t time[8];			/* the first TIME values */
	uint32_t last_ns;
	/* call chains: records, samples right after one, the last one */
	unsigned int chains, chained_samples;
	struct dp_raw_callchain last_cc;
	uint64_t last_frames[DP_RAW_CC_MAX];
	/* DP_RAW_TIME_SPREAD records, and the last value */
	unsigned int spreads;
	uint64_t last_spread;
	/* DP_RAW_GUEST_TSC records, and the last one */
	unsigned int gtscs;
	struct dp_raw_guest_tsc last_gtsc;
	/* DP_RAW_GUEST_TASK records, the last tgid and the ASID it followed;
	 * those right before a sample */
	unsigned int gtasks, gtask_then_sample;
	uint32_t last_tgid;
	uint64_t tgid_asid;
};

/* walk()'s records that are not context: true for a GUEST_TASK. */
static bool walk_more(struct tally *t, uint32_t type, uint32_t len, const unsigned char *p,
		      uint64_t asid)
{
	struct dp_raw_guest_task g;

	if (type == DP_RAW_TIME_SPREAD) {
		memcpy(&t->last_spread, p, 8);
		t->spreads++;
		return false;
	}
	if (type == DP_RAW_GUEST_TSC) {
		CU_ASSERT_EQUAL_FATAL(len, sizeof(t->last_gtsc));
		memcpy(&t->last_gtsc, p, sizeof(t->last_gtsc));
		t->gtscs++;
		return false;
	}
	CU_ASSERT_EQUAL_FATAL(len, sizeof(g));
	memcpy(&g, p, sizeof(g));
	t->last_tgid = g.tgid;
	t->tgid_asid = asid;
	t->gtasks++;
	return true;
}

static void walk(const struct buf *b, struct tally *t)
{
	uint64_t dom = 0, asid = 0;
	uint32_t vcpu = 0, mode = 0;
	size_t off = 0;
	bool chain = false, gtask = false;

	memset(t, 0, sizeof(*t));
	while (off + 16 <= b->len) {
		uint64_t w0, w1;

		memcpy(&w0, b->p + off, 8);
		memcpy(&w1, b->p + off + 8, 8);
		off += 16;
		if (w0 != DP_RAW_ESCAPE) {
			t->timed_samples += t->times > 0;
			if (dom < 8 && vcpu < FX_VCPUS && mode < DP_MODE_NR)
				t->samples[dom][vcpu][mode]++;
			for (unsigned int i = 0; i < t->nasid; i++)
				if (t->asid[i] == asid)
					t->by_asid[i]++;
			t->last_pc = w0;
			t->chained_samples += chain;
			t->gtask_then_sample += gtask;
			chain = false;
			gtask = false;
			continue;
		}
		uint32_t type = (uint32_t)w1, len = (uint32_t)(w1 >> 32);

		if (type == DP_RAW_DOMAIN) {
			struct dp_raw_domain d;

			memcpy(&d, b->p + off, sizeof(d));
			dom = d.key;
			vcpu = d.vcpu;
			t->last_ns = d.key_ns;
			t->domains++;
		} else if (type == DP_RAW_MODE) {
			struct dp_raw_mode m;

			memcpy(&m, b->p + off, sizeof(m));
			mode = m.mode;
			t->modes++;
		} else if (type == DP_RAW_ASID) {
			struct dp_raw_asid a;

			memcpy(&a, b->p + off, sizeof(a));
			asid = a.asid;
			t->last_asid = a.asid;
			t->asids++;
			if (t->nasid < 4 && (!t->nasid || t->asid[t->nasid - 1] != asid))
				t->asid[t->nasid++] = asid;
		} else if (type == DP_RAW_TIME) {
			struct dp_raw_time tr;

			memcpy(&tr, b->p + off, sizeof(tr));
			if (t->times < 8)
				t->time[t->times] = tr.ns;
			t->times++;
		} else if (type == DP_RAW_TIME_SPREAD || type == DP_RAW_GUEST_TSC ||
			   type == DP_RAW_GUEST_TASK) {
			gtask |= walk_more(t, type, len, b->p + off, asid);
		} else if (type == DP_RAW_CALLCHAIN) {
			memcpy(&t->last_cc, b->p + off, sizeof(t->last_cc));
			CU_ASSERT_EQUAL_FATAL(len, 8 + 8 * t->last_cc.nr);
			memcpy(t->last_frames, b->p + off + 8, 8 * t->last_cc.nr);
			t->chains++;
			chain = true;
		}
		off += (len + 7) / 8 * 8;
	}
	CU_ASSERT_EQUAL(off, b->len);
}

#define MS 1000000ull

struct rig {
	struct fake f;
	struct buf b;
	struct raw_writer *w;
	struct cx_engine *e;
};

static void rig_up(struct rig *r)
{
	memset(r, 0, sizeof(*r));
	r->f.dom[0] = (struct cx_dom){ .domid = 1, .nr_vcpus = 1 };	/* db */
	r->f.dom[1] = (struct cx_dom){ .domid = 2, .nr_vcpus = 2 };	/* web */
	r->f.ndom = 2;
	r->f.ctx[1][0] = (struct cx_ctx){ .pc = 0x401000, .kernel = false };
	r->f.ctx[1][1] = (struct cx_ctx){ .pc = 0xffffffff81000000ull, .kernel = true };
	r->f.ctx[0][0] = (struct cx_ctx){ .pc = 0xffffffff81001000ull, .kernel = true };
	r->w = raw_writer_new(buf_sink, &r->b, 4096);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->w);
	r->e = cx_engine_new(&fx_ops, &r->f, MS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r->e);
	/* a read every period, however long a read takes on this machine
	 * (test_budget tests the budget) */
	cx_engine_set_budget(r->e, 0);
	CU_ASSERT_EQUAL(cx_engine_rescan(r->e), 0);
}

static void rig_down(struct rig *r)
{
	cx_engine_free(r->e);
	raw_writer_close(r->w);
	free(r->b.p);
}

/* web busy on both vCPUs, db idle: samples follow consumed time. */
static void test_busy_idle(void)
{
	struct rig r;
	struct tally t;

	rig_up(&r);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);	/* first look: times only */
	for (int i = 0; i < 100; i++) {
		r.f.ns[1][0] += MS;
		r.f.ns[1][1] += MS / 2;	/* half busy: a sample every other look */
		CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	}
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.samples[2][0][DP_MODE_GUEST_USER], 100);
	CU_ASSERT_EQUAL(t.samples[2][1][DP_MODE_GUEST_KERNEL], 50);
	CU_ASSERT_EQUAL(t.samples[1][0][DP_MODE_GUEST_KERNEL], 0);
	CU_ASSERT_EQUAL(t.last_ns, DP_DOMKEY_XEN_DOMID);
	/* the idle vCPU cost a look each time but no context read */
	CU_ASSERT_EQUAL(r.f.ctx_reads, 150);
	/* Xen's time of each domain over the run, with its samples */
	{
		struct cx_dom_use u[4];

		CU_ASSERT_EQUAL_FATAL(cx_engine_usage(r.e, u, 4), 2);
		CU_ASSERT_EQUAL(u[0].domid, 1);
		CU_ASSERT_EQUAL(u[0].used_ns, 0);
		CU_ASSERT_EQUAL(u[0].samples, 0);
		CU_ASSERT_EQUAL(u[1].domid, 2);
		CU_ASSERT_EQUAL(u[1].used_ns, 150 * MS);
		CU_ASSERT_EQUAL(u[1].samples, 150);
		CU_ASSERT_EQUAL(cx_engine_usage(r.e, u, 1), 1);
	}
	rig_down(&r);
}

/* A late collector: one look after 10 periods gives 10 samples; the
 * remainder of a period is carried, never lost or counted twice. */
static void test_weight_and_carry(void)
{
	struct rig r;
	struct tally t;
	struct cx_stats st;

	rig_up(&r);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[0][0] += 10 * MS + MS / 2;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[0][0] += MS / 2;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	/* a stall of 1.5 s (dom0 starved under load): all of it, none lost */
	r.f.ns[0][0] += 1500 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.lost, 0);
	CU_ASSERT_EQUAL(st.samples, 11 + 1500);
	/* far too much at once: CX_MAX_BURST_NS of it, the rest counted as lost */
	const uint64_t cap = CX_MAX_BURST_NS / MS;

	r.f.ns[0][0] += (cap + 5) * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.samples[1][0][DP_MODE_GUEST_KERNEL], 11 + 1500 + cap);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.lost, 5);
	CU_ASSERT_EQUAL(st.samples, 11 + 1500 + cap);
	/* four reads: 10, 1, 1500 and cap samples */
	CU_ASSERT_EQUAL(st.reads, 4);
	CU_ASSERT_EQUAL(st.weight_sq, 100 + 1 + 1500 * 1500 + cap * cap);
	/* context records only when the context changes */
	CU_ASSERT_EQUAL(t.domains, 1);
	CU_ASSERT_EQUAL(t.modes, 1);
	rig_down(&r);
}

/* Domains that go, come, or whose context cannot be read. */
static void test_lifecycle_errors(void)
{
	struct rig r;
	struct tally t;
	struct cx_stats st;

	rig_up(&r);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ctx_err = -EBUSY;
	r.f.ns[1][0] += 3 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.ctx_errors, 1);
	CU_ASSERT_EQUAL(st.lost, 3);
	r.f.ctx_err = 0;
	/* web destroyed; a new domain 3 with its own history */
	r.f.dom[1] = (struct cx_dom){ .domid = 3, .nr_vcpus = 1 };
	r.f.ns[1][0] = 500 * MS;	/* its first look must not count this */
	r.f.ctx[1][0] = (struct cx_ctx){ .pc = 0x1234, .kernel = false };
	CU_ASSERT_EQUAL(cx_engine_rescan(r.e), 0);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[1][0] += 2 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	/* db gets a second vCPU: both start afresh, the old one's history
	 * included, so nothing is counted for the time before */
	r.f.dom[0].nr_vcpus = 2;
	r.f.ns[0][0] += 7 * MS;
	r.f.ns[0][1] = 9 * MS;
	r.f.ctx[0][1] = (struct cx_ctx){ .pc = 0x5678, .kernel = false };
	CU_ASSERT_EQUAL(cx_engine_rescan(r.e), 0);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[0][1] += MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.samples[1][0][DP_MODE_GUEST_KERNEL], 0);
	CU_ASSERT_EQUAL(t.samples[1][1][DP_MODE_GUEST_USER], 1);
	CU_ASSERT_EQUAL(t.samples[3][0][DP_MODE_GUEST_USER], 2);
	CU_ASSERT_EQUAL(t.samples[2][0][DP_MODE_GUEST_USER], 0);
	CU_ASSERT_EQUAL(t.last_pc, 0x5678);
	rig_down(&r);
	/* a zero period is refused */
	CU_ASSERT_PTR_NULL(cx_engine_new(&fx_ops, &r.f, 0));
	CU_ASSERT_EQUAL(errno, EINVAL);
}

/* The address space: CR3 without its low (PCID, flag) bits and bit 63,
 * re-stated only when it changes. */
static void test_asid(void)
{
	struct rig r;
	struct tally t;

	rig_up(&r);
	r.f.ctx[1][0].cr3 = 0x8000000012345003ull;	/* no-flush bit, PCID 3 */
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[1][0] += 4 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[1][0] += 2 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);	/* same space: no record */
	r.f.ctx[1][0].cr3 = 0x77777000ull;	/* another process */
	r.f.ns[1][0] += 3 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.asids, 2);
	CU_ASSERT_EQUAL(t.nasid, 2);
	CU_ASSERT_EQUAL(t.asid[0], 0x12345000ull);
	CU_ASSERT_EQUAL(t.by_asid[0], 6);
	CU_ASSERT_EQUAL(t.asid[1], 0x77777000ull);
	CU_ASSERT_EQUAL(t.by_asid[1], 3);
	rig_down(&r);
}

/*
 * Records of another collector between two ticks (dom0's, embedded) may
 * have changed the decoder's domain, mode and address space: after
 * cx_engine_forget the next sample re-states all three, without it none.
 */
static void test_forget(void)
{
	struct rig r;
	struct tally t;

	rig_up(&r);
	r.f.ndom = 1;	/* db alone: one context throughout */
	r.f.ctx[0][0].cr3 = 0x12345000ull;
	CU_ASSERT_EQUAL(cx_engine_rescan(r.e), 0);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[0][0] += 2 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[0][0] += 2 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);	/* unchanged: nothing re-stated */
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.samples[1][0][DP_MODE_GUEST_KERNEL], 4);
	CU_ASSERT_EQUAL(t.domains, 1);
	CU_ASSERT_EQUAL(t.modes, 1);
	CU_ASSERT_EQUAL(t.asids, 1);
	cx_engine_forget(r.e);
	r.f.ns[0][0] += 2 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.samples[1][0][DP_MODE_GUEST_KERNEL], 6);
	CU_ASSERT_EQUAL(t.domains, 2);
	CU_ASSERT_EQUAL(t.modes, 2);
	CU_ASSERT_EQUAL(t.asids, 2);
	rig_down(&r);
}

/*
 * With the source's clock, each look dates its samples itself: a TIME
 * record (the middle of the context read) before them; without it, none.
 */
static uint64_t fx_clock_ns;

static uint64_t fx_clock(void *src)
{
	(void)src;
	return fx_clock_ns += 10;
}

static void test_look_time(void)
{
	struct cx_src_ops ops = fx_ops;
	struct rig r;
	struct tally t;

	rig_up(&r);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[1][0] += 3 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.samples[2][0][DP_MODE_GUEST_USER], 3);
	CU_ASSERT_EQUAL(t.times, 0);
	rig_down(&r);

	rig_up(&r);
	ops.clock = fx_clock;
	cx_engine_free(r.e);
	r.e = cx_engine_new(&ops, &r.f, MS);
	CU_ASSERT_FATAL(r.e != NULL);
	cx_engine_set_budget(r.e, 0);
	CU_ASSERT_EQUAL(cx_engine_rescan(r.e), 0);
	fx_clock_ns = 1000;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);	/* first looks: no samples, no time */
	r.f.ns[1][0] += 3 * MS;		/* web vCPU 0 ran: one look with samples */
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[1][1] += 2 * MS;		/* then vCPU 1 */
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.times, 2);
	CU_ASSERT_EQUAL(t.timed_samples, 5);
	/* the clock read before and after each read: 1010/1020, 1030/1040 */
	CU_ASSERT_EQUAL(t.time[0], 1015);
	CU_ASSERT_EQUAL(t.time[1], 1035);
	/* the samples are of some moment of the read: +- 5 ns and the slack,
	 * stated once while it stays the same */
	CU_ASSERT_EQUAL(t.spreads, 1);
	CU_ASSERT_EQUAL(t.last_spread, 5 + CX_LOOK_SLACK_NS);
	rig_down(&r);
}

/* A PV domain's TSC: 1000 ticks a vCPU-ms of its own, at 1 GHz; an HVM
 * domain's is not known (as cx_xc_guest_tsc says). */
static int fx_guest_tsc(void *src, uint32_t domid, bool hvm, uint64_t *tsc, uint32_t *khz)
{
	struct fake *f = src;
	size_t i = fx_idx(f, domid);

	CU_ASSERT_FATAL(i < FX_DOMS);
	f->tsc_asks[i]++;
	if (hvm)
		return -EOPNOTSUPP;
	fx_clock_ns += f->tsc_delay[f->tsc_asks[i] % 3];
	if (f->tsc_err)
		return f->tsc_err;
	*tsc = 5000000 + f->ns[i][0];
	*khz = 1000000;
	return 0;
}

/*
 * The engine states each PV domain's guest TSC on its first tick and then
 * once every CX_TSC_EVERY_NS of the source's clock, dated by the clock
 * read around the source's answer; it stops asking for a domain the
 * source cannot answer for (HVM) and counts other failures.
 */
static void test_guest_tsc(void)
{
	struct cx_src_ops ops = fx_ops;
	struct cx_stats st;
	struct rig r;
	struct tally t;

	rig_up(&r);
	r.f.dom[0].hvm = true;		/* db: HVM */
	ops.clock = fx_clock;
	ops.guest_tsc = fx_guest_tsc;
	cx_engine_free(r.e);
	r.e = cx_engine_new(&ops, &r.f, MS);
	CU_ASSERT_FATAL(r.e != NULL);
	cx_engine_set_budget(r.e, 0);
	CU_ASSERT_EQUAL(cx_engine_rescan(r.e), 0);
	fx_clock_ns = 1000;
	r.f.ns[1][0] = 7 * MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.gtscs, 1);
	CU_ASSERT_EQUAL(t.last_gtsc.key, 2);
	CU_ASSERT_EQUAL(t.last_gtsc.key_ns, DP_DOMKEY_XEN_DOMID);
	CU_ASSERT_EQUAL(t.last_gtsc.khz, 1000000);
	CU_ASSERT_EQUAL(t.last_gtsc.tsc, 5000000 + 7 * MS);
	CU_ASSERT_EQUAL(t.last_gtsc.window_ns, 10);
	/* the clock is read once to see it is due (1010), around db's one ask
	 * (1020, 1030: not asked again), then once more (1040), around web's
	 * three (1050/1060 ...): the first of those, as good as the others */
	CU_ASSERT_EQUAL(t.last_gtsc.host_ns, 1055);
	/* within the second: nothing more */
	for (int i = 0; i < 5; i++) {
		r.f.ns[1][0] += MS;
		CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	}
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.gtscs, 1);
	CU_ASSERT_EQUAL(r.f.tsc_asks[0], 1);
	CU_ASSERT_EQUAL(r.f.tsc_asks[1], CX_TSC_TRIES);
	/* a second on: again, with the vCPU's time since */
	fx_clock_ns += CX_TSC_EVERY_NS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.gtscs, 2);
	CU_ASSERT_EQUAL(t.last_gtsc.tsc, 5000000 + 12 * MS);
	CU_ASSERT_EQUAL(r.f.tsc_asks[0], 1);
	/* a failure is counted, states nothing, and is retried a second on */
	r.f.tsc_err = -EIO;
	fx_clock_ns += CX_TSC_EVERY_NS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.gtscs, 2);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.tsc_reads, 2);
	CU_ASSERT_EQUAL(st.tsc_errors, 1);
	CU_ASSERT_EQUAL(r.f.tsc_asks[1], 2 * CX_TSC_TRIES + 1);
	/* a busy host: the asks take 1 ms, 5 us, 300 us: the 5 us one is
	 * stated, dated at its middle */
	r.f.tsc_err = 0;
	r.f.tsc_delay[(r.f.tsc_asks[1] + 1) % 3] = 1000000;
	r.f.tsc_delay[(r.f.tsc_asks[1] + 2) % 3] = 5000;
	r.f.tsc_delay[(r.f.tsc_asks[1] + 3) % 3] = 300000;
	fx_clock_ns += CX_TSC_EVERY_NS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.gtscs, 3);
	CU_ASSERT_EQUAL(t.last_gtsc.window_ns, 5010);
	rig_down(&r);
}

/* ---- call chains ---- */

#define PT_ROOT 0x1000ull

/* Map the 4 KiB page at @va to @pa in the fake's 4-level tables (user). */
static void fx_map(struct fake *f, uint64_t va, uint64_t pa)
{
	uint64_t table = PT_ROOT, *pte;

	if (!f->next_table)
		f->next_table = PT_ROOT + 0x1000;
	for (int level = 4; level > 1; level--) {
		pte = (uint64_t *)(f->mem + table + ((va >> (12 + 9 * (level - 1))) & 511) * 8);
		if (!(*pte & 1)) {
			*pte = f->next_table | 0x7;	/* present, writable, user */
			f->next_table += 0x1000;
		}
		table = *pte & ~0xfffull;
	}
	pte = (uint64_t *)(f->mem + table + ((va >> 12) & 511) * 8);
	*pte = pa | 0x7;
}

static void fx_word(struct fake *f, uint64_t pa, uint64_t v)
{
	memcpy(f->mem + pa, &v, 8);
}

#define STACK_VA 0x7ffff000ull
#define STACK_PA 0x80000ull

/* Web vCPU 0 in a function three frames deep: its stack in guest memory
 * (frames at rbp: [saved rbp, return address]) and its context. */
static void fx_stack(struct fake *f)
{
	f->mem = calloc(1, FX_MEM);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->mem);
	fx_map(f, STACK_VA, STACK_PA);
	fx_word(f, STACK_PA + 0x100, STACK_VA + 0x200);
	fx_word(f, STACK_PA + 0x108, 0x401111);
	fx_word(f, STACK_PA + 0x200, STACK_VA + 0x300);
	fx_word(f, STACK_PA + 0x208, 0x402222);
	fx_word(f, STACK_PA + 0x300, 0);
	fx_word(f, STACK_PA + 0x308, 0x403333);
	f->ctx[1][0] = (struct cx_ctx){ .pc = 0x401000, .cr3 = PT_ROOT,
					.fp = STACK_VA + 0x100, .sp = STACK_VA + 0x80 };
}

/*
 * A user sample in web's vCPU 0 with three good frames; then the same
 * vCPU with a misaligned frame pointer (nothing, counted truncated); then
 * a depth limit of two.  The chain comes before every sample of a look,
 * the domain is paused around the reads, the mappings are let go after
 * each walk, and with call graphs off nothing is read.
 */
static void test_callchain(void)
{
	struct rig r;
	struct tally t;
	struct cx_stats st;

	rig_up(&r);
	fx_stack(&r.f);

	/* off: no pause, no read */
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	r.f.ns[1][0] += MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(r.f.pauses + r.f.mem_reads, 0);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.pause_ns + st.walk_ns, 0);	/* no chains: no pause */

	cx_engine_set_callgraph(r.e, 16);
	r.f.ns[1][0] += 3 * MS;	/* three samples in one look */
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.chains, 3);
	CU_ASSERT_EQUAL(t.chained_samples, 3);
	CU_ASSERT_EQUAL(t.last_cc.nr, 3);
	CU_ASSERT_EQUAL(t.last_cc.nr_kernel, 0);
	CU_ASSERT_EQUAL(t.last_cc.flags, DP_RAW_CC_GUEST);
	CU_ASSERT_EQUAL(t.last_frames[0], 0x401111);
	CU_ASSERT_EQUAL(t.last_frames[1], 0x402222);
	CU_ASSERT_EQUAL(t.last_frames[2], 0x403333);
	CU_ASSERT_EQUAL(r.f.read_dom, 2);
	CU_ASSERT_EQUAL(r.f.pauses, 1);
	CU_ASSERT_EQUAL(r.f.unpauses, 1);
	CU_ASSERT_EQUAL(r.f.mem_dones, 1);
	CU_ASSERT_FALSE(r.f.paused);

	/* garbage: a misaligned frame pointer gives no chain, counted */
	r.f.ctx[1][0].fp = STACK_VA + 0x101;
	r.f.ns[1][0] += MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	/* a frame that points below itself (a loop) stops the walk */
	r.f.ctx[1][0].fp = STACK_VA + 0x200;
	fx_word(&r.f, STACK_PA + 0x300, STACK_VA + 0x100);
	r.f.ns[1][0] += MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.chains, 4);
	CU_ASSERT_EQUAL(t.last_cc.nr, 2);
	CU_ASSERT_EQUAL(t.last_cc.flags, DP_RAW_CC_GUEST | DP_RAW_CC_TRUNCATED);
	cx_engine_stats(r.e, &st);
	/* what the looks cost: pause, resume and walk are inside the reads */
	CU_ASSERT(st.pause_ns + st.walk_ns <= st.read_ns);
	CU_ASSERT_EQUAL(st.cc_walks, 3);
	CU_ASSERT_EQUAL(st.cc_chains, 2);
	CU_ASSERT_EQUAL(st.cc_empty, 1);
	CU_ASSERT_EQUAL(st.cc_truncated, 2);
	CU_ASSERT_EQUAL(st.cc_frames, 5);

	/* the depth bound */
	fx_word(&r.f, STACK_PA + 0x300, 0);
	r.f.ctx[1][0].fp = STACK_VA + 0x100;
	cx_engine_set_callgraph(r.e, 2);
	r.f.ns[1][0] += MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	CU_ASSERT_EQUAL(t.last_cc.nr, 2);
	CU_ASSERT_EQUAL(t.last_frames[1], 0x402222);
	free(r.f.mem);
	rig_down(&r);
}

/* ---- which process runs: the task layout ---- */

#define GS_KERNEL 0xffff888000100000ull	/* the vCPU's per-CPU area */
#define CUR_OFF 0x2000ull			/* the task pointer in it */
#define TASK_VA 0xffff888000200000ull
#define TGID_OFF 0x9c4u				/* 4- but not 8-aligned */

/* Web vCPU 0 in user mode, its kernel's per-CPU task pointer leading to a
 * task of tgid @tgid. */
static void fx_task(struct fake *f, uint32_t tgid)
{
	fx_stack(f);
	fx_map(f, GS_KERNEL + CUR_OFF, 0x90000);
	fx_word(f, 0x90000, TASK_VA);
	fx_map(f, TASK_VA, 0x91000);
	fx_word(f, 0x91000 + (TGID_OFF & ~7u), (uint64_t)tgid << 32 | 77);
	f->ctx[1][0].gs_kernel = GS_KERNEL;
}

/* One look at web vCPU 0 (one period's worth), flushed and walked. */
static void look_once(struct rig *r, struct tally *t)
{
	r->f.ns[1][0] += MS;
	CU_ASSERT_EQUAL(cx_engine_tick(r->e, r->w), 0);
	CU_ASSERT_EQUAL(raw_writer_flush(r->w), 0);
	walk(&r->b, t);
}

/*
 * Without a layout nothing is paused or read; with it a user-mode look
 * pauses the domain once and states the tgid read through the space's
 * page tables after the ASID and before the sample; the same space is not
 * read again within CX_WITNESS_EVERY_NS, nor a kernel-mode look; a read
 * that fails is counted, states nothing and is tried at the next look;
 * implausible layouts and unknown domains are refused.
 */
static void test_witness(void)
{
	struct rig r;
	struct tally t;
	struct cx_stats st;

	rig_up(&r);
	fx_task(&r.f, 4242);
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);	/* first: times only */
	look_once(&r, &t);
	CU_ASSERT_EQUAL(r.f.pauses, 0);
	CU_ASSERT_EQUAL(t.gtasks, 0);

	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CUR_OFF, TGID_OFF), 0);
	look_once(&r, &t);
	CU_ASSERT_EQUAL(t.gtasks, 1);
	CU_ASSERT_EQUAL(t.last_tgid, 4242);
	CU_ASSERT_EQUAL(t.tgid_asid, PT_ROOT);
	CU_ASSERT_EQUAL(t.gtask_then_sample, 1);
	CU_ASSERT_EQUAL(r.f.pauses, 1);
	CU_ASSERT_EQUAL(r.f.unpauses, 1);
	CU_ASSERT_FALSE(r.f.paused);
	/* the same space again at once, then in kernel mode: no read */
	look_once(&r, &t);
	r.f.ctx[1][0].kernel = true;
	look_once(&r, &t);
	CU_ASSERT_EQUAL(t.gtasks, 1);
	CU_ASSERT_EQUAL(r.f.pauses, 1);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.witnesses, 1);
	CU_ASSERT_EQUAL(st.wit_errors, 0);
	CU_ASSERT_EQUAL(st.wit_pauses, 1);	/* its cost: inside the read's */
	CU_ASSERT(st.wit_ns <= st.read_ns);

	/* a layout leading nowhere: counted, nothing stated, and the space
	 * not tried again at once */
	r.f.ctx[1][0].kernel = false;
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CUR_OFF + 0x8000, TGID_OFF), 0);
	look_once(&r, &t);
	look_once(&r, &t);
	CU_ASSERT_EQUAL(t.gtasks, 1);
	CU_ASSERT_EQUAL(r.f.pauses, 2);
	CU_ASSERT_EQUAL(r.f.unpauses, 2);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.wit_errors, 1);
	/* paused for a space that turns out to be in the kernel at the
	 * paused read: resumed, nothing read or stated */
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CUR_OFF, TGID_OFF), 0);
	r.f.kernel_when_paused = true;
	look_once(&r, &t);
	r.f.kernel_when_paused = false;
	CU_ASSERT_EQUAL(r.f.pauses, 3);
	CU_ASSERT_EQUAL(r.f.unpauses, 3);
	CU_ASSERT_EQUAL(t.gtasks, 1);
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CUR_OFF, TGID_OFF), 0);
	look_once(&r, &t);
	CU_ASSERT_EQUAL(t.gtasks, 2);
	CU_ASSERT_EQUAL(t.last_tgid, 4242);
	/* a number that is no pid */
	fx_word(&r.f, 0x91000 + (TGID_OFF & ~7u), (uint64_t)(CX_PID_MAX + 1) << 32);
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CUR_OFF, TGID_OFF), 0);
	look_once(&r, &t);
	CU_ASSERT_EQUAL(t.gtasks, 2);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.wit_errors, 2);

	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CUR_OFF, TGID_OFF + 2), -EINVAL);
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CX_LAYOUT_MAX_CURRENT, TGID_OFF), -EINVAL);
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CX_LAYOUT_KERNEL_IMAGE - 8, TGID_OFF), -EINVAL);
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CX_LAYOUT_KERNEL_IMAGE + 0x15018, TGID_OFF), 0);
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 9, CUR_OFF, TGID_OFF), -ENOENT);
	free(r.f.mem);
	rig_down(&r);
}

/* A rig whose engine has a period of @period ns, the default budget and
 * the cost clock (fx_cost_clock), its domains listed. */
static void rig_up_costly(struct rig *r, uint64_t period)
{
	static struct cx_src_ops ops;

	ops = fx_ops;
	ops.cost_clock = fx_cost_clock;
	rig_up(r);
	cx_engine_free(r->e);
	r->e = cx_engine_new(&ops, &r->f, period);
	CU_ASSERT_FATAL(r->e != NULL);
	CU_ASSERT_EQUAL(cx_engine_rescan(r->e), 0);
}

/* @n ticks of 100 us: web's vCPU 0 busy, in user and kernel mode turn
 * about (a workload with a period of two ticks), its vCPU 1 a quarter
 * busy. */
static void budget_run(struct rig *r, unsigned int n, uint64_t period)
{
	for (unsigned int i = 0; i < n; i++) {
		bool k = i & 1;

		r->f.tick = i + 1;
		r->f.ctx[1][0].pc = k ? 0xffffffff81000000ull : 0x401000;
		r->f.ctx[1][0].kernel = k;
		r->f.ns[1][0] += period;
		r->f.ns[1][1] += period / 4;
		CU_ASSERT_EQUAL_FATAL(cx_engine_tick(r->e, r->w), 0);
	}
	CU_ASSERT_EQUAL(raw_writer_flush(r->w), 0);
}

/* The budget's gaps between reads of web's vCPU 0 (in ticks), the first
 * one (a read at once, no stride yet) left out: all within [n/2, 1.5n]
 * rounded out, and spread over them (a fixed gap could keep a phase). */
static void budget_gaps(const struct fake *f, unsigned int n)
{
	unsigned int seen = 0, low = 0;

	for (unsigned int g = 2; g < 64; g++) {
		seen += f->gap_seen[g];
		if (f->gap_seen[g] && (g < n / 2 || g > n + n / 2 + 1))
			CU_FAIL("a gap between reads outside [n/2, 1.5n]");
		low += f->gap_seen[g] && g < n * 3 / 4;
	}
	CU_ASSERT(seen >= 8);
	CU_ASSERT(low >= 1);
}

/* The read budget: reads that cost more than the budget gives a period
 * (here 100.001 us against 5% of 100 us: a stride of 21) are made once
 * every n periods, each carrying its samples, at a jittered point; the
 * samples still follow each vCPU's time and the guest's modes.  The
 * first read also pauses to name its space (a task layout): that second
 * context read is not charged to the stride. */
static void test_budget(void)
{
	const uint64_t period = 100000;
	const unsigned int n = 20000;
	struct rig r;
	struct tally t;
	struct cx_stats st;
	uint64_t user, kern, slack;

	rig_up_costly(&r, period);
	fx_task(&r.f, 4242);
	CU_ASSERT_EQUAL(cx_engine_set_layout(r.e, 2, CUR_OFF, TGID_OFF), 0);
	r.f.ctx_cost_ns = 100001;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	budget_run(&r, n, period);
	walk(&r.b, &t);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.witnesses, 1);
	CU_ASSERT_EQUAL(st.stride_max, 21);
	CU_ASSERT_EQUAL(cx_engine_stride(r.e), 21);
	CU_ASSERT_EQUAL(st.stride_capped, 0);
	CU_ASSERT(st.reads * 10 <= n + n / 4);
	CU_ASSERT_EQUAL(r.f.ctx_reads, st.reads + st.wit_pauses);
	CU_ASSERT_EQUAL(st.lost, 0);
	/* every period's sample but what waits for the next read */
	user = t.samples[2][0][DP_MODE_GUEST_USER];
	kern = t.samples[2][0][DP_MODE_GUEST_KERNEL];
	slack = 2 * st.stride_max;
	CU_ASSERT(user + kern <= n && user + kern + slack >= n);
	CU_ASSERT(t.samples[2][1][DP_MODE_GUEST_KERNEL] <= n / 4 &&
		  t.samples[2][1][DP_MODE_GUEST_KERNEL] + slack >= n / 4);
	CU_ASSERT_EQUAL(st.samples, user + kern + t.samples[2][1][DP_MODE_GUEST_KERNEL]);
	budget_gaps(&r.f, 21);
	/* the profile's end reads what waits: every period's sample */
	CU_ASSERT_EQUAL(cx_engine_drain(r.e, r.w), 0);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.samples, n + n / 4);
	/* half the time in each mode: so half the samples, within 15 points */
	CU_ASSERT(user * 100 >= 35 * (user + kern) && user * 100 <= 65 * (user + kern));
	rig_down(&r);

	/* budget 0: a read each period, one sample each */
	rig_up_costly(&r, period);
	cx_engine_set_budget(r.e, 0);
	r.f.ctx_cost_ns = 100000;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	budget_run(&r, 400, period);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.reads, 400 + 100);
	CU_ASSERT_EQUAL(st.samples, 400 + 100);
	CU_ASSERT_EQUAL(st.stride_max, 1);
	CU_ASSERT_EQUAL(cx_engine_stride(r.e), 1);
	rig_down(&r);
}

/*
 * Under the budget a look comes when a vCPU can be due (cx_engine_wait),
 * not every half stride: with web's vCPU 0 busy, its vCPU 1 idle and db's
 * offline, every look but the first few reads it, about half as many
 * looks as half strides; no wait is under a period, and nothing is lost.
 * With no domain left, the looks stay as far apart.
 */
static void test_look_when_due(void)
{
	const uint64_t period = 100000, span = 20000 * period;
	uint64_t elapsed = 0, ticks = 0;
	struct cx_stats st;
	struct rig r;

	rig_up_costly(&r, period);
	r.f.offline[0] = 1;
	CU_ASSERT_EQUAL(cx_engine_wait(r.e), period);	/* none looked at yet */
	r.f.ctx_cost_ns = 100001;			/* a stride of 21 */
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	while (elapsed < span) {
		uint64_t w = cx_engine_wait(r.e);

		if (w < period) {
			CU_FAIL("a wait under a period");
			break;
		}
		r.f.ns[1][0] += w;
		elapsed += w;
		CU_ASSERT_EQUAL_FATAL(cx_engine_tick(r.e, r.w), 0);
		ticks++;
	}
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(cx_engine_stride(r.e), 21);
	CU_ASSERT(ticks <= st.reads + 4);	/* (the looks before a stride) */
	CU_ASSERT(ticks * 10 * 10 < span / period * 6);	/* under 0.6 of a look a half stride */
	/* all idle now: the longest a read waits */
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	CU_ASSERT_EQUAL(cx_engine_wait(r.e), 31 * period);
	CU_ASSERT_EQUAL(cx_engine_drain(r.e, r.w), 0);
	cx_engine_stats(r.e, &st);
	CU_ASSERT_EQUAL(st.samples, r.f.ns[1][0] / period);
	CU_ASSERT_EQUAL(st.lost, 0);
	r.f.ndom = 0;
	CU_ASSERT_EQUAL(cx_engine_rescan(r.e), 0);
	CU_ASSERT_EQUAL(cx_engine_wait(r.e), 31 * period);
	rig_down(&r);
}

/* Reads in kernel mode cost three times as much, in turns of 500
 * periods in each mode: the stride, taken once for a second of reads,
 * does not follow the mode just read, so each mode's turns weigh what
 * they lasted.  (With a stride set by each read's cost the gap after a
 * kernel read is longer, and the first read of a user turn carries more
 * of the kernel turn before it than the other way round.) */
static void test_budget_costly_state(void)
{
	const uint64_t period = 100000;
	struct rig r;
	struct tally t;
	uint64_t user, kern;

	rig_up_costly(&r, period);
	r.f.ctx_cost_ns = 100000;
	r.f.ctx_cost_kernel_ns = 200000;
	CU_ASSERT_EQUAL(cx_engine_tick(r.e, r.w), 0);
	for (unsigned int i = 0; i < 40000; i++) {
		r.f.ctx[1][0].kernel = (i / 500) & 1;
		r.f.ctx[1][0].pc = r.f.ctx[1][0].kernel ? 0xffffffff81000000ull : 0x401000;
		r.f.ns[1][0] += period;
		CU_ASSERT_EQUAL_FATAL(cx_engine_tick(r.e, r.w), 0);
	}
	CU_ASSERT_EQUAL(raw_writer_flush(r.w), 0);
	walk(&r.b, &t);
	user = t.samples[2][0][DP_MODE_GUEST_USER];
	kern = t.samples[2][0][DP_MODE_GUEST_KERNEL];
	CU_ASSERT(user * 1000 >= 493 * (user + kern) && user * 1000 <= 507 * (user + kern));
	rig_down(&r);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "busy and idle vCPUs", test_busy_idle },
		{ "weight and carry", test_weight_and_carry },
		{ "lifecycle and errors", test_lifecycle_errors },
		{ "address space from CR3", test_asid },
		{ "context re-stated after another collector's records", test_forget },
		{ "each look dated by the source's clock", test_look_time },
		{ "guest TSC stated once a second, not for HVM", test_guest_tsc },
		{ "guest call chains", test_callchain },
		{ "the process of a space read from guest memory", test_witness },
		{ "the read budget: a read every n periods, jittered", test_budget },
		{ "the read budget: a costly state weighs what it lasted", test_budget_costly_state },
		{ "the read budget: a look when a vCPU can be due", test_look_when_due },
	};

	return du_test_main("collect_xen", tests, DU_TEST_N(tests), NULL, NULL);
}
