/*
 * The xen collector (--collector=xen, opd_collector.h): samples the vCPUs
 * of Xen domains from dom0 through libxenctrl, with no PMU and no driver.
 *
 * About RATE times a second per vCPU (with jitter, so that the looks do
 * not lock onto a guest's periodic work) each vCPU of each domU is looked
 * at: when it consumed CPU time since the previous look (its cpu_time from
 * xc_vcpu_getinfo grew), its context is read (xc_vcpu_getcontext: pc,
 * guest kernel or user mode, CR3) and samples are emitted at that pc, one
 * per sampling period of CPU time consumed, the remainder carried to the
 * next look.  Sample counts therefore follow Xen's own accounting of each
 * vCPU's time: an idle vCPU gives none, a busy one about one per look, and
 * one that ran while the collector was late gets its due in one go.
 *
 * The stream: the TIMER event (count = the period in ns of CPU time), and
 * per sample a DOMAIN record (key_ns DP_DOMKEY_XEN_DOMID, key = domid,
 * vcpu), a MODE record (guest kernel or user) and an ASID record (the
 * vCPU's CR3 with CX_CR3_MASK: the guest address space, as the kmod
 * collector gives it, doc/guest-asid.md) when they change.  With
 * --callgraph, each sample follows a call chain: the kernel collector's
 * frame-pointer walk (gwalk.h) over the domain's memory, mapped from dom0,
 * with the domain paused for the look.
 *
 * The sampling logic reads Xen through a source interface, so the unit
 * test drives it with a fake hypervisor (test_collect_xen.c).
 */
#ifndef COLLECT_XEN_H
#define COLLECT_XEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raw/raw_stream.h"

/* One domain as the source lists it. */
struct cx_dom {
	uint32_t domid;
	unsigned int nr_vcpus;
	bool hvm;
};

/* The bits of CR3 that name an address space (no PCID, no flags). */
#define CX_CR3_MASK 0x000ffffffffff000ull

/* A vCPU's context at a look. */
struct cx_ctx {
	uint64_t pc;
	uint64_t cr3;
	uint64_t fp, sp;	/* rbp and rsp, for the call chain */
	uint64_t gs_kernel;	/* the kernel's GS base (its per-CPU area), 0 unknown */
	bool kernel;
	bool la57;		/* 5-level paging (CR4.LA57) */
};

/* Under page-table isolation a user CR3 is its kernel one with this bit
 * set (the two tables are one 8 KiB pair). */
#define CX_CR3_PTI_USER 0x1000ull

struct cx_src_ops {
	/* The domUs (dom0 left out), up to @max.  Count or -errno. */
	int (*list)(void *src, struct cx_dom *out, size_t max);
	/* cpu_time (ns) of a vCPU; -ENOENT for an offline or absent one. */
	int (*vcpu_time)(void *src, uint32_t domid, unsigned int vcpu, uint64_t *ns);
	/* Its context now.  0 or -errno. */
	int (*vcpu_ctx)(void *src, uint32_t domid, unsigned int vcpu, bool hvm, struct cx_ctx *c);
	void (*close)(void *src);	/* NULL accepted */
	/*
	 * Call chains (all optional; without read_mem there are none).
	 * read_mem: @len bytes (<= 8, within a page) at @addr in the space
	 * the domain's page tables point into (guest physical; machine
	 * addresses for a PV guest), 0 or -errno; what it maps it may keep
	 * until mem_done, called after each walk.  pause: stop (@on) or
	 * restart the domain, so that a context and its stack are read at
	 * one moment.
	 */
	int (*read_mem)(void *src, uint32_t domid, uint64_t addr, void *buf, unsigned long len);
	void (*mem_done)(void *src);
	int (*pause)(void *src, uint32_t domid, bool on);
	/*
	 * Optional: the host clock (CLOCK_MONOTONIC ns).  With it each look
	 * states its own time (DP_RAW_TIME, the middle of the context read)
	 * before its samples: the daemon places guest samples on the guest's
	 * timeline by it, and a look that comes late in its tick (dom0 busy)
	 * is not dated at the tick's start.
	 */
	uint64_t (*clock)(void *src);
	/*
	 * Optional (with clock): the domain's guest TSC now and its rate in
	 * kHz.  0 or -errno; -EAGAIN: ask again now (the source got ready);
	 * -EOPNOTSUPP: not for this domain (the engine
	 * stops asking).  The engine states it in the stream on a domain's
	 * first look and about every CX_TSC_EVERY_NS after
	 * (DP_RAW_GUEST_TSC), which makes the agent's clock exact
	 * (doc/clock.md).
	 */
	int (*guest_tsc)(void *src, uint32_t domid, bool hvm, uint64_t *tsc, uint32_t *khz);
	/*
	 * Optional: the clock the engine measures the looks' cost by (ns;
	 * NULL: CLOCK_MONOTONIC), and with it the read budget.  For tests:
	 * a read that costs what the test says.
	 */
	uint64_t (*cost_clock)(void *src);
};

/*
 * What a look's time (the middle of its context read) may be off by
 * besides half the read: the vCPU stops some time after the pause is
 * asked for (an IPI, Xen's scheduler on its pCPU), and the guest's own
 * switch stamps lag its scheduler a little.  Stated with each look
 * (DP_RAW_TIME_SPREAD); the daemon's guest clock adds its own.  With the
 * exact clock and no such slack, the Xen lab's same-address pair was
 * misattributed 10 to 74% in four runs on a busy build machine, against
 * 4.8% (early pair) with ping/pong, whose near-a-switch margin has a
 * 1 ms floor, in the same conditions (doc/xen.md).
 */
#define CX_LOOK_SLACK_NS 1000000ULL

/* How often a domain's guest TSC is read (guest_tsc), and how many reads
 * each time (the one with the shortest window between its clock reads is
 * stated). */
#define CX_TSC_EVERY_NS 1000000000ULL
#define CX_TSC_TRIES 3

/* Most vCPU time one look turns into samples: a collector stalled for
 * longer than this (dom0 starved) emits this much and counts the rest as
 * lost.  A stall of a second or two under load is common and loses
 * nothing.  In samples: CX_MAX_BURST_NS / period, at least CX_MAX_BURST
 * and at most CX_MAX_BURST_CAP. */
#define CX_MAX_BURST_NS 10000000000ULL
#define CX_MAX_BURST 1000
#define CX_MAX_BURST_CAP 100000
/*
 * Naming an address space's process (cx_engine_set_layout): a look in
 * guest user mode whose space was not named in the last
 * CX_WITNESS_EVERY_NS pauses the domain and reads the tgid of the task
 * the vCPU's CPU points to (DP_RAW_GUEST_TASK); at most
 * CX_WITNESS_MAX_PER_S such reads a second, CX_WITNESS_SLOTS spaces
 * remembered per domain.  A pid above CX_PID_MAX (Linux's limit) is not
 * one.  The layout's per-CPU offset is below CX_LAYOUT_MAX_CURRENT (the
 * per-CPU area linked at 0, Linux before 6.15) or at or above
 * CX_LAYOUT_KERNEL_IMAGE (a kernel-image address, 6.15 on: added to the
 * GS base it wraps to the CPU's copy), the tgid's offset 4-aligned and
 * below CX_LAYOUT_MAX_OFF.
 */
#define CX_WITNESS_EVERY_NS 500000000ULL
#define CX_WITNESS_MAX_PER_S 64
#define CX_WITNESS_SLOTS 64
#define CX_PID_MAX 4194304u
#define CX_LAYOUT_MAX_CURRENT (1ULL << 24)
#define CX_LAYOUT_KERNEL_IMAGE 0xffffffff80000000ULL
#define CX_LAYOUT_MAX_OFF 16384u
#define CX_MAX_DOMS 256

/* Whether a task layout's numbers are within those bounds: the one check
 * of the collector and of the privsep monitor's TASK_LAYOUT request
 * (inline: the privsep code is also built without the engine, in its
 * fuzz target). */
static inline bool cx_layout_plausible(uint64_t current, uint32_t tgid_off)
{
	return (current < CX_LAYOUT_MAX_CURRENT || current >= CX_LAYOUT_KERNEL_IMAGE) &&
	       !(tgid_off & 3) && tgid_off < CX_LAYOUT_MAX_OFF;
}
#define CX_MAX_VCPUS 128

struct cx_engine;

/* An engine over @sops/@src (taken over: closed by cx_engine_free(), also
 * when this fails), sampling every @period_ns of vCPU time.  NULL with
 * errno set. */
struct cx_engine *cx_engine_new(const struct cx_src_ops *sops, void *src, uint64_t period_ns);
void cx_engine_free(struct cx_engine *e);	/* NULL accepted */

/* Rescan the domain list (new domains, gone ones).  0 or -errno. */
int cx_engine_rescan(struct cx_engine *e);

/*
 * One look at every vCPU: records into @w.  The first look at a vCPU only
 * notes its time.  0 or -errno (a writer error; source errors for one
 * vCPU are counted and skipped).
 */
int cx_engine_tick(struct cx_engine *e, struct raw_writer *w);

/* Walk each sampled vCPU's frame pointers, at most @depth frames (0: off;
 * cut to DP_RAW_CC_MAX), through the source's read_mem: every sample then
 * carries its guest call chain (DP_RAW_CALLCHAIN, DP_RAW_CC_GUEST). */
void cx_engine_set_callgraph(struct cx_engine *e, unsigned int depth);

/* The read budget: the share of a vCPU's time, in parts per million,
 * that the context reads may hold it (Xen pauses the vCPU for each).
 * Where a read costs more than the budget gives a period (a nested or
 * emulated host: hundreds of microseconds against a few on hardware),
 * a vCPU's context is read once every n periods, n from the reads'
 * running mean cost, at a jittered point, and the read carries the n
 * samples (doc/xen.md, "The read budget").  0: a read every period.
 * The default, CX_READ_BUDGET_PPM, is 5%. */
#define CX_READ_BUDGET_PPM 50000u
void cx_engine_set_budget(struct cx_engine *e, uint32_t ppm);
/* How often the stride is taken anew from the reads' running mean. */
#define CX_STRIDE_EVERY_NS 1000000000ULL
/* The periods a read stands for now (1: a read every period). */
uint64_t cx_engine_stride(const struct cx_engine *e);
/*
 * How long before the next look can find a vCPU due for a read: the
 * least, over the vCPUs that ran since the look before, of the carry its
 * next read waits for (at least a period) less what it carries (a vCPU
 * runs no faster than the clock, so a look sooner would read its time
 * only); for one that did not run, or whose time could not be read, the
 * longest a read waits (1.5 strides); 0 for one not looked at yet.  At
 * least a period and half the stride's periods.
 */
uint64_t cx_engine_wait(const struct cx_engine *e);
/* The next number of a xorshift generator in @s (never 0 if @s is not):
 * the jitter of the collector's timer and of the budget's reads. */
static inline uint64_t cx_xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}
/* The jitter's seed (a fixed one by default, for tests). */
void cx_engine_seed(struct cx_engine *e, uint64_t seed);

/* A last tick at the end of a profile: every vCPU with a period's worth
 * of time is read whatever the budget says, so that the samples add up
 * to Xen's accounting within a period per vCPU. */
int cx_engine_drain(struct cx_engine *e, struct raw_writer *w);
/*
 * Where domain @domid's guest kernel keeps the running task (the agent's
 * TASK_LAYOUT): the per-CPU offset of the task pointer and the offset of
 * task_struct.tgid.  From then on looks in its user mode name their
 * space's process now and then (CX_WITNESS_*), with the domain paused.
 * 0, -EINVAL (implausible numbers), -ENOENT (no such domain).
 */
int cx_engine_set_layout(struct cx_engine *e, uint32_t domid, uint64_t current, uint32_t tgid_off);
/* Other records came between (dom0's, from the embedded perf collector):
 * the next tick re-states domain, mode and address space. */
void cx_engine_forget(struct cx_engine *e);

struct cx_stats {
	uint64_t ticks, looks, samples, lost, ctx_errors;
	/* contexts read for samples, and the sum of the squares of the
	 * samples each read gave: (samples^2 / weight_sq) is how many
	 * independent samples they are worth (a read that stands for 20
	 * periods of one PC is one observation, not 20) */
	uint64_t reads, weight_sq;
	/* call chains: walks made, chains found, frames in them, walks cut
	 * at an implausible frame, walks that found nothing */
	uint64_t cc_walks, cc_chains, cc_frames, cc_truncated, cc_empty;
	/* guest TSC reads stated, and failed (other than not supported) */
	uint64_t tsc_reads, tsc_errors;
	/* what the looks cost, by the host's clock (CLOCK_MONOTONIC): the
	 * vCPU time reads (one per vCPU a tick: looks), the context reads
	 * for samples (reads, pause and walk included), and of those the
	 * domain's pause and resume (pauses of them) and the call-chain
	 * walks (cc_walks) */
	uint64_t look_ns, read_ns, pause_ns, walk_ns, pauses;
	/* spaces' processes read from guest memory, and reads that failed;
	 * the time the looks without call chains spent pausing, reading the
	 * context again and the task, and resuming for them (in read_ns too),
	 * and how many such pauses */
	uint64_t witnesses, wit_errors, wit_ns, wit_pauses;
	/* the read budget's stride (periods a read is to stand for): the
	 * most, and how often it was held at its cap (the budget then not
	 * kept); what reads stood for on average is samples / reads */
	uint64_t stride_max, stride_capped;
};
void cx_engine_stats(const struct cx_engine *e, struct cx_stats *st);

/* Per domain listed now: the vCPU time Xen counted for it since the
 * engine first looked at it, and the samples emitted for it. */
struct cx_dom_use {
	uint32_t domid;
	uint64_t used_ns, samples;
};
size_t cx_engine_usage(const struct cx_engine *e, struct cx_dom_use *out, size_t max);

/* --collector=xen; only built with HAVE_XEN (configure found libxen). */
struct opd_collector_ops;
extern const struct opd_collector_ops opd_collector_xen;

#endif
