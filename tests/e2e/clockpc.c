/*
 * Which millisecond of its own clock a profiler's look caught it in: a
 * guest program for the lab's clock diagnosis (tests/lab/scenarios/
 * xen-clock.sh).  Sixteen functions ph0..ph15 at distinct addresses
 * (static, non-PIE: the scenario reads them with nm on the host); the
 * program runs ph_k while (CLOCK_MONOTONIC in ms) % 16 is k.  A sample's
 * pc in ph_k says the guest's clock read k (mod 16 ms) when the sample's
 * context was taken; the sample's time, mapped to the guest's clock,
 * says m.  (m - k) mod 16 is how much later the sample is stamped than
 * its context, to the millisecond (within -8..+7 ms).
 *
 * Usage: clockpc SECONDS.  Prints "clockpc: laps=N seconds=S".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ph_K: spin while the clock's millisecond (mod 16) is K; returns the time
 * it last read. */
#define PH(K)                                                         \
	static __attribute__((noinline, used)) uint64_t ph##K(void)   \
	{                                                             \
		uint64_t t;                                           \
		volatile unsigned int x = 0;                          \
		do {                                                  \
			for (unsigned int i = 0; i < 32768; i++)      \
				x += i;                               \
			t = now_ns();                                 \
		} while (t / 1000000ull % 16 == (K));                 \
		return t;                                             \
	}
PH(0) PH(1) PH(2) PH(3) PH(4) PH(5) PH(6) PH(7)
PH(8) PH(9) PH(10) PH(11) PH(12) PH(13) PH(14) PH(15)

static uint64_t (*const phase[16])(void) = {
	ph0, ph1, ph2, ph3, ph4, ph5, ph6, ph7, ph8, ph9, ph10, ph11, ph12, ph13, ph14, ph15,
};

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	uint64_t t = now_ns(), end = t + (uint64_t)(secs * 1e9), laps = 0;

	if (secs <= 0) {
		fprintf(stderr, "usage: clockpc SECONDS\n");
		return 2;
	}
	while (t < end) {
		t = phase[t / 1000000ull % 16]();
		laps++;
	}
	printf("clockpc: laps=%llu seconds=%.1f\n", (unsigned long long)laps, secs);
	return 0;
}
