// SPDX-License-Identifier: GPL-2.0
/*
 * domprof kernel collector: guest call chains, walked at sample time.
 *
 * When a sample hits a KVM vCPU in guest mode, follow the guest's frame
 * pointers from its RBP: each frame holds the caller's RBP at [rbp] and
 * the return address at [rbp + 8].  The guest's memory is read through
 * KVM's memslots with kvm_vcpu_read_guest_atomic(), which copies from the
 * hypervisor's mapping of guest memory with page faults disabled: a page
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
 * as addresses, never followed further.
 *
 * Context: the cpu-clock counter runs this in hard-IRQ context; a PMU
 * counter in NMI context.  The memslots are protected by the VM's SRCU,
 * which KVM does not hold while the vCPU runs, and srcu_read_lock() is
 * not NMI-safe in 6.1: in NMI the walk is skipped and counted.
 */
#include <linux/bits.h>
#include <linux/module.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <linux/srcu.h>

#if IS_ENABLED(CONFIG_KVM) && defined(CONFIG_X86_64)
#include <linux/kvm_host.h>
#define DP_HAVE_KVM 1
#endif

#include "domprof.h"

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

#define DP_USER_TOP	0x0000800000000000ULL	/* 4-level user half */
#define DP_KERNEL_BASE	0xff00000000000000ULL	/* covers 5-level too */
#define DP_PTE_P	BIT_ULL(0)
#define DP_PTE_U	BIT_ULL(2)
#define DP_PTE_PS	BIT_ULL(7)
#define DP_PTE_ADDR	GENMASK_ULL(51, 12)
/* A Linux x86-64 guest's kernel stacks: 16 KiB, aligned to their size. */
#define DP_GUEST_STACK	16384ULL
/* struct pt_regs of x86-64: ip, cs, flags, sp, ss at 128..167, bp at 32 */
#define DP_PTREGS_SIZE	168
#define DP_PTREGS_BP	32
#define DP_PTREGS_IP	128
#define DP_USER_CS	0x33
#define DP_USER_SS	0x2b

struct dp_walk {
	struct kvm_vcpu *vcpu;
	typeof(dp_read_guest) read;
	u64 root;		/* guest CR3, page-table address */
	int levels;		/* 4 or 5 */
	u64 vpage, gpage;	/* the last translation */
	u64 *out;		/* return addresses */
	u32 n, max;
	bool truncated;
};

/*
 * Guest virtual to guest physical, by the guest's own page tables
 * (64-bit, 4 or 5 levels).  @user requires the user bit at every level,
 * as the guest's MMU would for a user access.  Reads only.
 */
static int dp_gva_to_gpa(struct dp_walk *w, u64 gva, bool user, u64 *gpa)
{
	u64 table = w->root, pte = 0, size;
	int level;

	if ((gva & PAGE_MASK) == w->vpage && w->gpage) {
		*gpa = w->gpage | (gva & ~PAGE_MASK);
		return 0;
	}
	for (level = w->levels; level >= 1; level--) {
		unsigned int shift = 12 + 9 * (level - 1);
		u64 idx = (gva >> shift) & 511;

		if (w->read(w->vcpu, table + idx * 8, &pte, sizeof(pte)))
			return -EFAULT;
		if (!(pte & DP_PTE_P) || (user && !(pte & DP_PTE_U)))
			return -EFAULT;
		if ((level == 2 || level == 3) && (pte & DP_PTE_PS)) {
			size = 1ULL << shift;
			*gpa = (pte & DP_PTE_ADDR & ~(size - 1)) |
			       (gva & (size - 1));
			return 0;
		}
		table = pte & DP_PTE_ADDR;
	}
	w->vpage = gva & PAGE_MASK;
	w->gpage = table;
	*gpa = table | (gva & ~PAGE_MASK);
	return 0;
}

/* One aligned guest word; never crosses a page. */
static int dp_read_word(struct dp_walk *w, u64 gva, bool user, u64 *val)
{
	u64 gpa;

	if (dp_gva_to_gpa(w, gva, user, &gpa))
		return -EFAULT;
	return w->read(w->vcpu, gpa, val, sizeof(*val));
}

static bool dp_in_half(u64 a, bool user)
{
	return user ? a >= PAGE_SIZE && a < DP_USER_TOP :
		a >= DP_KERNEL_BASE && a < -PAGE_SIZE;
}

/*
 * Follow frame pointers from @fp, frames at or above @sp (the stack
 * pointer at the sample, 0 if unknown) and, for the kernel, on the
 * same stack as @sp.  Appends return addresses to @w.
 */
static void dp_walk_fp(struct dp_walk *w, u64 fp, u64 sp, bool user)
{
	u64 prev = sp, frame[2];

	while (fp && w->n < w->max) {
		if ((fp & 7) || !dp_in_half(fp, user) ||
		    !dp_in_half(fp + 16, user) || fp < prev ||
		    (!user && (fp ^ sp) >= DP_GUEST_STACK) ||
		    dp_read_word(w, fp, user, &frame[0]) ||
		    dp_read_word(w, fp + 8, user, &frame[1]) ||
		    !dp_in_half(frame[1], user)) {
			w->truncated = true;
			return;
		}
		w->out[w->n++] = frame[1];
		/* callers' frames are strictly above: no loops */
		prev = fp + 16;
		fp = frame[0];
	}
}

/*
 * A guest kernel entered from user mode keeps the user registers in a
 * struct pt_regs at the top of the task's kernel stack.  If the sample's
 * stack looks like such a stack (user CS and SS, a user pc), continue the
 * chain in user space from there.  Only an address is taken from it.
 */
static void dp_walk_user_tail(struct dp_walk *w, u64 sp)
{
	u64 regs = (sp | (DP_GUEST_STACK - 1)) + 1 - DP_PTREGS_SIZE;
	u64 ip, cs, usp, ss, bp;

	if (w->n >= w->max || !dp_in_half(sp, false) || regs < sp ||
	    dp_read_word(w, regs + DP_PTREGS_IP, false, &ip) ||
	    dp_read_word(w, regs + DP_PTREGS_IP + 8, false, &cs) ||
	    dp_read_word(w, regs + DP_PTREGS_IP + 24, false, &usp) ||
	    dp_read_word(w, regs + DP_PTREGS_IP + 32, false, &ss) ||
	    dp_read_word(w, regs + DP_PTREGS_BP, false, &bp))
		return;
	if (cs != DP_USER_CS || ss != DP_USER_SS || !dp_in_half(ip, true) ||
	    !dp_in_half(usp, true))
		return;
	w->out[w->n++] = ip;
	w->gpage = 0;	/* the user walk translates with the user bit */
	dp_walk_fp(w, bp, usp, true);
}

void dp_cc_guest(struct dp_cpu *c, struct kvm_vcpu *vcpu,
		 const struct dp_entry *e, u64 *slot)
{
	struct dp_walk w = {
		.vcpu = vcpu,
		.read = READ_ONCE(dp_read_guest),
		.out = slot + 1,
		.max = min_t(u32, c->cc_words - 1, DP_KMOD_MAX_CG_DEPTH),
	};
	bool user = e->mode == DP_MODE_GUEST_USER;
	u32 avail, nr_kernel = 0, flags = DP_RAW_CC_GUEST;
	u64 fp, sp;
	int idx;

	if (in_nmi()) {
		WRITE_ONCE(c->ccs.nmi, c->ccs.nmi + 1);
		return;
	}
	avail = READ_ONCE(vcpu->arch.regs_avail);
	/*
	 * The walk needs the guest's current page tables: known with
	 * shadow paging (every CR3 load exits), not with NPT/EPT at this
	 * point (see dp_sample.c); and the registers, which an encrypted
	 * guest does not show.  A nested guest's are not the vCPU's.
	 */
	if (!w.read || !e->pc || current->mm != vcpu->kvm->mm ||
	    vcpu->arch.guest_state_protected ||
	    (vcpu->arch.hflags & HF_GUEST_MASK) ||
	    !(avail & BIT(VCPU_EXREG_CR3)) || vcpu->arch.mmu->root_role.direct ||
	    !(vcpu->arch.efer & EFER_LMA) ||
	    !(avail & BIT(VCPU_REGS_RBP)) || !(avail & BIT(VCPU_REGS_RSP))) {
		WRITE_ONCE(c->ccs.no_walk, c->ccs.no_walk + 1);
		return;
	}
	w.root = vcpu->arch.cr3 & DP_PTE_ADDR;
	w.levels = vcpu->arch.cr4 & X86_CR4_LA57 ? 5 : 4;
	fp = vcpu->arch.regs[VCPU_REGS_RBP];
	sp = vcpu->arch.regs[VCPU_REGS_RSP];

	idx = srcu_read_lock(&vcpu->kvm->srcu);
	dp_walk_fp(&w, fp, sp, user);
	if (!user) {
		nr_kernel = w.n;
		dp_walk_user_tail(&w, sp);
	}
	srcu_read_unlock(&vcpu->kvm->srcu, idx);

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
#else
int dp_cc_get(void)
{
	return 0;
}

void dp_cc_put(void)
{
}

void dp_cc_guest(struct dp_cpu *c, struct kvm_vcpu *vcpu,
		 const struct dp_entry *e, u64 *slot)
{
}
#endif
