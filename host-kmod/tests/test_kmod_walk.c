/*
 * Unit test of the guest frame-pointer walk (host-kmod/dp_walk.c), built
 * in user space: a made-up guest with 4-level page tables in a buffer of
 * "guest physical" memory, good chains and hostile ones.  The walk must
 * find exactly the good frames, stop at the first bad one (truncated),
 * never run past its bound, and honour the page tables' present and user
 * bits.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "domprof.h"
#include "util/du_test.h"

#define MEM_SIZE	(8u << 20)	/* guest physical memory */
#define PT_ROOT		0x1000ull

static unsigned char *mem;
static u64 next_table;
static unsigned long reads;

static int mem_read(void *ctx, u64 gpa, void *data, unsigned long len)
{
	(void)ctx;
	reads++;
	if (gpa >= MEM_SIZE || len > MEM_SIZE - gpa)
		return -EFAULT;
	memcpy(data, mem + gpa, len);
	return 0;
}

static u64 *word(u64 gpa)
{
	return (u64 *)(mem + gpa);
}

/* Map the 4 KiB page at @va to @pa; @user sets the user bit everywhere. */
static void map(u64 va, u64 pa, bool user)
{
	u64 table = PT_ROOT, *pte;
	int level;

	for (level = 4; level >= 1; level--) {
		pte = word(table + ((va >> (12 + 9 * (level - 1))) & 511) * 8);
		if (level == 1) {
			*pte = pa | 0x3 | (user ? 0x4 : 0);
			return;
		}
		if (!(*pte & 1)) {
			*pte = next_table | 0x3 | (user ? 0x4 : 0);
			next_table += 0x1000;
		}
		table = *pte & 0x000ffffffffff000ull;
	}
}

/* Guest virtual addresses used below and where they live. */
#define U_STACK		0x00007ffff7ff0000ull	/* 4 pages, user */
#define U_STACK_PA	0x100000ull
#define U_KPAGE		0x0000000000600000ull	/* user half, supervisor page */
#define U_KPAGE_PA	0x110000ull
#define K_STACK		0xffffc90000014000ull	/* 16 KiB, aligned */
#define K_STACK_PA	0x120000ull

static u64 uva_pa(u64 va)
{
	return va - U_STACK + U_STACK_PA;
}

static u64 kva_pa(u64 va)
{
	return va - K_STACK + K_STACK_PA;
}

static int setup(void)
{
	int i;

	mem = calloc(1, MEM_SIZE);
	if (!mem)
		return 1;
	next_table = PT_ROOT + 0x1000;
	for (i = 0; i < 4; i++) {
		map(U_STACK + i * 0x1000ull, U_STACK_PA + i * 0x1000ull, true);
		map(K_STACK + i * 0x1000ull, K_STACK_PA + i * 0x1000ull, false);
	}
	/* the page above the kernel stack: mapped, but another stack */
	map(K_STACK + 0x4000, K_STACK_PA + 0x4000, false);
	map(U_KPAGE, U_KPAGE_PA, false);
	return 0;
}

static int teardown(void)
{
	free(mem);
	return 0;
}

static void walk_init(struct dp_walk *w, u64 *out, u32 max)
{
	memset(w, 0, sizeof(*w));
	w->read = mem_read;
	w->root = PT_ROOT;
	w->levels = 4;
	w->out = out;
	w->max = max;
}

/* A user frame at @fp: [fp] = @next, [fp + 8] = @ret. */
static void uframe(u64 fp, u64 next, u64 ret)
{
	*word(uva_pa(fp)) = next;
	*word(uva_pa(fp) + 8) = ret;
}

static void test_good_chain(void)
{
	struct dp_walk w;
	u64 out[16], sp = U_STACK + 0x100;

	uframe(U_STACK + 0x200, U_STACK + 0x300, 0x401111);
	uframe(U_STACK + 0x300, U_STACK + 0x1400, 0x402222);	/* next page */
	uframe(U_STACK + 0x1400, 0, 0x403333);			/* the end */
	walk_init(&w, out, 16);
	dp_walk_fp(&w, U_STACK + 0x200, sp, true);
	CU_ASSERT_EQUAL(w.n, 3);
	CU_ASSERT_FALSE(w.truncated);
	CU_ASSERT_EQUAL(out[0], 0x401111);
	CU_ASSERT_EQUAL(out[1], 0x402222);
	CU_ASSERT_EQUAL(out[2], 0x403333);

	/* bounded: the same chain with room for two */
	walk_init(&w, out, 2);
	dp_walk_fp(&w, U_STACK + 0x200, sp, true);
	CU_ASSERT_EQUAL(w.n, 2);
	CU_ASSERT_FALSE(w.truncated);
}

/* Each hostile start gives no frame and a truncated walk. */
static void test_hostile_start(void)
{
	static const struct {
		u64 fp, sp;
	} bad[] = {
		{ U_STACK + 0x201, U_STACK },		/* misaligned */
		{ 0x10, 0 },				/* below any mapping */
		{ 0xffffffff81000000ull, 0 },		/* kernel half, user walk */
		{ 0x8000000000000000ull, 0 },		/* not canonical */
		{ 0x00007fff00000000ull, 0 },		/* not mapped */
		{ U_KPAGE + 0x100, U_KPAGE },		/* supervisor page */
		{ U_STACK + 0x80, U_STACK + 0x100 },	/* below the stack pointer */
		{ U_STACK + 0x3ff8, U_STACK },		/* frame runs off the mapping */
	};
	struct dp_walk w;
	u64 out[16];
	size_t i;

	*word(U_KPAGE_PA + 0x100) = 0;
	*word(U_KPAGE_PA + 0x108) = 0x401000;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		walk_init(&w, out, 16);
		dp_walk_fp(&w, bad[i].fp, bad[i].sp, true);
		if (w.n || !w.truncated)
			fprintf(stderr, "start %#llx: %u frames, truncated %d\n",
				(unsigned long long)bad[i].fp, w.n, w.truncated);
		CU_ASSERT_EQUAL(w.n, 0);
		CU_ASSERT_TRUE(w.truncated);
	}
}

static void test_hostile_links(void)
{
	struct dp_walk w;
	u64 out[200];
	unsigned long before;
	int i;

	/* a frame that points to itself: one frame, then truncated */
	uframe(U_STACK + 0x400, U_STACK + 0x400, 0x401000);
	walk_init(&w, out, 16);
	dp_walk_fp(&w, U_STACK + 0x400, U_STACK, true);
	CU_ASSERT_EQUAL(w.n, 1);
	CU_ASSERT_TRUE(w.truncated);

	/* a link going down the stack */
	uframe(U_STACK + 0x500, U_STACK + 0x480, 0x401000);
	walk_init(&w, out, 16);
	dp_walk_fp(&w, U_STACK + 0x500, U_STACK, true);
	CU_ASSERT_EQUAL(w.n, 1);
	CU_ASSERT_TRUE(w.truncated);

	/* a return address in the kernel half */
	uframe(U_STACK + 0x600, 0, 0xffffffff81000000ull);
	walk_init(&w, out, 16);
	dp_walk_fp(&w, U_STACK + 0x600, U_STACK, true);
	CU_ASSERT_EQUAL(w.n, 0);
	CU_ASSERT_TRUE(w.truncated);

	/* 400 plausible frames: stops at the bound, reads stay bounded */
	for (i = 0; i < 400; i++)
		uframe(U_STACK + 0x800 + 16 * i, U_STACK + 0x800 + 16 * (i + 1), 0x401000 + i);
	walk_init(&w, out, DP_KMOD_MAX_CG_DEPTH);
	before = reads;
	dp_walk_fp(&w, U_STACK + 0x800, U_STACK, true);
	CU_ASSERT_EQUAL(w.n, DP_KMOD_MAX_CG_DEPTH);
	CU_ASSERT_FALSE(w.truncated);
	CU_ASSERT_EQUAL(out[DP_KMOD_MAX_CG_DEPTH - 1], 0x401000 + DP_KMOD_MAX_CG_DEPTH - 1);
	/* two words a frame, page tables only once a page */
	CU_ASSERT(reads - before <= 2 * DP_KMOD_MAX_CG_DEPTH + 4 * 4);
}

/* Kernel frames on the sample's 16 KiB stack, then user space by pt_regs. */
static void test_kernel_and_user_tail(void)
{
	u64 regs = K_STACK + DP_GUEST_STACK - 168, sp = K_STACK + 0x3000;
	struct dp_walk w;
	u64 out[16];

	*word(kva_pa(K_STACK + 0x3100)) = K_STACK + 0x3200;
	*word(kva_pa(K_STACK + 0x3108)) = 0xffffffff81001111ull;
	*word(kva_pa(K_STACK + 0x3200)) = K_STACK + 0x4100;	/* off the stack */
	*word(kva_pa(K_STACK + 0x3208)) = 0xffffffff81002222ull;
	*word(kva_pa(K_STACK + 0x4100)) = 0;			/* plausible else */
	*word(kva_pa(K_STACK + 0x4108)) = 0xffffffff81003333ull;
	*word(kva_pa(regs + 32)) = U_STACK + 0x200;		/* bp */
	*word(kva_pa(regs + 128)) = 0x404444;			/* ip */
	*word(kva_pa(regs + 136)) = 0x33;			/* cs */
	*word(kva_pa(regs + 152)) = U_STACK + 0x100;		/* sp */
	*word(kva_pa(regs + 160)) = 0x2b;			/* ss */
	uframe(U_STACK + 0x200, U_STACK + 0x300, 0x401111);
	uframe(U_STACK + 0x300, 0, 0x402222);

	walk_init(&w, out, 16);
	dp_walk_fp(&w, K_STACK + 0x3100, sp, false);
	CU_ASSERT_EQUAL(w.n, 2);
	CU_ASSERT_TRUE(w.truncated);	/* the third frame left the stack */
	dp_walk_user_tail(&w, sp);
	CU_ASSERT_EQUAL_FATAL(w.n, 5);
	CU_ASSERT_EQUAL(out[0], 0xffffffff81001111ull);
	CU_ASSERT_EQUAL(out[1], 0xffffffff81002222ull);
	CU_ASSERT_EQUAL(out[2], 0x404444);
	CU_ASSERT_EQUAL(out[3], 0x401111);
	CU_ASSERT_EQUAL(out[4], 0x402222);

	/* a Xen PV guest's user selectors (the xen collector's walk) */
	*word(kva_pa(regs + 136)) = 0xe033;
	*word(kva_pa(regs + 160)) = 0xe02b;
	walk_init(&w, out, 16);
	dp_walk_user_tail(&w, sp);
	CU_ASSERT_EQUAL(w.n, 3);
	CU_ASSERT_EQUAL(out[0], 0x404444);
	/* mixed: a PV CS with a native SS is no entry frame */
	*word(kva_pa(regs + 160)) = 0x2b;
	walk_init(&w, out, 16);
	dp_walk_user_tail(&w, sp);
	CU_ASSERT_EQUAL(w.n, 0);
	/* not user registers there (a kernel CS): nothing appended */
	*word(kva_pa(regs + 136)) = 0x10;
	walk_init(&w, out, 16);
	dp_walk_user_tail(&w, sp);
	CU_ASSERT_EQUAL(w.n, 0);
	*word(kva_pa(regs + 136)) = 0x33;
	/* a user pc in the kernel half: nothing appended */
	*word(kva_pa(regs + 128)) = 0xffffffff81000000ull;
	walk_init(&w, out, 16);
	dp_walk_user_tail(&w, sp);
	CU_ASSERT_EQUAL(w.n, 0);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "a good chain is walked to its end or bound", test_good_chain },
		{ "hostile starting frames: truncated, no frame", test_hostile_start },
		{ "hostile links stop the walk", test_hostile_links },
		{ "kernel frames, then user ones by pt_regs", test_kernel_and_user_tail },
	};

	return du_test_main("kmod_walk", tests, DU_TEST_N(tests), setup, teardown);
}
