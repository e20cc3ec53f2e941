/*
 * A workload with a known profile: two functions burn CPU in a ratio the
 * program measures itself (thread CPU time spent in each), so a profiler's
 * report can be checked against it.  Usage: ratio [SECONDS [PERCENT_A]]
 * Prints "ratio: burn_a=NN.NN% burn_b=NN.NN% cpu_seconds=S" at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Spin for @ns of CPU time; the loop body is the same in both functions so
 * the ratio of samples follows the ratio of time.  The clock is read only
 * every 20000 steps: in a nested guest each read is a slow system call, and
 * kernel time inside the slices would blur what a profile sees of them. */
__attribute__((noinline)) static uint64_t burn_a(uint64_t ns)
{
	uint64_t end = thread_ns() + ns, x = sink, now;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		now = thread_ns();
	} while (now < end);
	sink = x;
	return now;
}

__attribute__((noinline)) static uint64_t burn_b(uint64_t ns)
{
	uint64_t end = thread_ns() + ns, x = sink, now;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 2862933555777941757ull + 3037000493ull;
		now = thread_ns();
	} while (now < end);
	sink = x;
	return now;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	double pct_a = argc > 2 ? atof(argv[2]) : 75.0;
	uint64_t slice, spent_a = 0, spent_b = 0, start, t0, t1, rng = 1;

	if (seconds <= 0 || pct_a < 0 || pct_a > 100) {
		fprintf(stderr, "usage: ratio [SECONDS [PERCENT_A]]\n");
		return 1;
	}
	start = thread_ns();
	while (thread_ns() - start < (uint64_t)(seconds * 1e9)) {
		/* Slices of 2 to 6 ms, varied, so no timer (the profiler's, a
		 * guest's scheduler tick) can stay in phase with them. */
		rng = rng * 6364136223846793005ull + 1;
		slice = 2000000 + (rng >> 33) % 4000000;
		t0 = thread_ns();
		t1 = burn_a((uint64_t)(slice * pct_a / 100.0));
		spent_a += t1 - t0;
		t0 = thread_ns();
		t1 = burn_b((uint64_t)(slice * (100.0 - pct_a) / 100.0));
		spent_b += t1 - t0;
	}
	printf("ratio: burn_a=%.2f%% burn_b=%.2f%% cpu_seconds=%.2f\n",
	       100.0 * spent_a / (spent_a + spent_b), 100.0 * spent_b / (spent_a + spent_b),
	       (spent_a + spent_b) / 1e9);
	return 0;
}
