/* Unit tests for lib/raw: writer and decoder of the raw stream. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "raw/raw_stream.h"
#include "util/du_test.h"

/* ---- helpers ------------------------------------------------------------ */

struct membuf {
	uint8_t *p;
	size_t len, cap;
	size_t max_chunk;	/* largest chunk the sink was handed */
	unsigned int chunks;
	int fail;		/* error the sink returns, 0 = accept */
};

static int mem_sink(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;

	if (m->fail)
		return m->fail;
	if (m->len + len > m->cap) {
		size_t cap = m->cap ? m->cap : 4096;
		uint8_t *np;

		while (cap < m->len + len)
			cap *= 2;
		np = realloc(m->p, cap);
		if (!np)
			return -ENOMEM;
		m->p = np;
		m->cap = cap;
	}
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	m->chunks++;
	if (len > m->max_chunk)
		m->max_chunk = len;
	return 0;
}

/* Every callback appends one line of text, so two decodes compare as strings. */
struct rec_log {
	char *s;
	size_t len, cap;
	int fail_after;		/* the sample handler fails on this sample (1-based) */
	int nsamples;
};

static void log_add(struct rec_log *l, const char *fmt, ...)
{
	char line[9000];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (l->len + n + 1 > l->cap) {
		size_t cap = l->cap ? l->cap : 4096;

		while (cap < l->len + n + 1)
			cap *= 2;
		l->s = realloc(l->s, cap);
		CU_ASSERT_FATAL(l->s != NULL);
		l->cap = cap;
	}
	memcpy(l->s + l->len, line, n + 1);
	l->len += n;
}

static void log_free(struct rec_log *l)
{
	free(l->s);
	memset(l, 0, sizeof(*l));
}

static const char *log_str(const struct rec_log *l)
{
	return l->s ? l->s : "";
}

static int r_sample(void *ctx, uint64_t pc, uint32_t event)
{
	struct rec_log *l = ctx;

	log_add(l, "sample %llx %u\n", (unsigned long long)pc, event);
	if (l->fail_after && ++l->nsamples == l->fail_after)
		return -EIO;
	return 0;
}

static int r_cpu(void *ctx, uint32_t cpu)
{
	log_add(ctx, "cpu %u\n", cpu);
	return 0;
}

static int r_task(void *ctx, uint32_t pid, uint32_t tid)
{
	log_add(ctx, "task %u %u\n", pid, tid);
	return 0;
}

static int r_mode(void *ctx, uint32_t mode)
{
	log_add(ctx, "mode %u\n", mode);
	return 0;
}

static int r_domain(void *ctx, uint64_t key, uint32_t vcpu, uint32_t key_ns)
{
	log_add(ctx, "domain %u:%llu %u\n", key_ns, (unsigned long long)key, vcpu);
	return 0;
}

static int r_lost(void *ctx, uint64_t count)
{
	log_add(ctx, "lost %llu\n", (unsigned long long)count);
	return 0;
}

static int r_time(void *ctx, uint64_t ns)
{
	log_add(ctx, "time %llu\n", (unsigned long long)ns);
	return 0;
}

static int r_mmap(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t path_len)
{
	log_add(ctx, "mmap %u %u %llx %llx %llx %llu %u:%u %x [%.*s]\n", m->pid, m->tid,
		(unsigned long long)m->start, (unsigned long long)m->len,
		(unsigned long long)m->pgoff, (unsigned long long)m->ino, m->maj, m->min,
		m->prot, (int)path_len, path);
	return 0;
}

static int r_comm(void *ctx, uint32_t pid, uint32_t tid, uint32_t flags, const char *comm,
		  size_t comm_len)
{
	log_add(ctx, "comm %u %u %u [%.*s]\n", pid, tid, flags, (int)comm_len, comm);
	return 0;
}

static int r_fork(void *ctx, const struct dp_raw_task_ev *t)
{
	log_add(ctx, "fork %u %u %u %u\n", t->pid, t->ppid, t->tid, t->ptid);
	return 0;
}

static int r_exit(void *ctx, const struct dp_raw_task_ev *t)
{
	log_add(ctx, "exit %u %u %u %u\n", t->pid, t->ppid, t->tid, t->ptid);
	return 0;
}

static int r_kmod(void *ctx, uint64_t start, uint64_t size, const char *name, size_t name_len)
{
	log_add(ctx, "kmod %llx %llx [%.*s]\n", (unsigned long long)start,
		(unsigned long long)size, (int)name_len, name);
	return 0;
}

static int r_asid(void *ctx, uint64_t asid)
{
	log_add(ctx, "asid %llx\n", (unsigned long long)asid);
	return 0;
}

static int r_callchain(void *ctx, uint32_t nr, uint32_t nr_kernel, uint32_t flags,
		       const uint8_t *frames)
{
	log_add(ctx, "cc %u %u %x", nr, nr_kernel, flags);
	for (uint32_t i = 0; i < nr; i++)
		log_add(ctx, " %llx", (unsigned long long)raw_cc_frame(frames, i));
	log_add(ctx, "\n");
	return 0;
}

static int r_guest_tsc(void *ctx, const struct dp_raw_guest_tsc *g)
{
	log_add(ctx, "gtsc %llu/%u %llu %llu %llu %u\n", (unsigned long long)g->key, g->key_ns,
		(unsigned long long)g->host_ns, (unsigned long long)g->window_ns,
		(unsigned long long)g->tsc, g->khz);
	return 0;
}

static int r_time_spread(void *ctx, uint64_t ns)
{
	log_add(ctx, "spread %llu\n", (unsigned long long)ns);
	return 0;
}

static int r_guest_task(void *ctx, uint32_t tgid)
{
	log_add(ctx, "gtask %u\n", tgid);
	return 0;
}

static const struct raw_ops rec_ops = {
	.sample = r_sample, .cpu = r_cpu, .task = r_task, .mode = r_mode,
	.domain = r_domain, .lost = r_lost, .time = r_time, .mmap = r_mmap,
	.comm = r_comm, .fork = r_fork, .exit = r_exit, .kmod = r_kmod,
	.asid = r_asid, .callchain = r_callchain, .guest_tsc = r_guest_tsc,
	.time_spread = r_time_spread, .guest_task = r_guest_task,
};

static const struct dp_raw_event test_events[2] = {
	{ .name = "CPU_CLK_UNHALTED", .count = 100000, .unit_mask = 0,
	  .flags = DP_RAW_EV_KERNEL | DP_RAW_EV_USER },
	{ .name = "cpu-clock", .count = 4000, .unit_mask = 3, .flags = DP_RAW_EV_USER },
};

/* One record of every type, header first.  Returns the expected log. */
static const char *write_every_type(struct raw_writer *w)
{
	static char path[300];
	struct dp_raw_mmap m = {
		.pid = 10, .tid = 11, .start = 0x400000, .len = 0x2000, .pgoff = 0x1000,
		.ino = 77, .maj = 8, .min = 1, .prot = 5,
	};
	struct dp_raw_task_ev fk = { .pid = 20, .ppid = 1, .tid = 21, .ptid = 2 };
	struct dp_raw_task_ev ex = { .pid = 30, .ppid = 3, .tid = 31, .ptid = 4 };

	memset(path, 'p', sizeof(path));
	memcpy(path, "/usr/lib/libx.so", 16);
	CU_ASSERT_EQUAL(raw_put_header(w, DP_RAW_F_TIMESTAMPS, DP_RAW_COLLECTOR_GEN, 12345,
				       test_events, 2), 0);
	CU_ASSERT_EQUAL(raw_put_cpu(w, 3), 0);
	CU_ASSERT_EQUAL(raw_put_task(w, 100, 101), 0);
	CU_ASSERT_EQUAL(raw_put_mode(w, DP_MODE_GUEST_USER), 0);
	CU_ASSERT_EQUAL(raw_put_domain(w, 4242, DP_RAW_VCPU_UNKNOWN), 0);
	CU_ASSERT_EQUAL(raw_put_domain_ns(w, DP_DOMKEY_XEN_DOMID, 7, 3), 0);
	CU_ASSERT_EQUAL(raw_put_time(w, 999999999999ULL), 0);
	CU_ASSERT_EQUAL(raw_put_sample(w, 0x401234, 1), 0);
	CU_ASSERT_EQUAL(raw_put_lost(w, 17), 0);
	CU_ASSERT_EQUAL(raw_put_mmap(w, &m, path, 16), 0);
	CU_ASSERT_EQUAL(raw_put_mmap(w, &m, path, 17), 0);	/* odd length, padded */
	CU_ASSERT_EQUAL(raw_put_mmap(w, &m, path, 0), 0);
	CU_ASSERT_EQUAL(raw_put_comm(w, 5, 6, DP_RAW_COMM_EXEC, "bash"), 0);
	CU_ASSERT_EQUAL(raw_put_comm(w, 5, 7, 0, "exactly16chars!!xyz"), 0);
	CU_ASSERT_EQUAL(raw_put_fork(w, &fk), 0);
	CU_ASSERT_EQUAL(raw_put_exit(w, &ex), 0);
	CU_ASSERT_EQUAL(raw_put_sample(w, DP_RAW_ESCAPE, 0), 0);
	CU_ASSERT_EQUAL(raw_put_kmod(w, 0xffffffff81000000ULL, 0x1000000, "vmlinux", 7), 0);
	CU_ASSERT_EQUAL(raw_put_kmod(w, 0xffffffffc0000000ULL, 0x3000, "kvm_amd", 7), 0);
	CU_ASSERT_EQUAL(raw_put_sample(w, 0, 0), 0);
	CU_ASSERT_EQUAL(raw_put_sample(w, 0xfffffffffffffffeULL, 0xffffffffU), 0);
	return "cpu 3\n"
	       "task 100 101\n"
	       "mode 3\n"
	       "domain 0:4242 4294967295\n"
	       "domain 1:7 3\n"
	       "time 999999999999\n"
	       "sample 401234 1\n"
	       "lost 17\n"
	       "mmap 10 11 400000 2000 1000 77 8:1 5 [/usr/lib/libx.so]\n"
	       "mmap 10 11 400000 2000 1000 77 8:1 5 [/usr/lib/libx.sop]\n"
	       "mmap 10 11 400000 2000 1000 77 8:1 5 []\n"
	       "comm 5 6 1 [bash]\n"
	       "comm 5 7 0 [exactly16chars!!]\n"
	       "fork 20 1 21 2\n"
	       "exit 30 3 31 4\n"
	       "sample ffffffffffffffff 0\n"
	       "kmod ffffffff81000000 1000000 [vmlinux]\n"
	       "kmod ffffffffc0000000 3000 [kvm_amd]\n"
	       "sample 0 0\n"
	       "sample fffffffffffffffe 4294967295\n";
}
#define EVERY_TYPE_RECORDS	20
#define EVERY_TYPE_SAMPLES	4

/* Build a stream with the writer; the caller frees m->p. */
static const char *build_every_type(struct membuf *m, size_t chunk)
{
	struct raw_writer *w = raw_writer_new(mem_sink, m, chunk);
	const char *expect;

	CU_ASSERT_FATAL(w != NULL);
	expect = write_every_type(w);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	return expect;
}

/* Header + records in one call. */
static int decode_all(const uint8_t *buf, size_t len, struct rec_log *l,
		      struct raw_decode_stats *st, size_t *consumed)
{
	struct raw_header h;
	int hs = raw_header_parse(buf, len, &h);

	if (hs < 0)
		return hs;
	*consumed = hs;
	{
		size_t c = 0;
		int rc = raw_decode(&rec_ops, l, buf + hs, len - hs, &c, st);

		*consumed += c;
		return rc;
	}
}

/* ---- tests -------------------------------------------------------------- */

static void test_round_trip(void)
{
	struct membuf m = { 0 };
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	struct raw_header h;
	const char *expect = build_every_type(&m, 0);
	size_t consumed;
	int hs;

	hs = raw_header_parse(m.p, m.len, &h);
	CU_ASSERT_EQUAL(hs, (int)(sizeof(struct dp_raw_header) + 2 * sizeof(struct dp_raw_event)));
	CU_ASSERT_EQUAL(h.version, DP_RAW_VERSION);
	CU_ASSERT_EQUAL(h.flags, DP_RAW_F_TIMESTAMPS);
	CU_ASSERT_EQUAL(h.collector, DP_RAW_COLLECTOR_GEN);
	CU_ASSERT_EQUAL(h.start_ns, 12345);
	CU_ASSERT_EQUAL(h.nr_events, 2);
	CU_ASSERT_STRING_EQUAL(h.events[0].name, "CPU_CLK_UNHALTED");
	CU_ASSERT_EQUAL(h.events[0].count, 100000);
	CU_ASSERT_EQUAL(h.events[0].flags, DP_RAW_EV_KERNEL | DP_RAW_EV_USER);
	CU_ASSERT_STRING_EQUAL(h.events[1].name, "cpu-clock");
	CU_ASSERT_EQUAL(h.events[1].unit_mask, 3);

	CU_ASSERT_EQUAL(decode_all(m.p, m.len, &l, &st, &consumed), 0);
	CU_ASSERT_EQUAL(consumed, m.len);
	CU_ASSERT_STRING_EQUAL(log_str(&l), expect);
	CU_ASSERT_EQUAL(st.records, EVERY_TYPE_RECORDS);
	CU_ASSERT_EQUAL(st.samples, EVERY_TYPE_SAMPLES);
	CU_ASSERT_EQUAL(st.unknown_type, 0);
	CU_ASSERT_EQUAL(st.bad_payload, 0);
	CU_ASSERT_EQUAL(m.len % DP_RAW_WORD, 0);
	log_free(&l);
	free(m.p);
}

static void test_escape_pc(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	uint64_t word;
	size_t consumed;

	CU_ASSERT_FATAL(w != NULL);
	CU_ASSERT_EQUAL(raw_put_sample(w, DP_RAW_ESCAPE, 7), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	/* Escape, type word, 16-byte dp_raw_sample. */
	CU_ASSERT_EQUAL_FATAL(m.len, 32);
	memcpy(&word, m.p + 8, 8);
	CU_ASSERT_EQUAL(word, (uint64_t)DP_RAW_SAMPLE | (uint64_t)16 << 32);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, 32);
	CU_ASSERT_STRING_EQUAL(log_str(&l), "sample ffffffffffffffff 7\n");
	CU_ASSERT_EQUAL(st.samples, 1);
	CU_ASSERT_EQUAL(st.records, 1);
	log_free(&l);
	free(m.p);
}

/*
 * Split the stream at every byte boundary: decoding the pieces (the second
 * starting where the first stopped) gives the same records and counters as
 * decoding it whole.
 */
static void test_split_every_byte(void)
{
	struct membuf m = { 0 };
	struct rec_log whole = { 0 };
	struct raw_decode_stats st_whole = { 0 };
	const char *expect = build_every_type(&m, 0);
	struct raw_header h;
	const uint8_t *recs;
	size_t rlen, k, consumed;
	int hs;

	hs = raw_header_parse(m.p, m.len, &h);
	CU_ASSERT_FATAL(hs > 0);
	recs = m.p + hs;
	rlen = m.len - hs;
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &whole, recs, rlen, &consumed, &st_whole), 0);
	CU_ASSERT_STRING_EQUAL(log_str(&whole), expect);

	for (k = 0; k <= rlen; k++) {
		struct rec_log l = { 0 };
		struct raw_decode_stats st = { 0 };
		size_t c1 = 99, c2 = 99;

		CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, recs, k, &c1, &st), 0);
		CU_ASSERT(c1 <= k);
		CU_ASSERT(c1 % DP_RAW_WORD == 0);
		/* Everything before the cut that is a whole record was used. */
		CU_ASSERT(k - c1 < 16 + sizeof(struct dp_raw_mmap) + 24);
		CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, recs + c1, rlen - c1, &c2, &st), 0);
		CU_ASSERT_EQUAL(c1 + c2, rlen);
		CU_ASSERT_STRING_EQUAL(log_str(&l), log_str(&whole));
		CU_ASSERT_EQUAL(st.records, st_whole.records);
		CU_ASSERT_EQUAL(st.samples, st_whole.samples);
		log_free(&l);
	}

	/* The header too: every prefix shorter than it asks for more. */
	for (k = 0; k < (size_t)hs; k++)
		CU_ASSERT_EQUAL(raw_header_parse(m.p, k, &h), -EAGAIN);
	log_free(&whole);
	free(m.p);
}

/* A reader that gets one byte at a time, like a slow pipe. */
static void test_byte_at_a_time(void)
{
	struct membuf m = { 0 };
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	const char *expect = build_every_type(&m, 0);
	struct raw_header h;
	uint8_t *acc = malloc(m.len);
	size_t have = 0, i;
	int hs = 0;

	CU_ASSERT_FATAL(acc != NULL);
	for (i = 0; i < m.len; i++) {
		size_t consumed = 0;

		acc[have++] = m.p[i];
		if (!hs) {
			int r = raw_header_parse(acc, have, &h);

			if (r == -EAGAIN)
				continue;
			CU_ASSERT_FATAL(r > 0);
			hs = r;
			memmove(acc, acc + hs, have - hs);
			have -= hs;
		}
		CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, acc, have, &consumed, &st), 0);
		memmove(acc, acc + consumed, have - consumed);
		have -= consumed;
	}
	CU_ASSERT_EQUAL(have, 0);
	CU_ASSERT_STRING_EQUAL(log_str(&l), expect);
	CU_ASSERT_EQUAL(st.records, EVERY_TYPE_RECORDS);
	CU_ASSERT_EQUAL(st.samples, EVERY_TYPE_SAMPLES);
	free(acc);
	log_free(&l);
	free(m.p);
}

/* Small chunks: the sink sees chunks no larger than asked (bar one big
 * record), and their concatenation is the same stream. */
static void test_writer_chunks(void)
{
	struct membuf big = { 0 }, small = { 0 };

	build_every_type(&big, 0);
	build_every_type(&small, 64);
	CU_ASSERT_EQUAL_FATAL(big.len, small.len);
	CU_ASSERT(memcmp(big.p, small.p, big.len) == 0);
	CU_ASSERT_EQUAL(big.chunks, 1);
	CU_ASSERT(small.chunks > 5);
	/* The header (168 bytes) and the mmap records are single records > 64. */
	CU_ASSERT(small.max_chunk <= sizeof(struct dp_raw_header) + 2 * sizeof(struct dp_raw_event));
	free(big.p);
	free(small.p);
}

static void test_writer_sink_error(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 32);
	struct rec_log l = { 0 };
	size_t consumed;
	int i, rc = 0;

	CU_ASSERT_FATAL(w != NULL);
	m.fail = -ENOSPC;
	/* Two samples fill the chunk; the third needs a flush, which fails. */
	for (i = 0; i < 3 && !rc; i++)
		rc = raw_put_sample(w, 0x1000 + i, 0);
	CU_ASSERT_EQUAL(rc, -ENOSPC);
	CU_ASSERT_EQUAL(i, 3);
	CU_ASSERT_EQUAL(raw_writer_flush(w), -ENOSPC);
	/* Nothing was lost: once the sink recovers the two samples arrive. */
	m.fail = 0;
	CU_ASSERT_EQUAL(raw_put_sample(w, 0x2000, 1), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, NULL), 0);
	CU_ASSERT_STRING_EQUAL(log_str(&l), "sample 1000 0\nsample 1001 0\nsample 2000 1\n");

	CU_ASSERT_EQUAL(raw_writer_close(NULL), 0);
	log_free(&l);
	free(m.p);
}

static void test_writer_limits(void)
{
	static char big[DP_RAW_MAX_PAYLOAD + 8];
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct dp_raw_mmap mm = { 0 };
	struct dp_raw_event ev[DP_RAW_MAX_EVENTS + 1];

	CU_ASSERT_FATAL(w != NULL);
	memset(ev, 0, sizeof(ev));
	CU_ASSERT_EQUAL(raw_put_mmap(w, &mm, big, DP_RAW_MAX_PATH + 1), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(raw_put_kmod(w, 0, 0, big, DP_RAW_MAX_PATH + 1), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(raw_put_record(w, 99, big, DP_RAW_MAX_PAYLOAD + 1), -EMSGSIZE);
	CU_ASSERT_EQUAL(raw_put_header(w, 0, 0, 0, ev, DP_RAW_MAX_EVENTS + 1), -EINVAL);
	CU_ASSERT_EQUAL(m.len, 0);
	CU_ASSERT_EQUAL(raw_put_mmap(w, &mm, big, DP_RAW_MAX_PATH), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, 99, big, DP_RAW_MAX_PAYLOAD), 0);
	CU_ASSERT_EQUAL(raw_put_header(w, 0, 0, 0, ev, DP_RAW_MAX_EVENTS), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	free(m.p);
	CU_ASSERT_PTR_NULL(raw_writer_new(NULL, NULL, 0));
}

static void put_words(struct membuf *m, uint64_t a, uint64_t b)
{
	CU_ASSERT_EQUAL(mem_sink(m, &a, 8), 0);
	CU_ASSERT_EQUAL(mem_sink(m, &b, 8), 0);
}

static void test_unknown_types(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	static const char payload[13] = "thirteen byte";
	size_t consumed;

	CU_ASSERT_FATAL(w != NULL);
	CU_ASSERT_EQUAL(raw_put_sample(w, 1, 0), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, 200, payload, sizeof(payload)), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, 0, NULL, 0), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_NR_TYPES, payload, 8), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, 0xffffffffU, payload, 1), 0);
	CU_ASSERT_EQUAL(raw_put_cpu(w, 9), 0);
	CU_ASSERT_EQUAL(raw_put_sample(w, 2, 0), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, m.len);
	CU_ASSERT_STRING_EQUAL(log_str(&l), "sample 1 0\ncpu 9\nsample 2 0\n");
	CU_ASSERT_EQUAL(st.unknown_type, 4);
	CU_ASSERT_EQUAL(st.bad_payload, 0);
	CU_ASSERT_EQUAL(st.records, 3);
	log_free(&l);
	free(m.p);
}

/* DP_RAW_ASID (the kernel module's guest CR3): decoded, checked for size. */
static void test_asid(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	struct dp_raw_asid a = { .asid = 0x1234000 };
	size_t consumed;

	CU_ASSERT_FATAL(w != NULL);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_ASID, &a, sizeof(a)), 0);
	CU_ASSERT_EQUAL(raw_put_sample(w, 7, 0), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_ASID, &a, 4), 0);	/* short */
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, m.len);
	CU_ASSERT_STRING_EQUAL(log_str(&l), "asid 1234000\nsample 7 0\n");
	CU_ASSERT_EQUAL(st.unknown_type, 0);
	CU_ASSERT_EQUAL(st.bad_payload, 1);
	log_free(&l);
	free(m.p);
}

/* DP_RAW_CALLCHAIN (doc/raw-stream.md's fixed layout): decoded; counts
 * and sizes outside the layout are malformed; the writer refuses them. */
static void test_callchain(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	uint64_t fr[DP_RAW_CC_MAX + 1];
	uint8_t bad[16 + 8 * 3];
	struct dp_raw_callchain h;
	size_t consumed;

	for (unsigned int i = 0; i <= DP_RAW_CC_MAX; i++)
		fr[i] = 0xffffffff81000000ULL + i;
	fr[2] = 0x401000;
	CU_ASSERT_FATAL(w != NULL);
	CU_ASSERT_EQUAL(raw_put_callchain(w, 3, 2, DP_RAW_CC_TRUNCATED | DP_RAW_CC_GUEST, fr), 0);
	CU_ASSERT_EQUAL(raw_put_sample(w, 7, 0), 0);
	CU_ASSERT_EQUAL(raw_put_callchain(w, 0, 0, 0, fr), -EINVAL);
	CU_ASSERT_EQUAL(raw_put_callchain(w, DP_RAW_CC_MAX + 1, 0, 0, fr), -EINVAL);
	CU_ASSERT_EQUAL(raw_put_callchain(w, 2, 3, 0, fr), -EINVAL);
	CU_ASSERT_EQUAL(raw_put_callchain(w, DP_RAW_CC_MAX, 0, 0, fr), 0);
	/* hand-made bad ones: nr 0; nr_kernel > nr; nr says 3, 2 frames; nr 200 */
	memset(bad, 0, sizeof(bad));
	h = (struct dp_raw_callchain){ .nr = 0 };
	memcpy(bad, &h, sizeof(h));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_CALLCHAIN, bad, 8), 0);
	h = (struct dp_raw_callchain){ .nr = 1, .nr_kernel = 2 };
	memcpy(bad, &h, sizeof(h));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_CALLCHAIN, bad, 16), 0);
	h = (struct dp_raw_callchain){ .nr = 3 };
	memcpy(bad, &h, sizeof(h));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_CALLCHAIN, bad, 24), 0);
	h = (struct dp_raw_callchain){ .nr = 200 };
	memcpy(bad, &h, sizeof(h));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_CALLCHAIN, bad, 8), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_CALLCHAIN, bad, 4), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, m.len);
	CU_ASSERT_EQUAL(strncmp(log_str(&l), "cc 3 2 3 ffffffff81000000 ffffffff81000001 401000\n"
				"sample 7 0\ncc 127 0 0 ffffffff81000000", 78), 0);
	CU_ASSERT_EQUAL(st.bad_payload, 5);
	CU_ASSERT_EQUAL(st.records, 3);
	log_free(&l);
	free(m.p);
}

/* DP_RAW_GUEST_TSC: decoded field by field; a rate of 0 or a short or
 * long payload is malformed; the writer refuses a rate of 0. */
static void test_guest_tsc(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	struct dp_raw_guest_tsc g = { .key = 7, .key_ns = DP_DOMKEY_XEN_DOMID, .khz = 2100000,
				      .host_ns = 5000000000ULL, .window_ns = 1200,
				      .tsc = 123456789012ULL };
	uint8_t buf[48] = { 0 };
	size_t consumed;

	CU_ASSERT_FATAL(w != NULL);
	CU_ASSERT_EQUAL(raw_put_guest_tsc(w, &g), 0);
	g.khz = 0;
	CU_ASSERT_EQUAL(raw_put_guest_tsc(w, &g), -EINVAL);
	memcpy(buf, &g, sizeof(g));	/* khz 0, by hand */
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_GUEST_TSC, buf, sizeof(g)), 0);
	g.khz = 1;
	memcpy(buf, &g, sizeof(g));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_GUEST_TSC, buf, sizeof(g) - 8), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_GUEST_TSC, buf, sizeof(g) + 8), 0);
	/* and a TIME_SPREAD, good and short */
	CU_ASSERT_EQUAL(raw_put_time_spread(w, 1500000), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_TIME_SPREAD, buf, 4), 0);
	/* a GUEST_TASK, good, short, and of pid 0 */
	CU_ASSERT_EQUAL(raw_put_guest_task(w, 4242), 0);
	CU_ASSERT_EQUAL(raw_put_guest_task(w, 0), -EINVAL);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_GUEST_TASK, buf, 4), 0);
	memset(buf, 0, 8);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_GUEST_TASK, buf, 8), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, m.len);
	CU_ASSERT_STRING_EQUAL(log_str(&l), "gtsc 7/1 5000000000 1200 123456789012 2100000\n"
			       "spread 1500000\ngtask 4242\n");
	CU_ASSERT_EQUAL(st.bad_payload, 6);
	log_free(&l);
	free(m.p);
}

static void test_bad_payloads(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	uint8_t buf[256];
	struct dp_raw_mmap mm = { .pid = 1, .path_len = 10 };
	struct dp_raw_kmod km = { .start = 1, .name_len = 3 };
	size_t consumed;

	CU_ASSERT_FATAL(w != NULL);
	memset(buf, 'x', sizeof(buf));
	/* Fixed-size types with a payload one byte short, one byte long, empty. */
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_CPU, buf, 4), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_TASK, buf, 9), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_LOST, NULL, 0), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_SAMPLE, buf, 8), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_COMM, buf, 31), 0);
	/* mmap: path_len says 10, payload carries 5 / 11 path bytes. */
	memcpy(buf, &mm, sizeof(mm));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_MMAP, buf, sizeof(mm) + 5), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_MMAP, buf, sizeof(mm) + 11), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_MMAP, buf, sizeof(mm) - 1), 0);
	/* kmod: name runs past the payload. */
	memset(buf, 'x', sizeof(buf));
	memcpy(buf, &km, sizeof(km));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_KMOD, buf, sizeof(km) + 2), 0);
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_KMOD, buf, sizeof(km) + 3), 0);	/* fine */
	CU_ASSERT_EQUAL(raw_writer_flush(w), 0);
	/* A plain sample whose event word does not fit 32 bits. */
	put_words(&m, 0x5000, 0x100000000ULL);
	CU_ASSERT_EQUAL(raw_put_sample(w, 0x6000, 1), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);

	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, m.len);
	CU_ASSERT_STRING_EQUAL(log_str(&l), "kmod 1 0 [xxx]\nsample 6000 1\n");
	CU_ASSERT_EQUAL(st.bad_payload, 10);
	CU_ASSERT_EQUAL(st.unknown_type, 0);
	CU_ASSERT_EQUAL(st.records, 2);
	log_free(&l);
	free(m.p);
}

/* path_len / name_len over DP_RAW_MAX_PATH is malformed even when the
 * payload really carries that many bytes. */
static void test_path_over_max(void)
{
	static uint8_t buf[DP_RAW_MAX_PAYLOAD];
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct raw_decode_stats st = { 0 };
	struct rec_log l = { 0 };
	struct dp_raw_mmap mm = { .path_len = DP_RAW_MAX_PATH + 1 };
	struct dp_raw_kmod km = { .name_len = DP_RAW_MAX_PATH + 1 };
	size_t consumed;

	CU_ASSERT_FATAL(w != NULL);
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, &mm, sizeof(mm));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_MMAP, buf, sizeof(mm) + DP_RAW_MAX_PATH + 1), 0);
	memcpy(buf, &km, sizeof(km));
	CU_ASSERT_EQUAL(raw_put_record(w, DP_RAW_KMOD, buf, sizeof(km) + DP_RAW_MAX_PATH + 1), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, m.len);
	CU_ASSERT_EQUAL(st.bad_payload, 2);
	CU_ASSERT_EQUAL(l.len, 0);
	log_free(&l);
	free(m.p);
}

static void test_oversize_payload(void)
{
	struct membuf m = { 0 };
	struct rec_log l = { 0 };
	struct raw_decode_stats st = { 0 };
	size_t consumed = 12345;

	put_words(&m, 0x10, 0);
	put_words(&m, DP_RAW_ESCAPE, DP_RAW_CPU | (uint64_t)(DP_RAW_MAX_PAYLOAD + 1) << 32);
	put_words(&m, 0x20, 0);
	/* Rejected as soon as the length word is seen, without the payload. */
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), -EBADMSG);
	CU_ASSERT_EQUAL(consumed, 16);
	CU_ASSERT_STRING_EQUAL(log_str(&l), "sample 10 0\n");

	m.len = 0;
	put_words(&m, DP_RAW_ESCAPE, 77 | (uint64_t)0xffffffffU << 32);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), -EBADMSG);
	CU_ASSERT_EQUAL(consumed, 0);
	log_free(&l);
	free(m.p);
}

static void test_handler_error(void)
{
	struct membuf m = { 0 };
	struct raw_writer *w = raw_writer_new(mem_sink, &m, 0);
	struct rec_log l = { .fail_after = 3 };
	struct raw_decode_stats st = { 0 };
	size_t consumed;
	int i;

	CU_ASSERT_FATAL(w != NULL);
	for (i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(raw_put_sample(w, i, 0), 0);
	CU_ASSERT_EQUAL(raw_writer_close(w), 0);
	CU_ASSERT_EQUAL(raw_decode(&rec_ops, &l, m.p, m.len, &consumed, &st), -EIO);
	CU_ASSERT_EQUAL(consumed, 3 * 16);
	CU_ASSERT_EQUAL(st.samples, 3);
	log_free(&l);
	free(m.p);
}

static void test_null_handlers(void)
{
	struct membuf m = { 0 };
	const struct raw_ops none = { 0 };
	struct raw_decode_stats st = { 0 };
	size_t consumed;
	struct raw_header h;
	int hs;

	build_every_type(&m, 0);
	hs = raw_header_parse(m.p, m.len, &h);
	CU_ASSERT_FATAL(hs > 0);
	CU_ASSERT_EQUAL(raw_decode(&none, NULL, m.p + hs, m.len - hs, &consumed, &st), 0);
	CU_ASSERT_EQUAL(consumed, m.len - hs);
	CU_ASSERT_EQUAL(st.records, EVERY_TYPE_RECORDS);
	free(m.p);
}

static void test_header_errors(void)
{
	struct membuf m = { 0 };
	struct raw_header h;
	struct dp_raw_header *dh;
	struct dp_raw_event *ev;
	uint8_t *copy;

	build_every_type(&m, 0);
	copy = malloc(m.len);
	CU_ASSERT_FATAL(copy != NULL);
	dh = (struct dp_raw_header *)copy;
	ev = (struct dp_raw_event *)(copy + sizeof(*dh));

#define MUTATE(stmt, expect) do {					\
		memcpy(copy, m.p, m.len);				\
		stmt;							\
		CU_ASSERT_EQUAL(raw_header_parse(copy, m.len, &h), expect); \
	} while (0)
	MUTATE((void)0, 168);
	MUTATE(dh->magic ^= 1, -EBADMSG);
	MUTATE(dh->version = 2, -EBADMSG);
	MUTATE(dh->version = 0, -EBADMSG);
	MUTATE(dh->word_size = 4, -EBADMSG);
	MUTATE(dh->nr_events = DP_RAW_MAX_EVENTS + 1, -EBADMSG);
	MUTATE(dh->nr_events = 3, -EBADMSG);		/* header_size too small */
	MUTATE(dh->header_size = 100, -EBADMSG);
	MUTATE(dh->header_size = 171, -EBADMSG);	/* not word aligned */
	MUTATE(dh->header_size = 0x7fffffff, -EBADMSG);
	MUTATE(dh->header_size = 176, 176);		/* a longer (later) header */
	CU_ASSERT_EQUAL(raw_header_parse(copy, 170, &h), -EAGAIN);
	MUTATE((dh->nr_events = 1, dh->header_size = 104), 104);
	/* An event name with no NUL still comes out terminated. */
	MUTATE(memset(ev[0].name, 'E', DP_RAW_EVENT_NAME), 168);
	CU_ASSERT_EQUAL(strlen(h.events[0].name), DP_RAW_EVENT_NAME);
#undef MUTATE
	/* A wrong magic is reported even before the rest has arrived. */
	CU_ASSERT_EQUAL(raw_header_parse("NOTMAGIC", 8, &h), -EBADMSG);
	CU_ASSERT_EQUAL(raw_header_parse("NOTMAGIC", 7, &h), -EAGAIN);
	free(copy);
	free(m.p);
}

/* xorshift: deterministic random input. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Random bytes, and random word soups biased towards escapes and small
 * type/length words: never a crash, always a bounded *consumed, and the
 * damage shows up in the return value or the counters. */
static void test_garbage(void)
{
	const struct raw_ops none = { 0 };
	uint64_t words[512];
	struct raw_decode_stats total = { 0 };
	struct raw_header h;
	int iter, ebadmsg = 0;

	for (iter = 0; iter < 20000; iter++) {
		size_t n = rnd() % 512, i, consumed = 0;
		struct raw_decode_stats st = { 0 };
		struct rec_log l = { 0 };
		int rc;

		for (i = 0; i < n; i++) {
			uint64_t r = rnd();

			switch (iter % 2 ? r % 4 : 3) {
			case 0:
				words[i] = DP_RAW_ESCAPE;
				break;
			case 1:
				words[i] = (r >> 8) % (DP_RAW_NR_TYPES + 2) |
					   ((r >> 16) % 80) << 32;
				break;
			case 2:
				words[i] = r >> 40;
				break;
			default:
				words[i] = r;
			}
		}
		if (iter % 7 == 0 && n > 0)
			words[0] = DP_RAW_MAGIC;
		(void)raw_header_parse(words, n * 8, &h);
		/* Odd lengths too: a trailing partial word. */
		n = n * 8 - (n && iter % 3 ? rnd() % 8 : 0);
		rc = raw_decode(iter % 5 ? &rec_ops : &none, &l, words, n, &consumed, &st);
		CU_ASSERT(rc == 0 || rc == -EBADMSG);
		CU_ASSERT(consumed <= n);
		if (rc == -EBADMSG)
			ebadmsg++;
		total.records += st.records;
		total.unknown_type += st.unknown_type;
		total.bad_payload += st.bad_payload;
		log_free(&l);
	}
	CU_ASSERT(ebadmsg > 0);
	CU_ASSERT(total.unknown_type > 0);
	CU_ASSERT(total.bad_payload > 0);
	CU_ASSERT(total.records > 0);
}

/*
 * Inputs the fuzzer found that once misbehaved (tests/fuzz/fuzz_raw.c).
 * Each is fed to the header parser and the decoder as the fuzzer does.
 */
static const struct {
	const char *name;
	const uint8_t *data;
	size_t len;
} fuzz_regressions[] = {
	{ "empty", (const uint8_t *)"", 0 },
	/* libFuzzer's empty input is a NULL pointer: NULL + 0 in the cursor. */
	{ "empty NULL", NULL, 0 },
};

static void test_fuzz_regressions(void)
{
	size_t i;

	for (i = 0; i < sizeof(fuzz_regressions) / sizeof(fuzz_regressions[0]); i++) {
		struct raw_header h;
		struct raw_decode_stats st = { 0 };
		struct rec_log l = { 0 };
		size_t consumed = 0, off = 0;
		int hs, rc;

		hs = raw_header_parse(fuzz_regressions[i].data, fuzz_regressions[i].len, &h);
		if (hs > 0)
			off = hs;
		rc = raw_decode(&rec_ops, &l, off ? fuzz_regressions[i].data + off :
				fuzz_regressions[i].data,
				fuzz_regressions[i].len - off, &consumed, &st);
		CU_ASSERT(rc == 0 || rc == -EBADMSG);
		CU_ASSERT(consumed <= fuzz_regressions[i].len - off);
		log_free(&l);
	}
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "round trip of every record type", test_round_trip },
		{ "pc == ESCAPE goes as DP_RAW_SAMPLE", test_escape_pc },
		{ "split at every byte", test_split_every_byte },
		{ "one byte at a time", test_byte_at_a_time },
		{ "writer chunks", test_writer_chunks },
		{ "writer sink error", test_writer_sink_error },
		{ "writer limits", test_writer_limits },
		{ "unknown types skipped", test_unknown_types },
		{ "bad payloads skipped", test_bad_payloads },
		{ "ASID records", test_asid },
		{ "CALLCHAIN records", test_callchain },
		{ "path/name over DP_RAW_MAX_PATH", test_path_over_max },
		{ "oversize payload rejected", test_oversize_payload },
		{ "handler error stops decoding", test_handler_error },
		{ "guest TSC and time spread records", test_guest_tsc },
		{ "NULL handlers ignore", test_null_handlers },
		{ "header errors", test_header_errors },
		{ "garbage input", test_garbage },
		{ "fuzz regressions", test_fuzz_regressions },
	};

	return du_test_main("raw", tests, DU_TEST_N(tests), NULL, NULL);
}
