/*
 * dp-kmod-read: drive /dev/domprof by hand and count what it delivers.
 *
 * Configures and enables the kernel collector, reads its raw stream for a
 * while, disables it, drains it to the end, and prints what lib/raw
 * decoded, one "key value" line each.  Used by the lab's kmod scenario
 * before (and besides) the daemon; --out keeps the stream for
 * `opcontrol --collector=file` or a second look.
 *
 *   dp-kmod-read [--seconds N] [--event auto|cycles|clock] [--period N]
 *                [--clock-ns N] [--ring N] [--out FILE] [--keep]
 *                [--stats]
 *
 * --keep leaves sampling on at the end (no disable, no drain): the lab
 * then unloads the module while it samples.  --stats prints the per-CPU
 * counters (DP_KMOD_IOC_CPU_STATS) and does nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "domprof/kmod.h"
#include "raw/raw_stream.h"

#define KR_BUF		(256 * 1024)
#define KR_MAX_SEEN	64

struct kr_seen {
	uint64_t v[KR_MAX_SEEN];
	size_t n;
};

struct kr_count {
	uint32_t mode;
	uint64_t domain;
	uint32_t vcpu;
	uint64_t asid;
	uint64_t samples;
	uint64_t by_mode[DP_MODE_NR];
	uint64_t guest_attributed;	/* guest, domain != 0 and vCPU known */
	uint64_t guest_asid;		/* guest with an address space */
	uint64_t lost;
	uint64_t asid_records;
	uint64_t time_records;
	uint64_t backwards;		/* TIME going back within one CPU */
	uint32_t cpu;
	uint64_t last_ns[256];
	struct kr_seen domains, asids, cpus;
};

static void kr_see(struct kr_seen *s, uint64_t v)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i] == v)
			return;
	if (s->n < KR_MAX_SEEN)
		s->v[s->n++] = v;
}

static int kr_sample(void *ctx, uint64_t pc, uint32_t event)
{
	struct kr_count *k = ctx;

	(void)pc;
	(void)event;
	k->samples++;
	if (k->mode < DP_MODE_NR)
		k->by_mode[k->mode]++;
	if (k->mode == DP_MODE_GUEST_KERNEL || k->mode == DP_MODE_GUEST_USER) {
		if (k->domain && k->vcpu != DP_RAW_VCPU_UNKNOWN) {
			k->guest_attributed++;
			kr_see(&k->domains, k->domain);
		}
		if (k->asid != DP_RAW_ASID_UNKNOWN) {
			k->guest_asid++;
			kr_see(&k->asids, k->asid);
		}
	}
	return 0;
}

static int kr_cpu(void *ctx, uint32_t cpu)
{
	struct kr_count *k = ctx;

	k->cpu = cpu;
	kr_see(&k->cpus, cpu);
	return 0;
}

static int kr_mode(void *ctx, uint32_t mode)
{
	((struct kr_count *)ctx)->mode = mode;
	return 0;
}

static int kr_domain(void *ctx, uint64_t key, uint32_t vcpu, uint32_t key_ns)
{
	struct kr_count *k = ctx;

	(void)key_ns;
	k->domain = key;
	k->vcpu = vcpu;
	return 0;
}

static int kr_asid(void *ctx, uint64_t asid)
{
	struct kr_count *k = ctx;

	k->asid = asid;
	k->asid_records++;
	return 0;
}

static int kr_lost(void *ctx, uint64_t count)
{
	((struct kr_count *)ctx)->lost += count;
	return 0;
}

static int kr_time(void *ctx, uint64_t ns)
{
	struct kr_count *k = ctx;
	uint32_t c = k->cpu % 256;

	k->time_records++;
	if (ns < k->last_ns[c])
		k->backwards++;
	k->last_ns[c] = ns;
	return 0;
}

static const struct raw_ops kr_ops = {
	.sample = kr_sample, .cpu = kr_cpu, .mode = kr_mode, .domain = kr_domain,
	.lost = kr_lost, .time = kr_time, .asid = kr_asid,
};

static double kr_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int kr_stats(int fd)
{
	struct dp_kmod_cpu_stats st;
	uint32_t cpu;

	for (cpu = 0; cpu < 4096; cpu++) {
		memset(&st, 0, sizeof(st));
		st.cpu = cpu;
		if (ioctl(fd, DP_KMOD_IOC_CPU_STATS, &st) < 0) {
			if (errno == ENOENT)
				continue;
			perror("dp-kmod-read: CPU_STATS");
			return 1;
		}
		printf("cpu %u samples %llu lost %llu guest %llu counting %d\n", cpu,
		       (unsigned long long)st.samples, (unsigned long long)st.lost,
		       (unsigned long long)st.guest, !!(st.flags & DP_KMOD_CS_COUNTING));
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: dp-kmod-read [--seconds N] [--event auto|cycles|clock] "
		"[--period N] [--clock-ns N] [--ring N] [--out FILE] [--keep] [--stats]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "event", required_argument, NULL, 'e' },
		{ "period", required_argument, NULL, 'p' },
		{ "clock-ns", required_argument, NULL, 'c' },
		{ "ring", required_argument, NULL, 'r' },
		{ "out", required_argument, NULL, 'o' },
		{ "keep", no_argument, NULL, 'k' },
		{ "stats", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct dp_kmod_config cfg;
	struct raw_header hdr;
	struct raw_decode_stats st = { 0 };
	static struct kr_count k;
	double seconds = 5, end;
	const char *out = NULL;
	bool keep = false, stats = false, disabled = false, have_hdr = false;
	unsigned char *buf;
	size_t have = 0;
	FILE *of = NULL;
	int fd, o, rc = 0;

	memset(&cfg, 0, sizeof(cfg));
	cfg.abi = DP_KMOD_ABI;
	cfg.event = DP_KMOD_EV_AUTO;
	cfg.period = DP_KMOD_DEF_PERIOD;
	cfg.clock_ns = DP_KMOD_DEF_CLOCK_NS;
	cfg.ring_entries = DP_KMOD_DEF_RING;
	cfg.flags = DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': seconds = atof(optarg); break;
		case 'e':
			if (!strcmp(optarg, "auto"))
				cfg.event = DP_KMOD_EV_AUTO;
			else if (!strcmp(optarg, "cycles"))
				cfg.event = DP_KMOD_EV_CYCLES;
			else if (!strcmp(optarg, "clock"))
				cfg.event = DP_KMOD_EV_CPU_CLOCK;
			else
				usage();
			break;
		case 'p': cfg.period = strtoull(optarg, NULL, 0); break;
		case 'c': cfg.clock_ns = strtoull(optarg, NULL, 0); break;
		case 'r': cfg.ring_entries = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'o': out = optarg; break;
		case 'k': keep = true; break;
		case 'S': stats = true; break;
		default: usage();
		}
	}
	fd = open(DP_KMOD_DEVICE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror("dp-kmod-read: " DP_KMOD_DEVICE);
		return 1;
	}
	if (stats)
		return kr_stats(fd);
	if (ioctl(fd, DP_KMOD_IOC_SET_CONFIG, &cfg) < 0 || ioctl(fd, DP_KMOD_IOC_ENABLE) < 0) {
		perror("dp-kmod-read: configure/enable");
		return 1;
	}
	if (ioctl(fd, DP_KMOD_IOC_GET_CONFIG, &cfg) == 0)
		printf("event %s\n", cfg.active_event == DP_KMOD_EV_CYCLES ? "cycles" : "clock");
	if (keep) {
		/* let it sample, then leave it on for whoever unloads us */
		usleep((useconds_t)(seconds * 1e6));
		puts("left enabled");
		return 0;
	}
	if (out && !(of = fopen(out, "wb"))) {
		perror(out);
		return 1;
	}
	buf = malloc(KR_BUF);
	if (!buf)
		return 1;
	end = kr_now() + seconds;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		size_t used;
		int hs;

		if (!disabled && kr_now() >= end) {
			if (ioctl(fd, DP_KMOD_IOC_DISABLE) < 0) {
				perror("dp-kmod-read: disable");
				rc = 1;
				break;
			}
			disabled = true;
		}
		n = read(fd, buf + have, KR_BUF - have);
		if (n < 0 && errno == EAGAIN) {
			poll(&pfd, 1, 100);
			continue;
		}
		if (n < 0) {
			perror("dp-kmod-read: read");
			rc = 1;
			break;
		}
		if (n == 0)
			break;	/* disabled and drained: the end of the stream */
		if (of && fwrite(buf + have, 1, (size_t)n, of) != (size_t)n) {
			perror(out);
			rc = 1;
			break;
		}
		have += (size_t)n;
		if (!have_hdr) {
			hs = raw_header_parse(buf, have, &hdr);
			if (hs == -EAGAIN)
				continue;
			if (hs < 0) {
				fprintf(stderr, "dp-kmod-read: bad header (%d)\n", hs);
				rc = 1;
				break;
			}
			have_hdr = true;
			printf("header collector %u events %u name %s count %llu\n", hdr.collector,
			       hdr.nr_events, hdr.events[0].name,
			       (unsigned long long)hdr.events[0].count);
			memmove(buf, buf + hs, have - (size_t)hs);
			have -= (size_t)hs;
		}
		if (raw_decode(&kr_ops, &k, buf, have, &used, &st) < 0) {
			fprintf(stderr, "dp-kmod-read: corrupt stream\n");
			rc = 1;
			break;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	if (have)
		printf("trailing_bytes %zu\n", have);
	printf("samples %llu\n", (unsigned long long)k.samples);
	printf("host_kernel %llu\nhost_user %llu\nguest_kernel %llu\nguest_user %llu\n",
	       (unsigned long long)k.by_mode[0], (unsigned long long)k.by_mode[1],
	       (unsigned long long)k.by_mode[2], (unsigned long long)k.by_mode[3]);
	printf("guest_attributed %llu\nguest_asid %llu\n", (unsigned long long)k.guest_attributed,
	       (unsigned long long)k.guest_asid);
	printf("domains %zu\nasids %zu\ncpus %zu\n", k.domains.n, k.asids.n, k.cpus.n);
	printf("lost %llu\ntime_backwards %llu\n", (unsigned long long)k.lost,
	       (unsigned long long)k.backwards);
	printf("unknown_type %llu\nbad_payload %llu\n", (unsigned long long)st.unknown_type,
	       (unsigned long long)st.bad_payload);
	for (size_t i = 0; i < k.domains.n; i++)
		printf("domain %llu\n", (unsigned long long)k.domains.v[i]);
	if (of)
		fclose(of);
	free(buf);
	close(fd);
	return rc || st.unknown_type || st.bad_payload || have;
}
