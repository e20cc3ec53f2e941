/*
 * Unit test of the module's stream encoder (host-kmod/dp_stream.c), built
 * in user space against small stand-ins for the kernel headers it uses
 * (tests/ushim): what the module writes must decode with lib/raw, the
 * daemon's decoder, to exactly the samples and context it encoded.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domprof.h"
#include "raw/raw_stream.h"
#include "util/du_test.h"

#define NR_ENTRIES	20000
#define NR_CPUS		4

/* What the decoder says, one struct per sample. */
struct got {
	u32 cpu, pid, tid, mode, vcpu;
	u64 domain, asid, time, pc;
};

struct dec {
	struct got cur;
	struct got *out;
	size_t n, cap;
	u64 lost;
	/* DP_RAW_CALLCHAIN records: how many, the first one, the last nr */
	u32 chains, cc_nr, cc_nk, cc_flags, cc_last_nr;
	u64 cc_frames[3];
	size_t cc_before;	/* samples decoded before the first chain */
};

static int d_sample(void *ctx, uint64_t pc, uint32_t event)
{
	struct dec *d = ctx;

	if (event != 0 || d->n == d->cap)
		return -EINVAL;
	d->cur.pc = pc;
	d->out[d->n++] = d->cur;
	return 0;
}

static int d_cpu(void *ctx, uint32_t cpu)
{
	((struct dec *)ctx)->cur.cpu = cpu;
	return 0;
}

static int d_task(void *ctx, uint32_t pid, uint32_t tid)
{
	struct dec *d = ctx;

	d->cur.pid = pid;
	d->cur.tid = tid;
	return 0;
}

static int d_mode(void *ctx, uint32_t mode)
{
	((struct dec *)ctx)->cur.mode = mode;
	return 0;
}

static int d_domain(void *ctx, uint64_t key, uint32_t vcpu, uint32_t key_ns)
{
	struct dec *d = ctx;

	/* the module's domain keys are host pids of hypervisor processes */
	if (key_ns != DP_DOMKEY_HOST_PID)
		return -EINVAL;
	d->cur.domain = key;
	d->cur.vcpu = vcpu;
	return 0;
}

static int d_asid(void *ctx, uint64_t asid)
{
	((struct dec *)ctx)->cur.asid = asid;
	return 0;
}

static int d_time(void *ctx, uint64_t ns)
{
	((struct dec *)ctx)->cur.time = ns;
	return 0;
}

static int d_lost(void *ctx, uint64_t n)
{
	((struct dec *)ctx)->lost += n;
	return 0;
}

static int d_chain(void *ctx, uint32_t nr, uint32_t nr_kernel, uint32_t flags,
		   const uint8_t *frames)
{
	struct dec *d = ctx;
	uint32_t i;

	if (!d->chains++) {
		d->cc_nr = nr;
		d->cc_nk = nr_kernel;
		d->cc_flags = flags;
		d->cc_before = d->n;
		for (i = 0; i < nr && i < 3; i++)
			d->cc_frames[i] = raw_cc_frame(frames, i);
	}
	d->cc_last_nr = nr;
	return 0;
}

static const struct raw_ops dec_ops = {
	.sample = d_sample, .cpu = d_cpu, .task = d_task, .mode = d_mode,
	.domain = d_domain, .asid = d_asid, .time = d_time, .lost = d_lost,
};

static bool is_guest(u32 mode)
{
	return mode == DP_MODE_GUEST_KERNEL || mode == DP_MODE_GUEST_USER;
}

/* Random entries over few values, so that context repeats and changes. */
static void make_entry(struct dp_entry *e, u32 *cpu, unsigned int i)
{
	unsigned int r = (unsigned int)rand();

	*cpu = r % NR_CPUS;
	memset(e, 0, sizeof(*e));
	e->time = 1000 + i;
	e->pid = 100 + (r >> 4) % 3;
	e->tid = e->pid + (r >> 6) % 2;
	e->mode = (r >> 8) % DP_MODE_NR;
	e->pc = (r >> 10) % 50 == 0 ? DP_RAW_ESCAPE : 0x400000 + (r >> 12) % 4096;
	if (is_guest(e->mode)) {
		e->domain = e->pid;
		e->vcpu = (r >> 14) % 2;
		e->asid = (r >> 16) % 4 == 0 ? DP_RAW_ASID_UNKNOWN :
			  0x10000ULL << ((r >> 18) % 3);
	} else {
		e->vcpu = DP_RAW_VCPU_UNKNOWN;
	}
}

static void test_round_trip(void)
{
	static struct dp_entry in[NR_ENTRIES];
	static u32 in_cpu[NR_ENTRIES];
	struct dp_stream s;
	struct dec d = { 0 };
	struct raw_header h;
	struct raw_decode_stats st = { 0 };
	size_t cap = 128 + (size_t)NR_ENTRIES * DP_REC_MAX, len, consumed, i;
	unsigned char *buf = malloc(cap);
	int hs;

	CU_ASSERT_FATAL(buf != NULL);
	srand(7);
	memset(&s, 0, sizeof(s));
	len = dp_stream_header(buf, cap, DP_KMOD_EV_CPU_CLOCK, 250000,
			       DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER, 42);
	CU_ASSERT_EQUAL_FATAL(len, sizeof(struct dp_raw_header) + sizeof(struct dp_raw_event));
	for (i = 0; i < NR_ENTRIES; i++) {
		size_t n;

		make_entry(&in[i], &in_cpu[i], (unsigned int)i);
		n = dp_stream_entry(&s, buf + len, in_cpu[i], &in[i], NULL);
		CU_ASSERT_FATAL(n > 0 && n <= DP_REC_MAX && n % DP_RAW_WORD == 0);
		len += n;
		if (i == NR_ENTRIES / 2)
			len += dp_stream_lost(buf + len, 5);
	}

	hs = raw_header_parse(buf, len, &h);
	CU_ASSERT_EQUAL_FATAL(hs, (int)(sizeof(struct dp_raw_header) + sizeof(struct dp_raw_event)));
	CU_ASSERT_EQUAL(h.collector, DP_RAW_COLLECTOR_KMOD);
	CU_ASSERT_EQUAL(h.flags, DP_RAW_F_TIMESTAMPS);
	CU_ASSERT_EQUAL(h.nr_events, 1);
	CU_ASSERT_STRING_EQUAL(h.events[0].name, "TIMER");
	CU_ASSERT_EQUAL(h.events[0].count, 250000);
	CU_ASSERT_EQUAL(h.start_ns, 42);

	d.cap = NR_ENTRIES;
	d.out = calloc(d.cap, sizeof(*d.out));
	CU_ASSERT_FATAL(d.out != NULL);
	CU_ASSERT_EQUAL(raw_decode(&dec_ops, &d, buf + hs, len - (size_t)hs, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, len - (size_t)hs);
	CU_ASSERT_EQUAL(st.unknown_type, 0);
	CU_ASSERT_EQUAL(st.bad_payload, 0);
	CU_ASSERT_EQUAL(d.lost, 5);
	CU_ASSERT_EQUAL_FATAL(d.n, NR_ENTRIES);
	for (i = 0; i < NR_ENTRIES; i++) {
		const struct got *g = &d.out[i];
		const struct dp_entry *e = &in[i];
		bool ok = g->cpu == in_cpu[i] && g->pid == e->pid && g->tid == e->tid &&
			  g->mode == e->mode && g->pc == e->pc && g->time == e->time;

		/* domain and address space are context of guest samples only */
		if (is_guest(e->mode))
			ok = ok && g->domain == e->domain && g->vcpu == e->vcpu &&
			     g->asid == e->asid;
		if (!ok) {
			fprintf(stderr, "entry %zu: cpu %u/%u pid %u/%u mode %u/%u dom %llu/%llu asid %llx/%llx\n",
				i, g->cpu, in_cpu[i], g->pid, e->pid, g->mode, e->mode,
				(unsigned long long)g->domain, (unsigned long long)e->domain,
				(unsigned long long)g->asid, (unsigned long long)e->asid);
			CU_FAIL("decoded sample differs from the entry");
			break;
		}
	}
	free(d.out);
	free(buf);
}

/* A run of samples of one task on one CPU costs TIME + sample only. */
static void test_compact(void)
{
	struct dp_stream s;
	struct dp_entry e = { .pc = 0x1000, .time = 1, .pid = 5, .tid = 6,
			      .mode = DP_MODE_GUEST_USER, .domain = 5, .vcpu = 0,
			      .asid = 0x2000 };
	unsigned char buf[DP_REC_MAX];
	size_t first, next;

	memset(&s, 0, sizeof(s));
	first = dp_stream_entry(&s, buf, 0, &e, NULL);
	/* CPU, TASK, MODE, DOMAIN, ASID, TIME and a sample */
	CU_ASSERT_EQUAL(first, 24 + 24 + 24 + 32 + 24 + 24 + 16);
	e.time++;
	next = dp_stream_entry(&s, buf, 0, &e, NULL);
	CU_ASSERT_EQUAL(next, 24 + 16);
	e.asid = 0x4000;
	next = dp_stream_entry(&s, buf, 0, &e, NULL);
	CU_ASSERT_EQUAL(next, 24 + 24 + 16);
}

/*
 * A chain slot becomes a DP_RAW_CALLCHAIN record right before its sample
 * (raw type 14: nr, nr_kernel, flags, then the frames), and the samples
 * around it still decode with lib/raw.
 */
static void test_chain(void)
{
	struct dp_stream s;
	struct dp_entry e = { .pc = 0x401000, .time = 1, .pid = 5, .tid = 6,
			      .mode = DP_MODE_GUEST_KERNEL, .domain = 5, .vcpu = 0,
			      .asid = 0x2000 };
	u64 slot[1 + DP_KMOD_MAX_CG_DEPTH] = { 0 };
	static unsigned char buf[4 * DP_REC_MAX];
	struct raw_decode_stats st = { 0 };
	struct got out[4];
	struct dec d = { .out = out, .cap = 4 };
	struct raw_ops ops = dec_ops;
	size_t n, len, consumed;
	u64 w[8];
	u16 nr, nk;
	u32 flags;

	memset(&s, 0, sizeof(s));
	slot[0] = DP_CC_WORD(3, 1, DP_RAW_CC_GUEST | DP_RAW_CC_TRUNCATED);
	slot[1] = 0xffffffff81000010ULL;
	slot[2] = 0x401234;
	slot[3] = 0x401300;
	len = dp_stream_entry(&s, buf, 0, &e, slot);
	n = 24 + 24 + 24 + 32 + 24 + 24;	/* the context, as in test_compact */
	CU_ASSERT_EQUAL_FATAL(len, n + 16 + 8 + 3 * 8 + 16);
	memcpy(w, buf + n, sizeof(w));
	CU_ASSERT_EQUAL(w[0], DP_RAW_ESCAPE);
	CU_ASSERT_EQUAL(w[1], (u64)(8 + 3 * 8) << 32 | DP_RAW_CALLCHAIN);
	memcpy(&nr, buf + n + 16, 2);
	memcpy(&nk, buf + n + 18, 2);
	memcpy(&flags, buf + n + 20, 4);
	CU_ASSERT_EQUAL(nr, 3);
	CU_ASSERT_EQUAL(nk, 1);
	CU_ASSERT_EQUAL(flags, DP_RAW_CC_GUEST | DP_RAW_CC_TRUNCATED);
	CU_ASSERT_EQUAL(w[3], 0xffffffff81000010ULL);
	CU_ASSERT_EQUAL(w[4], 0x401234);
	CU_ASSERT_EQUAL(w[5], 0x401300);
	CU_ASSERT_EQUAL(w[6], 0x401000);	/* then the sample itself */
	CU_ASSERT_EQUAL(w[7], 0);

	/* the deepest chain fits DP_REC_MAX with a full context */
	memset(&s, 0, sizeof(s));
	slot[0] = DP_CC_WORD(DP_KMOD_MAX_CG_DEPTH, 0, DP_RAW_CC_GUEST);
	e.pc = DP_RAW_ESCAPE;
	n = dp_stream_entry(&s, buf + len, 0, &e, slot);
	CU_ASSERT(n <= DP_REC_MAX);
	len += n;
	/* slots that cannot be a chain give no record */
	e.pc = 0x401000;
	slot[0] = DP_CC_WORD(DP_KMOD_MAX_CG_DEPTH + 1, 0, 0);
	n = dp_stream_entry(&s, buf + len, 0, &e, slot);
	CU_ASSERT_EQUAL(n, 24 + 16);
	len += n;
	slot[0] = DP_CC_WORD(2, 3, 0);
	n = dp_stream_entry(&s, buf + len, 0, &e, slot);
	CU_ASSERT_EQUAL(n, 24 + 16);
	len += n;
	/* lib/raw, the daemon's decoder, reads the module's chains the same */
	ops.callchain = d_chain;
	CU_ASSERT_EQUAL(raw_decode(&ops, &d, buf, len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, len);
	CU_ASSERT_EQUAL(st.bad_payload, 0);
	CU_ASSERT_EQUAL(st.unknown_type, 0);
	CU_ASSERT_EQUAL_FATAL(d.n, 4);
	CU_ASSERT_EQUAL(d.chains, 2);
	CU_ASSERT_EQUAL(d.cc_before, 0);
	CU_ASSERT_EQUAL(d.cc_nr, 3);
	CU_ASSERT_EQUAL(d.cc_nk, 1);
	CU_ASSERT_EQUAL(d.cc_flags, DP_RAW_CC_GUEST | DP_RAW_CC_TRUNCATED);
	CU_ASSERT_EQUAL(d.cc_frames[0], 0xffffffff81000010ULL);
	CU_ASSERT_EQUAL(d.cc_frames[2], 0x401300);
	CU_ASSERT_EQUAL(d.cc_last_nr, DP_KMOD_MAX_CG_DEPTH);
	CU_ASSERT_EQUAL(out[0].pc, 0x401000);
	CU_ASSERT_EQUAL(out[1].pc, DP_RAW_ESCAPE);
	CU_ASSERT_EQUAL(out[3].mode, DP_MODE_GUEST_KERNEL);
}

static void test_header_refuses(void)
{
	unsigned char buf[256];

	CU_ASSERT_EQUAL(dp_stream_header(buf, 64, DP_KMOD_EV_CYCLES, 1, 0, 0), 0);
	CU_ASSERT_EQUAL(dp_stream_header(buf, sizeof(buf), DP_KMOD_EV_AUTO, 1, 0, 0), 0);
	CU_ASSERT_EQUAL(dp_stream_header(buf, sizeof(buf), 99, 1, 0, 0), 0);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "module stream decodes to what was encoded", test_round_trip },
		{ "context is stated only when it changes", test_compact },
		{ "a call chain goes right before its sample", test_chain },
		{ "header needs room and a real event", test_header_refuses },
	};

	return du_test_main("kmod_stream", tests, DU_TEST_N(tests), NULL, NULL);
}
