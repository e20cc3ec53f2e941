/*
 * The guest frame-pointer walk of the kernel collector (host-kmod/dp_walk.c),
 * built in user space for the collectors that read guest memory from the
 * host's user space (the xen collector, through foreign mappings): one walk
 * and one set of plausibility rules for every hypervisor.
 *
 * Everything read is the guest's and hostile: the walk is bounded by @max,
 * stops at the first frame that is not plausible (truncated), and only
 * reports addresses.
 */
#ifndef GWALK_H
#define GWALK_H

#include <stdbool.h>
#include <stdint.h>

struct gwalk_req {
	/* Read @len (<= 8, never across a page) bytes at @addr in the
	 * address space the guest's page tables hold (guest physical, or
	 * machine addresses for a Xen PV guest).  0 or -errno. */
	int (*read)(void *ctx, uint64_t addr, void *buf, unsigned long len);
	void *ctx;
	uint64_t root;		/* the top page table's address (CR3) */
	int levels;		/* 4 or 5 */
	uint64_t fp, sp;	/* the sample's frame and stack pointers */
	bool user;		/* the sample was in guest user mode */
};

struct gwalk_res {
	unsigned int nr;	/* return addresses in out[] */
	unsigned int nr_kernel;	/* the first nr_kernel are kernel ones */
	bool truncated;		/* stopped at an implausible frame */
};

/*
 * Walk from the sample's frame: a kernel sample's kernel frames, then the
 * user pc and user frames saved at the top of its kernel stack when they
 * look like a Linux entry from user mode; a user sample's user frames.
 * At most @max frames into @out.
 */
void gwalk(const struct gwalk_req *r, uint64_t *out, unsigned int max, struct gwalk_res *res);

/*
 * One aligned 8-byte word of guest kernel memory at the virtual address
 * @gva (kernel half) through @r's page tables (@r's fp, sp and user are
 * not used).  0 or -EFAULT.
 */
int gwalk_read_kernel(const struct gwalk_req *r, uint64_t gva, uint64_t *val);

#endif
