/*
 * Micro-benchmark of odb_add, the daemon's hot path (not a test).
 * 50M adds over 100k keys with a skewed distribution (a few hot offsets,
 * a long tail), starting from an empty file so the grows are counted.
 *
 *   bench_odb [FILE]      (default: a temporary file, removed afterwards)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "odb/odb.h"

#define NR_ADDS		50000000ULL
#define NR_KEYS		100000
#define PATTERN		(1 << 20)	/* precomputed key sequence, reused */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/bench_odb.XXXXXX";
	const char *path = argc > 1 ? argv[1] : tmp;
	struct odb_desc desc = { .event = "CPU_CLK_UNHALTED", .count = 100000 };
	uint64_t *keys, x = 0x2545f4914f6cdd1dULL, i;
	struct odb *db;
	double t0, t1;
	int rc, fd;

	if (argc <= 1) {
		fd = mkstemp(tmp);
		if (fd < 0) {
			perror("mkstemp");
			return 1;
		}
		close(fd);
		unlink(tmp);
	}
	keys = malloc(PATTERN * sizeof(*keys));
	if (!keys)
		return 1;
	for (i = 0; i < PATTERN; i++) {
		double u;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		u = (double)(x >> 11) / (double)(1ULL << 53);
		/* u^4: about half the samples land on the first 6% of the keys */
		u = u * u * u * u;
		keys[i] = 0x1000 + (uint64_t)(u * NR_KEYS) * 4;
	}
	rc = odb_open(&db, path, ODB_RDWR, &desc);
	if (rc) {
		fprintf(stderr, "odb_open %s: %s\n", path, strerror(-rc));
		return 1;
	}
	t0 = now();
	for (i = 0; i < NR_ADDS; i++) {
		rc = odb_add(db, keys[i & (PATTERN - 1)], 1);
		if (rc) {
			fprintf(stderr, "odb_add: %s\n", strerror(-rc));
			return 1;
		}
	}
	t1 = now();
	printf("odb_add: %.1f M adds/s (%llu adds, %llu keys, total %llu)\n",
	       NR_ADDS / (t1 - t0) / 1e6, (unsigned long long)NR_ADDS,
	       (unsigned long long)odb_nr_keys(db), (unsigned long long)odb_total(db));
	odb_close(db);
	if (argc <= 1)
		unlink(path);
	free(keys);
	return 0;
}
