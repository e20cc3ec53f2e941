/*
 * Prototype of the xen collector's sampling loop, run in the Xen lab's
 * dom0 against PV guests.  It is the evidence for daemon/collect/collect_xen.c:
 * every domU vCPU is looked at about RATE times a second (with jitter, so
 * the looks do not lock onto a guest's periodic work); a vCPU that
 * consumed CPU time since the last look (xc_vcpu_getinfo cpu_time) gets
 * its context read (xc_vcpu_getcontext: PC, kernel/user mode, CR3) and one
 * sample weighted by that time.  An idle vCPU costs one getinfo and gives
 * no sample, so an idle guest is not counted as busy.
 *
 * Prints per domain: samples, their weight, the kernel/user split, the
 * number of address spaces (CR3) seen, and Xen's own accounting of the
 * domain's CPU time over the same interval, so the two can be compared.
 *
 * Usage: xen-sample-proto [-t SECONDS] [-r HZ_PER_VCPU] [-v]
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xenctrl.h>
#include <xenstore.h>

#define PROTO_MAX_DOMS 64
#define PROTO_MAX_VCPUS 64
#define PROTO_MAX_CR3 64

struct proto_vcpu {
	uint64_t last_ns;	/* cpu_time at the previous look */
	int seen;		/* last_ns is valid */
};

struct proto_dom {
	uint32_t domid;
	int hvm;
	int live;		/* still in the last domain list */
	char name[64];
	unsigned int nvcpu;
	struct proto_vcpu vcpu[PROTO_MAX_VCPUS];
	uint64_t xen_ns0, xen_ns;	/* domain cpu_time at start, latest */
	uint64_t samples, kernel, user, weight_ns, looks, ctx_fail;
	uint64_t cr3[PROTO_MAX_CR3];
	unsigned int ncr3;
};

struct proto {
	xc_interface *xch;
	struct xs_handle *xsh;
	struct proto_dom dom[PROTO_MAX_DOMS];
	unsigned int ndom;
	uint64_t rng;
	int verbose;
};

static volatile sig_atomic_t proto_stop;

static void proto_on_signal(int sig)
{
	(void)sig;
	proto_stop = 1;
}

static uint64_t proto_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64: cheap, and the jitter needs no quality. */
static uint64_t proto_rand(struct proto *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return p->rng;
}

static struct proto_dom *proto_find(struct proto *p, uint32_t domid)
{
	for (unsigned int i = 0; i < p->ndom; i++)
		if (p->dom[i].domid == domid)
			return &p->dom[i];
	return NULL;
}

static void proto_name(struct proto *p, struct proto_dom *d)
{
	char path[64];
	unsigned int len = 0;
	char *v;

	snprintf(path, sizeof(path), "/local/domain/%u/name", d->domid);
	v = p->xsh ? xs_read(p->xsh, XBT_NULL, path, &len) : NULL;
	if (v && len > 0)
		snprintf(d->name, sizeof(d->name), "%.*s", (int)len, v);
	else
		snprintf(d->name, sizeof(d->name), "domid%u", d->domid);
	free(v);
}

/*
 * Domains come and go; rescan the list (dom0 is left out: its own work is
 * the perf collector's, and its vCPU running this loop cannot be paused
 * to read its context).
 */
static int proto_rescan(struct proto *p)
{
	xc_domaininfo_t info[PROTO_MAX_DOMS];
	int n = xc_domain_getinfolist(p->xch, 1, PROTO_MAX_DOMS, info);

	if (n < 0)
		return -errno;
	for (unsigned int i = 0; i < p->ndom; i++)
		p->dom[i].live = 0;
	for (int i = 0; i < n; i++) {
		struct proto_dom *d;

		if (info[i].flags & XEN_DOMINF_dying)
			continue;
		d = proto_find(p, info[i].domain);
		if (!d) {
			if (p->ndom == PROTO_MAX_DOMS)
				continue;
			d = &p->dom[p->ndom++];
			memset(d, 0, sizeof(*d));
			d->domid = info[i].domain;
			d->hvm = !!(info[i].flags & XEN_DOMINF_hvm_guest);
			d->xen_ns0 = info[i].cpu_time;
			proto_name(p, d);
		}
		d->live = 1;
		d->nvcpu = info[i].max_vcpu_id + 1;
		if (d->nvcpu > PROTO_MAX_VCPUS)
			d->nvcpu = PROTO_MAX_VCPUS;
		d->xen_ns = info[i].cpu_time;
	}
	return 0;
}

static void proto_note_cr3(struct proto_dom *d, uint64_t cr3)
{
	for (unsigned int i = 0; i < d->ncr3; i++)
		if (d->cr3[i] == cr3)
			return;
	if (d->ncr3 < PROTO_MAX_CR3)
		d->cr3[d->ncr3++] = cr3;
}

/* One look at one vCPU. */
static void proto_look(struct proto *p, struct proto_dom *d, unsigned int v)
{
	struct proto_vcpu *pv = &d->vcpu[v];
	xc_vcpuinfo_t vi;
	vcpu_guest_context_any_t ctx;
	uint64_t delta, pc, cr3;
	int in_kernel;

	if (xc_vcpu_getinfo(p->xch, d->domid, v, &vi) < 0 || !vi.online)
		return;
	d->looks++;
	if (!pv->seen) {
		pv->seen = 1;
		pv->last_ns = vi.cpu_time;
		return;
	}
	delta = vi.cpu_time - pv->last_ns;
	pv->last_ns = vi.cpu_time;
	if (delta == 0)
		return;		/* idle since the last look: no sample */
	if (xc_vcpu_getcontext(p->xch, d->domid, v, &ctx) < 0) {
		d->ctx_fail++;
		return;
	}
	pc = ctx.x64.user_regs.rip;
	cr3 = ctx.x64.ctrlreg[3];
	if (d->hvm)
		in_kernel = (ctx.x64.user_regs.cs & 3) == 0;
	else
		in_kernel = !!(ctx.x64.flags & VGCF_in_kernel);
	d->samples++;
	d->weight_ns += delta;
	if (in_kernel)
		d->kernel++;
	else
		d->user++;
	/* a 64-bit PV guest's CR3 is a frame number shifted: mask nothing */
	proto_note_cr3(d, cr3);
	if (p->verbose)
		printf("sample dom %u vcpu %u pc %#" PRIx64 " %s cr3 %#" PRIx64
		       " weight %" PRIu64 "\n", d->domid, v, pc,
		       in_kernel ? "kernel" : "user", cr3, delta);
}

static void proto_usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [-t SECONDS] [-r HZ_PER_VCPU] [-v]\n", argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	struct proto *p;
	double seconds = 10, rate = 1000;
	uint64_t t_start, t_end, next, period, t_rescan = 0;
	struct timespec cpu0, cpu1;
	uint64_t ticks = 0, late = 0;
	int c, verbose = 0;

	while ((c = getopt(argc, argv, "t:r:v")) != -1) {
		switch (c) {
		case 't': seconds = atof(optarg); break;
		case 'r': rate = atof(optarg); break;
		case 'v': verbose = 1; break;
		default: proto_usage(argv[0]);
		}
	}
	if (seconds <= 0 || rate <= 0 || rate > 100000)
		proto_usage(argv[0]);
	p = calloc(1, sizeof(*p));
	if (!p)
		return 1;
	p->verbose = verbose;
	p->rng = proto_now_ns() | 1;
	p->xch = xc_interface_open(NULL, NULL, 0);
	if (!p->xch) {
		fprintf(stderr, "xc_interface_open: %s\n", strerror(errno));
		return 1;
	}
	p->xsh = xs_open(XS_OPEN_READONLY);
	if (!p->xsh)
		fprintf(stderr, "xs_open: %s (names unknown)\n", strerror(errno));
	signal(SIGINT, proto_on_signal);
	signal(SIGTERM, proto_on_signal);

	period = (uint64_t)(1e9 / rate);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
	t_start = proto_now_ns();
	t_end = t_start + (uint64_t)(seconds * 1e9);
	next = t_start;
	while (!proto_stop) {
		uint64_t now = proto_now_ns();
		struct timespec ts;

		if (now >= t_end)
			break;
		if (now >= t_rescan) {
			int rc = proto_rescan(p);

			if (rc < 0) {
				fprintf(stderr, "xc_domain_getinfolist: %s\n", strerror(-rc));
				return 1;
			}
			t_rescan = now + 1000000000u;
		}
		for (unsigned int i = 0; i < p->ndom; i++)
			if (p->dom[i].live)
				for (unsigned int v = 0; v < p->dom[i].nvcpu; v++)
					proto_look(p, &p->dom[i], v);
		ticks++;
		/* next look: the period scaled by a factor in [0.75, 1.25) */
		next += period * 3 / 4 + proto_rand(p) % (period / 2 + 1);
		now = proto_now_ns();
		if (next <= now) {
			late++;
			next = now;	/* behind: do not try to catch up in a burst */
			continue;
		}
		ts.tv_sec = (time_t)(next / 1000000000u);
		ts.tv_nsec = (long)(next % 1000000000u);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	t_end = proto_now_ns();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
	proto_rescan(p);

	{
		double wall = (double)(t_end - t_start) / 1e9;
		double used = (double)(cpu1.tv_sec - cpu0.tv_sec) +
			      (double)(cpu1.tv_nsec - cpu0.tv_nsec) / 1e9;
		uint64_t total_w = 0, total_x = 0;

		for (unsigned int i = 0; i < p->ndom; i++) {
			total_w += p->dom[i].weight_ns;
			total_x += p->dom[i].xen_ns - p->dom[i].xen_ns0;
		}
		printf("# wall %.2f s, %" PRIu64 " ticks (%.0f/s, %" PRIu64
		       " late), collector CPU %.2f s (%.1f%% of one CPU)\n",
		       wall, ticks, (double)ticks / wall, late, used, 100.0 * used / wall);
		printf("# domain DOMID NAME samples N weight_ms W xen_ms X"
		       " kernel K user U cr3s C looks L ctxfail F share_w%% share_xen%%\n");
		for (unsigned int i = 0; i < p->ndom; i++) {
			struct proto_dom *d = &p->dom[i];
			uint64_t x = d->xen_ns - d->xen_ns0;

			printf("domain %u %s samples %" PRIu64 " weight_ms %.1f xen_ms %.1f"
			       " kernel %" PRIu64 " user %" PRIu64 " cr3s %u looks %" PRIu64
			       " ctxfail %" PRIu64 " %.1f %.1f\n",
			       d->domid, d->name, d->samples, (double)d->weight_ns / 1e6,
			       (double)x / 1e6, d->kernel, d->user, d->ncr3, d->looks,
			       d->ctx_fail,
			       total_w ? 100.0 * (double)d->weight_ns / (double)total_w : 0.0,
			       total_x ? 100.0 * (double)x / (double)total_x : 0.0);
		}
	}
	if (p->xsh)
		xs_close(p->xsh);
	xc_interface_close(p->xch);
	free(p);
	return 0;
}
