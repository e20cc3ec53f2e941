/*
 * A workload with a known call graph (issue 12), for the host
 * (host-callgraph.sh, built as e2e/callers) and for lab guests
 * (callgraph-guest, built static and non-PIE as e2e/cg-guest).  Build with
 * frame pointers (-fno-omit-frame-pointer).
 *
 *   callers [SECONDS [PERCENT_A]]
 *	one hot leaf, burn(), reached from caller_a() and caller_b(), which
 *	give it work (steps of its loop) in a ratio, 2:1 by default, for
 *	SECONDS of CPU time; prints the split of the work done,
 *	"callers: caller_a=NN.NN% caller_b=NN.NN% cpu_seconds=S".  burn()
 *	makes no system call: its time is its steps, whatever the clock's
 *	resolution (a guest's may tick in jiffies) or the cost of reading it
 *	(a system call in a nested guest).
 *   callers syscalls SECONDS
 *	run_syscalls() -> sys_reader() reads /dev/zero: kernel time whose
 *	user callers are known; prints "callers: syscalls reads=N"
 *   callers scribble SECONDS
 *	spins with RBP set to garbage frames (misaligned, low, kernel,
 *	unmapped, not canonical, a frame that is its own caller, a
 *	1024-deep fake chain): a profiler that walks frame pointers must
 *	stop, and only count; prints "callers: scribble rounds=N"
 *	(x86-64 only)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spin.h"

#ifdef __x86_64__
#include <x86intrin.h>
#define tsc_now() __rdtsc()
#else
#define tsc_now() 0ull
#endif

static volatile uint64_t sink, burn_calls;

__attribute__((noinline)) static void store(uint64_t x)
{
	sink = x;
}

/*
 * The hot leaf: @n steps (spin.h's loop, inlined here).  It calls store()
 * and then counts the call, so that it is no leaf for the compiler (nor
 * ends in a tail call), which would leave out its frame (gcc 12 at -O2
 * does, -fno-omit-frame-pointer or not): a walk from inside it would
 * then skip its caller.
 */
__attribute__((noinline)) static void burn(uint64_t n)
{
	store(e2e_steps(sink, n, 6364136223846793005ull, 1442695040888963407ull));
	burn_calls++;
}

/* Two distinct call sites; the volatile add keeps each a real frame (no
 * tail call) and the two functions apart. */
__attribute__((noinline)) static void caller_a(uint64_t n)
{
	burn(n);
	sink += 1;
}

__attribute__((noinline)) static void caller_b(uint64_t n)
{
	burn(n);
	sink += 2;
}

static int run_ratio(double seconds, double pct_a)
{
	uint64_t steps, n_a, work_a = 0, work_b = 0, start, rng = 1;
	uint64_t t0, t1, t2, tsc_a = 0, tsc_b = 0;
	double work, tsc;

	start = e2e_thread_ns();
	while (e2e_thread_ns() - start < (uint64_t)(seconds * 1e9)) {
		/* 2 to 6 million steps a round (2 to 6 ms on the host),
		 * varied so that no timer stays in phase with the calls */
		steps = e2e_slice_ns(&rng);
		n_a = (uint64_t)(steps * pct_a / 100.0);
		t0 = tsc_now();
		caller_a(n_a);
		t1 = tsc_now();
		caller_b(steps - n_a);
		t2 = tsc_now();
		tsc_a += t1 - t0;
		tsc_b += t2 - t1;
		work_a += n_a;
		work_b += steps - n_a;
	}
	work = (double)(work_a + work_b);
	tsc = (double)(tsc_a + tsc_b);
	/* tsc_a: caller_a's share of the wall time (TSC) of the two calls,
	 * printed beside the work split: a nested guest's loop need not
	 * take the same time per step throughout */
	printf("callers: caller_a=%.2f%% caller_b=%.2f%% cpu_seconds=%.2f tsc_a=%.2f%%\n",
	       100.0 * work_a / work, 100.0 * work_b / work, (e2e_thread_ns() - start) / 1e9,
	       tsc > 0 ? 100.0 * tsc_a / tsc : 0.0);
	return 0;
}

__attribute__((noinline)) static uint64_t sys_reader(int fd, uint64_t ns)
{
	static char buf[65536];
	uint64_t end = e2e_thread_ns() + ns, reads = 0;

	while (e2e_thread_ns() < end && read(fd, buf, sizeof(buf)) > 0)
		reads++;
	sink++;
	return reads;
}

__attribute__((noinline)) static int run_syscalls(double seconds)
{
	int fd = open("/dev/zero", O_RDONLY);
	uint64_t reads;

	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
	reads = sys_reader(fd, (uint64_t)(seconds * 1e9));
	close(fd);
	printf("callers: syscalls reads=%llu\n", (unsigned long long)reads);
	return 0;
}

#ifdef __x86_64__
/*
 * scribble_spin(iters, rbp): spin @iters times with RBP = @rbp.  In
 * assembly: C code may not clobber the frame pointer.
 */
uint64_t scribble_spin(uint64_t iters, uint64_t rbp);
__asm__(".text\n"
	".globl scribble_spin\n"
	".type scribble_spin, @function\n"
	"scribble_spin:\n"
	"	push %rbp\n"
	"	mov %rsi, %rbp\n"
	"	xor %eax, %eax\n"
	"1:	add $7, %rax\n"
	"	imul %rax, %rax\n"
	"	dec %rdi\n"
	"	jnz 1b\n"
	"	pop %rbp\n"
	"	ret\n"
	".size scribble_spin, .-scribble_spin\n");

#define FAKE_DEPTH 1024

static int run_scribble(double seconds)
{
	uint64_t self[2] __attribute__((aligned(16)));
	uint64_t bad[8], rounds = 0, end = e2e_thread_ns() + (uint64_t)(seconds * 1e9);
	/* on the stack, above scribble_spin's frame, as real frames are */
	uint64_t fake[2 * FAKE_DEPTH] __attribute__((aligned(16)));
	int i;

	/* a long chain of plausible frames (return addresses in this
	 * program's text): the walk must stop at its depth */
	for (i = 0; i < FAKE_DEPTH; i++) {
		fake[2 * i] = i + 1 < FAKE_DEPTH ? (uint64_t)(uintptr_t)&fake[2 * i + 2] : 0;
		fake[2 * i + 1] = (uint64_t)(uintptr_t)&burn + 1 + (uint64_t)(i % 8);
	}
	/* a frame whose caller is itself: not increasing */
	self[0] = (uint64_t)(uintptr_t)self;
	self[1] = (uint64_t)(uintptr_t)&burn + 1;
	bad[0] = 0x1;				/* misaligned */
	bad[1] = 0x10;				/* below any mapping */
	bad[2] = 0xffffffff81000000ull;		/* kernel half, from user */
	bad[3] = 0x00007ffffffff000ull;		/* unmapped */
	bad[4] = (uint64_t)(uintptr_t)self;
	bad[5] = (uint64_t)(uintptr_t)fake;
	bad[6] = 0x8000000000000000ull;		/* not canonical */
	bad[7] = 0x0000555555554008ull;		/* unmapped, aligned */
	while (e2e_thread_ns() < end) {
		for (i = 0; i < 8; i++)
			sink += scribble_spin(200000, bad[i]);
		rounds++;
	}
	printf("callers: scribble rounds=%llu\n", (unsigned long long)rounds);
	return 0;
}
#else
static int run_scribble(double seconds)
{
	(void)seconds;
	fprintf(stderr, "callers: scribble is x86-64 only\n");
	return 2;
}
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	double seconds, pct_a;

	if (!strcmp(mode, "syscalls") || !strcmp(mode, "scribble")) {
		seconds = argc > 2 ? atof(argv[2]) : 5.0;
		if (seconds <= 0)
			goto usage;
		return mode[1] == 'y' ? run_syscalls(seconds) : run_scribble(seconds);
	}
	seconds = argc > 1 ? atof(argv[1]) : 5.0;
	pct_a = argc > 2 ? atof(argv[2]) : 100.0 * 2 / 3;

	if (seconds <= 0 || pct_a < 0 || pct_a > 100)
		goto usage;
	return run_ratio(seconds, pct_a);
usage:
	fprintf(stderr, "usage: callers [SECONDS [PERCENT_A]] | syscalls SECONDS | scribble SECONDS\n");
	return 1;
}
