/*
 * Two programs from one source for the lab's `exact` scenario (guest
 * processes attributed exactly).  Built twice, as exact-a (EXACT_B
 * undefined) and exact-b (EXACT_B defined), both static and non-PIE, with
 * the sections dp_slot1 and dp_slot2 linked at the same fixed addresses
 * in both (tests/Makefile.am):
 *
 *            .dp_slot1              .dp_slot2
 *   exact-a  a_one, a_two (hot)     a_never (never runs)
 *   exact-b  b_never (never runs)   b_one, b_two (hot)
 *
 * Each never-run function is larger than the other program's hot code at
 * the same addresses, so a sample of one process filed under the other
 * lands in a function that never ran: every such sample is a
 * misattribution a report can count.
 *
 * Usage: exact-a|exact-b SECONDS PERCENT_ONE.  Like ratio.c, the program
 * runs slices of 2 to 6 ms split between its two hot functions and
 * measures the thread CPU time each got; it prints
 *   "exact-a: one=NN.NN% two=NN.NN% cpu_seconds=S iterations=N,M
 *    ranges=LO-HI,LO-HI"
 * where the ranges are the addresses of its two hot functions (for
 * counting a profiler's samples by address, with no nm at hand).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef EXACT_B
#define NAME "exact-b"
#define HOT __attribute__((noinline, used, section("dp_slot2")))
#define COLD __attribute__((noinline, used, section("dp_slot1")))
#define F_ONE b_one
#define F_TWO b_two
#define F_NEVER b_never
#define HOT_STOP __stop_dp_slot2
#else
#define NAME "exact-a"
#define HOT __attribute__((noinline, used, section("dp_slot1")))
#define COLD __attribute__((noinline, used, section("dp_slot2")))
#define F_ONE a_one
#define F_TWO a_two
#define F_NEVER a_never
#define HOT_STOP __stop_dp_slot1
#endif
/* the linker's end of the hot section (its name is a C identifier) */
extern const char HOT_STOP[];

uint64_t F_ONE(uint64_t ns, uint64_t *iter);
uint64_t F_TWO(uint64_t ns, uint64_t *iter);
void F_NEVER(void);

static volatile uint64_t sink;
static volatile int never;

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same loop body in both, so samples follow time; the clock is read
 * every 20000 steps (a system call in a nested guest is slow). */
HOT uint64_t F_ONE(uint64_t ns, uint64_t *iter)
{
	uint64_t end = thread_ns() + ns, x = sink, now;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		++*iter;
		now = thread_ns();
	} while (now < end);
	sink = x;
	return now;
}

HOT uint64_t F_TWO(uint64_t ns, uint64_t *iter)
{
	uint64_t end = thread_ns() + ns, x = sink, now;

	do {
		for (int i = 0; i < 20000; i++)
			x = x * 2862933555777941757ull + 3037000493ull;
		++*iter;
		now = thread_ns();
	} while (now < end);
	sink = x;
	return now;
}

/* 8 KiB that never run: more than the other program's hot code. */
COLD void F_NEVER(void)
{
	__asm__ volatile(".fill 8192, 1, 0x90");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	double pct = argc > 2 ? atof(argv[2]) : 50.0;
	uintptr_t p1, p2, e1, e2;
	uint64_t slice, spent1 = 0, spent2 = 0, it1 = 0, it2 = 0, start, t0, t1, rng = 7;

	if (seconds <= 0 || pct < 0 || pct > 100) {
		fprintf(stderr, "usage: " NAME " SECONDS PERCENT_ONE\n");
		return 1;
	}
	if (never)
		F_NEVER();	/* keeps it linked; never true */
	start = thread_ns();
	while (thread_ns() - start < (uint64_t)(seconds * 1e9)) {
		/* slices of 2 to 6 ms, varied, so no timer stays in phase */
		rng = rng * 6364136223846793005ull + 1;
		slice = 2000000 + (rng >> 33) % 4000000;
		t0 = thread_ns();
		t1 = F_ONE((uint64_t)(slice * pct / 100.0), &it1);
		spent1 += t1 - t0;
		t0 = thread_ns();
		t1 = F_TWO((uint64_t)(slice * (100.0 - pct) / 100.0), &it2);
		spent2 += t1 - t0;
	}
	/* each function ends where the next begins, the last at the
	 * section's end */
	p1 = (uintptr_t)F_ONE;
	p2 = (uintptr_t)F_TWO;
	e1 = p1 < p2 ? p2 : (uintptr_t)HOT_STOP;
	e2 = p2 < p1 ? p1 : (uintptr_t)HOT_STOP;
	printf(NAME ": one=%.2f%% two=%.2f%% cpu_seconds=%.2f iterations=%llu,%llu"
	       " ranges=%#lx-%#lx,%#lx-%#lx\n",
	       100.0 * spent1 / (spent1 + spent2), 100.0 * spent2 / (spent1 + spent2),
	       (spent1 + spent2) / 1e9, (unsigned long long)it1, (unsigned long long)it2,
	       (unsigned long)p1, (unsigned long)e1, (unsigned long)p2, (unsigned long)e2);
	return 0;
}
