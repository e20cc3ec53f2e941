// SPDX-License-Identifier: GPL-2.0
/*
 * domprof kernel collector: the counter overflow handler.
 *
 * It runs in NMI context (hardware counters on x86) or hard-IRQ context
 * (the cpu-clock hrtimer) on the CPU whose counter overflowed.  It takes
 * no lock, allocates nothing and prints nothing: it fills one slot of
 * this CPU's ring or, when the ring is full, counts a lost sample.
 *
 * Guest samples.  When a timer interrupt or PMI hits while a KVM vCPU
 * runs, the CPU leaves the guest and KVM handles the interrupt on the
 * host right after the VM exit, with the vCPU's thread as current and
 * vcpu->arch.handling_intr_from_guest set for exactly that window
 * (kvm_before_interrupt()/kvm_after_interrupt() in KVM's x86.c, svm.c and
 * vmx.c).  That flag, with kvm_get_running_vcpu(), is what perf's own
 * guest callbacks use to tell a guest sample; we read them the same way,
 * without going through perf's callbacks, which are not exported.
 */
#include <linux/bits.h>
#include <linux/module.h>
#include <linux/perf_event.h>
#include <linux/ptrace.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>

#if IS_ENABLED(CONFIG_KVM) && defined(CONFIG_X86_64)
#include <linux/kvm_host.h>
#define DP_HAVE_KVM 1
#endif

#include "domprof.h"

#ifdef DP_HAVE_KVM
/*
 * kvm_get_running_vcpu() lives in kvm.ko, which may not be loaded: take
 * it with symbol_get() when sampling starts (this also pins kvm.ko while
 * we sample) and drop it when sampling stops.  The handler reads the
 * pointer once; it is only cleared after every counter is gone.
 */
static struct kvm_vcpu *(*dp_running_vcpu)(void);

int dp_kvm_get(void)
{
	WRITE_ONCE(dp_running_vcpu, symbol_get(kvm_get_running_vcpu));
	return 0;
}

void dp_kvm_put(void)
{
	if (!dp_running_vcpu)
		return;
	WRITE_ONCE(dp_running_vcpu, NULL);
	symbol_put(kvm_get_running_vcpu);
}

bool dp_kvm_present(void)
{
	return READ_ONCE(dp_running_vcpu);
}

struct kvm_vcpu *dp_running(void)
{
	typeof(&kvm_get_running_vcpu) running = READ_ONCE(dp_running_vcpu);

	return running ? running() : NULL;
}

/*
 * Guest page-table root: bits 12..51 of CR3.  Bits 0..11 are flags or the
 * PCID, bit 12 is the kernel/user half of a PTI pair (the user copy sits
 * one page above the kernel's), bit 63 is the no-flush hint and the bits
 * above 51 are not address bits.
 */
#define DP_CR3_ROOT_MASK	GENMASK_ULL(51, 13)

/*
 * Returns the vCPU a guest sample was taken on, NULL for a host sample;
 * *@cr3 the guest's CR3 (0: unknown).
 */
static struct kvm_vcpu *dp_guest_fill(struct dp_cpu *c, struct dp_entry *e, u64 *cr3)
{
	typeof(&kvm_get_running_vcpu) running = READ_ONCE(dp_running_vcpu);
	struct kvm_vcpu *vcpu;
	u32 avail;

	*cr3 = 0;
	if (!running)
		return NULL;
	vcpu = running();
	if (!vcpu || !READ_ONCE(vcpu->arch.handling_intr_from_guest))
		return NULL;

	e->domain = current->tgid;
	e->vcpu = vcpu->vcpu_idx;
	e->pc = 0;
	e->asid = DP_RAW_ASID_UNKNOWN;
	avail = READ_ONCE(vcpu->arch.regs_avail);
	if (!vcpu->arch.guest_state_protected) {
		/*
		 * SVM copies RIP from the VMCB right after the exit, before
		 * the interrupt window; VMX reads it lazily, so it may not be
		 * cached yet: then the pc stays unknown (0).
		 */
		if (avail & BIT(VCPU_REGS_RIP))
			e->pc = vcpu->arch.regs[VCPU_REGS_RIP];
		/*
		 * With shadow paging KVM intercepts every CR3 load, so
		 * arch.cr3 is the guest's current root.  With NPT/EPT it is
		 * refreshed only when the exit is handled, after this window:
		 * the hardware's copy is read instead (dp_cr3.c).
		 */
		if (vcpu->arch.mmu->root_role.direct)
			*cr3 = dp_direct_cr3(c, vcpu);
		else if (avail & BIT(VCPU_EXREG_CR3))
			*cr3 = vcpu->arch.cr3;
		if (*cr3)
			e->asid = *cr3 & DP_CR3_ROOT_MASK;
	}
	/* A 64-bit guest's kernel runs in the upper half. */
	e->mode = (e->pc & BIT_ULL(63)) || !e->pc ?
		DP_MODE_GUEST_KERNEL : DP_MODE_GUEST_USER;
	return vcpu;
}
#else
int dp_kvm_get(void)
{
	return 0;
}

void dp_kvm_put(void)
{
}

bool dp_kvm_present(void)
{
	return false;
}

struct kvm_vcpu *dp_running(void)
{
	return NULL;
}

static struct kvm_vcpu *dp_guest_fill(struct dp_cpu *c, struct dp_entry *e, u64 *cr3)
{
	*cr3 = 0;
	return NULL;
}
#endif

/*
 * The handler's time for a sample taken, from @t0 (its entry) to now:
 * what the module costs a sample, read from the stats per CPU.
 */
static inline void dp_handler_time(struct dp_cpu *c, u64 t0)
{
	WRITE_ONCE(c->handler_ns, c->handler_ns + ktime_get_mono_fast_ns() - t0);
}

void dp_overflow(struct perf_event *event, struct perf_sample_data *data,
		 struct pt_regs *regs)
{
	struct dp_cpu *c = event->overflow_handler_context;
	struct dp_entry *ring = READ_ONCE(c->ring);
	u64 *cc = READ_ONCE(c->cc);
	unsigned long head, tail;
	struct kvm_vcpu *vcpu;
	struct dp_entry *e;
	u64 cr3, t0;

	if (unlikely(!ring || !regs))
		return;
	t0 = ktime_get_mono_fast_ns();
	/* a walk left to the irq_work holds the entry before this one */
	if (unlikely(atomic_read(&c->defer.state) != DP_DEFER_IDLE) && !dp_cc_settle(c)) {
		WRITE_ONCE(c->ccs.deferred_busy, c->ccs.deferred_busy + 1);
		WRITE_ONCE(c->lost, c->lost + 1);
		return;
	}
	head = c->head;
	/* the reader's release of tail: slots below it are free again */
	tail = smp_load_acquire(&c->tail);
	if (head - tail > c->mask) {
		WRITE_ONCE(c->lost, c->lost + 1);
		return;
	}
	e = &ring[head & c->mask];
	e->time = t0;
	e->pid = current->tgid;
	e->tid = current->pid;
	if (cc) {
		/* this slot's call chain (dp_callchain.c), none so far */
		cc += (head & c->mask) * c->cc_words;
		cc[0] = 0;
	}
	vcpu = dp_guest_fill(c, e, &cr3);
	if (vcpu) {
		WRITE_ONCE(c->guest, c->guest + 1);
		if (cc && dp_cc_guest(c, vcpu, e, cr3, cc, head)) {
			/* published by the walk, from the irq_work */
			WRITE_ONCE(c->samples, c->samples + 1);
			dp_handler_time(c, t0);
			return;
		}
	} else {
		e->pc = instruction_pointer(regs);
		e->mode = user_mode(regs) ? DP_MODE_HOST_USER :
			DP_MODE_HOST_KERNEL;
		e->domain = 0;
		e->vcpu = DP_RAW_VCPU_UNKNOWN;
		e->asid = DP_RAW_ASID_UNKNOWN;
	}
	WRITE_ONCE(c->samples, c->samples + 1);
	/* publish the slot: the reader acquires head before reading it */
	smp_store_release(&c->head, head + 1);
	dp_handler_time(c, t0);
}
