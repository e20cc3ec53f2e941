/* Sorted, disjoint address ranges: the mappings of a process or a guest
 * task, the kernel's images. */
#ifndef DU_RANGE_H
#define DU_RANGE_H

#include <stddef.h>

/*
 * Index of the first of the @n ranges of array @arr (elements with an
 * .end field, sorted by it) whose end is above @addr; @n if none is.  The
 * range that holds @addr, if any, is that one when its .start <= @addr.
 */
#define DU_FIRST_END_AFTER(arr, n, addr) ({				\
	size_t du_lo_ = 0, du_hi_ = (n);				\
	while (du_lo_ < du_hi_) {					\
		size_t du_mid_ = (du_lo_ + du_hi_) / 2;			\
		if ((arr)[du_mid_].end <= (addr))			\
			du_lo_ = du_mid_ + 1;				\
		else							\
			du_hi_ = du_mid_;				\
	}								\
	du_lo_;								\
})

#endif
