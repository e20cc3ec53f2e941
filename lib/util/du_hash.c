#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "du_hash.h"

int du_htab_init(struct du_htab *t, size_t nr_buckets)
{
	t->count = 0;
	t->mask = nr_buckets - 1;
	t->buckets = calloc(nr_buckets, sizeof(*t->buckets));
	return t->buckets ? 0 : -ENOMEM;
}

void du_htab_fini(struct du_htab *t, void (*free_link)(struct du_hlink *l))
{
	if (!t->buckets)
		return;
	for (size_t i = 0; i <= t->mask; i++) {
		struct du_hlink *l = t->buckets[i], *next;

		for (; l; l = next) {
			next = l->next;
			if (free_link)
				free_link(l);
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	t->count = 0;
}

int du_htab_grow(struct du_htab *t)
{
	size_t nmask = t->mask * 2 + 1;
	struct du_hlink **nb = calloc(nmask + 1, sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	for (size_t i = 0; i <= t->mask; i++) {
		struct du_hlink *l = t->buckets[i], *next;

		for (; l; l = next) {
			next = l->next;
			l->next = nb[l->hash & nmask];
			nb[l->hash & nmask] = l;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->mask = nmask;
	return 0;
}

void du_htab_del(struct du_htab *t, struct du_hlink *l)
{
	struct du_hlink **pp = &t->buckets[l->hash & t->mask];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			t->count--;
			return;
		}
	}
}
