/*
 * cg-guest: call chains with known answers, for the lab's callgraph-guest
 * scenario (static, non-PIE, frame pointers: run in a busybox guest).
 *
 *   cg-guest ratio SECONDS     leaf() called from caller_a() twice as
 *                              often as from caller_b(); prints the work
 *                              each caller gave it:
 *                              "cg-guest: ratio a_work=N b_work=N share_a=P"
 *   cg-guest syscalls SECONDS  sys_reader() reads /dev/zero: guest kernel
 *                              time whose user caller is known
 *   cg-guest scribble SECONDS  spins with RBP set to garbage frames: odd,
 *                              kernel, unmapped and low addresses, a frame
 *                              that points to itself, a 1024-deep fake
 *                              chain; the profiler must only count them
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The hot leaf: all of the ratio mode's time is spent here. */
__attribute__((noinline)) static void leaf(uint64_t n)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

/*
 * The code after the call keeps it a call (no tail call to leaf); the two
 * differ so that the compiler cannot fold them into one function.
 */
__attribute__((noinline)) static void caller_a(uint64_t n)
{
	leaf(n);
	sink++;
}

__attribute__((noinline)) static void caller_b(uint64_t n)
{
	leaf(n);
	sink += 3;
}

static int run_ratio(double seconds)
{
	uint64_t a = 0, b = 0, n;
	double end = now_s() + seconds;
	unsigned int seed = 1;

	while (now_s() < end) {
		/* the same spread of call lengths for both callers, random
		 * so that no call length lines up with the sampling period */
		for (int k = 0; k < 3; k++) {
			n = 20000 + (uint64_t)(rand_r(&seed) % 40000);
			if (k < 2) {
				caller_a(n);
				a += n;
			} else {
				caller_b(n);
				b += n;
			}
		}
	}
	printf("cg-guest: ratio a_work=%llu b_work=%llu share_a=%.2f\n",
	       (unsigned long long)a, (unsigned long long)b, 100.0 * a / (a + b));
	return 0;
}

__attribute__((noinline)) static void sys_reader(int fd, double end)
{
	static char buf[65536];

	while (now_s() < end)
		if (read(fd, buf, sizeof(buf)) < 0)
			break;
	sink++;
}

static int run_syscalls(double seconds)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
	sys_reader(fd, now_s() + seconds);
	close(fd);
	printf("cg-guest: syscalls done\n");
	return 0;
}

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
static uint64_t fake[2 * FAKE_DEPTH];

static int run_scribble(double seconds)
{
	uint64_t self[2] __attribute__((aligned(16)));
	uint64_t bad[8], rounds = 0;
	double end = now_s() + seconds;
	int i;

	/* a long chain of plausible frames: the walk must stop at DEPTH */
	for (i = 0; i < FAKE_DEPTH; i++) {
		fake[2 * i] = i + 1 < FAKE_DEPTH ? (uint64_t)(uintptr_t)&fake[2 * i + 2] : 0;
		fake[2 * i + 1] = 0x401000 + 16 * (uint64_t)i;
	}
	/* a frame whose caller is itself: not increasing */
	self[0] = (uint64_t)(uintptr_t)self;
	self[1] = 0x401000;
	bad[0] = 0x1;				/* misaligned */
	bad[1] = 0x10;				/* below any mapping */
	bad[2] = 0xffffffff81000000ull;		/* kernel half, from user */
	bad[3] = 0x00007ffffffff000ull;		/* unmapped */
	bad[4] = (uint64_t)(uintptr_t)self;
	bad[5] = (uint64_t)(uintptr_t)fake;
	bad[6] = 0x8000000000000000ull;		/* not canonical */
	bad[7] = 0x0000555555554008ull;		/* unmapped, aligned */
	while (now_s() < end) {
		for (i = 0; i < 8; i++)
			sink += scribble_spin(200000, bad[i]);
		rounds++;
	}
	printf("cg-guest: scribble rounds=%llu\n", (unsigned long long)rounds);
	return 0;
}

int main(int argc, char **argv)
{
	double s = argc > 2 ? atof(argv[2]) : 10;

	if (argc > 1 && !strcmp(argv[1], "ratio"))
		return run_ratio(s);
	if (argc > 1 && !strcmp(argv[1], "syscalls"))
		return run_syscalls(s);
	if (argc > 1 && !strcmp(argv[1], "scribble"))
		return run_scribble(s);
	fprintf(stderr, "usage: cg-guest ratio|syscalls|scribble [SECONDS]\n");
	return 2;
}
