/*
 * The guest's clock against its time stamp counter (TSC frames,
 * doc/clock.md).  Every time_ns the agent sends is CLOCK_MONOTONIC; the
 * host stamps its samples with its own CLOCK_MONOTONIC.  The two are
 * related exactly through the TSC: this side says which guest TSC value a
 * guest clock reading belongs to, the host knows how KVM derives the
 * guest's TSC from its own.  A pair is the clock read between two TSC
 * reads on one CPU; of a few tries the tightest is kept.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/prctl.h>

#include "ag.h"

#define AG_TSC_TRIES	8

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t rd_tsc(void)
{
	uint32_t lo, hi;

	/* lfence: the read is not moved before the instructions around it */
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return (uint64_t)hi << 32 | lo;
}

bool ag_tsc_usable(void)
{
	int v = 0;

	/* PR_TSC_SIGSEGV would make rdtsc kill the agent */
	if (prctl(PR_GET_TSC, &v, 0, 0, 0) == 0 && v != PR_TSC_ENABLE)
		return false;
	return true;
}

int ag_tsc_pair(struct dp_ag_tsc *t)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < AG_TSC_TRIES; i++) {
		int c0 = sched_getcpu(), c1;
		uint64_t a = rd_tsc(), ns = ag_now_ns(), b = rd_tsc();

		c1 = sched_getcpu();
		if (c0 < 0 || c0 != c1 || b < a || b - a >= best)
			continue;
		best = b - a;
		t->time_ns = ns;
		t->tsc = a + (b - a) / 2;
		t->cpu = (uint32_t)c0;
		t->window_tsc = best > UINT32_MAX ? UINT32_MAX : (uint32_t)best;
	}
	return best == UINT64_MAX ? -EAGAIN : 0;
}
#else
bool ag_tsc_usable(void)
{
	return false;
}

int ag_tsc_pair(struct dp_ag_tsc *t)
{
	(void)t;
	return -ENOTSUP;
}
#endif

int ag_tsc_send(struct ag_out *o)
{
	struct dp_ag_tsc t;

	if (ag_tsc_pair(&t))
		return 0;	/* next time */
	return AG_PUT(o, ap_put_tsc, &t);
}
