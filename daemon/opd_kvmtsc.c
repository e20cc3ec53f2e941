#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opd_kvmtsc.h"
#include "util/du_log.h"

#define DEBUGFS		"/sys/kernel/debug"
/* Host TSC rate is measured over at least this long before it is used. */
#define RATE_MIN_NS	(200ULL * 1000 * 1000)
/* Beyond the two pairs' windows: the host sample's own stamp (taken after
 * the vCPU exits) and the guest switch's. */
#define EXTRA_UNC_NS	2000
/* A guest pair that maps further from now than this is not explained by
 * the offset (wrong vCPU entry, a TSC the guest rewrote). */
#define MAX_AGE_NS	(30ULL * 1000 * 1000 * 1000)
#define MAX_FUTURE_NS	(5ULL * 1000 * 1000)

struct opd_kvmtsc {
	pid_t pid;
	bool pingpong;
	bool no_exact;		/* a permanent reason: stays ping/pong */
	char debugfs[128];
	char dir[520];		/* DEBUGFS/kvm/PID-FD, "" until found */
	char why[900];
	uint64_t h0_tsc, h0_ns;
	/* per vCPU, KVM's offset at the previous read */
	struct prev_off { bool have; int64_t off; } *prev;
	size_t nr_prev;
	uint64_t changes;
};

#if defined(__x86_64__)
static inline uint64_t rd_tsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}
#define HAVE_TSC 1
#else
static inline uint64_t rd_tsc(void)
{
	return 0;
}
#define HAVE_TSC 0
#endif

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Host clock against host TSC: the tightest of a few tries. */
static void host_pair(uint64_t *tsc, uint64_t *ns, uint64_t *win)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = mono_ns(), x = rd_tsc(), b = mono_ns();

		if (b - a < best) {
			best = b - a;
			*tsc = x;
			*ns = a + (b - a) / 2;
		}
	}
	*win = best;
}

uint64_t opd_kvmtsc_guest_tsc(uint64_t host_tsc, int64_t offset, uint64_t ratio,
			      unsigned int frac_bits)
{
	unsigned __int128 v = (unsigned __int128)host_tsc * ratio;

	return (uint64_t)(v >> frac_bits) + (uint64_t)offset;
}

uint64_t opd_kvmtsc_host_tsc(uint64_t guest_tsc, int64_t offset, uint64_t ratio,
			     unsigned int frac_bits)
{
	unsigned __int128 v = (unsigned __int128)(guest_tsc - (uint64_t)offset) << frac_bits;

	return ratio ? (uint64_t)(v / ratio) : 0;
}

struct opd_kvmtsc *opd_kvmtsc_new(pid_t pid, const char *debugfs, bool pingpong)
{
	struct opd_kvmtsc *k = calloc(1, sizeof(*k));
	uint64_t w;

	if (!k)
		return NULL;
	k->pid = pid;
	k->pingpong = pingpong;
	snprintf(k->debugfs, sizeof(k->debugfs), "%s", debugfs ? debugfs : DEBUGFS);
	if (pingpong) {
		k->no_exact = true;
		snprintf(k->why, sizeof(k->why), "ping/pong forced (%s=pingpong)", OPD_KVMTSC_ENV);
	} else if (!HAVE_TSC) {
		k->no_exact = true;
		snprintf(k->why, sizeof(k->why), "host has no TSC");
	} else if (pid <= 0) {
		k->no_exact = true;
		snprintf(k->why, sizeof(k->why), "no KVM process known for the domain");
	}
	host_pair(&k->h0_tsc, &k->h0_ns, &w);
	return k;
}

void opd_kvmtsc_free(struct opd_kvmtsc *k)
{
	if (k)
		free(k->prev);
	free(k);
}

const char *opd_kvmtsc_why(const struct opd_kvmtsc *k)
{
	return k->why;
}

uint64_t opd_kvmtsc_offset_changes(const struct opd_kvmtsc *k)
{
	return k->changes;
}

/* debugfs is mounted by most distributions; where it is not, the daemon
 * (root) mounts it once, where the kernel documents it. */
static bool have_kvm_dir(struct opd_kvmtsc *k)
{
	char p[256];
	struct stat sb;

	snprintf(p, sizeof(p), "%s/kvm", k->debugfs);
	if (!stat(p, &sb))
		return true;
	if (!strcmp(k->debugfs, DEBUGFS) && mount("debugfs", DEBUGFS, "debugfs", 0, NULL) == 0)
		du_info("mounted debugfs on %s for KVM's TSC offsets", DEBUGFS);
	return stat(p, &sb) == 0;
}

static int find_dir(struct opd_kvmtsc *k)
{
	char prefix[32], p[256];
	struct dirent *e;
	DIR *d;
	int n;

	if (k->dir[0])
		return 0;
	if (!have_kvm_dir(k)) {
		snprintf(k->why, sizeof(k->why), "no KVM debugfs (%s/kvm)", k->debugfs);
		return -ENOENT;
	}
	snprintf(p, sizeof(p), "%s/kvm", k->debugfs);
	d = opendir(p);
	if (!d) {
		snprintf(k->why, sizeof(k->why), "%s: %s", p, strerror(errno));
		return -errno;
	}
	n = snprintf(prefix, sizeof(prefix), "%d-", (int)k->pid);
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, prefix, (size_t)n)) {
			snprintf(k->dir, sizeof(k->dir), "%s/%s", p, e->d_name);
			break;
		}
	}
	closedir(d);
	if (!k->dir[0]) {
		snprintf(k->why, sizeof(k->why), "no KVM debugfs entry for pid %d", (int)k->pid);
		return -ENOENT;
	}
	return 0;
}

static int read_num(const char *dir, uint32_t vcpu, const char *name, int64_t *v)
{
	char p[PATH_MAX + 64], buf[64], *end;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/vcpu%u/%s", dir, vcpu, name);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	errno = 0;
	/* tsc-offset is signed; the ratio is unsigned but below 2^63 */
	*v = strtoll(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

/*
 * KVM's offset for @vcpu, read now, against the previous read.  When it
 * moved in between (the guest wrote its TSC, or KVM re-derives it on each
 * vCPU load, as under an emulated L1), the pair was taken under an offset
 * nobody saw: its correlation is not exact.  -ESTALE then (counted, the
 * reason kept); the next pair is exact again if the offset holds.
 */
static int offset_stable(struct opd_kvmtsc *k, uint32_t vcpu, int64_t offset)
{
	struct prev_off *p;
	int64_t was;

	if (vcpu >= k->nr_prev) {
		size_t n = (size_t)vcpu + 1;

		p = realloc(k->prev, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + k->nr_prev, 0, (n - k->nr_prev) * sizeof(*p));
		k->prev = p;
		k->nr_prev = n;
	}
	p = &k->prev[vcpu];
	was = p->off;
	if (p->have && offset == was)
		return 0;
	p->off = offset;
	if (!p->have) {
		p->have = true;
		return 0;
	}
	if (!k->changes++)
		du_info("KVM TSC offset of pid %d vCPU %u moved (%" PRId64 " -> %" PRId64 ")",
			(int)k->pid, vcpu, was, offset);
	snprintf(k->why, sizeof(k->why),
		 "KVM's TSC offset of vCPU %u moved between reads (%" PRId64 " -> %" PRId64 ")",
		 vcpu, was, offset);
	return -ESTALE;
}

int opd_kvmtsc_offset(struct opd_kvmtsc *k, const struct dp_ag_tsc *t, int64_t *off,
		      uint64_t *unc)
{
	int64_t offset, ratio = 1, frac = 0;
	uint64_t htsc, hns, hwin, gh, npt_num, npt_den;
	long double npt, age, hi_ns, gwin;
	int err;

	if (k->no_exact)
		return -ENOTSUP;
	err = find_dir(k);
	if (err)
		return err;
	err = read_num(k->dir, t->cpu, "tsc-offset", &offset);
	if (err) {
		snprintf(k->why, sizeof(k->why), "%s/vcpu%u/tsc-offset: %s", k->dir, t->cpu,
			 strerror(-err));
		k->dir[0] = 0;	/* QEMU restarted? look again next time */
		return err;
	}
	/* no scaling files: the CPU has no TSC scaling, the ratio is 1 */
	if (!read_num(k->dir, t->cpu, "tsc-scaling-ratio", &ratio) &&
	    (read_num(k->dir, t->cpu, "tsc-scaling-ratio-frac-bits", &frac) || frac < 0 || frac > 63 ||
	     ratio <= 0)) {
		snprintf(k->why, sizeof(k->why), "unreadable TSC scaling in %s", k->dir);
		return -EINVAL;
	}
	err = offset_stable(k, t->cpu, offset);
	if (err)
		return err;

	host_pair(&htsc, &hns, &hwin);
	npt_num = hns - k->h0_ns;
	npt_den = htsc - k->h0_tsc;
	if (npt_num < RATE_MIN_NS || !npt_den) {
		snprintf(k->why, sizeof(k->why), "measuring the host TSC rate");
		return -EAGAIN;
	}
	npt = (long double)npt_num / (long double)npt_den;	/* host ns per tick */
	gh = opd_kvmtsc_host_tsc(t->tsc, offset, (uint64_t)ratio, (unsigned int)frac);
	age = (long double)(int64_t)(htsc - gh) * npt;	/* ns since the guest pair */
	if (age > (long double)MAX_AGE_NS || age < -(long double)MAX_FUTURE_NS) {
		snprintf(k->why, sizeof(k->why),
			 "guest TSC does not follow KVM's offset (pair %.0Lf ms from now)", age / 1e6L);
		return -ERANGE;
	}
	hi_ns = (long double)hns - age;
	gwin = (long double)t->window_tsc * npt * (long double)(1ULL << frac) / (long double)ratio;
	/* the guest's values may be anything: a conversion out of range
	 * would be undefined */
	if (!((long double)t->time_ns - hi_ns < 9.0e18L) ||
	    !((long double)t->time_ns - hi_ns > -9.0e18L) || !(gwin < 1.0e18L)) {
		snprintf(k->why, sizeof(k->why), "guest TSC pair out of range");
		return -ERANGE;
	}
	*off = (int64_t)((long double)t->time_ns - hi_ns);
	*unc = (uint64_t)(gwin / 2) + hwin / 2 + EXTRA_UNC_NS;
	k->why[0] = 0;
	return 0;
}
