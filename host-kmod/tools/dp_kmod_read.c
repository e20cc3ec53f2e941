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
 *                [--stats] [--callgraph DEPTH] [--chains FILE]
 *
 * --keep exits without DISABLE or drain: its close stops sampling (the
 * lab checks that it did).  --stats prints the per-CPU
 * counters (DP_KMOD_IOC_CPU_STATS) and does nothing else.
 *
 * --callgraph DEPTH asks the module for guest call chains.  This tool
 * walks the framing itself beside lib/raw (kr_scan), a second decoder of
 * the module's chains: each chain must be followed by its sample,
 * and --chains FILE gets one line per guest sample, chained or not (NR 0),
 * numbers in decimal (the lab's awk has no hex):
 *   MODE PC NR NR_KERNEL FLAGS FRAME...
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
#include "util/du_cli.h"

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

/* The call chains, counted by kr_scan() from the stream's own framing. */
struct kr_cc {
	uint32_t mode;
	bool pending;
	uint32_t nr, nr_kernel, flags;
	uint64_t frames[DP_KMOD_MAX_CG_DEPTH];
	uint64_t records, truncated, guest, frames_total, bad, orphan;
	uint64_t by_mode[DP_MODE_NR];
	FILE *out;
};

static void kr_cc_sample(struct kr_cc *c, uint64_t pc)
{
	uint32_t i, nr = c->pending ? c->nr : 0;

	if (c->pending && c->mode < DP_MODE_NR)
		c->by_mode[c->mode]++;
	c->pending = false;
	if (!c->out || (c->mode != DP_MODE_GUEST_KERNEL && c->mode != DP_MODE_GUEST_USER))
		return;
	fprintf(c->out, "%u %llu %u %u %u", c->mode, (unsigned long long)pc, nr,
		nr ? c->nr_kernel : 0, nr ? c->flags : 0);
	for (i = 0; i < nr; i++)
		fprintf(c->out, " %llu", (unsigned long long)c->frames[i]);
	fputc('\n', c->out);
}

static void kr_cc_chain(struct kr_cc *c, const unsigned char *p, uint32_t len)
{
	uint16_t nr, nk;
	uint32_t flags;

	if (c->pending)
		c->orphan++;	/* two chains, no sample between */
	c->pending = false;
	if (len < 8)
		goto bad;
	memcpy(&nr, p, 2);
	memcpy(&nk, p + 2, 2);
	memcpy(&flags, p + 4, 4);
	if (!nr || nr > DP_KMOD_MAX_CG_DEPTH || nk > nr || len != 8 + 8u * nr)
		goto bad;
	c->nr = nr;
	c->nr_kernel = nk;
	c->flags = flags;
	memcpy(c->frames, p + 8, 8u * nr);
	c->records++;
	c->frames_total += nr;
	c->truncated += !!(flags & DP_RAW_CC_TRUNCATED);
	c->guest += !!(flags & DP_RAW_CC_GUEST);
	c->pending = true;
	return;
bad:
	c->bad++;
}

/*
 * The raw framing (raw.h) over @len bytes of whole records: a sample is
 * two words, anything else an escape word, a type/length word and the
 * payload padded to words.
 */
static void kr_scan(struct kr_cc *c, const unsigned char *buf, size_t len)
{
	size_t off = 0;
	uint64_t w0, w1;
	uint32_t type, plen;

	while (off + 16 <= len) {
		memcpy(&w0, buf + off, 8);
		memcpy(&w1, buf + off + 8, 8);
		off += 16;
		if (w0 != DP_RAW_ESCAPE) {
			kr_cc_sample(c, w0);
			continue;
		}
		type = (uint32_t)w1;
		plen = (uint32_t)(w1 >> 32);
		if (off + plen > len)
			return;
		if (type == DP_RAW_MODE && plen >= 4)
			memcpy(&c->mode, buf + off, 4);
		else if (type == DP_RAW_SAMPLE && plen >= 8)
			kr_cc_sample(c, DP_RAW_ESCAPE);
		else if (type == DP_RAW_CALLCHAIN)
			kr_cc_chain(c, buf + off, plen);
		off += (plen + 7) & ~(size_t)7;
	}
}

static void kr_cc_stats(int fd)
{
	struct dp_kmod_cc_stats st, sum = { 0 };
	uint32_t cpu;

	for (cpu = 0; cpu < 4096; cpu++) {
		memset(&st, 0, sizeof(st));
		st.cpu = cpu;
		if (ioctl(fd, DP_KMOD_IOC_CC_STATS, &st) < 0)
			continue;
		sum.chains += st.chains;
		sum.frames += st.frames;
		sum.truncated += st.truncated;
		sum.depth_limited += st.depth_limited;
		sum.empty += st.empty;
		sum.no_walk += st.no_walk;
		sum.nmi += st.nmi;
	}
	printf("kmod_cc_chains %llu\nkmod_cc_frames %llu\nkmod_cc_truncated %llu\n"
	       "kmod_cc_depth_limited %llu\nkmod_cc_empty %llu\nkmod_cc_no_walk %llu\n"
	       "kmod_cc_nmi %llu\n",
	       (unsigned long long)sum.chains, (unsigned long long)sum.frames,
	       (unsigned long long)sum.truncated, (unsigned long long)sum.depth_limited,
	       (unsigned long long)sum.empty, (unsigned long long)sum.no_walk,
	       (unsigned long long)sum.nmi);
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

#define PROG "dp-kmod-read"

static void usage(FILE *f)
{
	fprintf(f, "Usage: " PROG " [--seconds N] [--event auto|cycles|clock] "
		"[--period N] [--clock-ns N] [--ring N] [--out FILE] [--keep] [--stats]\n"
		"       [--callgraph DEPTH] [--chains FILE] [--help] [--version]\n"
		"Configure, enable and drain " DP_KMOD_DEVICE ", counting what was read.\n");
}

/* A refused option (@arg) or value: one line and a pointer to --help. */
static int usage_error(const char *msg, const char *arg, const struct option *lo)
{
	char buf[256];

	if (!msg) {
		du_cli_getopt_msg(buf, sizeof(buf), arg, lo);
		msg = buf;
	}
	du_cli_usage_error(stderr, PROG, msg);
	return 2;
}

/* What the command line asks for. */
struct kr_args {
	struct dp_kmod_config cfg;
	double seconds;
	const char *out, *chains;
	bool keep, stats;
};

/* The command line into @a: -1 to go on, else the exit status. */
static int kr_parse(int argc, char **argv, struct kr_args *a)
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
		{ "callgraph", required_argument, NULL, 'g' },
		{ "chains", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct dp_kmod_config *cfg = &a->cfg;
	int o;

	memset(a, 0, sizeof(*a));
	a->seconds = 5;
	cfg->abi = DP_KMOD_ABI;
	cfg->event = DP_KMOD_EV_AUTO;
	cfg->period = DP_KMOD_DEF_PERIOD;
	cfg->clock_ns = DP_KMOD_DEF_CLOCK_NS;
	cfg->ring_entries = DP_KMOD_DEF_RING;
	cfg->flags = DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's': a->seconds = atof(optarg); break;
		case 'e':
			if (!strcmp(optarg, "auto"))
				cfg->event = DP_KMOD_EV_AUTO;
			else if (!strcmp(optarg, "cycles"))
				cfg->event = DP_KMOD_EV_CYCLES;
			else if (!strcmp(optarg, "clock"))
				cfg->event = DP_KMOD_EV_CPU_CLOCK;
			else
				return usage_error("--event takes auto, cycles or clock", NULL, opts);
			break;
		case 'p': cfg->period = strtoull(optarg, NULL, 0); break;
		case 'c': cfg->clock_ns = strtoull(optarg, NULL, 0); break;
		case 'r': cfg->ring_entries = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'o': a->out = optarg; break;
		case 'k': a->keep = true; break;
		case 'S': a->stats = true; break;
		case 'g': cfg->callgraph_depth = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'C': a->chains = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': du_cli_version(stdout, PROG); return 0;
		default: return usage_error(NULL, argv[optind - 1], opts);
		}
	}
	return -1;
}

/* Where the stream goes: decoded into @k and @cc, copied to @of. */
struct kr_sink {
	struct kr_count *k;
	struct kr_cc *cc;
	struct raw_decode_stats *st;
	FILE *of;
	const char *out;	/* @of's name */
};

/*
 * Read the stream of @fd, disabled after @seconds, to its end: the header
 * said, the records decoded (@buf, KR_BUF bytes, holds what is not yet
 * decoded: *@have bytes at the end).  0, or 1 after saying what failed.
 */
static int kr_read(int fd, double seconds, const struct kr_sink *o, unsigned char *buf,
		   size_t *have)
{
	struct raw_header hdr;
	bool disabled = false, have_hdr = false;
	double end = kr_now() + seconds;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		size_t used;
		int hs;

		if (!disabled && kr_now() >= end) {
			if (ioctl(fd, DP_KMOD_IOC_DISABLE) < 0) {
				perror("dp-kmod-read: disable");
				return 1;
			}
			disabled = true;
		}
		n = read(fd, buf + *have, KR_BUF - *have);
		if (n < 0 && errno == EAGAIN) {
			poll(&pfd, 1, 100);
			continue;
		}
		if (n < 0) {
			perror("dp-kmod-read: read");
			return 1;
		}
		if (n == 0)
			return 0;	/* disabled and drained: the end of the stream */
		if (o->of && fwrite(buf + *have, 1, (size_t)n, o->of) != (size_t)n) {
			perror(o->out);
			return 1;
		}
		*have += (size_t)n;
		if (!have_hdr) {
			hs = raw_header_parse(buf, *have, &hdr);
			if (hs == -EAGAIN)
				continue;
			if (hs < 0) {
				fprintf(stderr, "dp-kmod-read: bad header (%d)\n", hs);
				return 1;
			}
			have_hdr = true;
			printf("header collector %u events %u name %s count %llu\n", hdr.collector,
			       hdr.nr_events, hdr.events[0].name,
			       (unsigned long long)hdr.events[0].count);
			memmove(buf, buf + hs, *have - (size_t)hs);
			*have -= (size_t)hs;
		}
		if (raw_decode(&kr_ops, o->k, buf, *have, &used, o->st) < 0) {
			fprintf(stderr, "dp-kmod-read: corrupt stream\n");
			return 1;
		}
		kr_scan(o->cc, buf, used);
		memmove(buf, buf + used, *have - used);
		*have -= used;
	}
}

/* What was read, one "key value" line each (@have: bytes left undecoded). */
static void kr_print(int fd, const struct dp_kmod_config *cfg, const struct kr_sink *o,
		     size_t have)
{
	const struct kr_count *k = o->k;
	const struct kr_cc *cc = o->cc;
	const struct raw_decode_stats *st = o->st;

	if (have)
		printf("trailing_bytes %zu\n", have);
	printf("samples %llu\n", (unsigned long long)k->samples);
	printf("host_kernel %llu\nhost_user %llu\nguest_kernel %llu\nguest_user %llu\n",
	       (unsigned long long)k->by_mode[0], (unsigned long long)k->by_mode[1],
	       (unsigned long long)k->by_mode[2], (unsigned long long)k->by_mode[3]);
	printf("guest_attributed %llu\nguest_asid %llu\n", (unsigned long long)k->guest_attributed,
	       (unsigned long long)k->guest_asid);
	printf("domains %zu\nasids %zu\ncpus %zu\n", k->domains.n, k->asids.n, k->cpus.n);
	printf("lost %llu\ntime_backwards %llu\n", (unsigned long long)k->lost,
	       (unsigned long long)k->backwards);
	printf("unknown_type %llu\nbad_payload %llu\n", (unsigned long long)st->unknown_type,
	       (unsigned long long)st->bad_payload);
	if (cfg->callgraph_depth) {
		kr_cc_stats(fd);
		printf("cc_records %llu\ncc_guest %llu\ncc_truncated %llu\ncc_frames %llu\n"
		       "cc_bad %llu\ncc_orphan %llu\ncc_guest_kernel %llu\ncc_guest_user %llu\n",
		       (unsigned long long)cc->records, (unsigned long long)cc->guest,
		       (unsigned long long)cc->truncated, (unsigned long long)cc->frames_total,
		       (unsigned long long)cc->bad,
		       (unsigned long long)(cc->orphan + cc->pending),
		       (unsigned long long)cc->by_mode[DP_MODE_GUEST_KERNEL],
		       (unsigned long long)cc->by_mode[DP_MODE_GUEST_USER]);
	}
	for (size_t i = 0; i < k->domains.n; i++)
		printf("domain %llu\n", (unsigned long long)k->domains.v[i]);
}

int main(int argc, char **argv)
{
	struct kr_args a;
	struct raw_decode_stats st = { 0 };
	static struct kr_count k;
	static struct kr_cc cc;
	struct kr_sink sink = { .k = &k, .cc = &cc, .st = &st };
	unsigned char *buf;
	size_t have = 0;
	int fd, rc;

	rc = kr_parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	fd = open(DP_KMOD_DEVICE, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror("dp-kmod-read: " DP_KMOD_DEVICE);
		return 1;
	}
	if (a.stats)
		return kr_stats(fd);
	if (ioctl(fd, DP_KMOD_IOC_SET_CONFIG, &a.cfg) < 0 || ioctl(fd, DP_KMOD_IOC_ENABLE) < 0) {
		perror("dp-kmod-read: configure/enable");
		return 1;
	}
	if (ioctl(fd, DP_KMOD_IOC_GET_CONFIG, &a.cfg) == 0)
		printf("event %s\n", a.cfg.active_event == DP_KMOD_EV_CYCLES ? "cycles" : "clock");
	if (a.keep) {
		/* let it sample, then exit with it on: our close stops it */
		usleep((useconds_t)(a.seconds * 1e6));
		puts("left enabled");
		return 0;
	}
	sink.out = a.out;
	if (a.out && !(sink.of = fopen(a.out, "wb"))) {
		perror(a.out);
		return 1;
	}
	if (a.chains && !(cc.out = fopen(a.chains, "w"))) {
		perror(a.chains);
		return 1;
	}
	buf = malloc(KR_BUF);
	if (!buf)
		return 1;
	rc = kr_read(fd, a.seconds, &sink, buf, &have);
	kr_print(fd, &a.cfg, &sink, have);
	if (sink.of)
		fclose(sink.of);
	if (cc.out)
		fclose(cc.out);
	free(buf);
	close(fd);
	return rc || st.unknown_type || st.bad_payload || have || cc.bad || cc.orphan ||
		cc.pending;
}
