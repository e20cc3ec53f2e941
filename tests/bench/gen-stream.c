/*
 * Generate a synthetic raw stream for the ingest benchmark: many processes,
 * many images, samples in runs per task as a real collector delivers them.
 *
 *   gen-stream --out FILE [--samples N] [--processes P] [--images I] [--seed S]
 *
 * Every process maps one main binary and LIBS_PER_PROC libraries chosen from
 * I images; samples fall on a limited set of hot offsets per image (so keys
 * repeat as in a real profile), 10% of them in the kernel.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raw/raw_stream.h"

#define LIBS_PER_PROC	8
#define IMAGE_SIZE	(1u << 20)
#define HOT_OFFSETS	512
#define RUN		64
#define KERNEL_BASE	0xffffffff81000000ull
#define KERNEL_SIZE	(16u << 20)

struct gen_proc {
	uint32_t pid;
	uint32_t image[1 + LIBS_PER_PROC];
};

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int file_sink(void *ctx, const void *buf, size_t len)
{
	int fd = *(int *)ctx;
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static uint64_t map_start(unsigned slot)
{
	return slot == 0 ? 0x400000ull : 0x7f0000000000ull + (uint64_t)slot * 0x10000000ull;
}

static int put_process(struct raw_writer *w, const struct gen_proc *p)
{
	char path[64], comm[16];
	int err;

	snprintf(comm, sizeof(comm), "bench%u", p->pid);
	err = raw_put_comm(w, p->pid, p->pid, DP_RAW_COMM_EXEC, comm);
	for (unsigned s = 0; !err && s <= LIBS_PER_PROC; s++) {
		struct dp_raw_mmap m = {
			.pid = p->pid, .tid = p->pid, .start = map_start(s), .len = IMAGE_SIZE,
			.pgoff = 0, .ino = p->image[s] + 1, .prot = 5,
		};
		int n = snprintf(path, sizeof(path), s == 0 ? "/usr/bin/bench/app%05u" :
				 "/usr/lib/bench/lib%05u.so", p->image[s]);

		err = raw_put_mmap(w, &m, path, (size_t)n);
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "samples", required_argument, NULL, 'n' },
		{ "processes", required_argument, NULL, 'p' },
		{ "images", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t nr_samples = 50000000, written = 0, now = 1000000000ull;
	unsigned nr_procs = 1000, nr_images = 1000, cpu = 0;
	const char *out = NULL;
	struct dp_raw_event ev = { .name = "TIMER", .count = 100000,
				   .flags = DP_RAW_EV_KERNEL | DP_RAW_EV_USER };
	struct gen_proc *procs;
	struct raw_writer *w;
	int c, fd, err = 0;

	rng_state = 0x9e3779b97f4a7c15ull;
	while ((c = getopt_long(argc, argv, "o:n:p:i:s:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'n': nr_samples = strtoull(optarg, NULL, 0); break;
		case 'p': nr_procs = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'i': nr_images = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': rng_state = strtoull(optarg, NULL, 0) | 1; break;
		default:
			fprintf(stderr, "usage: gen-stream --out FILE [--samples N] [--processes P] [--images I] [--seed S]\n");
			return 1;
		}
	}
	if (!out || !nr_procs || nr_images < 1 + LIBS_PER_PROC) {
		fprintf(stderr, "gen-stream: --out is required, --processes >= 1, --images >= %d\n",
			1 + LIBS_PER_PROC);
		return 1;
	}
	procs = calloc(nr_procs, sizeof(*procs));
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (!procs || fd < 0) {
		fprintf(stderr, "gen-stream: %s: %s\n", out, strerror(errno));
		return 1;
	}
	w = raw_writer_new(file_sink, &fd, 1 << 20);
	if (!w) {
		fprintf(stderr, "gen-stream: %s\n", strerror(errno));
		return 1;
	}
	err = raw_put_header(w, DP_RAW_F_TIMESTAMPS, DP_RAW_COLLECTOR_GEN, now, &ev, 1);
	if (!err)
		err = raw_put_kmod(w, KERNEL_BASE, KERNEL_SIZE, "vmlinux", 7);
	for (unsigned i = 0; !err && i < nr_procs; i++) {
		procs[i].pid = 1000 + i;
		procs[i].image[0] = i % nr_images;
		for (unsigned s = 1; s <= LIBS_PER_PROC; s++)
			procs[i].image[s] = (unsigned)(rng() % nr_images);
		err = put_process(w, &procs[i]);
	}
	while (!err && written < nr_samples) {
		/* Skew: half the runs go to the first tenth of the processes. */
		unsigned span = (rng() & 1) ? (nr_procs + 9) / 10 : nr_procs;
		const struct gen_proc *p = &procs[rng() % span];
		uint64_t r = rng();

		now += 100000;
		cpu = (cpu + 1) % 2;
		err = raw_put_time(w, now);
		if (!err)
			err = raw_put_cpu(w, cpu);
		if (!err)
			err = raw_put_task(w, p->pid, p->pid);
		int mode = -1;

		for (unsigned k = 0; !err && k < RUN && written < nr_samples; k++, written++) {
			uint64_t x = rng();
			bool kernel = (x % 10) == 0;
			unsigned slot = (unsigned)((x >> 8) % (1 + LIBS_PER_PROC));
			uint64_t off = ((x >> 16) % HOT_OFFSETS) * 64 + (r % 64);
			uint64_t pc = kernel ? KERNEL_BASE + (off * 97) % KERNEL_SIZE : map_start(slot) + off;

			if (mode != (kernel ? DP_MODE_HOST_KERNEL : DP_MODE_HOST_USER)) {
				mode = kernel ? DP_MODE_HOST_KERNEL : DP_MODE_HOST_USER;
				err = raw_put_mode(w, (uint32_t)mode);
			}
			if (!err)
				err = raw_put_sample(w, pc, 0);
		}
	}
	if (!err)
		err = raw_writer_close(w);
	else
		raw_writer_close(w);
	if (err || close(fd) < 0) {
		fprintf(stderr, "gen-stream: writing %s: %s\n", out, strerror(err ? -err : errno));
		return 1;
	}
	printf("gen-stream: %" PRIu64 " samples, %u processes, %u images -> %s\n",
	       written, nr_procs, nr_images, out);
	free(procs);
	return 0;
}
