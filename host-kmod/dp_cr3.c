// SPDX-License-Identifier: GPL-2.0
/*
 * domprof kernel collector: the guest's CR3 at a sample under nested
 * paging (AMD NPT, Intel EPT).
 *
 * With shadow paging KVM intercepts every CR3 load, so vcpu->arch.cr3 is
 * always the guest's.  With nested paging the guest loads CR3 freely and
 * KVM copies it into arch.cr3 only when it handles the exit, after the
 * interrupt window in which samples are taken (kvm_before_interrupt() in
 * vcpu_enter_guest()).  The value the exit left is still in the hardware's
 * state then:
 *
 *  - SVM: the #VMEXIT wrote it to the VMCB's save area.  The VMCB is
 *    KVM's own (struct vcpu_svm, private to kvm-amd), whose first member
 *    is the struct kvm_vcpu and whose second is the pointer to the current
 *    VMCB; struct vmcb is public (asm/svm.h).  The pointer is trusted only
 *    when it is a page-aligned direct-map address and the VMCB's EFER is
 *    the vCPU's (KVM keeps save.efer = arch.efer | SVME under NPT): a
 *    kernel whose layout differs fails that, and the sample's address
 *    space stays unknown (counted, cr3_refused), never wrong.
 *  - VMX: GUEST_CR3 of the current VMCS, read with VMREAD, valid on the
 *    CPU that took the exit while KVM's VMCS is loaded (it is, in the
 *    window); only where CR4.VMXE says the CPU is in VMX operation, and
 *    a failed VMREAD (no current VMCS) gives unknown.  The lab has no VMX
 *    (tests/lab/README.md): this path is not run by the tests.
 *
 * A nested guest's (L2's) CR3 is not the vCPU's: unknown.
 */
#include <linux/bits.h>
#include <linux/mm.h>
#include <linux/module.h>

#if IS_ENABLED(CONFIG_KVM) && defined(CONFIG_X86_64)
#include <linux/kvm_host.h>
#include <asm/msr-index.h>
#include <asm/processor.h>
#include <asm/svm.h>
#include <asm/tlbflush.h>
#include <asm/vmx.h>
#define DP_HAVE_KVM 1
#endif

#include "domprof.h"

#ifdef DP_HAVE_KVM
enum dp_cr3_way { DP_CR3_NONE, DP_CR3_SVM, DP_CR3_VMX };
static enum dp_cr3_way dp_cr3_way;

const char *dp_cr3_init(void)
{
	if ((boot_cpu_data.x86_vendor == X86_VENDOR_AMD ||
	     boot_cpu_data.x86_vendor == X86_VENDOR_HYGON) && boot_cpu_has(X86_FEATURE_SVM)) {
		dp_cr3_way = DP_CR3_SVM;
		return "SVM: the VMCB's save area after the exit";
	}
	if (boot_cpu_data.x86_vendor == X86_VENDOR_INTEL && boot_cpu_has(X86_FEATURE_VMX)) {
		dp_cr3_way = DP_CR3_VMX;
		return "VMX: GUEST_CR3 of the current VMCS";
	}
	dp_cr3_way = DP_CR3_NONE;
	return NULL;
}

static u64 dp_svm_cr3(struct kvm_vcpu *vcpu)
{
	/* struct vcpu_svm { struct kvm_vcpu vcpu; struct vmcb *vmcb; ... } */
	struct vmcb *vmcb = READ_ONCE(*(struct vmcb **)(vcpu + 1));

	if (!vmcb || !PAGE_ALIGNED(vmcb) || !virt_addr_valid(vmcb))
		return 0;
	if ((READ_ONCE(vmcb->save.efer) | EFER_SVME) != (vcpu->arch.efer | EFER_SVME))
		return 0;
	return READ_ONCE(vmcb->save.cr3);
}

static u64 dp_vmx_cr3(void)
{
	unsigned long val = 0;
	bool fail;

	if (!(cr4_read_shadow() & X86_CR4_VMXE))
		return 0;
	/* VMfail sets CF (no current VMCS) or ZF (a bad field) */
	asm volatile("vmread %[field], %[val]\n\tsetbe %[fail]"
		     : [val] "=r"(val), [fail] "=qm"(fail)
		     : [field] "r"((unsigned long)GUEST_CR3)
		     : "cc");
	return fail ? 0 : val;
}

u64 dp_direct_cr3(struct dp_cpu *c, struct kvm_vcpu *vcpu)
{
	u64 cr3 = 0;

	if (vcpu->arch.hflags & HF_GUEST_MASK)
		return 0;	/* a nested guest's */
	if (dp_cr3_way == DP_CR3_SVM)
		cr3 = dp_svm_cr3(vcpu);
	else if (dp_cr3_way == DP_CR3_VMX)
		cr3 = dp_vmx_cr3();
	if (cr3)
		WRITE_ONCE(c->cr3_direct, c->cr3_direct + 1);
	else
		WRITE_ONCE(c->cr3_refused, c->cr3_refused + 1);
	return cr3;
}
#else
const char *dp_cr3_init(void)
{
	return NULL;
}
#endif
