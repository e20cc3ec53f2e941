/*
 * The memory a domain's guest state may hold (limits.max_bytes), shared
 * by its parts (tasks, images, timeline): one account, so a guest cannot
 * spend the cap once per part.
 */
#ifndef OPD_GUEST_BUDGET_H
#define OPD_GUEST_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct opd_gbudget {
	size_t used, max;
	uint64_t *capped;	/* bumped on each refusal (guest_bytes_capped) */
};

/* Take @n bytes; false (counted) when that would pass the cap. */
static inline bool opd_gbudget_take(struct opd_gbudget *b, size_t n)
{
	if (b->used + n > b->max) {
		(*b->capped)++;
		return false;
	}
	b->used += n;
	return true;
}

static inline void opd_gbudget_give(struct opd_gbudget *b, size_t n)
{
	b->used -= n;
}

#endif
