/*
 * How long opreport takes over a hostile kallsyms (not a test; the e2e
 * suite runs it): ./bench_kallsyms N [FILE] writes N lines, each symbol in
 * a module of its own (the worst case for a per-module search), loads the
 * file and builds every module's table, and prints the seconds taken.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rep_kernel.h"
#include "rep_sym.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *path = argc > 2 ? argv[2] : "bench_kallsyms.txt";
	long n = argc > 1 ? atol(argv[1]) : 80000;
	struct rep_kernel *k;
	char err[256], name[32];
	double t0, t1, t2;
	long found = 0;
	FILE *f;

	if (n <= 0)
		return 2;
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "ffffffff81000000 T _text\n");
	for (long i = 0; i < n; i++)
		fprintf(f, "ffffffffc%07lx t fn%ld\t[m%ld]\n", (unsigned long)i * 16, i, i);
	if (fclose(f))
		return 1;
	t0 = now();
	k = rep_kernel_load(path, NULL, err, sizeof(err));
	if (!k) {
		fprintf(stderr, "bench_kallsyms: %s\n", err);
		return 1;
	}
	t1 = now();
	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "m%ld", i);
		if (rep_kernel_image(k, name))
			found++;
	}
	t2 = now();
	rep_kernel_free(k);
	printf("lines %ld load %.3f s images %ld built %.3f s total %.3f s\n", n + 1, t1 - t0, found,
	       t2 - t1, t2 - t0);
	return found == n ? 0 : 1;
}
