/*
 * A profile's samples by address: what rep_collect_keys() hands its sink,
 * kept as one entry per (group, symbol, sample key) with its counts per
 * class, the entries of one symbol row chained together.  oppprof gives
 * each its own location (the sample's address, as pprof and perf expect).
 */
#ifndef REP_ADDR_H
#define REP_ADDR_H

#include <stddef.h>
#include <stdint.h>

struct rep_bin;
struct rep_profile;

struct rep_addr {
	size_t group;		/* in the profile's groups */
	long sym;		/* in the group's bin, -1: none */
	uint64_t key;		/* the sample key (a file offset) */
	uint64_t *c;		/* [nclasses] */
	long next;		/* the same row's next entry, -1: none */
};

struct rep_addrs;

struct rep_addrs *rep_addrs_new(void);		/* NULL, errno set */
void rep_addrs_free(struct rep_addrs *k);	/* NULL accepted */

/* A struct rep_key_sink's callback, @ctx the rep_addrs.  0 or -ENOMEM. */
int rep_addrs_sink(void *ctx, const struct rep_profile *p, size_t group, size_t cls,
		   const struct rep_bin *bin, long sym, uint64_t key, uint64_t count);

/* The entry of (@group, @sym, @key), or NULL; owned by @k. */
struct rep_addr *rep_addrs_find(const struct rep_addrs *k, size_t group, long sym, uint64_t key);
/* The index of row (@group, @sym)'s first entry, -1 none; then ->next. */
long rep_addrs_first(const struct rep_addrs *k, size_t group, long sym);
struct rep_addr *rep_addrs_at(const struct rep_addrs *k, long i);

#endif
