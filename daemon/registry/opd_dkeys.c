#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "opd_dkeys.h"

struct opd_dkey {
	struct du_hlink link;
	void *owner;
	uint64_t key;
	uint32_t ns;
};

struct opd_dkey_set {
	unsigned int n;
	struct opd_dkey k[];
};

static uint32_t dkey_hash(uint32_t ns, uint64_t key)
{
	uint32_t h = du_fnv1a32(DU_FNV32_BASIS, &ns, sizeof(ns));

	return du_fnv1a32(h, &key, sizeof(key));
}

int opd_dkeys_init(struct opd_dkeys *ix)
{
	return du_htab_init(&ix->tab, 64);
}

void opd_dkeys_fini(struct opd_dkeys *ix)
{
	du_htab_fini(&ix->tab, NULL);
}

void opd_dkeys_drop(struct opd_dkeys *ix, struct opd_dkey_set **set)
{
	if (!*set)
		return;
	for (unsigned int i = 0; i < (*set)->n; i++)
		du_htab_del(&ix->tab, &(*set)->k[i].link);
	free(*set);
	*set = NULL;
}

int opd_dkeys_put(struct opd_dkeys *ix, struct opd_dkey_set **set, void *owner,
		  const uint32_t *ns, const uint64_t *key, unsigned int n)
{
	struct opd_dkey_set *s = NULL;

	if (n) {
		s = malloc(sizeof(*s) + n * sizeof(s->k[0]));
		if (!s)
			return -ENOMEM;
	}
	/* more keys than buckets: grow (a failure only makes chains longer) */
	while (ix->tab.count + n > ix->tab.mask + 1 && du_htab_grow(&ix->tab) == 0)
		;
	opd_dkeys_drop(ix, set);
	if (!s)
		return 0;
	s->n = n;
	for (unsigned int i = 0; i < n; i++) {
		s->k[i].owner = owner;
		s->k[i].ns = ns[i];
		s->k[i].key = key[i];
		du_htab_add(&ix->tab, &s->k[i].link, dkey_hash(ns[i], key[i]));
	}
	*set = s;
	return 0;
}

void *opd_dkeys_find(const struct opd_dkeys *ix, uint32_t ns, uint64_t key)
{
	uint32_t h = dkey_hash(ns, key);

	for (struct du_hlink *l = du_htab_chain(&ix->tab, h); l; l = l->next) {
		const struct opd_dkey *k = du_container_of(l, struct opd_dkey, link);

		if (l->hash == h && k->ns == ns && k->key == key)
			return k->owner;
	}
	return NULL;
}
