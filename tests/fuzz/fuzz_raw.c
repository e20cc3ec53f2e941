/*
 * libFuzzer target for the raw stream decoder (lib/raw).
 *
 * The input is fed to raw_header_parse() and then, after the header if one
 * parsed (else from the first byte), to raw_decode().  Besides "no crash,
 * no sanitizer report", it checks properties that must hold for any bytes:
 * consumed stays within the input; decoding in two pieces, split where the
 * last input byte says, sees the same records and counters; and the records
 * seen, re-encoded with raw_writer and decoded again, are seen again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raw/raw_stream.h"

/* A digest of every callback and its arguments, and an optional writer that
 * re-encodes what was seen. */
struct seen {
	uint64_t h;
	struct raw_writer *w;
};

static void mix(struct seen *s, uint64_t v)
{
	s->h = (s->h ^ v) * 0x100000001b3ULL;
	s->h ^= s->h >> 29;
}

static void mix_bytes(struct seen *s, const char *p, size_t n)
{
	size_t i;

	mix(s, n);
	for (i = 0; i < n; i++)
		mix(s, (uint8_t)p[i]);
}

static int f_sample(void *ctx, uint64_t pc, uint32_t event)
{
	struct seen *s = ctx;

	mix(s, 1);
	mix(s, pc);
	mix(s, event);
	return s->w ? raw_put_sample(s->w, pc, event) : 0;
}

static int f_cpu(void *ctx, uint32_t cpu)
{
	struct seen *s = ctx;

	mix(s, 2);
	mix(s, cpu);
	return s->w ? raw_put_cpu(s->w, cpu) : 0;
}

static int f_task(void *ctx, uint32_t pid, uint32_t tid)
{
	struct seen *s = ctx;

	mix(s, 3);
	mix(s, pid);
	mix(s, tid);
	return s->w ? raw_put_task(s->w, pid, tid) : 0;
}

static int f_mode(void *ctx, uint32_t mode)
{
	struct seen *s = ctx;

	mix(s, 4);
	mix(s, mode);
	return s->w ? raw_put_mode(s->w, mode) : 0;
}

static int f_domain(void *ctx, uint64_t key, uint32_t vcpu, uint32_t key_ns)
{
	struct seen *s = ctx;

	mix(s, 5);
	mix(s, key);
	mix(s, vcpu);
	mix(s, key_ns);
	return s->w ? raw_put_domain_ns(s->w, key_ns, key, vcpu) : 0;
}

static int f_asid(void *ctx, uint64_t asid)
{
	struct seen *s = ctx;

	mix(s, 13);
	mix(s, asid);
	return s->w ? raw_put_asid(s->w, asid) : 0;
}

static int f_lost(void *ctx, uint64_t count)
{
	struct seen *s = ctx;

	mix(s, 6);
	mix(s, count);
	return s->w ? raw_put_lost(s->w, count) : 0;
}

static int f_time(void *ctx, uint64_t ns)
{
	struct seen *s = ctx;

	mix(s, 7);
	mix(s, ns);
	return s->w ? raw_put_time(s->w, ns) : 0;
}

static int f_mmap(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t path_len)
{
	struct seen *s = ctx;

	if (path_len > DP_RAW_MAX_PATH)
		abort();
	mix(s, 8);
	mix(s, m->pid);
	mix(s, m->tid);
	mix(s, m->start);
	mix(s, m->len);
	mix(s, m->pgoff);
	mix(s, m->ino);
	mix(s, m->maj);
	mix(s, m->min);
	mix(s, m->prot);
	mix_bytes(s, path, path_len);
	return s->w ? raw_put_mmap(s->w, m, path, path_len) : 0;
}

static int f_comm(void *ctx, uint32_t pid, uint32_t tid, uint32_t flags, const char *comm,
		  size_t comm_len)
{
	struct seen *s = ctx;
	char name[17];

	if (comm_len > 16)
		abort();
	mix(s, 9);
	mix(s, pid);
	mix(s, tid);
	mix(s, flags);
	mix_bytes(s, comm, comm_len);
	memcpy(name, comm, comm_len);
	name[comm_len] = '\0';
	return s->w ? raw_put_comm(s->w, pid, tid, flags, name) : 0;
}

static void mix_task(struct seen *s, uint64_t tag, const struct dp_raw_task_ev *t)
{
	mix(s, tag);
	mix(s, t->pid);
	mix(s, t->ppid);
	mix(s, t->tid);
	mix(s, t->ptid);
}

static int f_fork(void *ctx, const struct dp_raw_task_ev *t)
{
	struct seen *s = ctx;

	mix_task(s, 10, t);
	return s->w ? raw_put_fork(s->w, t) : 0;
}

static int f_exit(void *ctx, const struct dp_raw_task_ev *t)
{
	struct seen *s = ctx;

	mix_task(s, 11, t);
	return s->w ? raw_put_exit(s->w, t) : 0;
}

static int f_kmod(void *ctx, uint64_t start, uint64_t size, const char *name, size_t name_len)
{
	struct seen *s = ctx;

	if (name_len > DP_RAW_MAX_PATH)
		abort();
	mix(s, 12);
	mix(s, start);
	mix(s, size);
	mix_bytes(s, name, name_len);
	return s->w ? raw_put_kmod(s->w, start, size, name, name_len) : 0;
}

static int f_callchain(void *ctx, uint32_t nr, uint32_t nr_kernel, uint32_t flags,
		       const uint8_t *frames)
{
	struct seen *s = ctx;
	uint64_t fr[DP_RAW_CC_MAX];

	if (nr == 0 || nr > DP_RAW_CC_MAX || nr_kernel > nr)
		abort();
	mix(s, 14);
	mix(s, nr);
	mix(s, nr_kernel);
	mix(s, flags);
	for (uint32_t i = 0; i < nr; i++) {
		fr[i] = raw_cc_frame(frames, i);
		mix(s, fr[i]);
	}
	return s->w ? raw_put_callchain(s->w, nr, nr_kernel, flags, fr) : 0;
}

static int f_guest_tsc(void *ctx, const struct dp_raw_guest_tsc *g)
{
	struct seen *s = ctx;

	if (!g->khz)
		abort();	/* the decoder refuses a rate of 0 */
	mix(s, 15);
	mix(s, g->key);
	mix(s, g->key_ns);
	mix(s, g->khz);
	mix(s, g->host_ns);
	mix(s, g->window_ns);
	mix(s, g->tsc);
	return s->w ? raw_put_guest_tsc(s->w, g) : 0;
}

static int f_time_spread(void *ctx, uint64_t ns)
{
	struct seen *s = ctx;

	mix(s, 16);
	mix(s, ns);
	return s->w ? raw_put_time_spread(s->w, ns) : 0;
}

static int f_guest_task(void *ctx, uint32_t tgid)
{
	struct seen *s = ctx;

	mix(s, 17);
	mix(s, tgid);
	return s->w ? raw_put_guest_task(s->w, tgid) : 0;
}

static const struct raw_ops fuzz_ops = {
	.sample = f_sample, .cpu = f_cpu, .task = f_task, .mode = f_mode,
	.domain = f_domain, .lost = f_lost, .time = f_time, .mmap = f_mmap,
	.comm = f_comm, .fork = f_fork, .exit = f_exit, .kmod = f_kmod, .asid = f_asid,
	.callchain = f_callchain, .guest_tsc = f_guest_tsc, .time_spread = f_time_spread,
	.guest_task = f_guest_task,
};

struct outbuf {
	uint8_t *p;
	size_t len, cap;
};

static int out_sink(void *ctx, const void *buf, size_t len)
{
	struct outbuf *o = ctx;

	if (o->len + len > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 4096;
		uint8_t *np;

		while (cap < o->len + len)
			cap *= 2;
		np = realloc(o->p, cap);
		if (!np)
			return -ENOMEM;
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->len, buf, len);
	o->len += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct raw_header h;
	struct raw_decode_stats st1 = { 0 }, st2 = { 0 }, st3 = { 0 };
	struct seen s1 = { 0 }, s2 = { 0 }, s3 = { 0 };
	struct outbuf out = { 0 };
	size_t off = 0, len, c1 = 0, c2 = 0, c3 = 0, split;
	int hs, rc1, rc2, rc3;

	/* Pointer arithmetic on libFuzzer's NULL empty input is undefined;
	 * the decoder's own NULL handling is covered in test_raw.c. */
	if (!size)
		data = (const uint8_t *)"";
	hs = raw_header_parse(data, size, &h);
	if (hs > 0) {
		if ((size_t)hs > size || h.nr_events > DP_RAW_MAX_EVENTS)
			abort();
		off = hs;
	} else if (hs != -EAGAIN && hs != -EBADMSG) {
		abort();
	}
	len = size - off;

	/* Whole, re-encoding what is seen. */
	s1.w = raw_writer_new(out_sink, &out, 1024);
	if (!s1.w)
		return 0;
	rc1 = raw_decode(&fuzz_ops, &s1, data + off, len, &c1, &st1);
	if (c1 > len || (rc1 != 0 && rc1 != -EBADMSG))
		abort();
	if (raw_writer_close(s1.w))
		abort();

	/* In two pieces. */
	split = size ? data[size - 1] * len / 256 : 0;
	rc2 = raw_decode(&fuzz_ops, &s2, data + off, split, &c2, &st2);
	if (c2 > split)
		abort();
	if (rc2 == 0) {
		size_t more = 0;

		rc2 = raw_decode(&fuzz_ops, &s2, data + off + c2, len - c2, &more, &st2);
		c2 += more;
	}
	if (rc2 != rc1 || c2 != c1 || s2.h != s1.h || st2.records != st1.records ||
	    st2.samples != st1.samples || st2.unknown_type != st1.unknown_type ||
	    st2.bad_payload != st1.bad_payload)
		abort();

	/* What was seen comes back identical after re-encoding, and clean. */
	rc3 = raw_decode(&fuzz_ops, &s3, out.p, out.len, &c3, &st3);
	if (rc3 != 0 || c3 != out.len || s3.h != s1.h || st3.records != st1.records ||
	    st3.samples != st1.samples || st3.unknown_type || st3.bad_payload)
		abort();
	free(out.p);
	return 0;
}
