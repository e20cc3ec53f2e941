/* Arrays that grow. */
#ifndef DU_ARRAY_H
#define DU_ARRAY_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Room for @need elements in array @arr (an lvalue: a pointer, NULL while
 * empty) of @cap elements (a size_t lvalue): when @need is more, the
 * array is reallocated to @cap, or @first if @cap is 0, doubled until it
 * holds @need, and both are updated.  0, or -ENOMEM with both as they
 * were.
 */
#define DU_GROW(arr, cap, need, first) ({				\
	size_t du_need_ = (need), du_ncap_ = (cap) ? (cap) : (first);	\
	__typeof__(arr) du_p_;						\
	int du_rc_ = 0;							\
	if (du_need_ > (cap)) {						\
		while (du_ncap_ < du_need_)				\
			du_ncap_ *= 2;					\
		du_p_ = realloc((arr), du_ncap_ * sizeof(*(arr)));	\
		if (du_p_) {						\
			(arr) = du_p_;					\
			(cap) = du_ncap_;				\
		} else {						\
			du_rc_ = -ENOMEM;				\
		}							\
	}								\
	du_rc_;								\
})

#endif
