#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "rep_addr.h"
#include "rep_collect.h"
#include "rep_hash.h"

struct rep_addrs {
	struct rep_addr *v;
	size_t n, cap;
	struct rep_strmap *idx;		/* "group:sym:key" -> index */
	struct rep_strmap *rows;	/* "group:sym" -> its first entry */
};

struct rep_addrs *rep_addrs_new(void)
{
	struct rep_addrs *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->idx = rep_strmap_new();
	k->rows = rep_strmap_new();
	if (!k->idx || !k->rows) {
		rep_addrs_free(k);
		errno = ENOMEM;
		return NULL;
	}
	return k;
}

void rep_addrs_free(struct rep_addrs *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i].c);
	free(k->v);
	rep_strmap_free(k->idx);
	rep_strmap_free(k->rows);
	free(k);
}

/* A new entry for (@group, @sym, @key) chained to its row.  Index or
 * -ENOMEM. */
static long add(struct rep_addrs *k, size_t nclasses, size_t group, long sym, uint64_t key,
		const char *id)
{
	struct rep_addr *e;
	char row[64];
	long i;

	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 1024;

		e = realloc(k->v, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		k->v = e;
		k->cap = cap;
	}
	e = &k->v[k->n];
	*e = (struct rep_addr){ .group = group, .sym = sym, .key = key };
	e->c = calloc(nclasses ? nclasses : 1, sizeof(*e->c));
	if (!e->c || rep_strmap_put(k->idx, id, k->n))
		return -ENOMEM;
	snprintf(row, sizeof(row), "%zu:%ld", group, sym);
	e->next = rep_strmap_get(k->rows, row);
	i = (long)k->n++;
	if (rep_strmap_put(k->rows, row, (size_t)i))
		return -ENOMEM;
	return i;
}

int rep_addrs_sink(void *ctx, const struct rep_profile *p, size_t group, size_t cls,
		   const struct rep_bin *bin, long sym, uint64_t key, uint64_t count)
{
	struct rep_addrs *k = ctx;
	char id[96];
	long i;

	(void)bin;
	snprintf(id, sizeof(id), "%zu:%ld:%" PRIu64, group, sym, key);
	i = rep_strmap_get(k->idx, id);
	if (i < 0)
		i = add(k, p->nclasses, group, sym, key, id);
	if (i < 0)
		return (int)i;
	k->v[i].c[cls] += count;
	return 0;
}

struct rep_addr *rep_addrs_find(const struct rep_addrs *k, size_t group, long sym, uint64_t key)
{
	char id[96];
	long i;

	snprintf(id, sizeof(id), "%zu:%ld:%" PRIu64, group, sym, key);
	i = rep_strmap_get(k->idx, id);
	return i < 0 ? NULL : &k->v[i];
}

long rep_addrs_first(const struct rep_addrs *k, size_t group, long sym)
{
	char row[64];

	snprintf(row, sizeof(row), "%zu:%ld", group, sym);
	return rep_strmap_get(k->rows, row);
}

struct rep_addr *rep_addrs_at(const struct rep_addrs *k, long i)
{
	return &k->v[i];
}
