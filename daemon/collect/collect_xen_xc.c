/*
 * The xen collector's source: libxenctrl in dom0 (cx_src_ops for the
 * engine in collect_xen.c), and Xen's own counters for the run's report.
 */
#include "config.h"

#ifdef HAVE_XEN
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <xenctrl.h>
#include <xenforeignmemory.h>
#include <xen/hvm/save.h>

#include "collect_xen.h"
#include "collect_xen_xc.h"
#include "util/du_log.h"

/* Guest frames a walk keeps mapped until mem_done: its stack pages and
 * the page tables above them (a kernel sample's walk into user space
 * needs about a dozen). */
#define CX_MAP_CACHE 16

struct cx_xc {
	xc_interface *xch;
	xc_domaininfo_t info[CX_MAX_DOMS];
	xenforeignmemory_handle *fmem;	/* call chains only */
	struct {
		uint32_t domid;
		uint64_t frame;
		void *p;
	} map[CX_MAP_CACHE];
	unsigned int nmap;
	/* the last HVM TSC read (cx_xc_hvm_tsc): its domain + 1, its value;
	 * the buffer of HVM contexts */
	uint32_t hvm_tsc_dom;
	uint64_t hvm_tsc_last;
	uint8_t *hvm_buf;
	size_t hvm_cap;
	/* the context reads' buffer for Xen to write, held from open to
	 * close: libxenctrl's own would be mapped and unmapped for every
	 * read, a context being more than a page (NULL: its way is used) */
	xc_hypercall_buffer_t ctx_hb;
	vcpu_guest_context_any_t *ctx_buf;
};

#define CX_CTX_PAGES ((int)((sizeof(vcpu_guest_context_any_t) + XC_PAGE_SIZE - 1) / XC_PAGE_SIZE))

static int cx_xc_list(void *src, struct cx_dom *out, size_t max)
{
	struct cx_xc *x = src;
	int n = xc_domain_getinfolist(x->xch, 1, (unsigned int)(max < CX_MAX_DOMS ? max : CX_MAX_DOMS),
				      x->info);
	int k = 0;

	if (n < 0)
		return errno ? -errno : -EIO;
	for (int i = 0; i < n; i++) {
		if (x->info[i].flags & XEN_DOMINF_dying)
			continue;
		out[k].domid = x->info[i].domain;
		out[k].nr_vcpus = x->info[i].max_vcpu_id + 1;
		out[k].hvm = !!(x->info[i].flags & XEN_DOMINF_hvm_guest);
		k++;
	}
	return k;
}

static int cx_xc_time(void *src, uint32_t domid, unsigned int vcpu, uint64_t *ns)
{
	struct cx_xc *x = src;
	xc_vcpuinfo_t vi;

	if (xc_vcpu_getinfo(x->xch, domid, vcpu, &vi) < 0)
		return errno ? -errno : -EIO;
	if (!vi.online)
		return -ENOENT;
	*ns = vi.cpu_time;
	return 0;
}

/* vCPU @vcpu's context into the held buffer (XEN_DOMCTL_getvcpucontext,
 * what xc_vcpu_getcontext asks, without its buffer's map and unmap). */
static int cx_xc_ctx_held(struct cx_xc *x, uint32_t domid, unsigned int vcpu)
{
	DECLARE_HYPERCALL_BUFFER_SHADOW(vcpu_guest_context_any_t, buf, &x->ctx_hb);
	struct xen_domctl d;

	(void)buf;	/* Xen writes it: x->ctx_buf */
	memset(&d, 0, sizeof(d));
	d.cmd = XEN_DOMCTL_getvcpucontext;
	d.domain = (domid_t)domid;
	d.u.vcpucontext.vcpu = vcpu;
	set_xen_guest_handle(d.u.vcpucontext.ctxt, buf);
	return xc_domctl(x->xch, &d) < 0 ? (errno ? -errno : -EIO) : 0;
}

static int cx_xc_ctx(void *src, uint32_t domid, unsigned int vcpu, bool hvm, struct cx_ctx *c)
{
	struct cx_xc *x = src;
	vcpu_guest_context_any_t own;
	const vcpu_guest_context_any_t *p = x->ctx_buf ? x->ctx_buf : &own;
	int rc;

	if (x->ctx_buf)
		rc = cx_xc_ctx_held(x, domid, vcpu);
	else
		rc = xc_vcpu_getcontext(x->xch, domid, vcpu, &own) < 0 ? (errno ? -errno : -EIO) : 0;
	if (rc)
		return rc;
	c->pc = p->x64.user_regs.rip;
	c->cr3 = p->x64.ctrlreg[3];
	c->fp = p->x64.user_regs.rbp;
	c->sp = p->x64.user_regs.rsp;
	c->la57 = !!(p->x64.ctrlreg[4] & (1ull << 12));
	/* Xen states the kernel's GS base apart from the user's in either
	 * mode (PV: as the guest set them; HVM: GS or its shadow by CPL) */
	c->gs_kernel = p->x64.gs_base_kernel;
	/* A 64-bit PV kernel runs in ring 3 like its user space: Xen says
	 * which one the vCPU is in.  HVM and PVH: the CPL. */
	c->kernel = hvm ? (p->x64.user_regs.cs & 3) == 0 : !!(p->x64.flags & VGCF_in_kernel);
	return 0;
}

/* A word of the domain's memory by frame: for a PV guest the frame is a
 * machine frame (its page tables hold those), for HVM a guest one;
 * Xen's foreign mapping takes each kind for its guest. */
static int cx_xc_read(void *src, uint32_t domid, uint64_t addr, void *buf, unsigned long len)
{
	struct cx_xc *x = src;
	uint64_t frame = addr >> XC_PAGE_SHIFT, off = addr & (XC_PAGE_SIZE - 1);
	void *p = NULL;

	if (!x->fmem || len > XC_PAGE_SIZE - off)
		return -EINVAL;
	for (unsigned int i = 0; i < x->nmap && !p; i++)
		if (x->map[i].domid == domid && x->map[i].frame == frame)
			p = x->map[i].p;
	if (!p) {
		xen_pfn_t pfn = (xen_pfn_t)frame;
		int err = 0;

		if (x->nmap == CX_MAP_CACHE)
			return -ENOSPC;	/* a walk past its pages: stop it */
		p = xenforeignmemory_map(x->fmem, domid, PROT_READ, 1, &pfn, &err);
		if (!p || err) {
			if (p)
				xenforeignmemory_unmap(x->fmem, p, 1);
			return -EFAULT;
		}
		x->map[x->nmap].domid = domid;
		x->map[x->nmap].frame = frame;
		x->map[x->nmap++].p = p;
	}
	memcpy(buf, (const char *)p + off, len);
	return 0;
}

static void cx_xc_mem_done(void *src)
{
	struct cx_xc *x = src;

	for (unsigned int i = 0; i < x->nmap; i++)
		xenforeignmemory_unmap(x->fmem, x->map[i].p, 1);
	x->nmap = 0;
}

static int cx_xc_pause(void *src, uint32_t domid, bool on)
{
	struct cx_xc *x = src;
	int rc = on ? xc_domain_pause(x->xch, domid) : xc_domain_unpause(x->xch, domid);

	return rc < 0 ? (errno ? -errno : -EIO) : 0;
}

static void cx_xc_close(void *src)
{
	struct cx_xc *x = src;

	if (!x)
		return;
	if (x->fmem) {
		cx_xc_mem_done(x);
		xenforeignmemory_close(x->fmem);
	}
	if (x->ctx_buf)
		xc__hypercall_buffer_free_pages(x->xch, &x->ctx_hb, CX_CTX_PAGES);
	if (x->xch)
		xc_interface_close(x->xch);
	free(x->hvm_buf);
	free(x);
}

static uint64_t cx_xc_clock(void *src)
{
	(void)src;
	return cx_now();
}

/* The tsc of the CPU record of vCPU 0 in an HVM context (@len bytes of
 * save records, each a descriptor and its body); false if none. */
static bool cx_hvm_cpu0_tsc(const uint8_t *buf, size_t len, uint64_t *tsc)
{
	size_t off = 0;

	while (len - off >= sizeof(struct hvm_save_descriptor)) {
		struct hvm_save_descriptor d;

		memcpy(&d, buf + off, sizeof(d));
		off += sizeof(d);
		if (d.typecode == 0 || d.length > len - off)
			return false;	/* the end, or a record cut short */
		if (d.typecode == HVM_SAVE_CODE(CPU) && d.instance == 0 &&
		    d.length >= offsetof(struct hvm_hw_cpu, tsc) + sizeof(*tsc)) {
			memcpy(tsc, buf + off + offsetof(struct hvm_hw_cpu, tsc), sizeof(*tsc));
			return true;
		}
		off += d.length;
	}
	return false;
}

/*
 * An HVM or PVH domain's TSC now: the tsc of vCPU 0's CPU record in the
 * domain's whole HVM context.  Xen computes it at the host TSC it read
 * when that save began (the host's TSC, scaled, plus the vCPU's offset;
 * a domain's vCPUs share one offset unless the guest writes one's TSC).
 * A read of one record alone is no use: it gives the TSC of the last
 * whole save (domain creation, for one never saved since).  A value that
 * did not move since the last read is not used.
 */
static int cx_xc_hvm_tsc(struct cx_xc *x, uint32_t domid, uint64_t *tsc)
{
	/* one call when the buffer is big enough (the caller times it) */
	int n = x->hvm_cap ? xc_domain_hvm_getcontext(x->xch, domid, x->hvm_buf,
						      (uint32_t)x->hvm_cap) : -1;

	if (n < 0) {
		n = xc_domain_hvm_getcontext(x->xch, domid, NULL, 0);
		if (n <= 0)
			return n < 0 && errno ? -errno : -EOPNOTSUPP;
		if ((size_t)n > x->hvm_cap) {
			uint8_t *b = realloc(x->hvm_buf, (size_t)n * 2);

			if (!b)
				return -ENOMEM;
			x->hvm_buf = b;
			x->hvm_cap = (size_t)n * 2;
		}
		return -EAGAIN;	/* the next try reads it */
	}
	if (!cx_hvm_cpu0_tsc(x->hvm_buf, (size_t)n, tsc))
		return -EOPNOTSUPP;
	if (x->hvm_tsc_dom == domid + 1 && *tsc == x->hvm_tsc_last)
		return -EOPNOTSUPP;	/* a saved value, not now's */
	x->hvm_tsc_dom = domid + 1;
	x->hvm_tsc_last = *tsc;
	return 0;
}

/*
 * A domain's TSC now.  PV: from Xen's TSC information (what save and
 * migration carry): in every mode that is not "never emulate", elapsed_nsec
 * at gtsc_khz is the guest's TSC at the call (emulated: Xen's time since
 * the domain's TSC start; native: the host TSC in ns).  "Never emulate"
 * gives nothing; the guest then reads the host's TSC, as dom0 does, so
 * dom0's answer stands in.  HVM and PVH: cx_xc_hvm_tsc, at the rate of
 * the TSC information (the guest's TSC kHz).
 */
static int cx_xc_guest_tsc(void *src, uint32_t domid, bool hvm, uint64_t *tsc, uint32_t *khz)
{
	struct cx_xc *x = src;
	uint32_t mode, incarnation;
	uint64_t elapsed;

	if (xc_domain_get_tsc_info(x->xch, domid, &mode, &elapsed, khz, &incarnation) < 0)
		return errno ? -errno : -EIO;
	if (!*khz && xc_domain_get_tsc_info(x->xch, 0, &mode, &elapsed, khz, &incarnation) < 0)
		return errno ? -errno : -EIO;
	if (!*khz)
		return -EOPNOTSUPP;
	if (hvm)
		return cx_xc_hvm_tsc(x, domid, tsc);
	if (!elapsed)
		return -EOPNOTSUPP;
	*tsc = (uint64_t)((unsigned __int128)elapsed * *khz / 1000000u);
	return 0;
}

const struct cx_src_ops cx_xc_ops = {
	.list = cx_xc_list, .vcpu_time = cx_xc_time, .vcpu_ctx = cx_xc_ctx, .close = cx_xc_close,
	.read_mem = cx_xc_read, .mem_done = cx_xc_mem_done, .pause = cx_xc_pause,
	.clock = cx_xc_clock, .guest_tsc = cx_xc_guest_tsc,
};

int cx_xc_open(struct cx_xc **out)
{
	struct cx_xc *x = calloc(1, sizeof(*x));
	int rc;

	*out = NULL;
	if (!x)
		return -ENOMEM;
	x->xch = xc_interface_open(NULL, NULL, 0);
	if (!x->xch) {
		rc = errno == EACCES || errno == EPERM ? -EACCES : -ENODEV;
		du_err("xen collector: cannot open libxenctrl: %s", strerror(-rc));
		free(x);
		return rc;
	}
	x->ctx_hb = (xc_hypercall_buffer_t){ .hbuf = NULL, .param_shadow = NULL,
					      HYPERCALL_BUFFER_INIT_NO_BOUNCE };
	x->ctx_buf = xc__hypercall_buffer_alloc_pages(x->xch, &x->ctx_hb, CX_CTX_PAGES);
	if (!x->ctx_buf)
		du_warn("xen collector: no held buffer for context reads (%s): each read maps "
			"its own", strerror(errno));
	/* call chains read guest stacks, and the task layout a guest's
	 * running task, through foreign mappings */
	x->fmem = xenforeignmemory_open(NULL, 0);
	if (!x->fmem)
		du_warn("xen collector: no foreign memory mappings (%s): no call chains, and "
			"address spaces learned from the clock alone", strerror(errno));
	*out = x;
	return 0;
}

bool cx_xc_has_mem(const struct cx_xc *x)
{
	return x->fmem != NULL;
}

uint64_t cx_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define CX_MAX_PCPUS 256

void cx_xen_counts(struct cx_xc *x, struct cx_xen_counts *k)
{
	xc_cpuinfo_t ci[CX_MAX_PCPUS];
	xc_domaininfo_t d0;

	memset(k, 0, sizeof(*k));
	k->wall_ns = cx_now();
	if (xc_domain_getinfolist(x->xch, 0, 1, &d0) != 1 || d0.domain != 0)
		return;
	if (xc_getcpuinfo(x->xch, CX_MAX_PCPUS, ci, &k->nr_cpus) < 0 || k->nr_cpus <= 0)
		return;
	k->dom0_ns = d0.cpu_time;
	for (int i = 0; i < k->nr_cpus; i++)
		k->idle_ns += ci[i].idletime;
	k->ok = true;
}

#endif
