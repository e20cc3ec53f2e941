/*
 * What the e2e workloads with a known profile share (ratio.c, callers.c):
 * a thread CPU clock and a spin loop that burns a given amount of it.
 *
 * e2e_spin() is always inlined, so that its samples land in the function
 * that calls it (burn_a, burn_b, burn): the programs are built with
 * -fno-inline to keep those functions apart, and a shared out-of-line
 * loop would take every sample for itself.
 */
#ifndef E2E_SPIN_H
#define E2E_SPIN_H

#include <stdint.h>
#include <time.h>

/* This thread's CPU time in ns. */
static inline uint64_t e2e_thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* @n steps of the generator x = x * @mul + @add from @x: the loop every
 * hot function of these programs spends its time in. */
static inline __attribute__((always_inline)) uint64_t
e2e_steps(uint64_t x, uint64_t n, uint64_t mul, uint64_t add)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * mul + add;
	return x;
}

/*
 * Spin for @ns of this thread's CPU time on the generator, seeded from
 * and stored back to *@sink, counting its blocks of 20000 steps in
 * *@blocks; returns the clock at the end.  The clock is
 * read only every 20000 steps: in a nested guest each read is a slow
 * system call, and kernel time inside the slices would blur what a
 * profile sees of them.
 */
static inline __attribute__((always_inline)) uint64_t
e2e_spin(uint64_t ns, uint64_t mul, uint64_t add, volatile uint64_t *sink, uint64_t *blocks)
{
	uint64_t end = e2e_thread_ns() + ns, x = *sink, now;

	do {
		x = e2e_steps(x, 20000, mul, add);
		++*blocks;
		now = e2e_thread_ns();
	} while (now < end);
	*sink = x;
	return now;
}

/* The next slice length, 2 to 6 ms, from the generator state *@rng: varied
 * so that no timer (a profiler's, a guest's scheduler tick) can stay in
 * phase with the slices. */
static inline uint64_t e2e_slice_ns(uint64_t *rng)
{
	*rng = *rng * 6364136223846793005ull + 1;
	return 2000000 + (*rng >> 33) % 4000000;
}

#endif
