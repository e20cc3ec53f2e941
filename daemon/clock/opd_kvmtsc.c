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
#include "opd_kvmtsc_trace.h"
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
/* Offset writes kept per vCPU: a pair is placed within a second or so of
 * being read, and KVM writes at most a few thousand times a second. */
#define TL_MAX		8192
/* Two pairs' offsets that differ by less than this agree; a pair whose
 * offset is ambiguous takes the candidate within this of the last exact
 * offset (it moves by nanoseconds a second: drift). */
#define AGREE_NS	(50ULL * 1000)
/* The last exact offset helps place an ambiguous pair for this long. */
#define LAST_C_NS	(30ULL * 1000 * 1000 * 1000)

/* A write of a vCPU's offset at host time t: prev before, next after. */
struct tl_ent {
	uint64_t t;
	int64_t prev, next;
};

/* One vCPU's offsets since @start (before it: not known). */
struct vtl {
	struct tl_ent *e;
	size_t n, cap;
	uint64_t start;
};

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
	/* KVM's offset writes as they happen (opd_kvmtsc_trace) */
	char tracefs[160];	/* "" : the default */
	bool tr_tried, follow;
	opd_kvmtsc_open_fn open_fn;	/* NULL: open the tracepoint here */
	void *open_ctx;
	struct opd_kvmtsc_trace *tr;
	uint64_t since;
	struct vtl *vt;
	size_t nr_vt;
	/* the last exact offset (guest - host) and when it was taken */
	bool have_c;
	int64_t last_c;
	uint64_t last_c_at;
	/* a pair that moved the offset, held until the next one agrees */
	bool have_pend;
	int64_t pend;
	uint64_t n_exact, n_ambiguous, n_unexplained, n_lost, n_held, n_confirmed;
};

static void open_trace(struct opd_kvmtsc *k);

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

static struct opd_kvmtsc *kvmtsc_new(pid_t pid, const char *debugfs, bool pingpong,
				     opd_kvmtsc_open_fn open_fn, void *open_ctx)
{
	struct opd_kvmtsc *k = calloc(1, sizeof(*k));
	uint64_t w;

	if (!k)
		return NULL;
	k->pid = pid;
	k->open_fn = open_fn;
	k->open_ctx = open_ctx;
	k->pingpong = pingpong;
	snprintf(k->debugfs, sizeof(k->debugfs), "%s", debugfs ? debugfs : DEBUGFS);
	/* a debugfs of the caller's (tests) has its tracefs below it */
	if (debugfs)
		snprintf(k->tracefs, sizeof(k->tracefs), "%s/tracing", debugfs);
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
	if (!k->no_exact)
		open_trace(k);
	return k;
}

struct opd_kvmtsc *opd_kvmtsc_new(pid_t pid, const char *debugfs, bool pingpong)
{
	return kvmtsc_new(pid, debugfs, pingpong, NULL, NULL);
}

struct opd_kvmtsc *opd_kvmtsc_new_via(pid_t pid, bool pingpong, opd_kvmtsc_open_fn open_fn,
				      void *open_ctx)
{
	return kvmtsc_new(pid, NULL, pingpong, open_fn, open_ctx);
}

void opd_kvmtsc_free(struct opd_kvmtsc *k)
{
	if (!k)
		return;
	if (k->follow)
		du_info("KVM TSC of pid %d: %" PRIu64 " offset writes followed, %" PRIu64
			" losses; pairs %" PRIu64 " exact, %" PRIu64 " ambiguous, %" PRIu64
			" unexplained, %" PRIu64 " moves held (%" PRIu64 " confirmed by the next pair)",
			(int)k->pid, k->changes, k->n_lost, k->n_exact, k->n_ambiguous,
			k->n_unexplained, k->n_held, k->n_confirmed);
	opd_kvmtsc_trace_close(k->tr);
	for (size_t i = 0; i < k->nr_vt; i++)
		free(k->vt[i].e);
	free(k->vt);
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

/* ---- KVM's offset writes, followed (doc/clock.md) ---- */

static struct vtl *vtl_get(struct opd_kvmtsc *k, uint32_t vcpu)
{
	if (vcpu >= 4096)	/* (KVM's own limit is lower) */
		return NULL;
	if (vcpu >= k->nr_vt) {
		size_t n = (size_t)vcpu + 1;
		struct vtl *v = realloc(k->vt, n * sizeof(*v));

		if (!v)
			return NULL;
		for (size_t i = k->nr_vt; i < n; i++)
			v[i] = (struct vtl){ .start = k->since };
		k->vt = v;
		k->nr_vt = n;
	}
	return &k->vt[vcpu];
}

/* Room for one more write: grow, or forget the oldest half (what lies
 * before the first write kept is then not known). */
static bool vtl_room(struct vtl *v)
{
	size_t half;

	if (v->n < v->cap)
		return true;
	if (v->cap < TL_MAX) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		struct tl_ent *e = realloc(v->e, cap * sizeof(*e));

		if (!e)
			return false;
		v->e = e;
		v->cap = cap;
		return true;
	}
	half = v->n / 2;
	v->start = v->e[half - 1].t;
	memmove(v->e, v->e + half, (v->n - half) * sizeof(*v->e));
	v->n -= half;
	return true;
}

void opd_kvmtsc_note_write(struct opd_kvmtsc *k, uint64_t t_ns, uint32_t vcpu, int64_t prev,
			   int64_t next)
{
	struct vtl *v = vtl_get(k, vcpu);
	size_t pos;

	if (!v || t_ns < v->start || !vtl_room(v))
		return;
	/* rings are per CPU: a write may come after a later one of another CPU */
	pos = v->n;
	while (pos && v->e[pos - 1].t > t_ns)
		pos--;
	memmove(v->e + pos + 1, v->e + pos, (v->n - pos) * sizeof(*v->e));
	v->e[pos] = (struct tl_ent){ .t = t_ns, .prev = prev, .next = next };
	v->n++;
	k->changes++;
}

void opd_kvmtsc_note_lost(struct opd_kvmtsc *k, uint64_t t_ns)
{
	k->n_lost++;
	for (size_t i = 0; i < k->nr_vt; i++) {
		struct vtl *v = &k->vt[i];
		size_t drop = 0;

		while (drop < v->n && v->e[drop].t < t_ns)
			drop++;
		memmove(v->e, v->e + drop, (v->n - drop) * sizeof(*v->e));
		v->n -= drop;
		if (v->start < t_ns)
			v->start = t_ns;
	}
}

void opd_kvmtsc_follow(struct opd_kvmtsc *k, uint64_t since_ns)
{
	k->follow = true;
	k->since = since_ns;
	for (size_t i = 0; i < k->nr_vt; i++)
		if (k->vt[i].start < since_ns)
			k->vt[i].start = since_ns;
}

static void cb_write(void *arg, const struct opd_kvmtsc_write *w)
{
	opd_kvmtsc_note_write(arg, w->t_ns, w->vcpu, w->prev, w->next);
}

static void cb_lost(void *arg, uint64_t t_ns)
{
	opd_kvmtsc_note_lost(arg, t_ns);
}

static void open_trace(struct opd_kvmtsc *k)
{
	char why[300] = "";

	if (k->open_fn)
		k->tr = opd_kvmtsc_trace_open_via(k->open_fn, k->open_ctx, why, sizeof(why));
	else
		k->tr = opd_kvmtsc_trace_open(k->tracefs[0] ? k->tracefs : NULL, why, sizeof(why));
	if (!k->tr) {
		du_debug("KVM TSC of pid %d: offsets read per pair from debugfs: %s", (int)k->pid,
			 why);
		return;
	}
	opd_kvmtsc_follow(k, opd_kvmtsc_trace_since(k->tr));
}

void opd_kvmtsc_poll(struct opd_kvmtsc *k)
{
	if (k->tr)
		opd_kvmtsc_trace_drain(k->tr, k->pid, cb_write, cb_lost, k);
}

/* Segment @i (0 to n) of @v: the offset *@o in force over [*@a, *@b).
 * With no write seen, one segment: @dbg (debugfs's value).  False when
 * not known (a write between was lost). */
static bool vtl_seg(const struct vtl *v, size_t i, int64_t dbg, uint64_t *a, uint64_t *b,
		    int64_t *o)
{
	if (!v->n) {
		*a = v->start;
		*b = UINT64_MAX;
		*o = dbg;
		return i == 0;
	}
	if (i == 0) {
		*a = v->start;
		*b = v->e[0].t;
		*o = v->e[0].prev;
		return *a < *b;
	}
	*a = v->e[i - 1].t;
	*b = i < v->n ? v->e[i].t : UINT64_MAX;
	*o = v->e[i - 1].next;
	return i == v->n || v->e[i].prev == *o;
}

/* What converting the pair needs: the host's pair now and its rate. */
struct conv {
	uint64_t htsc, hns, hwin;
	long double npt;	/* host ns per tick */
	int64_t ratio, frac;
	long double slack;	/* ns either side of a segment */
};

/* Host time of guest TSC @g under offset @o; false when implausible. */
static bool host_time(const struct conv *cv, uint64_t g, int64_t o, long double *h)
{
	uint64_t gh = opd_kvmtsc_host_tsc(g, o, (uint64_t)cv->ratio, (unsigned int)cv->frac);
	long double age = (long double)(int64_t)(cv->htsc - gh) * cv->npt;

	if (age > (long double)MAX_AGE_NS || age < -(long double)MAX_FUTURE_NS)
		return false;
	*h = (long double)cv->hns - age;
	return true;
}

#define MAX_CAND 8

/* The guest-minus-host offsets the pair @t implies under each offset of
 * KVM's whose time span holds it: how many (up to MAX_CAND + 1). */
static size_t candidates(const struct vtl *v, int64_t dbg, const struct conv *cv,
			 const struct dp_ag_tsc *t, int64_t c[MAX_CAND])
{
	size_t nc = 0, nseg = v->n + 1;

	/* newest first: a pair is seldom old */
	for (size_t i = nseg; i-- > 0 && nc <= MAX_CAND;) {
		uint64_t a, b;
		int64_t o;
		long double h, hn;

		if (!vtl_seg(v, i, dbg, &a, &b, &o) || !host_time(cv, t->tsc, o, &h))
			continue;
		if (h + cv->slack < (long double)a || h - cv->slack >= (long double)b)
			continue;
		/* KVM keeps a vCPU's TSC from going back across a write, so the
		 * guest read it before the next offset's first value too: under
		 * that offset the pair lies before the write.  (Without it, a
		 * pair just after a load that lowered the offset by the time the
		 * vCPU was out would fit the offset before too.) */
		if (i < v->n && host_time(cv, t->tsc, v->e[i].next, &hn) &&
		    hn - cv->slack >= (long double)b)
			continue;
		if (nc < MAX_CAND)
			c[nc] = (int64_t)((long double)t->time_ns - h);
		nc++;
	}
	return nc;
}

static uint64_t absdiff(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/*
 * One offset of the candidates: all agree, or one is near the last
 * exact offset and the others are not.  -EAGAIN when ambiguous.
 */
static int choose(const struct opd_kvmtsc *k, const int64_t *c, size_t nc, uint64_t now,
		  int64_t *pick)
{
	int64_t lo = c[0], hi = c[0];
	size_t near = 0, best = 0;

	for (size_t i = 1; i < nc; i++) {
		lo = c[i] < lo ? c[i] : lo;
		hi = c[i] > hi ? c[i] : hi;
	}
	if ((uint64_t)(hi - lo) <= AGREE_NS) {
		*pick = c[0];
		return 0;
	}
	if (!k->have_c || now - k->last_c_at > LAST_C_NS)
		return -EAGAIN;
	for (size_t i = 0; i < nc; i++) {
		if (absdiff(c[i], k->last_c) <= AGREE_NS) {
			near++;
			best = i;
		} else if (absdiff(c[i], k->last_c) <= 2 * AGREE_NS) {
			return -EAGAIN;
		}
	}
	if (near != 1)
		return -EAGAIN;
	*pick = c[best];
	return 0;
}

/* debugfs is mounted by most distributions; where it is not, the daemon
 * mounts it once, where the kernel documents it, when it is root: the
 * privsep worker is not, and its seccomp list kills it on mount(2) (a Xen
 * dom0 has no kvm/ to find, so the worker asked there). */
bool opd_kvmtsc_have_kvm_dir(const char *debugfs)
{
	char p[256];
	struct stat sb;

	debugfs = debugfs ? debugfs : DEBUGFS;
	snprintf(p, sizeof(p), "%s/kvm", debugfs);
	if (!stat(p, &sb))
		return true;
	if (!strcmp(debugfs, DEBUGFS) && geteuid() == 0 &&
	    mount("debugfs", DEBUGFS, "debugfs", 0, NULL) == 0)
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
	if (!opd_kvmtsc_have_kvm_dir(k->debugfs)) {
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

/* KVM's scaling of @vcpu (none shown: the ratio is 1). */
static int read_scaling(struct opd_kvmtsc *k, uint32_t vcpu, int64_t *ratio, int64_t *frac)
{
	*ratio = 1;
	*frac = 0;
	if (!k->dir[0])
		return 0;
	if (!read_num(k->dir, vcpu, "tsc-scaling-ratio", ratio) &&
	    (read_num(k->dir, vcpu, "tsc-scaling-ratio-frac-bits", frac) || *frac < 0 ||
	     *frac > 63 || *ratio <= 0)) {
		snprintf(k->why, sizeof(k->why), "unreadable TSC scaling in %s", k->dir);
		return -EINVAL;
	}
	return 0;
}

/* The host's pair now and its TSC rate; -EAGAIN while the rate is new. */
static int conv_init(struct opd_kvmtsc *k, const struct dp_ag_tsc *t, struct conv *cv)
{
	uint64_t npt_num, npt_den;
	long double gwin;

	host_pair(&cv->htsc, &cv->hns, &cv->hwin);
	npt_num = cv->hns - k->h0_ns;
	npt_den = cv->htsc - k->h0_tsc;
	if (npt_num < RATE_MIN_NS || !npt_den) {
		snprintf(k->why, sizeof(k->why), "measuring the host TSC rate");
		return -EAGAIN;
	}
	cv->npt = (long double)npt_num / (long double)npt_den;
	gwin = (long double)t->window_tsc * cv->npt * (long double)(1ULL << cv->frac) /
	       (long double)cv->ratio;
	cv->slack = gwin / 2 + (long double)cv->hwin / 2 + EXTRA_UNC_NS;
	return 0;
}

/*
 * With KVM's writes followed: the pair's TSC under each offset that was
 * in force for its vCPU, kept where the host time it gives lies within
 * that offset's time span.  Exact even while KVM moves the offset.
 */
static int follow_offset(struct opd_kvmtsc *k, const struct dp_ag_tsc *t, int64_t *off,
			 uint64_t *unc)
{
	struct vtl *v = vtl_get(k, t->cpu);
	int64_t dbg = 0, c[MAX_CAND];
	struct conv cv;
	size_t nc;
	int err;

	if (!v)
		return -ENOMEM;
	if (!find_dir(k) && read_scaling(k, t->cpu, &cv.ratio, &cv.frac))
		return -EINVAL;
	if (!k->dir[0])
		cv.ratio = 1, cv.frac = 0;	/* (no debugfs: TSC scaling not known) */
	if (!v->n && (!k->dir[0] || read_num(k->dir, t->cpu, "tsc-offset", &dbg))) {
		snprintf(k->why, sizeof(k->why), "no write of vCPU %u's TSC offset seen, and "
			 "no debugfs to read it", t->cpu);
		return -EAGAIN;
	}
	err = conv_init(k, t, &cv);
	if (err)
		return err;
	nc = candidates(v, dbg, &cv, t, c);
	if (!nc) {
		k->n_unexplained++;
		snprintf(k->why, sizeof(k->why), "no TSC offset of KVM's for vCPU %u explains "
			 "the guest's pair", t->cpu);
		return -ERANGE;
	}
	if (nc > MAX_CAND || choose(k, c, nc, cv.hns, off)) {
		k->n_ambiguous++;
		snprintf(k->why, sizeof(k->why), "a pair of vCPU %u fits %zu of KVM's offsets",
			 t->cpu, nc);
		return -EAGAIN;
	}
	/*
	 * The guest's clock keeps its distance from the host's but for drift.
	 * A pair that moves it further is held until the next pair says the
	 * same: a real move (a guest that stepped its clock) is confirmed and
	 * logged; a pair placed under the wrong one of KVM's offsets is not
	 * (seen in the lab: +5.02 ms, then back 1.2 s later, every sample in
	 * between mapped 5 ms off).  The last exact offset stays meanwhile.
	 */
	if (k->have_c && absdiff(*off, k->last_c) > AGREE_NS) {
		if (!k->have_pend || absdiff(*off, k->pend) > AGREE_NS) {
			k->have_pend = true;
			k->pend = *off;
			k->n_held++;
			snprintf(k->why, sizeof(k->why), "a pair of vCPU %u moves the guest "
				 "clock by %+.1f us: held until the next pair confirms it",
				 t->cpu, (double)(*off - k->last_c) / 1e3);
			return -EAGAIN;
		}
		k->n_confirmed++;
		du_info("KVM TSC of pid %d: guest clock offset moved %+.1f us in %.1f s "
			"(confirmed by two pairs)", (int)k->pid, (double)(*off - k->last_c) / 1e3,
			(double)(cv.hns - k->last_c_at) / 1e9);
	}
	k->have_pend = false;
	k->have_c = true;
	k->last_c = *off;
	k->last_c_at = cv.hns;
	k->n_exact++;
	*unc = (uint64_t)cv.slack;
	k->why[0] = 0;
	return 0;
}

int opd_kvmtsc_offset(struct opd_kvmtsc *k, const struct dp_ag_tsc *t, int64_t *off,
		      uint64_t *unc)
{
	int64_t offset, ratio, frac;
	struct conv cv;
	long double h;
	int err;

	if (k->no_exact)
		return -ENOTSUP;
	if (k->follow) {
		opd_kvmtsc_poll(k);
		return follow_offset(k, t, off, unc);
	}
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
	err = read_scaling(k, t->cpu, &ratio, &frac);
	if (err)
		return err;
	err = offset_stable(k, t->cpu, offset);
	if (err)
		return err;
	cv.ratio = ratio;
	cv.frac = frac;
	err = conv_init(k, t, &cv);
	if (err)
		return err;
	if (!host_time(&cv, t->tsc, offset, &h)) {
		snprintf(k->why, sizeof(k->why),
			 "guest TSC does not follow KVM's offset (pair far from now)");
		return -ERANGE;
	}
	/* the guest's values may be anything: a conversion out of range
	 * would be undefined */
	if (!((long double)t->time_ns - h < 9.0e18L) || !((long double)t->time_ns - h > -9.0e18L) ||
	    !(cv.slack < 1.0e18L)) {
		snprintf(k->why, sizeof(k->why), "guest TSC pair out of range");
		return -ERANGE;
	}
	*off = (int64_t)((long double)t->time_ns - h);
	*unc = (uint64_t)cv.slack;
	k->why[0] = 0;
	return 0;
}
