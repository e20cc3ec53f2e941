// SPDX-License-Identifier: GPL-2.0
/*
 * domprof kernel collector: guest call chains, walked at sample time.
 *
 * When a sample hits a KVM vCPU in guest mode, follow the guest's frame
 * pointers from its RBP: each frame holds the caller's RBP at [rbp] and
 * the return address at [rbp + 8] (the walk itself, checks and bounds,
 * is dp_walk.c; this file hands it the vCPU's state and a reader).  The
 * guest's memory is read through KVM's memslots with
 * kvm_vcpu_read_guest_atomic(), which copies from the hypervisor's
 * mapping of guest memory with page faults disabled: a page
 * that is not resident fails the read instead of sleeping.  Guest virtual
 * addresses are translated by a small read-only walk of the guest's page
 * tables (KVM's own walker may set accessed bits, mark pages dirty and
 * refresh cached registers: none of that belongs in an interrupt).
 *
 * Everything read is the guest's and may be hostile: the walk is bounded
 * by the configured depth, and stops at the first frame that is not
 * plausible (misaligned, not above the previous one, off the stack,
 * outside the sample's half of the address space, or unreadable); such a
 * chain is flagged truncated and counted.  Frames are only ever reported
 * as addresses.
 *
 * Context: the cpu-clock counter runs this in hard-IRQ context; a PMU
 * counter in NMI context.  The memslots are protected by the VM's SRCU,
 * which KVM does not hold while the vCPU runs, and srcu_read_lock() is
 * not NMI-safe in 6.1: in NMI the registers are kept and the walk is made
 * by this CPU's irq_work, which runs as soon as KVM enables interrupts
 * after the exit (dp_cc_deferred).  The module parameter defer_walks
 * sends the hrtimer's walks the same way, so that the NMI path can be
 * tested where there is no PMU (the lab).
 */
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/irq_work.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/srcu.h>
#include <linux/timekeeping.h>

#if IS_ENABLED(CONFIG_KVM) && defined(CONFIG_X86_64)
#include <linux/kvm_host.h>
#define DP_HAVE_KVM 1
#endif

#include "domprof.h"

static bool dp_defer_walks;
module_param_named(defer_walks, dp_defer_walks, bool, 0644);
MODULE_PARM_DESC(defer_walks, "walk guest call chains from irq_work as in NMI, also from the hrtimer (tests the NMI path)");

#ifdef DP_HAVE_KVM
static int (*dp_read_guest)(struct kvm_vcpu *vcpu, gpa_t gpa, void *data,
			    unsigned long len);

/* Taken with kvm_get_running_vcpu() when sampling starts (dp_kvm_get()). */
int dp_cc_get(void)
{
	WRITE_ONCE(dp_read_guest, symbol_get(kvm_vcpu_read_guest_atomic));
	return 0;
}

/* Called once no handler can run any more. */
void dp_cc_put(void)
{
	if (!dp_read_guest)
		return;
	WRITE_ONCE(dp_read_guest, NULL);
	symbol_put(kvm_vcpu_read_guest_atomic);
}

/* dp_walk.c's reader: KVM's memslots, faults disabled; @ctx is the vCPU */
static int dp_read_kvm(void *ctx, u64 gpa, void *data, unsigned long len)
{
	typeof(dp_read_guest) read = READ_ONCE(dp_read_guest);

	return read ? read(ctx, gpa, data, len) : -EFAULT;
}

/*
 * The walk from @cr3, @fp and @sp into @slot (word 0 stays 0 when it
 * finds nothing), under the VM's SRCU: hard-IRQ context, not NMI.
 */
static void dp_cc_walk(struct dp_cpu *c, struct kvm_vcpu *vcpu, u64 cr3, u64 fp, u64 sp,
		       bool user, u64 *slot)
{
	struct dp_walk w = {
		.read = dp_read_kvm,
		.ctx = vcpu,
		.out = slot + 1,
		.max = min_t(u32, c->cc_words - 1, DP_KMOD_MAX_CG_DEPTH),
	};
	u32 nr_kernel = 0, flags = DP_RAW_CC_GUEST;
	u64 t0;
	int idx;

	w.root = cr3 & GENMASK_ULL(51, 12);
	w.levels = vcpu->arch.cr4 & X86_CR4_LA57 ? 5 : 4;
	/* the walk's own cost, for the figure in doc/callgraph.md */
	t0 = ktime_get_mono_fast_ns();
	idx = srcu_read_lock(&vcpu->kvm->srcu);
	dp_walk_fp(&w, fp, sp, user);
	if (!user) {
		nr_kernel = w.n;
		dp_walk_user_tail(&w, sp);
	}
	srcu_read_unlock(&vcpu->kvm->srcu, idx);
	WRITE_ONCE(c->ccs.walk_ns,
		   c->ccs.walk_ns + ktime_get_mono_fast_ns() - t0);
	WRITE_ONCE(c->ccs.walks, c->ccs.walks + 1);

	if (w.truncated) {
		flags |= DP_RAW_CC_TRUNCATED;
		WRITE_ONCE(c->ccs.truncated, c->ccs.truncated + 1);
	} else if (w.n == w.max) {
		WRITE_ONCE(c->ccs.depth_limited, c->ccs.depth_limited + 1);
	}
	if (!w.n) {
		WRITE_ONCE(c->ccs.empty, c->ccs.empty + 1);
		return;
	}
	slot[0] = DP_CC_WORD(w.n, nr_kernel, flags);
	WRITE_ONCE(c->ccs.chains, c->ccs.chains + 1);
	WRITE_ONCE(c->ccs.frames, c->ccs.frames + w.n);
}

/*
 * A walk asked for in NMI (or with defer_walks) waits for this CPU's
 * irq_work, which runs when KVM enables interrupts after the exit, before
 * the vCPU enters the guest again.  The ring entry is published only then.
 * The walk is made only if the vCPU is still the one running here, in the
 * same exit (its exit count unchanged) with the same registers; else the
 * entry goes without a chain (deferred_changed).
 */
static void dp_cc_deferred(struct irq_work *work)
{
	struct dp_cpu *c = container_of(work, struct dp_cpu, cc_work);
	struct dp_defer *d = &c->defer;
	struct kvm_vcpu *vcpu;

	if (atomic_cmpxchg(&d->state, DP_DEFER_PENDING, DP_DEFER_WALKING) != DP_DEFER_PENDING)
		return;
	vcpu = dp_running();
	if (vcpu == d->vcpu && READ_ONCE(vcpu->stat.exits) == d->exits &&
	    vcpu->arch.regs[VCPU_REGS_RIP] == d->pc &&
	    vcpu->arch.regs[VCPU_REGS_RBP] == d->fp &&
	    vcpu->arch.regs[VCPU_REGS_RSP] == d->sp)
		dp_cc_walk(c, vcpu, d->cr3, d->fp, d->sp, d->user, d->slot);
	else
		WRITE_ONCE(c->ccs.deferred_changed, c->ccs.deferred_changed + 1);
	/* publish the entry and its chain: the reader acquires head */
	smp_store_release(&c->head, d->head + 1);
	atomic_set_release(&d->state, DP_DEFER_IDLE);
}

void dp_cc_init_cpu(struct dp_cpu *c)
{
	init_irq_work(&c->cc_work, dp_cc_deferred);
	atomic_set(&c->defer.state, DP_DEFER_IDLE);
}

bool dp_cc_settle(struct dp_cpu *c)
{
	struct dp_defer *d = &c->defer;

	if (atomic_cmpxchg(&d->state, DP_DEFER_PENDING, DP_DEFER_IDLE) == DP_DEFER_PENDING) {
		/* its irq_work has not run: the entry goes without a chain */
		WRITE_ONCE(c->ccs.deferred_superseded, c->ccs.deferred_superseded + 1);
		/* publish the entry: the reader acquires head */
		smp_store_release(&c->head, d->head + 1);
		return true;
	}
	return atomic_read(&d->state) == DP_DEFER_IDLE;
}

bool dp_cc_guest(struct dp_cpu *c, struct kvm_vcpu *vcpu,
		 const struct dp_entry *e, u64 cr3, u64 *slot, unsigned long head)
{
	bool user = e->mode == DP_MODE_GUEST_USER, nmi = in_nmi();
	struct dp_defer *d = &c->defer;
	u32 avail;

	avail = READ_ONCE(vcpu->arch.regs_avail);
	/*
	 * The walk needs the guest's current page tables (@cr3: with shadow
	 * paging KVM's copy, with NPT/EPT the hardware's, dp_cr3.c) and the
	 * registers, which an encrypted guest does not show.  A nested
	 * guest's are not the vCPU's.
	 */
	if (!READ_ONCE(dp_read_guest) || !e->pc || !cr3 ||
	    current->mm != vcpu->kvm->mm ||
	    vcpu->arch.guest_state_protected ||
	    (vcpu->arch.hflags & HF_GUEST_MASK) ||
	    !(vcpu->arch.efer & EFER_LMA) ||
	    !(avail & BIT(VCPU_REGS_RBP)) || !(avail & BIT(VCPU_REGS_RSP))) {
		WRITE_ONCE(c->ccs.no_walk, c->ccs.no_walk + 1);
		return false;
	}
	if (!nmi && !READ_ONCE(dp_defer_walks)) {
		dp_cc_walk(c, vcpu, cr3, vcpu->arch.regs[VCPU_REGS_RBP],
			   vcpu->arch.regs[VCPU_REGS_RSP], user, slot);
		return false;
	}
	/* the memslots need SRCU, not allowed in NMI: later, from irq_work */
	d->vcpu = vcpu;
	d->exits = READ_ONCE(vcpu->stat.exits);
	d->cr3 = cr3;
	d->pc = e->pc;
	d->fp = vcpu->arch.regs[VCPU_REGS_RBP];
	d->sp = vcpu->arch.regs[VCPU_REGS_RSP];
	d->user = user;
	d->slot = slot;
	d->head = head;
	atomic_set_release(&d->state, DP_DEFER_PENDING);
	irq_work_queue(&c->cc_work);
	WRITE_ONCE(c->ccs.nmi, c->ccs.nmi + nmi);
	WRITE_ONCE(c->ccs.deferred, c->ccs.deferred + 1);
	return true;
}
#else
int dp_cc_get(void)
{
	return 0;
}

void dp_cc_put(void)
{
}

bool dp_cc_guest(struct dp_cpu *c, struct kvm_vcpu *vcpu,
		 const struct dp_entry *e, u64 cr3, u64 *slot, unsigned long head)
{
	return false;
}

void dp_cc_init_cpu(struct dp_cpu *c)
{
}

bool dp_cc_settle(struct dp_cpu *c)
{
	return true;
}
#endif
