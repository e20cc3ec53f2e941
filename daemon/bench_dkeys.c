/*
 * The domain registry's lookup, timed (not a test; `make check` does not
 * run it): the index of declared keys (registry/opd_dkeys.h) holding N
 * domains, each under its host pid, its Xen domid and four back-end
 * threads, asked for keys at random (every one a hit) and for keys no
 * domain has.  Prints nanoseconds a lookup (process CPU time) for each N,
 * so that "O(1) however many domains" is a figure:
 *   daemon/bench_dkeys [LOOKUPS]   (default 20 million a size)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "domprof/raw.h"
#include "opd_dkeys.h"

#define KEYS_A_DOMAIN	6

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Domain i's keys: host pid 10000 + 100 i, domid i + 1, helpers after
 * the pid. */
static void keys_of(long i, uint32_t *ns, uint64_t *key)
{
	ns[0] = DP_DOMKEY_HOST_PID;
	key[0] = 10000 + 100 * (uint64_t)i;
	ns[1] = DP_DOMKEY_XEN_DOMID;
	key[1] = (uint64_t)i + 1;
	for (int h = 2; h < KEYS_A_DOMAIN; h++) {
		ns[h] = OPD_DKEY_HELPER;
		key[h] = key[0] + (uint64_t)h;
	}
}

/* A cheap generator of the keys asked for (not the index's hash). */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* N domains indexed, @lookups of each kind timed.  0, or 1 on a wrong
 * answer or no memory. */
static int bench(long n, long lookups)
{
	struct opd_dkey_set **sets = calloc((size_t)n, sizeof(*sets));
	struct opd_dkeys ix;
	uint64_t seed = 88172645463325252ull, found = 0;
	double t0, hit_ns, miss_ns;
	int ret = 1;

	if (!sets || opd_dkeys_init(&ix))
		goto out;
	for (long i = 0; i < n; i++) {
		uint32_t ns[KEYS_A_DOMAIN];
		uint64_t key[KEYS_A_DOMAIN];

		keys_of(i, ns, key);
		if (opd_dkeys_put(&ix, &sets[i], &sets[i], ns, key, KEYS_A_DOMAIN))
			goto out_drop;
	}
	t0 = cpu_now();
	for (long j = 0; j < lookups; j++) {
		uint64_t r = next_rand(&seed);
		long i = (long)(r % (uint64_t)n);
		uint32_t ns[KEYS_A_DOMAIN];
		uint64_t key[KEYS_A_DOMAIN];
		int k = (int)((r >> 32) % KEYS_A_DOMAIN);

		keys_of(i, ns, key);
		if (opd_dkeys_find(&ix, ns[k], key[k]) != &sets[i])
			goto out_drop;
		found++;
	}
	hit_ns = (cpu_now() - t0) * 1e9 / (double)lookups;
	t0 = cpu_now();
	for (long j = 0; j < lookups; j++) {
		/* pids between the domains' blocks: no domain's */
		uint64_t pid = 10000 + 100 * (next_rand(&seed) % (uint64_t)n) + 50;

		if (opd_dkeys_find(&ix, DP_DOMKEY_HOST_PID, pid))
			goto out_drop;
	}
	miss_ns = (cpu_now() - t0) * 1e9 / (double)lookups;
	printf("registry index: %6ld domains (%ld keys): %.1f ns a lookup that finds, %.1f ns one that does not\n",
	       n, n * KEYS_A_DOMAIN, hit_ns, miss_ns);
	ret = found == (uint64_t)lookups ? 0 : 1;
out_drop:
	for (long i = 0; i < n; i++)
		opd_dkeys_drop(&ix, &sets[i]);
	opd_dkeys_fini(&ix);
out:
	free(sets);
	if (ret)
		fprintf(stderr, "bench_dkeys: a wrong answer, or no memory, at %ld domains\n", n);
	return ret;
}

int main(int argc, char **argv)
{
	static const long sizes[] = { 1, 10, 100, 1000, 10000 };
	long lookups = argc > 1 ? strtol(argv[1], NULL, 10) : 20000000;
	int ret = 0;

	if (lookups <= 0) {
		fprintf(stderr, "usage: bench_dkeys [LOOKUPS > 0]\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ret |= bench(sizes[i], lookups);
	return ret;
}
