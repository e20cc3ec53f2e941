/*
 * Micro-benchmark of the raw decoder's sample path: encodes a stream of
 * samples with a context record every 64 samples, then decodes it
 * repeatedly and prints samples per second.  Not a test.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raw/raw_stream.h"

struct membuf {
	uint8_t *p;
	size_t len, cap;
};

static int mem_sink(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;

	if (m->len + len > m->cap) {
		size_t cap = (m->cap ? m->cap * 2 : 1 << 20);
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
	return 0;
}

static int on_sample(void *ctx, uint64_t pc, uint32_t event)
{
	uint64_t *sum = ctx;

	*sum += pc ^ event;
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	const size_t nsamples = 4 * 1000 * 1000;
	const int rounds = 10;
	const struct raw_ops ops = { .sample = on_sample };
	struct membuf m = { 0 };
	struct raw_writer *w;
	struct raw_decode_stats st = { 0 };
	uint64_t sum = 0, x = 88172645463325252ULL;
	size_t i, consumed;
	double t0, t1;
	int r, rc;

	w = raw_writer_new(mem_sink, &m, 0);
	if (!w)
		return 1;
	for (i = 0; i < nsamples; i++) {
		if (i % 64 == 0)
			raw_put_task(w, (uint32_t)(i / 64), (uint32_t)(i / 64));
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		raw_put_sample(w, 0x400000 + (x & 0xfffff), 0);
	}
	if (raw_writer_close(w))
		return 1;

	t0 = now();
	for (r = 0; r < rounds; r++) {
		rc = raw_decode(&ops, &sum, m.p, m.len, &consumed, &st);
		if (rc || consumed != m.len)
			return 1;
	}
	t1 = now();
	printf("raw_decode: %.1f M samples/s (%llu samples, checksum %llx)\n",
	       st.samples / (t1 - t0) / 1e6, (unsigned long long)st.samples,
	       (unsigned long long)sum);
	free(m.p);
	return 0;
}
