/*
 * A keyed hash for the tables a guest fills (its tasks by pid, its images
 * by path): SipHash-1-3 over a key drawn from getrandom() when the table
 * is made.  A guest that does not know the key cannot choose pids or paths
 * that land in one bucket, so a lookup stays short whatever it sends
 * (issue 9, item 2).  Not a MAC: only the bucket spread matters here.
 */
#ifndef OPD_GUEST_HASH_H
#define OPD_GUEST_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

struct opd_ghkey {
	uint64_t k0, k1;
};

/* A fresh random key.  Without getrandom (an old kernel) the clock's
 * nanoseconds and the key's own address make it unpredictable enough for
 * bucket spreading. */
static inline void opd_ghkey_init(struct opd_ghkey *k)
{
	if (getrandom(k, sizeof(*k), GRND_NONBLOCK) != (ssize_t)sizeof(*k)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		k->k0 = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ts.tv_sec;
		k->k1 = (uint64_t)(uintptr_t)k * 0xbf58476d1ce4e5b9ULL ^ k->k0;
	}
}

#define OPD_GH_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

static inline void opd_gh_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = OPD_GH_ROTL(v[1], 13);
	v[1] ^= v[0];
	v[0] = OPD_GH_ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = OPD_GH_ROTL(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = OPD_GH_ROTL(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = OPD_GH_ROTL(v[1], 17);
	v[1] ^= v[2];
	v[2] = OPD_GH_ROTL(v[2], 32);
}

/* SipHash-1-3 of @len bytes at @p under @k. */
static inline uint64_t opd_ghash(const struct opd_ghkey *k, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t v[4] = {
		k->k0 ^ 0x736f6d6570736575ULL, k->k1 ^ 0x646f72616e646f6dULL,
		k->k0 ^ 0x6c7967656e657261ULL, k->k1 ^ 0x7465646279746573ULL,
	};
	uint64_t m, last = (uint64_t)len << 56;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, b + i, 8);	/* host order: only the spread matters */
		v[3] ^= m;
		opd_gh_round(v);
		v[0] ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		last |= (uint64_t)b[i + j] << (8 * j);
	v[3] ^= last;
	opd_gh_round(v);
	v[0] ^= last;
	v[2] ^= 0xff;
	opd_gh_round(v);
	opd_gh_round(v);
	opd_gh_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static inline uint64_t opd_ghash_u32(const struct opd_ghkey *k, uint32_t x)
{
	return opd_ghash(k, &x, sizeof(x));
}

#endif
