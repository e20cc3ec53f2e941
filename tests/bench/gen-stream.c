/*
 * Generate a synthetic raw stream for the ingest benchmark: many processes,
 * many images, samples in runs per task as a real collector delivers them.
 *
 *   gen-stream --out FILE [--perf FILE] [--samples N] [--processes P]
 *              [--images I] [--seed S] [--hot H] [--callchain D] [--mixed]
 *              [--domains N [--guest-procs G]] [--cpus C] [--repeat R]
 *              [--chain-repeat K]
 *
 * --perf also writes the same profile as a perf.data in perf's pipe format
 * (read it with `perf report -i - < FILE`), so perf report can be timed on
 * an equivalent input.
 * Every process maps one main binary and LIBS_PER_PROC libraries chosen from
 * I images; samples fall on about 4 x H offsets per image (--hot, default
 * 256), skewed towards a few hot ones so keys repeat as in a real profile;
 * 10% of them are in the kernel.
 * --callchain D: every sample carries a call chain of D frames (raw type
 * 14) in the process's images (and the kernel's, for a kernel sample), as
 * --callgraph=D records them; not written to --perf.
 * --chain-repeat K: in a run, a sample takes the last sample's chain again
 * (same return addresses, its pc drawn as ever) unless its draw is a
 * multiple of K or its mode differs, as consecutive samples of a task
 * mostly share their callers (K = 4: three in four); 0 (default): each
 * sample its own chain.
 * --mixed: what the default leaves out, for tests that compare filings
 * (tests/bench/compare-filing.sh): each run's thread is one of four of its
 * process, and every eighth run is a guest's (a DOMAIN record keyed by the
 * process, a vCPU, an address space, guest kernel and user samples).
 * --domains N: N guests besides the host's processes, each a QEMU process
 * (pid 100000 + 16 x d, DOM_VCPUS vCPU threads after it) with G guest
 * processes (--guest-procs, default 20), each its own address space
 * (DP_RAW_ASID).  Of the runs, 85% are a guest's (TASK of a vCPU thread,
 * DOMAIN keyed by the QEMU pid with the vCPU, ASID of the guest process,
 * guest user and 10% guest kernel samples; domain uniform, half the runs
 * on its first two processes), 5% its QEMU's own work (host user and
 * kernel in QEMU's images), 10% the host's processes.  A replay files the
 * guest samples under domain pid-<QEMU pid>, user samples per address
 * space (doc/raw-stream.md); not written to --perf.
 * --cpus C: runs go round the C CPUs (default 2).
 * --repeat R: the N samples' runs R times over, the same runs each time
 * (the clock goes on): replaying it, a daemon meets the later rounds with
 * every file open, so R = 2 against R = 1 gives the cost of N samples in a
 * daemon that has run a while (tests/bench/domains-lib.sh).
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

#include <linux/perf_event.h>

#include "raw/raw_stream.h"
#include "util/du_io.h"

#define LIBS_PER_PROC	8
#define IMAGE_SIZE	(1u << 20)
#define RUN		64
#define KERNEL_BASE	0xffffffff81000000ull
#define KERNEL_SIZE	(16u << 20)
#define DOM_VCPUS	4
#define DOM_PID_BASE	100000u
#define DOM_PID_STEP	16u

struct gen_proc {
	uint32_t pid;
	bool qemu;		/* a domain's QEMU: its main binary is QEMU's */
	uint32_t image[1 + LIBS_PER_PROC];
};

struct gen_opts {
	unsigned hot, depth, chain_repeat;
	bool mixed;
	unsigned nr_doms, guest_procs;
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
	return du_write_all(*(int *)ctx, buf, len);
}

/* perf pipe-format output: the same records, as perf record would write them. */
#define PERF_REC_HEADER_ATTR 64
#define PERF_SAMPLE_TYPE (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
			  PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

struct perf_out {
	FILE *f;
	uint32_t pid, tid, cpu;
	uint64_t time, period;
};

/* sample_id_all trailer for TID|TIME|CPU */
static void perf_id(struct perf_out *po)
{
	uint32_t cpu[2] = { po->cpu, 0 };

	fwrite(&po->pid, 4, 1, po->f);
	fwrite(&po->tid, 4, 1, po->f);
	fwrite(&po->time, 8, 1, po->f);
	fwrite(cpu, 8, 1, po->f);
}

static void perf_header(struct perf_out *po, uint64_t period)
{
	uint64_t magic[2] = { 0x32454c4946524550ull, 16 };	/* "PERFILE2", pipe header size */
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_period = period,
		.sample_type = PERF_SAMPLE_TYPE, .mmap = 1, .comm = 1, .mmap2 = 1,
		.sample_id_all = 1,
	};
	struct perf_event_header h = { .type = PERF_REC_HEADER_ATTR,
				       .size = (uint16_t)(sizeof(h) + sizeof(attr) + 8) };
	uint64_t id = 1;

	po->period = period;
	fwrite(magic, sizeof(magic), 1, po->f);
	fwrite(&h, sizeof(h), 1, po->f);
	fwrite(&attr, sizeof(attr), 1, po->f);
	fwrite(&id, 8, 1, po->f);
}

static void perf_comm(struct perf_out *po, uint32_t pid, const char *comm)
{
	char name[16] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC,
				       .size = sizeof(h) + 8 + sizeof(name) + 24 };

	memcpy(name, comm, strnlen(comm, sizeof(name) - 1));
	po->pid = po->tid = pid;
	fwrite(&h, sizeof(h), 1, po->f);
	fwrite(&pid, 4, 1, po->f);
	fwrite(&pid, 4, 1, po->f);
	fwrite(name, sizeof(name), 1, po->f);
	perf_id(po);
}

static void perf_mmap(struct perf_out *po, const struct dp_raw_mmap *m, const char *path, size_t len)
{
	size_t padded = (len + 1 + 7) & ~(size_t)7;
	char name[128] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER,
				       .size = (uint16_t)(sizeof(h) + 64 + padded + 24) };
	uint32_t ids[2] = { m->pid, m->tid }, dev[2] = { m->maj, m->min }, prot[2] = { m->prot, 2 };
	uint64_t addr[3] = { m->start, m->len, m->pgoff }, ino[2] = { m->ino, 0 };

	memcpy(name, path, len < sizeof(name) - 1 ? len : sizeof(name) - 1);
	fwrite(&h, sizeof(h), 1, po->f);
	fwrite(ids, sizeof(ids), 1, po->f);
	fwrite(addr, sizeof(addr), 1, po->f);
	fwrite(dev, sizeof(dev), 1, po->f);
	fwrite(ino, sizeof(ino), 1, po->f);
	fwrite(prot, sizeof(prot), 1, po->f);
	fwrite(name, padded, 1, po->f);
	perf_id(po);
}

static void perf_sample(struct perf_out *po, uint64_t pc, bool kernel)
{
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE,
				       .misc = kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER,
				       .size = sizeof(h) + 40 };
	uint64_t rec[5] = { pc, (uint64_t)po->tid << 32 | po->pid, po->time, po->cpu, po->period };

	fwrite(&h, sizeof(h), 1, po->f);
	fwrite(rec, sizeof(rec), 1, po->f);
}

static uint64_t map_start(unsigned slot)
{
	return slot == 0 ? 0x400000ull : 0x7f0000000000ull + (uint64_t)slot * 0x10000000ull;
}

static int put_process(struct raw_writer *w, struct perf_out *po, const struct gen_proc *p)
{
	char path[64], comm[16];
	int err;

	snprintf(comm, sizeof(comm), p->qemu ? "qemu%u" : "bench%u", p->pid);
	err = raw_put_comm(w, p->pid, p->pid, DP_RAW_COMM_EXEC, comm);
	if (po)
		perf_comm(po, p->pid, comm);
	for (unsigned s = 0; !err && s <= LIBS_PER_PROC; s++) {
		struct dp_raw_mmap m = {
			.pid = p->pid, .tid = p->pid, .start = map_start(s), .len = IMAGE_SIZE,
			.pgoff = 0, .ino = p->image[s] + 1, .prot = 5,
		};
		int n = s == 0 && p->qemu ?
			snprintf(path, sizeof(path), "/usr/bin/qemu-system-x86_64") :
			snprintf(path, sizeof(path), s == 0 ? "/usr/bin/bench/app%05u" :
				 "/usr/lib/bench/lib%05u.so", p->image[s]);

		err = raw_put_mmap(w, &m, path, (size_t)n);
		if (po)
			perf_mmap(po, &m, path, (size_t)n);
	}
	return err;
}

/* A pc in the process's images (slot @slot) or the kernel, skewed towards
 * low offsets, as real hot spots are few; @r varies it per run. */
static uint64_t gen_pc(const struct gen_opts *go, uint64_t x, bool kernel, uint64_t r)
{
	unsigned slot = (unsigned)((x >> 8) % (1 + LIBS_PER_PROC));
	uint64_t u = (x >> 16) % go->hot;
	uint64_t off = (u * u / go->hot) * 16 + (r % 4);

	return kernel ? KERNEL_BASE + (off * 97) % KERNEL_SIZE : map_start(slot) + off;
}

/* The chain of a sample: return addresses a few call paths deep, the
 * first ones in the kernel for a kernel sample (@kernel). */
static int put_chain(struct raw_writer *w, const struct gen_opts *go, uint64_t x, bool kernel)
{
	uint64_t f[DP_RAW_CC_MAX];
	unsigned nk = kernel ? (go->depth + 3) / 4 : 0;

	for (unsigned k = 0; k < go->depth; k++)
		f[k] = gen_pc(go, (x >> (k % 8)) * 0x9e3779b97f4a7c15ull + k, k < nk, k) + 1;
	return raw_put_callchain(w, go->depth, nk, 0, f);
}

/* The context of a run: host, or (--mixed) every eighth run a guest's. */
static int put_context(struct raw_writer *w, const struct gen_opts *go,
		       const struct gen_proc *p, uint64_t r, uint64_t now, unsigned cpu,
		       bool *guest)
{
	uint32_t tid = go->mixed ? p->pid + (uint32_t)(r >> 8) % 4 : p->pid;
	int err = raw_put_time(w, now);

	*guest = go->mixed && (r >> 12) % 8 == 0;
	if (!err)
		err = raw_put_cpu(w, cpu);
	if (!err)
		err = raw_put_task(w, p->pid, tid);
	if (!err && *guest)
		err = raw_put_domain(w, p->pid, (uint32_t)(r >> 16) % 4);
	if (!err && *guest)
		err = raw_put_asid(w, 0x1000 * (1 + (r >> 20) % 3));
	return err;
}

/* A run of @n samples of process @p on @cpu. */
static int put_run(struct raw_writer *w, struct perf_out *po, const struct gen_opts *go,
		   const struct gen_proc *p, uint64_t now, unsigned cpu, unsigned n)
{
	uint64_t r = rng(), cx = 0;
	int mode = -1;
	bool guest, ckernel = false;
	int err = put_context(w, go, p, r, now, cpu, &guest);

	if (po) {
		po->time = now;
		po->cpu = cpu;
		po->pid = po->tid = p->pid;
	}
	for (unsigned k = 0; !err && k < n; k++) {
		uint64_t x = rng();
		bool kernel = (x % 10) == 0;
		uint64_t pc = gen_pc(go, x, kernel, r);
		int m = guest ? (kernel ? DP_MODE_GUEST_KERNEL : DP_MODE_GUEST_USER) :
			(kernel ? DP_MODE_HOST_KERNEL : DP_MODE_HOST_USER);

		if (mode != m) {
			mode = m;
			err = raw_put_mode(w, (uint32_t)mode);
		}
		if (!go->chain_repeat || k == 0 || x % go->chain_repeat == 0 || kernel != ckernel) {
			cx = x;
			ckernel = kernel;
		}
		if (!err && go->depth && !guest)
			err = put_chain(w, go, cx, kernel);
		if (!err)
			err = raw_put_sample(w, pc, 0);
		if (po)
			perf_sample(po, pc, kernel);
	}
	return err;
}

/*
 * A run of @n samples of guest process @gp of domain @q (its QEMU) on a
 * vCPU: the vCPU thread's TASK, the DOMAIN and the process's ASID, then
 * guest user and kernel samples.
 */
static int put_guest_run(struct raw_writer *w, const struct gen_opts *go, const struct gen_proc *q,
			 uint64_t now, unsigned cpu, unsigned n)
{
	uint64_t r = rng();
	uint32_t vcpu = (uint32_t)(r % DOM_VCPUS);
	/* half the runs on the domain's first two processes */
	unsigned span = (r >> 8) & 1 ? (go->guest_procs < 2 ? go->guest_procs : 2) : go->guest_procs;
	uint64_t gp = (r >> 16) % span;
	int mode = -1;
	int err = raw_put_time(w, now);

	if (!err)
		err = raw_put_cpu(w, cpu);
	if (!err)
		err = raw_put_task(w, q->pid, q->pid + 1 + vcpu);
	if (!err)
		err = raw_put_domain(w, q->pid, vcpu);
	if (!err)
		err = raw_put_asid(w, 0x1000 * (1 + gp));
	for (unsigned k = 0; !err && k < n; k++) {
		uint64_t x = rng();
		bool kernel = (x % 10) == 0;
		int m = kernel ? DP_MODE_GUEST_KERNEL : DP_MODE_GUEST_USER;

		if (mode != m) {
			mode = m;
			err = raw_put_mode(w, (uint32_t)mode);
		}
		if (!err)
			err = raw_put_sample(w, gen_pc(go, x, kernel, r), 0);
	}
	return err;
}

/* The next run: a host process's, or with domains (put_guest_run) a
 * guest's or its QEMU's. */
static int put_any_run(struct raw_writer *w, struct perf_out *po, const struct gen_opts *go,
		       const struct gen_proc *procs, unsigned nr_procs, const struct gen_proc *qemus,
		       uint64_t now, unsigned cpu, unsigned n)
{
	unsigned span;

	if (go->nr_doms) {
		unsigned pick = (unsigned)(rng() % 20);
		const struct gen_proc *q = &qemus[rng() % go->nr_doms];

		if (pick >= 3)
			return put_guest_run(w, go, q, now, cpu, n);
		if (pick == 2)
			return put_run(w, po, go, q, now, cpu, n);
	}
	/* Skew: half the runs go to the first tenth of the processes. */
	span = (rng() & 1) ? (nr_procs + 9) / 10 : nr_procs;
	return put_run(w, po, go, &procs[rng() % span], now, cpu, n);
}

/* The processes' sideband: the host's (@procs), then the domains' QEMUs. */
static int put_processes(struct raw_writer *w, struct perf_out *po, struct gen_proc *procs,
			 unsigned nr_procs, struct gen_proc *qemus, unsigned nr_doms,
			 unsigned nr_images)
{
	int err = 0;

	for (unsigned i = 0; !err && i < nr_procs + nr_doms; i++) {
		struct gen_proc *p = i < nr_procs ? &procs[i] : &qemus[i - nr_procs];

		if (i < nr_procs) {
			p->pid = 1000 + i;
			p->image[0] = i % nr_images;
		} else {
			p->pid = DOM_PID_BASE + DOM_PID_STEP * (i - nr_procs);
			p->qemu = true;
			p->image[0] = nr_images;	/* its own inode */
		}
		for (unsigned s = 1; s <= LIBS_PER_PROC; s++)
			p->image[s] = (unsigned)(rng() % nr_images);
		err = put_process(w, p->qemu ? NULL : po, p);
	}
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "perf", required_argument, NULL, 'P' },
		{ "samples", required_argument, NULL, 'n' },
		{ "processes", required_argument, NULL, 'p' },
		{ "images", required_argument, NULL, 'i' },
		{ "seed", required_argument, NULL, 's' },
		{ "hot", required_argument, NULL, 'h' },
		{ "callchain", required_argument, NULL, 'c' },
		{ "mixed", no_argument, NULL, 'm' },
		{ "domains", required_argument, NULL, 'd' },
		{ "guest-procs", required_argument, NULL, 'g' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "chain-repeat", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t nr_samples = 50000000, written = 0, now = 1000000000ull, rng_runs;
	unsigned nr_procs = 1000, nr_images = 1000, cpu = 0, nr_cpus = 2, repeat = 1;
	struct gen_opts go = { .hot = 256, .guest_procs = 20 };
	const char *out = NULL, *perf_path = NULL;
	struct perf_out perf = { 0 }, *po = NULL;
	struct dp_raw_event ev = { .name = "TIMER", .count = 100000,
				   .flags = DP_RAW_EV_KERNEL | DP_RAW_EV_USER };
	struct gen_proc *procs, *qemus;
	struct raw_writer *w;
	int c, fd, err = 0;

	rng_state = 0x9e3779b97f4a7c15ull;
	while ((c = getopt_long(argc, argv, "o:n:p:i:s:h:c:md:g:C:r:k:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'P': perf_path = optarg; break;
		case 'n': nr_samples = strtoull(optarg, NULL, 0); break;
		case 'p': nr_procs = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'i': nr_images = (unsigned)strtoul(optarg, NULL, 0); break;
		case 's': rng_state = strtoull(optarg, NULL, 0) | 1; break;
		case 'h': go.hot = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'c': go.depth = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm': go.mixed = true; break;
		case 'd': go.nr_doms = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'g': go.guest_procs = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'C': nr_cpus = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'r': repeat = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'k': go.chain_repeat = (unsigned)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: gen-stream --out FILE [--perf FILE] [--samples N] [--processes P] [--images I] [--seed S] [--hot H] [--callchain D] [--mixed] [--domains N [--guest-procs G]] [--cpus C] [--repeat R] [--chain-repeat K]\n");
			return 1;
		}
	}
	if (!out || !nr_procs || !go.hot || nr_images < 1 + LIBS_PER_PROC || go.depth > DP_RAW_CC_MAX ||
	    !nr_cpus || !go.guest_procs || go.nr_doms > 100000 || (go.nr_doms && (perf_path || go.mixed)) ||
	    !repeat || (repeat > 1 && perf_path)) {
		fprintf(stderr, "gen-stream: --out is required, --processes >= 1, --images >= %d, --callchain <= %d, "
			"--cpus and --guest-procs >= 1, --domains <= 100000 and not with --perf or --mixed, "
			"--repeat >= 1 and not with --perf\n",
			1 + LIBS_PER_PROC, DP_RAW_CC_MAX);
		return 1;
	}
	procs = calloc(nr_procs + go.nr_doms, sizeof(*procs));
	qemus = procs ? procs + nr_procs : NULL;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (!procs || fd < 0) {
		fprintf(stderr, "gen-stream: %s: %s\n", out, strerror(errno));
		return 1;
	}
	if (perf_path) {
		perf.f = fopen(perf_path, "w");
		if (!perf.f) {
			fprintf(stderr, "gen-stream: %s: %s\n", perf_path, strerror(errno));
			return 1;
		}
		setvbuf(perf.f, NULL, _IOFBF, 1 << 20);
		perf.time = now;
		perf_header(&perf, ev.count);
		po = &perf;
	}
	w = raw_writer_new(file_sink, &fd, 1 << 20);
	if (!w) {
		fprintf(stderr, "gen-stream: %s\n", strerror(errno));
		return 1;
	}
	err = raw_put_header(w, DP_RAW_F_TIMESTAMPS, DP_RAW_COLLECTOR_GEN, now, &ev, 1);
	if (!err)
		err = raw_put_kmod(w, KERNEL_BASE, KERNEL_SIZE, "vmlinux", 7);
	if (!err)
		err = put_processes(w, po, procs, nr_procs, qemus, go.nr_doms, nr_images);
	rng_runs = rng_state;
	for (unsigned r = 0; !err && r < repeat; r++) {
		uint64_t left = nr_samples;

		rng_state = rng_runs;	/* the same runs each round */
		cpu = 0;
		while (!err && left) {
			uint64_t n = left < RUN ? left : RUN;

			now += 100000;
			cpu = (cpu + 1) % nr_cpus;
			err = put_any_run(w, po, &go, procs, nr_procs, qemus, now, cpu, (unsigned)n);
			written += n;
			left -= n;
		}
	}
	if (!err)
		err = raw_writer_close(w);
	else
		raw_writer_close(w);
	if (po && fclose(po->f) != 0 && !err)
		err = -EIO;
	if (err || close(fd) < 0) {
		fprintf(stderr, "gen-stream: writing %s: %s\n", out, strerror(err ? -err : errno));
		return 1;
	}
	printf("gen-stream: %" PRIu64 " samples, %u processes, %u images, %u domains x %u guest processes, %u CPUs -> %s\n",
	       written, nr_procs, nr_images, go.nr_doms, go.nr_doms ? go.guest_procs : 0, nr_cpus, out);
	free(procs);
	return 0;
}
