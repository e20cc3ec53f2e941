/*
 * The daemon's hot path, timed (not a test; `make check` does not run it):
 * an in-memory raw stream of host user samples in two images, four threads,
 * decoded and filed into a temporary session.  Prints samples per
 * CPU-second (the process's CPU time, user and system: other work on the
 * machine does not count) and per second of wall time.
 *   daemon/bench_opd [SAMPLES [DEPTH]]   (default 20 million, 0)
 * DEPTH > 0: every sample carries a call chain of DEPTH frames (raw type
 * 14) in the app and libc, as --callgraph=DEPTH records them; the figure
 * then includes filing the arcs ({cg} files) and the stacks.
 * The whole ingest, replay from a file and opreport included, is
 * tests/bench/run-bench.sh.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "opd_daemon.h"
#include "raw/raw_stream.h"
#include "util/du_fs.h"

#define APP "/usr/bin/app"
#define LIBC "/usr/lib/libc.so.6"

static struct {
	uint8_t *buf;
	size_t len, cap;
} mem;

static int mem_sink(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	if (mem.len + len > mem.cap) {
		uint8_t *nb = realloc(mem.buf, (mem.len + len) * 2);

		if (!nb)
			return -ENOMEM;
		mem.buf = nb;
		mem.cap = (mem.len + len) * 2;
	}
	memcpy(mem.buf + mem.len, buf, len);
	mem.len += len;
	return 0;
}

/* The stream's body (after the header): what a busy process looks like. */
/* A caller chain of @depth frames for sample @i: a few call paths, as a
 * program has, over both images. */
static void chain_of(long i, int depth, uint64_t *f)
{
	for (int k = 0; k < depth; k++) {
		uint64_t base = (k & 1) ? 0x7f0000000000ULL : 0x400000;

		f[k] = base + 0x1000 * (uint64_t)k + 64 * (uint64_t)((i >> (k + 8)) % 4) + 5;
	}
}

static int make_stream(long n, int depth)
{
	uint64_t f[DP_RAW_CC_MAX];
	struct dp_raw_mmap m = { .pid = 100, .tid = 100, .start = 0x400000, .len = 0x100000 };
	struct raw_writer *w = raw_writer_new(mem_sink, NULL, 1 << 20);

	if (!w)
		return -ENOMEM;
	raw_put_comm(w, 100, 100, DP_RAW_COMM_EXEC, "app");
	raw_put_mmap(w, &m, APP, strlen(APP));
	m.start = 0x7f0000000000ULL;
	raw_put_mmap(w, &m, LIBC, strlen(LIBC));
	raw_put_mode(w, DP_MODE_HOST_USER);
	for (long i = 0; i < n; i++) {
		if (i % 64 == 0)
			raw_put_task(w, 100, 100 + (uint32_t)(i / 64) % 4);
		if (depth) {
			chain_of(i, depth, f);
			raw_put_callchain(w, (uint32_t)depth, 0, 0, f);
		}
		raw_put_sample(w, (i & 256 ? 0x400000 : 0x7f0000000000ULL) +
				  ((uint64_t)i * 2654435761u % 4096), 0);
	}
	return raw_writer_close(w);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000000;
	int depth = argc > 2 ? atoi(argv[2]) : 0;
	char dir[] = "/tmp/bench_opd.XXXXXX";
	struct dp_raw_event ev = { .name = "CPU_CLK_UNHALTED", .count = 100000,
				   .flags = DP_RAW_EV_USER };
	struct raw_writer *hdr = NULL;
	struct opd_daemon d;
	struct opd_conf conf;
	struct timespec a, b, ca, cb;
	volatile uint8_t touched = 0;
	size_t used = 0;
	int status = 1;
	double secs, cpu;

	if (n <= 0 || depth < 0 || depth > DP_RAW_CC_MAX || !mkdtemp(dir)) {
		fprintf(stderr, "usage: bench_opd [SAMPLES > 0 [DEPTH 0..%d]]\n", DP_RAW_CC_MAX);
		return 1;
	}
	opd_conf_defaults(&conf);
	conf.session_dir = dir;
	conf.collector = "file";
	if (opd_daemon_init(&d, &conf, "bench"))
		goto out_rm;
	hdr = raw_writer_new(opd_daemon_sink, &d, 4096);
	if (!hdr || raw_put_header(hdr, 0, DP_RAW_COLLECTOR_GEN, 0, &ev, 1) ||
	    raw_writer_flush(hdr) || make_stream(n, depth))
		goto out_fini;
	/* The input is the collector's, not the daemon's cost: in place
	 * before the clock starts (the buffer moved as it grew). */
	for (size_t i = 0; i < mem.len; i += 4096)
		touched ^= mem.buf[i];
	clock_gettime(CLOCK_MONOTONIC, &a);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
	/* the whole filing: decoding, and the last flush of the batch */
	if (opd_stream_decode(d.stream, mem.buf, mem.len, &used) || used != mem.len ||
	    opd_batch_flush(d.batch))
		goto out_fini;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	cpu = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) / 1e9;
	printf("ingest: %ld samples, call chains %d deep, in %.3f CPU-s = %.2f M samples/CPU-s, %.0f ns/sample (wall %.3f s, %.2f M/s)\n",
	       n, depth, cpu, (double)n / cpu / 1e6, cpu * 1e9 / (double)n, secs, (double)n / secs / 1e6);
	if (raw_writer_close(hdr) || opd_stream_finish(d.stream) || opd_daemon_stop(&d))
		goto out_fini_closed;
	/* a wrong figure is worse than none */
	status = d.st.samples_filed == (uint64_t)n ? 0 : 1;
	if (status)
		fprintf(stderr, "bench_opd: %llu of %ld samples filed\n",
			(unsigned long long)d.st.samples_filed, n);
	goto out_fini_closed;
out_fini:
	raw_writer_close(hdr);
out_fini_closed:
	opd_daemon_fini(&d);
out_rm:
	du_rm_tree(dir);
	free(mem.buf);
	if (status)
		fprintf(stderr, "bench_opd: failed\n");
	return status;
}
