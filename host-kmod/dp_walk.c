// SPDX-License-Identifier: GPL-2.0
/*
 * domprof kernel collector: the guest frame-pointer walk itself, apart
 * from KVM (dp_callchain.c supplies the guest memory reader), so that its
 * unit test runs it in user space on made-up guest memory.
 *
 * Everything it reads is the guest's and may be hostile: every step is
 * checked, the walk is bounded by w->max, and it stops at the first frame
 * that is not plausible (w->truncated).  It only reads; what it reports
 * is addresses.
 */
#include <linux/errno.h>
#include <linux/types.h>

#include "domprof.h"

#define DP_PAGE		4096ULL
#define DP_USER_TOP	0x0000800000000000ULL	/* 4-level user half */
#define DP_KERNEL_BASE	0xff00000000000000ULL	/* covers 5-level too */
#define DP_PTE_P	0x1ULL
#define DP_PTE_U	0x4ULL
#define DP_PTE_PS	0x80ULL
#define DP_PTE_ADDR	0x000ffffffffff000ULL	/* bits 12..51 */
/* struct pt_regs of x86-64: bp at 32; ip, cs, flags, sp, ss at 128..167 */
#define DP_PTREGS_SIZE	168
#define DP_PTREGS_BP	32
#define DP_PTREGS_IP	128
#define DP_PTREGS_CS	136
#define DP_PTREGS_SP	152
#define DP_PTREGS_SS	160
#define DP_USER_CS	0x33
#define DP_USER_SS	0x2b
/*
 * A Xen PV guest's user selectors (Xen's flat ring 3): the xen collector
 * walks such guests with this code too (daemon/collect/gwalk.c).
 */
#define DP_PV_USER_CS	0xe033
#define DP_PV_USER_SS	0xe02b

/*
 * Guest virtual to guest physical by the guest's own page tables (64-bit,
 * 4 or 5 levels).  @user requires the user bit at every level, as the
 * guest's MMU would for a user access.
 */
static int dp_gva_to_gpa(struct dp_walk *w, u64 gva, bool user, u64 *gpa)
{
	u64 table = w->root, pte = 0, size;
	int level;

	if (w->have_page && (gva & ~(DP_PAGE - 1)) == w->vpage &&
	    user == w->page_user) {
		*gpa = w->gpage | (gva & (DP_PAGE - 1));
		return 0;
	}
	for (level = w->levels; level >= 1; level--) {
		unsigned int shift = 12 + 9 * (level - 1);
		u64 idx = (gva >> shift) & 511;

		if (w->read(w->ctx, table + idx * 8, &pte, sizeof(pte)))
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
	w->vpage = gva & ~(DP_PAGE - 1);
	w->gpage = table;
	w->page_user = user;
	w->have_page = true;
	*gpa = table | (gva & (DP_PAGE - 1));
	return 0;
}

/* One aligned guest word; never crosses a page. */
static int dp_read_word(struct dp_walk *w, u64 gva, bool user, u64 *val)
{
	u64 gpa;

	if ((gva & 7) || dp_gva_to_gpa(w, gva, user, &gpa))
		return -EFAULT;
	return w->read(w->ctx, gpa, val, sizeof(*val));
}

static bool dp_in_half(u64 a, bool user)
{
	return user ? a >= DP_PAGE && a < DP_USER_TOP :
		a >= DP_KERNEL_BASE && a < 0ULL - DP_PAGE;
}

int dp_walk_read_kernel(struct dp_walk *w, u64 gva, u64 *val)
{
	if (!dp_in_half(gva, false))
		return -EFAULT;
	return dp_read_word(w, gva, false, val);
}

void dp_walk_fp(struct dp_walk *w, u64 fp, u64 sp, bool user)
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

void dp_walk_user_tail(struct dp_walk *w, u64 sp)
{
	u64 regs = (sp | (DP_GUEST_STACK - 1)) + 1 - DP_PTREGS_SIZE;
	u64 ip, cs, usp, ss, bp;

	if (w->n >= w->max || !dp_in_half(sp, false) || regs < sp ||
	    dp_read_word(w, regs + DP_PTREGS_IP, false, &ip) ||
	    dp_read_word(w, regs + DP_PTREGS_CS, false, &cs) ||
	    dp_read_word(w, regs + DP_PTREGS_SP, false, &usp) ||
	    dp_read_word(w, regs + DP_PTREGS_SS, false, &ss) ||
	    dp_read_word(w, regs + DP_PTREGS_BP, false, &bp))
		return;
	if (!((cs == DP_USER_CS && ss == DP_USER_SS) ||
	      (cs == DP_PV_USER_CS && ss == DP_PV_USER_SS)) || !dp_in_half(ip, true) ||
	    !dp_in_half(usp, true))
		return;
	w->out[w->n++] = ip;
	dp_walk_fp(w, bp, usp, true);
}
