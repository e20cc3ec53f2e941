/*
 * Exact guest clock (opd_kvmtsc): KVM's TSC arithmetic both ways, and the
 * offset a guest TSC pair implies against a fake debugfs whose tsc-offset
 * this test chooses, so the right answer is known.  Also every way the
 * exact path says no: forced ping/pong, no entry for the pid, a pair the
 * offset does not explain.  And the hypervisor's reads of a guest TSC
 * (opd_gtscline, Xen): the offset from a pair, the rate measured between
 * reads, and its refusals.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "domprof/raw.h"
#include "opd_gtscline.h"
#include "opd_kvmtsc.h"
#include "opd_kvmtsc_trace.h"
#include "opd_guest.h"
#include "opd_imgcache.h"
#include "util/du_test.h"
#include "util/du_fs.h"


#if defined(__x86_64__)
static char root[64];

/* A read by the hypervisor: at host @host_ns (+- 500 ns) the TSC was @tsc. */
static void line_read_w(struct opd_gtscline *l, uint64_t host_ns, uint64_t window_ns, uint64_t tsc,
			uint32_t khz)
{
	struct dp_raw_guest_tsc g = { .key = 3, .key_ns = DP_DOMKEY_XEN_DOMID, .khz = khz,
				      .host_ns = host_ns, .window_ns = window_ns, .tsc = tsc };

	opd_gtscline_note(l, &g);
}

static void line_read(struct opd_gtscline *l, uint64_t host_ns, uint64_t tsc, uint32_t khz)
{
	line_read_w(l, host_ns, 1000, tsc, khz);
}

#define SEC 1000000000ULL

/*
 * The guest's TSC runs at 2 GHz and 50 ppm fast (2.0001 ticks a host ns)
 * from 40e9 at host 10 s; the guest's clock is the host's plus 123.456 ms.
 * One read: the stated rate, and its 100 ppm of doubt in the uncertainty.
 * Two reads a second apart: the measured rate, right to nanoseconds two
 * seconds on, where the stated one is 100 us off.
 */
static void test_line(void)
{
	struct opd_gtscline l = { 0 };
	struct dp_ag_tsc p = { .window_tsc = 400 };
	const long double rate = 2.0001L;
	const int64_t truth = 123456000;
	int64_t off;
	uint64_t unc, host;
	char why[160];

	CU_ASSERT_EQUAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), -ENODATA);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "no TSC read"));
	line_read(&l, 10 * SEC, 40000000000ULL, 2000000);
	/* a pair 1 ms after the read */
	host = 10 * SEC + 1000000;
	p.tsc = 40000000000ULL + (uint64_t)(rate * 1000000);
	p.time_ns = host + truth;
	CU_ASSERT_EQUAL_FATAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(why, "");
	/* the stated rate is 50 ppm slow over 1 ms: 50 ns */
	CU_ASSERT(llabs(off - truth) <= 60);
	/* 100 ns the pair's window, 500 the read's, 100 the rate's doubt over
	 * 1 ms, 2000 margin */
	CU_ASSERT(unc >= 2650 && unc <= 2750);
	/* the second read, a second on: the rate measured */
	line_read(&l, 11 * SEC, 40000000000ULL + (uint64_t)(rate * SEC), 2000000);
	host = 13 * SEC;
	p.tsc = 40000000000ULL + (uint64_t)(rate * 3 * SEC);
	p.time_ns = host + truth;
	CU_ASSERT_EQUAL_FATAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), 0);
	CU_ASSERT(llabs(off - truth) <= 5);
	/* 100 + 500 + 2 s x 1000 ns / 1 s + 2000 */
	CU_ASSERT(unc >= 4550 && unc <= 4650);
	/* a pair before the read converts too */
	p.tsc = 40000000000ULL + (uint64_t)(rate * (SEC / 2));
	p.time_ns = 10 * SEC + SEC / 2 + truth;
	CU_ASSERT_EQUAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), 0);
	CU_ASSERT(llabs(off - truth) <= 5);
}

/*
 * A busy host dates some reads badly (a long window): a pair is
 * converted from the read that dates it best, and the rate measured
 * between the best-dated reads.  The TSC here runs 50 ppm fast at 2 GHz;
 * the reads each second have windows of 5 ms, except two of 1 us.
 */
static void test_line_best_read(void)
{
	struct opd_gtscline l = { 0 };
	struct dp_ag_tsc p = { .window_tsc = 400 };
	const long double rate = 2.0001L;
	const int64_t truth = -77000;
	int64_t off;
	uint64_t unc;
	char why[160];

	for (uint64_t s = 0; s < 20; s++) {
		uint64_t w = s == 3 || s == 17 ? 1000 : 5000000;
		/* a long window is dated at its middle, a little off: the
		 * true time of the read is 1 ms after it */
		uint64_t err = w == 1000 ? 0 : 1000000;

		line_read_w(&l, (100 + s) * SEC, w, 7000000ULL + (uint64_t)(rate * (s * SEC + err)),
			    2000000);
	}
	CU_ASSERT_EQUAL(l.n, OPD_GTSCLINE_READS);
	/* a pair at 118.5 s (the 1 us read of 117 s kept, that of 103 s gone:
	 * only the last 16 are) */
	p.tsc = 7000000ULL + (uint64_t)(rate * (18 * SEC + SEC / 2));
	p.time_ns = 118 * SEC + SEC / 2 + (uint64_t)truth;
	CU_ASSERT_EQUAL_FATAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), 0);
	/* from the good read of 117 s, 1.5 s away, at the stated rate (no two
	 * good reads to measure it): 75 us off, within the 150 us of doubt
	 * the stated rate's 100 ppm give over 1.5 s */
	CU_ASSERT(llabs(off - truth) >= 70000 && llabs(off - truth) <= 80000);
	CU_ASSERT((uint64_t)llabs(off - truth) <= unc);
	CU_ASSERT(unc < 2000 + 100 + 500 + 151000);
	/* one more good read: the rate is measured between the two, and the
	 * pair dated to nanoseconds */
	line_read_w(&l, 120 * SEC, 1000, 7000000ULL + (uint64_t)(rate * 20 * SEC), 2000000);
	CU_ASSERT_EQUAL_FATAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), 0);
	CU_ASSERT(llabs(off - truth) <= 5);
	CU_ASSERT(unc < 4000);
}

/* The tightest exact offset is kept against looser ones while it is
 * young; its doubt grows by OPD_GCLOCK_AGE_PPM with age. */
static void test_offer_exact(void)
{
	struct opd_gclock c;

	opd_gclock_init(&c);
	CU_ASSERT(!opd_gclock_keep_exact(&c, 0));
	CU_ASSERT(opd_gclock_offer_exact(&c, 111, 1000, 10 * SEC));
	CU_ASSERT(opd_gclock_exact(&c));
	/* 100 ms on: 1 us + 10 us of age beats 50 us */
	CU_ASSERT(!opd_gclock_offer_exact(&c, 222, 50000, 10 * SEC + SEC / 10));
	CU_ASSERT_EQUAL(c.off, 111);
	CU_ASSERT_EQUAL(c.unc, 1000);
	/* 1 s on: 101 us does not */
	CU_ASSERT(opd_gclock_offer_exact(&c, 333, 50000, 11 * SEC));
	CU_ASSERT_EQUAL(c.off, 333);
	/* a tighter one is always taken */
	CU_ASSERT(opd_gclock_offer_exact(&c, 444, 4000, 11 * SEC + 1));
	CU_ASSERT_EQUAL(c.off, 444);
	/* it stands in for pairs that give nothing for OPD_GCLOCK_KEEP_NS */
	CU_ASSERT(opd_gclock_keep_exact(&c, 11 * SEC + OPD_GCLOCK_KEEP_NS - 1));
	CU_ASSERT(!opd_gclock_keep_exact(&c, 11 * SEC + OPD_GCLOCK_KEEP_NS + 1));
	opd_gclock_drop_exact(&c, "test");
	CU_ASSERT(!opd_gclock_keep_exact(&c, 11 * SEC + 2));
}

/* What the line refuses: a pair far from every read, a guest's time out
 * of range, a rate far from the stated one; a TSC that went back or a
 * rate that changed starts the line over. */
static void test_line_refusals(void)
{
	struct opd_gtscline l = { 0 };
	struct dp_ag_tsc p = { .window_tsc = 400 };
	int64_t off;
	uint64_t unc;
	char why[160];

	line_read(&l, 10 * SEC, 40000000000ULL, 2000000);
	p.tsc = 40000000000ULL + 2 * 31 * SEC;	/* 31 s on */
	p.time_ns = 41 * SEC;
	CU_ASSERT_EQUAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), -ERANGE);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "far from"));
	p.tsc = 40000000000ULL;
	p.time_ns = UINT64_MAX;
	CU_ASSERT_EQUAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), -ERANGE);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "out of range"));
	/* 1% fast over a second */
	line_read(&l, 11 * SEC, 40000000000ULL + 2020000000ULL, 2000000);
	p.time_ns = 11 * SEC;
	CU_ASSERT_EQUAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), -ERANGE);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "rate"));
	/* back in time: over, with one read */
	line_read(&l, 12 * SEC, 1000, 2000000);
	CU_ASSERT_EQUAL(l.restarts, 1);
	CU_ASSERT_EQUAL(l.n, 1);
	p.tsc = 1000 + 2000000;
	p.time_ns = 12 * SEC + 1000000 + 77;
	CU_ASSERT_EQUAL(opd_gtscline_offset(&l, &p, &off, &unc, why, sizeof(why)), 0);
	CU_ASSERT(llabs(off - 77) <= 1);
	/* another rate: over */
	line_read(&l, 13 * SEC, 5000, 1000000);
	CU_ASSERT_EQUAL(l.restarts, 2);
	CU_ASSERT_EQUAL(l.n, 1);
	CU_ASSERT_EQUAL(opd_gtscline_last(&l)->khz, 1000000);
}


static uint64_t rd_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void put(const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* A vCPU whose TSC runs @offset ticks from the host's, unscaled. */
static void fake_vcpu(long long offset)
{
	char d[256], text[64];

	snprintf(d, sizeof(d), "%s/kvm", root);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/kvm/4242-17", root);
	mkdir(d, 0755);
	snprintf(d, sizeof(d), "%s/kvm/4242-17/vcpu0", root);
	mkdir(d, 0755);
	snprintf(text, sizeof(text), "%lld\n", offset);
	put("kvm/4242-17/vcpu0/tsc-offset", text);
}

static void test_arith(void)
{
	/* ratio 1.0 with 48 fraction bits (AMD), 1.5, and none */
	uint64_t one = 1ULL << 48, h = 123456789012345ULL;

	CU_ASSERT_EQUAL(opd_kvmtsc_guest_tsc(h, -1000, one, 48), h - 1000);
	CU_ASSERT_EQUAL(opd_kvmtsc_host_tsc(h - 1000, -1000, one, 48), h);
	CU_ASSERT_EQUAL(opd_kvmtsc_guest_tsc(1000, 7, 3ULL << 47, 48), 1507);
	CU_ASSERT_EQUAL(opd_kvmtsc_host_tsc(1507, 7, 3ULL << 47, 48), 1000);
	CU_ASSERT_EQUAL(opd_kvmtsc_guest_tsc(h, 5, 1, 0), h + 5);
	/* a negative offset larger than the host TSC wraps, as in the CPU */
	CU_ASSERT_EQUAL(opd_kvmtsc_host_tsc(opd_kvmtsc_guest_tsc(10, -1000000, 1, 0), -1000000, 1, 0),
			10);
}

static void test_offset(void)
{
	/* the guest's TSC is 10^12 ticks behind the host's; its clock 5 s
	 * ahead of the host's */
	const long long toff = -1000000000000LL;
	const int64_t ahead = 5000000000LL;
	struct opd_kvmtsc *k;
	struct dp_ag_tsc t = { 0 };
	int64_t off = 0;
	uint64_t unc = 0, a, b, ns;
	struct timespec sl = { 0, 250 * 1000 * 1000 };

	fake_vcpu(toff);
	k = opd_kvmtsc_new(4242, root, false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	/* the host TSC rate is not known yet */
	a = rd_tsc();
	ns = mono_ns();
	b = rd_tsc();
	t.tsc = a + (b - a) / 2 + (uint64_t)toff;
	t.time_ns = ns + (uint64_t)ahead;
	t.window_tsc = (uint32_t)(b - a);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -EAGAIN);
	nanosleep(&sl, NULL);
	/* a pair taken now, and the one from 250 ms ago: both say 5 s */
	CU_ASSERT_EQUAL_FATAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(off > ahead - 200000 && off < ahead + 200000);
	CU_ASSERT(unc >= 2000 && unc < 200000);
	a = rd_tsc();
	ns = mono_ns();
	b = rd_tsc();
	t.tsc = a + (b - a) / 2 + (uint64_t)toff;
	t.time_ns = ns + (uint64_t)ahead;
	CU_ASSERT_EQUAL_FATAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(off > ahead - 200000 && off < ahead + 200000);
	CU_ASSERT_STRING_EQUAL(opd_kvmtsc_why(k), "");
	CU_ASSERT_EQUAL(opd_kvmtsc_offset_changes(k), 0);

	/* KVM moved the offset by 1 ms of ticks between two reads (as on
	 * every vCPU load in the TCG lab): the pair's offset would still look
	 * plausible, but which offset it was taken under is not known */
	fake_vcpu(toff + 3000000LL);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ESTALE);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "moved between reads"));
	CU_ASSERT_EQUAL(opd_kvmtsc_offset_changes(k), 1);
	/* held since: exact again, with the offset now read */
	a = rd_tsc();
	ns = mono_ns();
	b = rd_tsc();
	t.tsc = a + (b - a) / 2 + (uint64_t)(toff + 3000000LL);
	t.time_ns = ns + (uint64_t)ahead;
	CU_ASSERT_EQUAL_FATAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(off > ahead - 200000 && off < ahead + 200000);
	CU_ASSERT_STRING_EQUAL(opd_kvmtsc_why(k), "");

	/* KVM moved the offset by a minute of ticks the guest did not see:
	 * refused as moved, then, once stable, the pair is not explained */
	fake_vcpu(toff + 60LL * 3000000000LL);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ESTALE);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ERANGE);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "does not follow"));
	CU_ASSERT_EQUAL(opd_kvmtsc_offset_changes(k), 2);
	opd_kvmtsc_free(k);
}

static void test_refusals(void)
{
	struct opd_kvmtsc *k;
	struct dp_ag_tsc t = { .tsc = 1, .time_ns = 1 };
	int64_t off;
	uint64_t unc;

	k = opd_kvmtsc_new(4242, root, true);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ENOTSUP);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "forced"));
	opd_kvmtsc_free(k);

	k = opd_kvmtsc_new(999, root, false);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "pid 999"));
	opd_kvmtsc_free(k);

	k = opd_kvmtsc_new(0, root, false);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ENOTSUP);
	opd_kvmtsc_free(k);

	/* no vCPU 3 */
	k = opd_kvmtsc_new(4242, root, false);
	t.cpu = 3;
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "vcpu3/tsc-offset"));
	opd_kvmtsc_free(k);
}

/* A guest pair read now on vCPU 0 under KVM offset @o, the guest's clock
 * @ahead ns ahead of the host's; *@ns: the host time it was read at. */
static void pair_now(struct dp_ag_tsc *t, long long o, int64_t ahead, uint64_t *ns)
{
	uint64_t a = rd_tsc(), b;

	*ns = mono_ns();
	b = rd_tsc();
	memset(t, 0, sizeof(*t));
	t->tsc = a + (b - a) / 2 + (uint64_t)o;
	t->time_ns = *ns + (uint64_t)ahead;
	t->window_tsc = (uint32_t)(b - a);
}

static bool near_ns(int64_t v, int64_t want)
{
	return v > want - 200000 && v < want + 200000;
}

static void test_follow_fits_two(uint64_t t0, long long o2, uint64_t ms, int64_t ahead);

/*
 * KVM's offset writes followed (as from the tracepoint): a vCPU whose
 * offset KVM moves on every load, as under the TCG lab's unstable TSC.
 * A pair is converted under the offset in force when it was read, not
 * the one debugfs shows now; a pair that fits two offsets is placed by
 * the last exact offset, or not at all; a loss forgets what came before.
 */
static void test_follow(void)
{
	long long o1 = -1000000000000LL;
	const int64_t ahead = 5000000000LL;
	struct timespec sl = { 0, 250 * 1000 * 1000 };
	uint64_t t0 = mono_ns(), unc = 0, ns, h0, ms;
	long long d, o2, o0;
	struct opd_kvmtsc *k;
	struct dp_ag_tsc t;
	int64_t off = 0;

	fake_vcpu(42);	/* debugfs's value: what KVM shows now, not then */
	k = opd_kvmtsc_new(4242, root, false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	h0 = rd_tsc();
	nanosleep(&sl, NULL);
	/* ticks in a millisecond, roughly, to place the writes */
	ms = (rd_tsc() - h0) * 1000000ULL / (mono_ns() - t0);
	d = 3 * (long long)ms;	/* 3 ms descheduled: the offset drops by that */
	o0 = o1 + 20 * (long long)ms;
	o2 = o1 - d;
	opd_kvmtsc_follow(k, t0);
	pair_now(&t, o1, ahead, &ns);
	/* loaded 5 ms before the pair (o0 -> o1), put 1 ms after it and
	 * loaded again 3 ms later (o1 -> o2) */
	opd_kvmtsc_note_write(k, ns + 4 * 1000000, 0, o1, o2);
	opd_kvmtsc_note_write(k, ns - 5 * 1000000, 0, o0, o1);	/* (out of order) */
	CU_ASSERT_EQUAL(opd_kvmtsc_offset_changes(k), 2);
	CU_ASSERT_EQUAL_FATAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(near_ns(off, ahead));
	CU_ASSERT(unc >= 2000 && unc < 200000);

	opd_kvmtsc_free(k);
	test_follow_fits_two(t0, o2, ms, ahead);

	/* no write seen: debugfs's offset holds since writes were followed */
	fake_vcpu(o1);
	k = opd_kvmtsc_new(4242, root, false);
	nanosleep(&sl, NULL);
	opd_kvmtsc_follow(k, t0);
	pair_now(&t, o1, ahead, &ns);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(near_ns(off, ahead));
	/* a pair that moves the clock 5 ms is held, the last offset kept;
	 * the next pair back where it was drops it (a pair placed under the
	 * wrong offset); two pairs that agree on a move make it */
	pair_now(&t, o1, ahead + 5000000, &ns);
	off = 0;
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -EAGAIN);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "held until the next pair"));
	pair_now(&t, o1, ahead, &ns);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(near_ns(off, ahead));
	pair_now(&t, o1, ahead + 5000000, &ns);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -EAGAIN);
	pair_now(&t, o1, ahead + 5000000, &ns);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(near_ns(off, ahead + 5000000));
	opd_kvmtsc_free(k);
}

/* (test_follow's second half) */
static void test_follow_fits_two(uint64_t t0, long long o2, uint64_t ms, int64_t ahead)
{
	struct timespec sl = { 0, 250 * 1000 * 1000 };
	long long o0, o1;
	struct opd_kvmtsc *k;
	struct dp_ag_tsc t;
	uint64_t unc = 0, ns;
	int64_t off = 0;

	/* KVM moved the offset up by 100 ms at 20 ms before the pair, and
	 * back down (below) 1 ms before: the pair fits the first offset's
	 * span too.  Before that write was seen (it came late, from another
	 * CPU's ring) the pair was placed; then the last exact offset says
	 * which fits. */
	o0 = o2 + 30 * (long long)ms;
	o1 = o2 + 100 * (long long)ms;
	k = opd_kvmtsc_new(4242, root, false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	nanosleep(&sl, NULL);
	opd_kvmtsc_follow(k, t0);
	pair_now(&t, o2, ahead, &ns);
	opd_kvmtsc_note_write(k, ns - 1000000, 0, o1, o2);
	CU_ASSERT_EQUAL_FATAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(near_ns(off, ahead));
	opd_kvmtsc_note_write(k, ns - 20 * 1000000, 0, o0, o1);
	off = 0;
	CU_ASSERT_EQUAL_FATAL(opd_kvmtsc_offset(k, &t, &off, &unc), 0);
	CU_ASSERT(near_ns(off, ahead));
	opd_kvmtsc_free(k);

	/* the same with no exact offset before: not placed */
	k = opd_kvmtsc_new(4242, root, false);
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	nanosleep(&sl, NULL);
	opd_kvmtsc_follow(k, t0);
	pair_now(&t, o2, ahead, &ns);
	opd_kvmtsc_note_write(k, ns - 1000000, 0, o1, o2);
	opd_kvmtsc_note_write(k, ns - 20 * 1000000, 0, o0, o1);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -EAGAIN);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "fits 2"));
	/* writes lost after the pair was read: what was in force then is
	 * no longer known */
	opd_kvmtsc_note_lost(k, ns + 1000);
	CU_ASSERT_EQUAL(opd_kvmtsc_offset(k, &t, &off, &unc), -ERANGE);
	CU_ASSERT_PTR_NOT_NULL(strstr(opd_kvmtsc_why(k), "explains"));
	opd_kvmtsc_free(k);
}

static const char fmt_text[] =
	"name: kvm_write_tsc_offset\nID: 1234\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:__u64 previous_tsc_offset;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:__u64 next_tsc_offset;\toffset:24;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"vcpu=%u prev=%llu next=%llu\", REC->vcpu_id\n";

/* A sample record as the kernel writes it: header, pid, tid, time, raw. */
static size_t put_sample(uint8_t *b, uint32_t pid, uint64_t t, uint32_t vcpu, int64_t prev,
			 int64_t next)
{
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = 8 + 16 + 4 + 36 };
	uint32_t rs = 36;

	memset(b, 0, h.size);
	memcpy(b, &h, 8);
	memcpy(b + 8, &pid, 4);
	memcpy(b + 12, &pid, 4);
	memcpy(b + 16, &t, 8);
	memcpy(b + 24, &rs, 4);
	memcpy(b + 28 + 8, &vcpu, 4);
	memcpy(b + 28 + 16, &prev, 8);
	memcpy(b + 28 + 24, &next, 8);
	return h.size;
}

static void test_decode(void)
{
	struct opd_kvmtsc_fmt f;
	struct opd_kvmtsc_write w;
	uint8_t b[128];
	size_t n;
	struct perf_event_header lh = { .type = PERF_RECORD_LOST, .size = 8 + 16 + 16 };
	uint64_t lt = 777;

	CU_ASSERT_EQUAL_FATAL(opd_kvmtsc_fmt_parse(fmt_text, &f), 0);
	CU_ASSERT(f.vcpu_off == 8 && f.vcpu_size == 4 && f.prev_off == 16 && f.next_off == 24);
	CU_ASSERT_EQUAL(opd_kvmtsc_fmt_parse("field:unsigned int vcpu_id; offset:8; size:4;", &f),
			-EINVAL);
	opd_kvmtsc_fmt_parse(fmt_text, &f);
	n = put_sample(b, 233, 5555, 1, -100, -200);
	CU_ASSERT_EQUAL(opd_kvmtsc_decode(&f, b, n, &w), 1);
	CU_ASSERT(w.pid == 233 && w.t_ns == 5555 && w.vcpu == 1 && w.prev == -100 && w.next == -200);
	/* every shorter length is refused, nothing read past the end */
	for (size_t i = 0; i < n; i++)
		CU_ASSERT(opd_kvmtsc_decode(&f, b, i, &w) < 0);
	/* a raw part too short for the fields */
	b[24] = 20;
	CU_ASSERT_EQUAL(opd_kvmtsc_decode(&f, b, n, &w), -EBADMSG);
	memset(b, 0, sizeof(b));
	memcpy(b, &lh, 8);
	memcpy(b + 32, &lt, 8);
	CU_ASSERT_EQUAL(opd_kvmtsc_decode(&f, b, lh.size, &w), 2);
	CU_ASSERT_EQUAL(w.t_ns, 777);
}

/*
 * Ping the guest at host time @ping_ns and answer as an agent whose clock
 * reads @ping_ns when it receives and sends, the pong arriving at host
 * time @pong_ns.
 */
static void answer_ping(struct opd_guest *g, uint64_t ping_ns, uint64_t pong_ns)
{
	static uint8_t b[4096];
	struct dp_ag_pong p = { 0 };
	uint8_t out[4096];
	size_t n;

	opd_guest_ping(g, ping_ns);
	n = opd_guest_output(g, out, sizeof(out));
	for (size_t o = 0; o + 12 <= n;) {
		struct dp_ag_frame f;

		memcpy(&f, out + o, sizeof(f));
		if (f.type == DP_AG_PING)
			memcpy(&p.token, out + o + 12, 8);
		o += 12 + f.len;
	}
	p.recv_ns = p.send_ns = ping_ns;
	CU_ASSERT_EQUAL(opd_guest_feed(g, b, (size_t)ap_put_pong(b, sizeof(b), &p), pong_ns), 0);
}

/*
 * Two processes mapping different files at the same addresses (static
 * non-PIE programs), switching on one vCPU.  A sample 200 us after a
 * switch with a ping/pong offset 500 us off lands in the task before the
 * switch, whose mappings hold the pc too: wrong, and ambiguous.  With the
 * exact offset it is the task after the switch, and not ambiguous.
 */
static void test_guest_exact(void)
{
	static uint8_t b[4096];
	char session[128], dir[192];
	struct opd_stats st = { 0 };
	struct opd_images *images = opd_images_new();
	struct opd_imgcache *cache;
	struct opd_guest_limits lim;
	struct opd_guest *g;
	struct dp_ag_hello h = { .proto_min = 1, .proto_max = 2, .nr_cpus = 1, .clock_id = 1,
				 .flags = DP_AG_HELLO_F_PERF | DP_AG_HELLO_F_SWITCH | DP_AG_HELLO_F_TSC,
				 .now_ns = 1000, .instance = 7 };
	struct dp_ag_mmap m = { .cpu = DP_AG_CPU_UNKNOWN, .start = 0x10000000, .len = 0x1000,
				.prot = 5 };
	struct dp_ag_switch sw[3] = {
		{ .time_ns = 100000000, .next_pid = 10, .next_tid = 10 },
		{ .time_ns = 110000000, .prev_pid = 10, .prev_tid = 10, .next_pid = 20, .next_tid = 20 },
		{ .time_ns = 120000000, .prev_pid = 20, .prev_tid = 20, .next_pid = 10, .next_tid = 10 },
	};
	struct opd_guest_sample smp = { .host_ns = 110200000, .pc = 0x10000040, .vcpu = 0,
					.mode = DP_MODE_GUEST_USER };
	struct opd_guest_res r;
	struct opd_gclock *gc;

	snprintf(session, sizeof(session), "%s/session", root);
	mkdir(session, 0755);
	snprintf(dir, sizeof(dir), "%s/domains", session);
	mkdir(dir, 0755);
	snprintf(dir, sizeof(dir), "%s/domains/g", session);
	cache = opd_imgcache_new(session, &st);
	opd_guest_limits_default(&lim);
	g = opd_guest_new("g", dir, &lim, images, cache, &st);
	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_EQUAL(opd_guest_feed(g, b, (size_t)ap_put_hello(b, sizeof(b), &h, "6.1", 3), 1000), 0);
	m.pid = m.tid = 10;
	m.cookie = 1;
	CU_ASSERT_EQUAL(opd_guest_feed(g, b, (size_t)ap_put_mmap(b, sizeof(b), &m, "/a", 2), 0), 0);
	m.pid = m.tid = 20;
	m.cookie = 2;
	CU_ASSERT_EQUAL(opd_guest_feed(g, b, (size_t)ap_put_mmap(b, sizeof(b), &m, "/b", 2), 0), 0);
	CU_ASSERT_EQUAL(opd_guest_feed(g, b, (size_t)ap_put_switches(b, sizeof(b), 0, sw, 3), 0), 0);

	/* ping/pong: a 1 ms round trip whose halves differ, so its offset
	 * says the guest is 500 us behind the host when the two agree */
	answer_ping(g, 50000000, 51000000);
	gc = opd_guest_gclock(g);
	CU_ASSERT_FATAL(opd_gclock_known(gc));
	CU_ASSERT_FALSE(opd_gclock_exact(gc));
	CU_ASSERT_EQUAL(gc->off, -500000);

	opd_guest_resolve(g, &smp, &r);
	CU_ASSERT_EQUAL(r.pid, 10);	/* ping/pong: the wrong one */
	CU_ASSERT_EQUAL(st.guest_user_ambiguous, 1);

	opd_gclock_set_exact(gc, 0, 3000);
	CU_ASSERT(opd_gclock_exact(gc) && opd_gclock_unc(gc) == 3000);
	opd_guest_resolve(g, &smp, &r);
	CU_ASSERT_EQUAL(r.pid, 20);
	CU_ASSERT_EQUAL(st.guest_user_ambiguous, 1);
	/* 10 us after the switch: ambiguous, the task then running keeps it */
	smp.host_ns = 110010000;
	opd_guest_resolve(g, &smp, &r);
	CU_ASSERT_EQUAL(r.pid, 20);
	CU_ASSERT_EQUAL(st.guest_user_ambiguous, 2);

	/* back to ping/pong */
	opd_gclock_drop_exact(gc, "test");
	CU_ASSERT(!opd_gclock_exact(gc) && gc->off == -500000 && gc->tsc_fallbacks == 1);
	opd_guest_free(g);
	opd_imgcache_free(cache);
	opd_images_free(images);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "KVM TSC arithmetic", test_arith },
		{ "offset from a guest pair", test_offset },
		{ "refusals", test_refusals },
		{ "KVM's offset writes followed", test_follow },
		{ "tracepoint records decoded", test_decode },
		{ "exact clock decides a switch ping/pong gets wrong", test_guest_exact },
		{ "hypervisor's reads of the guest TSC", test_line },
		{ "hypervisor's reads refused", test_line_refusals },
		{ "the best-dated of the hypervisor's reads", test_line_best_read },
		{ "the tightest exact offset kept while young", test_offer_exact },
	};
	int rc;

	snprintf(root, sizeof(root), "/tmp/dp-gclock.XXXXXX");
	if (!mkdtemp(root))
		return 99;
	rc = du_test_main("gclock", tests, DU_TEST_N(tests), NULL, NULL);
	du_rm_tree(root);
	return rc;
}
#else
int main(void)
{
	return 77;	/* no TSC: skipped */
}
#endif
