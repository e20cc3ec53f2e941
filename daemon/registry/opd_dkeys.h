/*
 * The domain registry's index (opd_domain.h): each running domain under
 * the keys it answers to, so that a sample's domain is found in O(1)
 * however many domains run.  A key is a namespace and a value: the
 * DOMAIN records' (DP_DOMKEY_HOST_PID and its host pid, DP_DOMKEY_XEN_DOMID
 * and its domid) or the registry's own (OPD_DKEY_HELPER: a host thread
 * that works for the domain, such as a Xen back end in dom0).
 *
 * An owner's keys are one set, replaced whole when the domain changes.
 * Two owners may claim one key (a forged command line may repeat a pid
 * of another domain's device model): a lookup then finds the owner that
 * claimed it last.  Not thread-safe.
 */
#ifndef OPD_DKEYS_H
#define OPD_DKEYS_H

#include <stdint.h>

#include "util/du_hash.h"

/* No DOMAIN record carries it (include/domprof/raw.h: 0 and 1 are). */
#define OPD_DKEY_HELPER 0x80000001u

struct opd_dkeys {
	struct du_htab tab;
};

/* One owner's keys (opaque); NULL is the empty set. */
struct opd_dkey_set;

/* An empty index.  0 or -ENOMEM. */
int opd_dkeys_init(struct opd_dkeys *ix);
/* Free the buckets; every set must have been dropped first. */
void opd_dkeys_fini(struct opd_dkeys *ix);

/*
 * Replace the keys of @owner, whose set is *@set (NULL at first), by the
 * @n keys @ns[i]/@key[i].  0, or -ENOMEM with the old set kept.
 */
int opd_dkeys_put(struct opd_dkeys *ix, struct opd_dkey_set **set, void *owner,
		  const uint32_t *ns, const uint64_t *key, unsigned int n);

/* Take the keys of *@set out of the index and free it (*@set = NULL). */
void opd_dkeys_drop(struct opd_dkeys *ix, struct opd_dkey_set **set);

/* The owner of key @ns/@key, NULL if none. */
void *opd_dkeys_find(const struct opd_dkeys *ix, uint32_t ns, uint64_t key);

#endif
