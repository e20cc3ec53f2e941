/*
 * Verified domains waiting for a name another domain holds (opd_domain.c,
 * name_held): at most OPD_DPEND_MAX, in the order they came, each retried
 * at every scan.  A claimant past the cap is refused all the same, only
 * not retried.  Borrowed pointers: the backend keeps a domain valid until
 * its removed callback, which takes it out first.
 */
#ifndef OPD_DOMAIN_PEND_H
#define OPD_DOMAIN_PEND_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "dom.h"

#define OPD_DPEND_MAX 16

struct opd_dpend {
	const struct dom_domain *d[OPD_DPEND_MAX];
	size_t n;
};

/* Note @d as waiting; false if it already was (its refusal was said). */
static inline bool opd_dpend_add(struct opd_dpend *p, const struct dom_domain *d)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->d[i] == d)
			return false;
	if (p->n < OPD_DPEND_MAX)
		p->d[p->n++] = d;
	return true;
}

static inline void opd_dpend_del(struct opd_dpend *p, const struct dom_domain *d)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->d[i] == d) {
			memmove(p->d + i, p->d + i + 1, (--p->n - i) * sizeof(*p->d));
			return;
		}
}

#endif
