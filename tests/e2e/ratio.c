/*
 * A workload with a known profile: two functions burn CPU in a ratio the
 * program measures itself (thread CPU time spent in each), so a profiler's
 * report can be checked against it.  Usage: ratio [SECONDS [PERCENT_A]]
 * Prints "ratio: burn_a=NN.NN% burn_b=NN.NN% cpu_seconds=S steps_a=NN.NN%"
 * at the end.  burn_a is its share of the thread CPU time, which holds the
 * kernel time of the clock reads too; steps_a is its share of the loop's
 * blocks of steps, the same user code in both, so its share of the user
 * time alone.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "spin.h"

static volatile uint64_t sink;

/* The same loop in both (spin.h), on different constants, so the ratio of
 * samples follows the ratio of time. */
__attribute__((noinline)) static uint64_t burn_a(uint64_t ns, uint64_t *blocks)
{
	return e2e_spin(ns, 6364136223846793005ull, 1442695040888963407ull, &sink, blocks);
}

__attribute__((noinline)) static uint64_t burn_b(uint64_t ns, uint64_t *blocks)
{
	return e2e_spin(ns, 2862933555777941757ull, 3037000493ull, &sink, blocks);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	double pct_a = argc > 2 ? atof(argv[2]) : 75.0;
	uint64_t slice, spent_a = 0, spent_b = 0, start, t0, t1, rng = 1, blocks_a = 0, blocks_b = 0;

	if (seconds <= 0 || pct_a < 0 || pct_a > 100) {
		fprintf(stderr, "usage: ratio [SECONDS [PERCENT_A]]\n");
		return 1;
	}
	start = e2e_thread_ns();
	while (e2e_thread_ns() - start < (uint64_t)(seconds * 1e9)) {
		slice = e2e_slice_ns(&rng);
		t0 = e2e_thread_ns();
		t1 = burn_a((uint64_t)(slice * pct_a / 100.0), &blocks_a);
		spent_a += t1 - t0;
		t0 = e2e_thread_ns();
		t1 = burn_b((uint64_t)(slice * (100.0 - pct_a) / 100.0), &blocks_b);
		spent_b += t1 - t0;
	}
	printf("ratio: burn_a=%.2f%% burn_b=%.2f%% cpu_seconds=%.2f steps_a=%.2f%%\n",
	       100.0 * spent_a / (spent_a + spent_b), 100.0 * spent_b / (spent_a + spent_b),
	       (spent_a + spent_b) / 1e9, 100.0 * blocks_a / (blocks_a + blocks_b));
	return 0;
}
