/*
 * Kernel images: vmlinux and modules as address ranges, from DP_RAW_KMOD
 * records.  A kernel pc resolves to {kern}/NAME and the offset pc - start.
 * A new range replaces the ranges it overlaps (a module reloaded elsewhere,
 * or a collector restating the kernel).
 */
#ifndef OPD_KERNEL_H
#define OPD_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "opd_image.h"

struct opd_kernel_range {
	uint64_t start, end;	/* [start, end) */
	struct opd_image *image;	/* SFN_KERN */
};

struct opd_kernel;

struct opd_kernel *opd_kernel_new(struct opd_images *images);	/* borrowed */
void opd_kernel_free(struct opd_kernel *k);	/* NULL accepted */

/* Add the range of image @name.  0 or -errno (-EINVAL: empty or wrapping). */
int opd_kernel_add(struct opd_kernel *k, uint64_t start, uint64_t size, const char *name,
		   size_t name_len);

/* The range containing @pc or NULL; then *@gap_start/@gap_end (if non-NULL)
 * give the unclaimed range around @pc. */
const struct opd_kernel_range *opd_kernel_find(const struct opd_kernel *k, uint64_t pc,
					       uint64_t *gap_start, uint64_t *gap_end);

#endif
