/*
 * A workload that spends its time in the C library rather than in itself:
 * strlen and memchr over a buffer, for a given number of seconds.  The C
 * library's string functions are local symbols (ifunc variants such as
 * __strlen_avx2) that only its detached debug info names: a report that
 * reads only the stripped library's dynamic symbols files them under the
 * nearest exported name instead.  Usage: strburn [SECONDS]
 * Prints "strburn: calls=N cpu_seconds=S" at the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_LEN (64 * 1024)

static double thread_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0, t0;
	static char buf[BUF_LEN];
	volatile size_t sink = 0;
	uint64_t calls = 0;

	if (seconds <= 0) {
		fprintf(stderr, "usage: strburn [SECONDS]\n");
		return 1;
	}
	memset(buf, 'x', BUF_LEN - 1);
	t0 = thread_seconds();
	while (thread_seconds() - t0 < seconds) {
		for (int i = 0; i < 64; i++) {
			/* a byte changed each time, so nothing can be hoisted */
			buf[(calls * 7919) % (BUF_LEN - 2)] = (char)('a' + calls % 26);
			sink += strlen(buf);
			sink += (size_t)memchr(buf, '\n', BUF_LEN) & 1;
			calls++;
		}
	}
	printf("strburn: calls=%llu cpu_seconds=%.2f\n", (unsigned long long)calls,
	       thread_seconds() - t0);
	return sink == 1;
}
