#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "opd_guest_hold.h"

int opd_ghold_init(struct opd_ghold *h, size_t cap)
{
	h->q = calloc(cap ? cap : 1, sizeof(*h->q));
	h->head = h->count = h->scanned = 0;
	h->cap = cap;
	return h->q ? 0 : -ENOMEM;
}

void opd_ghold_fini(struct opd_ghold *h)
{
	free(h->q);
	h->q = NULL;
	h->count = 0;
}

void opd_ghold_push(struct opd_ghold *h, const struct opd_guest_sample *s)
{
	h->q[(h->head + h->count) % h->cap] = *s;
	h->count++;
}

const struct opd_guest_sample *opd_ghold_oldest(const struct opd_ghold *h)
{
	return h->count ? &h->q[h->head] : NULL;
}

void opd_ghold_pop(struct opd_ghold *h)
{
	h->head = (h->head + 1) % h->cap;
	h->count--;
	if (h->scanned)
		h->scanned--;
}

struct opd_guest_sample *opd_ghold_at(struct opd_ghold *h, size_t i)
{
	return &h->q[(h->head + i) % h->cap];
}
