#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rep_hash.h"

struct str_slot {
	char *key;
	size_t val;
	uint64_t hash;
};

struct rep_strmap {
	struct str_slot *slots;
	size_t cap, n;		/* cap: power of two */
};

struct u64_slot {
	uint64_t key;
	size_t val;		/* SIZE_MAX: empty */
};

struct rep_u64map {
	struct u64_slot *slots;
	size_t cap, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h;
}

static uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

struct rep_strmap *rep_strmap_new(void)
{
	struct rep_strmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = 64;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

void rep_strmap_free(struct rep_strmap *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].key);
	free(m->slots);
	free(m);
}

static struct str_slot *str_find(const struct rep_strmap *m, const char *key, uint64_t h)
{
	size_t i = h & (m->cap - 1);

	while (m->slots[i].key) {
		if (m->slots[i].hash == h && !strcmp(m->slots[i].key, key))
			return &m->slots[i];
		i = (i + 1) & (m->cap - 1);
	}
	return &m->slots[i];
}

long rep_strmap_get(const struct rep_strmap *m, const char *key)
{
	struct str_slot *s = str_find(m, key, hash_str(key));

	return s->key ? (long)s->val : -1;
}

static int str_grow(struct rep_strmap *m)
{
	struct str_slot *old = m->slots;
	size_t oldcap = m->cap;

	m->slots = calloc(oldcap * 2, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = oldcap * 2;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].key)
			*str_find(m, old[i].key, old[i].hash) = old[i];
	free(old);
	return 0;
}

int rep_strmap_put(struct rep_strmap *m, const char *key, size_t val)
{
	uint64_t h = hash_str(key);
	struct str_slot *s;

	if ((m->n + 1) * 2 > m->cap && str_grow(m))
		return -ENOMEM;
	s = str_find(m, key, h);
	if (!s->key) {
		s->key = strdup(key);
		if (!s->key)
			return -ENOMEM;
		s->hash = h;
		m->n++;
	}
	s->val = val;
	return 0;
}

static struct u64_slot *alloc_u64_slots(size_t cap)
{
	struct u64_slot *s = malloc(cap * sizeof(*s));

	if (s)
		for (size_t i = 0; i < cap; i++)
			s[i].val = SIZE_MAX;
	return s;
}

struct rep_u64map *rep_u64map_new(void)
{
	struct rep_u64map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->cap = 1024;
	m->slots = alloc_u64_slots(m->cap);
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

void rep_u64map_free(struct rep_u64map *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static struct u64_slot *u64_find(const struct rep_u64map *m, uint64_t key)
{
	size_t i = hash_u64(key) & (m->cap - 1);

	while (m->slots[i].val != SIZE_MAX && m->slots[i].key != key)
		i = (i + 1) & (m->cap - 1);
	return &m->slots[i];
}

static int u64_grow(struct rep_u64map *m)
{
	struct u64_slot *old = m->slots;
	size_t oldcap = m->cap;

	m->slots = alloc_u64_slots(oldcap * 2);
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->cap = oldcap * 2;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].val != SIZE_MAX)
			*u64_find(m, old[i].key) = old[i];
	free(old);
	return 0;
}

long rep_u64map_get_or_put(struct rep_u64map *m, uint64_t key, size_t fresh, int *created)
{
	struct u64_slot *s;

	if ((m->n + 1) * 2 > m->cap && u64_grow(m))
		return -ENOMEM;
	s = u64_find(m, key);
	*created = s->val == SIZE_MAX;
	if (*created) {
		s->key = key;
		s->val = fresh;
		m->n++;
	}
	return (long)s->val;
}
