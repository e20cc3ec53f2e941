/* SPDX-License-Identifier: GPL-2.0 */
/*
 * domprof kernel collector: what the sampling side (dp_sample.c), the
 * stream encoder (dp_stream.c) and the device (dp_main.c) share.
 */
#ifndef DOMPROF_KMOD_INTERNAL_H
#define DOMPROF_KMOD_INTERNAL_H

#include <linux/atomic.h>
#include <linux/cache.h>
#include <linux/irq_work.h>
#include <linux/percpu.h>
#include <linux/perf_event.h>
#include <linux/types.h>

#include "domprof/raw.h"
#include "domprof/kmod.h"

/*
 * One sample as the overflow handler stores it.  The handler only fills
 * fixed fields; turning them into raw-stream records (context changes,
 * escapes) is left to the reader, outside interrupt context.
 */
struct dp_entry {
	u64 pc;
	u64 time;	/* CLOCK_MONOTONIC ns */
	u64 domain;	/* hypervisor tgid for guest samples, else 0 */
	u64 asid;	/* guest CR3 root, DP_RAW_ASID_UNKNOWN if none */
	u32 pid;
	u32 tid;
	u32 mode;	/* enum dp_raw_mode_val */
	u32 vcpu;	/* vCPU index or DP_RAW_VCPU_UNKNOWN */
};

/*
 * One call chain slot per ring entry, callgraph_depth + 1 words: word 0
 * is nr | nr_kernel << 16 | flags << 32 (nr 0: no chain), the head of a
 * DP_RAW_CALLCHAIN payload (raw.h) as it is, then the return addresses.
 * A separate array keeps ring entries at 48 bytes when call chains are
 * off.
 */
#define DP_CC_NR(w)		((u32)((w) & 0xffff))
#define DP_CC_NR_KERNEL(w)	((u32)(((w) >> 16) & 0xffff))
#define DP_CC_FLAGS(w)		((u32)((w) >> 32))
#define DP_CC_WORD(nr, nk, fl)	((u64)(nr) | (u64)(nk) << 16 | (u64)(fl) << 32)
/* the most a CPU's chain slots may take (ring entries x (depth + 1) words) */
#define DP_CC_MAX_BYTES		(64UL << 20)

/* Call-chain counters, written by the handler of the CPU only. */
struct dp_cc_counts {
	u64 chains;
	u64 frames;
	u64 truncated;
	u64 depth_limited;
	u64 empty;
	u64 no_walk;
	u64 nmi;
	u64 walks;	/* walks tried (chains + empty) */
	u64 walk_ns;	/* time in them, for the cost per walk (sysfs) */
	u64 deferred;	/* walks left to the irq_work (nmi: of these, from NMI) */
	u64 deferred_changed;	/* ... not made: the vCPU ran or changed since */
	u64 deferred_superseded;	/* ... not made: another sample came first */
	u64 deferred_busy;	/* samples dropped: they came during a deferred walk */
};

/* A walk waiting for this CPU's irq_work (dp_callchain.c). */
enum { DP_DEFER_IDLE, DP_DEFER_PENDING, DP_DEFER_WALKING };
struct dp_defer {
	atomic_t state;
	struct kvm_vcpu *vcpu;
	u64 exits, cr3, pc, fp, sp;
	u64 *slot;
	unsigned long head;	/* its ring entry, published by the walk */
	bool user;
};

/*
 * Per-CPU state.  The ring is single producer (the overflow handler of
 * this CPU's counter, which cannot nest with itself) and single consumer
 * (the reader, serialized by the device mutex); head and tail are free
 * running and published with release/acquire, so neither side locks.
 */
struct dp_cpu {
	/* producer side */
	unsigned long head;
	u64 samples;
	u64 guest;
	u64 lost;
	u64 cr3_direct;		/* guest CR3 read under nested paging (dp_cr3.c) */
	u64 cr3_refused;	/* ... and not: unknown */
	u64 handler_ns;		/* time in dp_overflow, summed (its cost per sample) */
	struct dp_entry *ring;
	unsigned long mask;
	u64 *cc;		/* chain slots, NULL when call chains are off */
	unsigned int cc_words;	/* words per slot: depth + 1 */
	struct dp_cc_counts ccs;
	struct dp_defer defer;
	struct irq_work cc_work;
	/* consumer side, on its own cache line */
	unsigned long tail ____cacheline_aligned;
	u64 lost_reported;
	/* control side: the counter, under the CPU hotplug lock */
	struct perf_event *event;
	unsigned int ring_entries;
};

DECLARE_PER_CPU(struct dp_cpu, dp_cpus);

/* dp_sample.c */
void dp_overflow(struct perf_event *event, struct perf_sample_data *data,
		 struct pt_regs *regs);
int dp_kvm_get(void);
void dp_kvm_put(void);
bool dp_kvm_present(void);

/*
 * dp_walk.c: the guest frame-pointer walk over a guest memory reader
 * (read(ctx, gpa, buf, len): 0 or -EFAULT, never sleeping).
 */
struct dp_walk {
	int (*read)(void *ctx, u64 gpa, void *data, unsigned long len);
	void *ctx;
	u64 root;		/* guest CR3: the top page table's address */
	int levels;		/* 4 or 5 */
	u64 vpage, gpage;	/* the last 4 KiB translation */
	bool have_page, page_user;
	u64 *out;		/* return addresses found */
	u32 n, max;
	bool truncated;		/* stopped at an implausible frame */
};

/* A Linux x86-64 guest's kernel stacks: 16 KiB, aligned to their size. */
#define DP_GUEST_STACK	16384ULL

/*
 * Follow frame pointers from @fp: frames at or above @sp (the stack
 * pointer at the sample) and, for the kernel, on the same stack as @sp;
 * return addresses in the half of the address space of @user.
 */
void dp_walk_fp(struct dp_walk *w, u64 fp, u64 sp, bool user);
/*
 * A guest kernel entered from user mode keeps the user registers in a
 * struct pt_regs at the top of the task's kernel stack: if the words
 * there look like it (user CS and SS, user pc and stack), append the user
 * pc and the user frame-pointer chain.
 */
void dp_walk_user_tail(struct dp_walk *w, u64 sp);
/*
 * One aligned word of guest kernel memory at @gva (in the kernel half) by
 * the guest's page tables: 0 or -EFAULT.
 */
int dp_walk_read_kernel(struct dp_walk *w, u64 gva, u64 *val);

/*
 * dp_callchain.c: the walk from the guest's CR3 @cr3 (0: unknown, none)
 * into the chain slot of ring entry @head.  True when it is left to the
 * irq_work (NMI): the entry is then published by the walk, not by the
 * caller.  dp_cc_settle(), before a new entry: a walk still pending is
 * given up (its entry published without a chain); false while one runs
 * (the new sample is dropped).
 */
struct kvm_vcpu;
int dp_cc_get(void);
void dp_cc_put(void);
bool dp_cc_guest(struct dp_cpu *c, struct kvm_vcpu *vcpu,
		 const struct dp_entry *e, u64 cr3, u64 *slot, unsigned long head);
void dp_cc_init_cpu(struct dp_cpu *c);
bool dp_cc_settle(struct dp_cpu *c);
/* dp_sample.c: the vCPU running on this CPU (NULL: none, or no KVM) */
struct kvm_vcpu *dp_running(void);

/*
 * dp_cr3.c: the guest's CR3 under nested paging.  dp_cr3_init() says how
 * it is read on this CPU (NULL: it is not); dp_direct_cr3() gives it in
 * the sample's window, or 0 (counted in @c).
 */
const char *dp_cr3_init(void);
u64 dp_direct_cr3(struct dp_cpu *c, struct kvm_vcpu *vcpu);

/* dp_stream.c: the reader's encoder state, one per open file */
struct dp_stream {
	bool header_done;
	u32 cpu;
	u32 pid;
	u32 tid;
	u32 mode;
	u64 domain;
	u32 vcpu;
	u64 asid;
	bool have_ctx;
	bool have_guest;	/* domain, vcpu and asid stated */
};

/* bytes: the longest encoding of one entry, its call chain included */
#define DP_REC_MAX	(256 + 24 + 8 * DP_KMOD_MAX_CG_DEPTH)

size_t dp_stream_header(void *buf, size_t len, u32 event, u64 period,
			u32 cf_flags, u64 start_ns);
size_t dp_stream_lost(void *buf, u64 count);
size_t dp_stream_entry(struct dp_stream *s, void *buf, u32 cpu,
		       const struct dp_entry *e, const u64 *cc);

#endif /* DOMPROF_KMOD_INTERNAL_H */
