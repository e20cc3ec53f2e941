/*
 * A workload with a known call graph: one hot leaf function, burn(),
 * reached from two callers, caller_a() and caller_b(), that call it for
 * CPU time in a ratio the program measures itself (2:1 by default), so a
 * call-graph report can be checked against it.  Build with frame pointers
 * (-fno-omit-frame-pointer).  Usage: callers [SECONDS [PERCENT_A]]
 * Prints "callers: caller_a=NN.NN% caller_b=NN.NN% cpu_seconds=S".
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

/* The hot leaf: spins for @ns of CPU time, reading the clock rarely so
 * that nearly every sample falls in the loop itself. */
__attribute__((noinline)) static uint64_t burn(uint64_t ns)
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

/* Two distinct call sites; the volatile add keeps each a real frame. */
__attribute__((noinline)) static uint64_t caller_a(uint64_t ns)
{
	uint64_t r = burn(ns);

	sink += 1;
	return r;
}

__attribute__((noinline)) static uint64_t caller_b(uint64_t ns)
{
	uint64_t r = burn(ns);

	sink += 2;
	return r;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	double pct_a = argc > 2 ? atof(argv[2]) : 100.0 * 2 / 3;
	uint64_t slice, spent_a = 0, spent_b = 0, start, t0, t1, rng = 1;

	if (seconds <= 0 || pct_a < 0 || pct_a > 100) {
		fprintf(stderr, "usage: callers [SECONDS [PERCENT_A]]\n");
		return 1;
	}
	start = thread_ns();
	while (thread_ns() - start < (uint64_t)(seconds * 1e9)) {
		/* slices of 2 to 6 ms, varied, so no timer stays in phase */
		rng = rng * 6364136223846793005ull + 1;
		slice = 2000000 + (rng >> 33) % 4000000;
		t0 = thread_ns();
		t1 = caller_a((uint64_t)(slice * pct_a / 100.0));
		spent_a += t1 - t0;
		t0 = thread_ns();
		t1 = caller_b((uint64_t)(slice * (100.0 - pct_a) / 100.0));
		spent_b += t1 - t0;
	}
	printf("callers: caller_a=%.2f%% caller_b=%.2f%% cpu_seconds=%.2f\n",
	       100.0 * spent_a / (spent_a + spent_b), 100.0 * spent_b / (spent_a + spent_b),
	       (spent_a + spent_b) / 1e9);
	return 0;
}
