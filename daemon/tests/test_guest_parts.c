/*
 * CUnit suites of the parts of a domain's guest state, one suite per part
 * (opd_guest_{out,clock,timeline,tasks,images,kernel,hold}), each driven
 * through its own header without the agent protocol around it.  The
 * whole (frames in, samples resolved) is test_guest.c's.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "opd_guest_clock.h"
#include "opd_guest_hold.h"
#include "opd_guest_images.h"
#include "opd_guest_kernel.h"
#include "opd_guest_out.h"
#include "opd_guest_tasks.h"
#include "opd_guest_timeline.h"
#include "util/du_test.h"
#include "util/du_fs.h"

#define MS 1000000ULL

static struct opd_stats st;
static char top[64];

static int setup(void)
{
	memset(&st, 0, sizeof(st));
	snprintf(top, sizeof(top), "/tmp/test_gparts.XXXXXX");
	return mkdtemp(top) ? 0 : -1;
}

static int teardown(void)
{
	du_rm_tree(top);
	return 0;
}

/* ---- output queue ---- */

static void test_out(void)
{
	struct opd_gout o;
	uint8_t b[64];
	uint64_t before = st.agent_output_dropped;
	size_t n, k = 0;

	opd_gout_init(&o, &st.agent_output_dropped);
	opd_gout_ping(&o, 1);
	opd_gout_ping(&o, 2);
	/* a buffer too small for one frame takes nothing */
	CU_ASSERT(opd_gout_take(&o, b, 4) == 0);
	n = opd_gout_take(&o, b, sizeof(b));
	CU_ASSERT(n > 0 && n % 2 == 0);
	CU_ASSERT(o.len == 0);
	/* fill it: the frame that does not fit is dropped, counted */
	while (o.len + 64 < sizeof(o.buf))
		opd_gout_ping(&o, ++k);
	for (int i = 0; i < 8; i++)
		opd_gout_ping(&o, ++k);
	CU_ASSERT(st.agent_output_dropped > before);
	CU_ASSERT(o.len <= sizeof(o.buf));
}

/* ---- clock ---- */

static void test_clock(void)
{
	struct opd_gclock c;
	struct dp_ag_pong p = { 0 };
	int64_t off;

	opd_gclock_init(&c);
	CU_ASSERT(!opd_gclock_known(&c));
	opd_gclock_hello(&c, 5000 * MS, 1000 * MS);
	CU_ASSERT(c.method == OPD_GCLOCK_HELLO && c.off == (int64_t)(4000 * MS));
	/* an exchange of 2 ms then one of 200 us: the narrow one wins */
	p.token = opd_gclock_ping(&c, 10 * MS);
	p.recv_ns = p.send_ns = 11 * MS + 3000 * MS;
	CU_ASSERT(opd_gclock_pong(&c, &p, 12 * MS) == 0);
	CU_ASSERT(c.rtt == 2 * MS && c.off == (int64_t)(3000 * MS));
	p.token = opd_gclock_ping(&c, 20 * MS);
	p.recv_ns = p.send_ns = 20 * MS + 100000 + 3001 * MS;
	CU_ASSERT(opd_gclock_pong(&c, &p, 20 * MS + 200000) == 0);
	CU_ASSERT(c.rtt == 200000 && c.method == OPD_GCLOCK_PING);
	off = c.off;
	CU_ASSERT(off == (int64_t)(3001 * MS));
	CU_ASSERT(opd_gclock_guest(&c, 0) == 3001 * MS);
	/* a later HELLO does not replace an exchange */
	opd_gclock_hello(&c, 0, 1000 * MS);
	CU_ASSERT(c.off == off);
	/* answers to no PING, a PING answered twice, time running back */
	p.token = 999;
	CU_ASSERT(opd_gclock_pong(&c, &p, 30 * MS) == -EINVAL);
	p.token = 2;
	CU_ASSERT(opd_gclock_pong(&c, &p, 30 * MS) == -EINVAL);
	p.token = opd_gclock_ping(&c, 40 * MS);
	CU_ASSERT(opd_gclock_pong(&c, &p, 39 * MS) == -EINVAL);
	CU_ASSERT_STRING_EQUAL(opd_gclock_method_name(c.method), "ping");
}

/* ---- timeline ---- */

static void test_timeline(void)
{
	struct opd_gbudget b = { .max = 1 << 20, .capped = &st.guest_bytes_capped };
	struct opd_gtimeline tl;

	opd_gtl_init(&tl, 4, 4, &b, &st);
	CU_ASSERT(opd_gtl_count(&tl, 0) == 0);
	CU_ASSERT(opd_gtl_count(&tl, -1) == 0);
	for (uint64_t t = 1; t <= 6; t++)
		CU_ASSERT(opd_gtl_add(&tl, 1, t * 10, (uint32_t)t, (uint32_t)t + 1) == 1);
	/* a ring of 4: the two oldest are overwritten, counted */
	CU_ASSERT(opd_gtl_count(&tl, 1) == 4);
	CU_ASSERT(st.guest_switches_overwritten == 2);
	CU_ASSERT(opd_gtl_at(&tl, 1, 0)->t == 30);
	CU_ASSERT(opd_gtl_find(&tl, 1, 29) == -1);
	CU_ASSERT(opd_gtl_find(&tl, 1, 30) == 0);
	CU_ASSERT(opd_gtl_find(&tl, 1, 55) == 2);
	CU_ASSERT(opd_gtl_find(&tl, 1, 1000) == 3);
	/* out of order and out of range: refused, counted */
	CU_ASSERT(opd_gtl_add(&tl, 1, 5, 0, 0) == 0);
	CU_ASSERT(opd_gtl_add(&tl, 4, 100, 0, 0) == 0);
	CU_ASSERT(st.guest_bad_values == 2);
	CU_ASSERT(b.used == 4 * sizeof(struct opd_gswitch));
	/* a vCPU's ring past the budget: refused, counted */
	b.max = b.used;
	CU_ASSERT(opd_gtl_add(&tl, 2, 100, 0, 0) == 0);
	CU_ASSERT(st.guest_bytes_capped == 1);
	opd_gtl_fini(&tl);
}

/* ---- tasks ---- */

static void test_tasks(void)
{
	struct opd_gbudget b = { .max = 1 << 20, .capped = &st.guest_bytes_capped };
	struct opd_gimg *x = (struct opd_gimg *)&b, *y = (struct opd_gimg *)&st;
	struct opd_gtasks ts;
	struct opd_gtask *t;
	const struct opd_gmap *m;
	struct opd_gmap gm = { .start = 0x1000, .end = 0x2000, .t = 5, .gi = x };

	opd_gtasks_init(&ts, 3, 5, &b, &st);
	t = opd_gtasks_get(&ts, 10);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT(opd_gtasks_map(&ts, t, &gm) == 0);
	gm = (struct opd_gmap){ .start = 0x3000, .end = 0x4000, .t = 6, .gi = y };
	CU_ASSERT(opd_gtasks_map(&ts, t, &gm) == 0);
	CU_ASSERT(t->main == x);	/* the oldest mapping */
	m = opd_gtask_find_map(t, 0x3800);
	CU_ASSERT(m && m->gi == y);
	CU_ASSERT(opd_gtask_find_map(t, 0x2800) == NULL);
	/* an MMAP over two mappings replaces both */
	gm = (struct opd_gmap){ .start = 0x1800, .end = 0x3800, .t = 7, .gi = y };
	CU_ASSERT(opd_gtasks_map(&ts, t, &gm) == 0);
	CU_ASSERT(t->nr == 1 && ts.nr_maps == 1);
	gm = (struct opd_gmap){ .start = 0x5000, .end = 0x6000, .t = 9, .gi = x };
	CU_ASSERT(opd_gtasks_map(&ts, t, &gm) == 0);
	/* fork copies, exec drops what came before it */
	opd_gtasks_fork(&ts, 11, 10);
	CU_ASSERT(opd_gtasks_find(&ts, 11)->nr == 2 && ts.nr_maps == 4);
	opd_gtasks_exec(&ts, 11, 8);
	CU_ASSERT(opd_gtasks_find(&ts, 11)->nr == 1 && ts.nr_maps == 3);
	CU_ASSERT(opd_gtasks_find(&ts, 11)->main == x);
	/* two tasks map the pc the same way: a sole owner */
	CU_ASSERT(opd_gtasks_sole_owner(&ts, 0x5800, &m) != NULL);
	/* caps: tasks and mappings, counted */
	CU_ASSERT(opd_gtasks_get(&ts, 12) != NULL);
	CU_ASSERT(opd_gtasks_get(&ts, 13) == NULL);
	CU_ASSERT(st.guest_tasks_capped == 1);
	gm = (struct opd_gmap){ .start = 0x5000, .end = 0x6000, .gi = y };
	CU_ASSERT(opd_gtasks_map(&ts, opd_gtasks_find(&ts, 12), &gm) == 0);
	/* a third maps it to another file: none */
	CU_ASSERT(opd_gtasks_sole_owner(&ts, 0x5800, &m) == NULL);
	gm = (struct opd_gmap){ .start = 0x9000, .end = 0xa000, .gi = x };
	CU_ASSERT(opd_gtasks_map(&ts, opd_gtasks_find(&ts, 12), &gm) == 0);
	gm.start += 0x1000, gm.end += 0x1000;
	CU_ASSERT(opd_gtasks_map(&ts, opd_gtasks_find(&ts, 12), &gm) == -ENOSPC);
	CU_ASSERT(st.guest_maps_capped == 1);
	/* an exited task lingers, then goes */
	opd_gtasks_exit(&ts, 12, 100, 100, 30);
	CU_ASSERT(opd_gtasks_find(&ts, 12) != NULL);
	opd_gtasks_exit(&ts, 99, 200, 200, 30);
	CU_ASSERT(opd_gtasks_find(&ts, 12) == NULL);
	CU_ASSERT(ts.nr_tasks == 2);
	opd_gtasks_fini(&ts);
	CU_ASSERT(b.used == 0);
}

/* The maps of @t are sorted, disjoint, inside the array, and each of the
 * @n expected ones (start k * 0x2000, pgoff k, for k with want[k]) is
 * found by its pc. */
static void check_maps(const struct opd_gtask *t, const bool *want, size_t n)
{
	size_t count = 0;

	CU_ASSERT_FATAL(t->maps >= t->base && t->maps + t->nr <= t->base + t->cap);
	for (size_t i = 1; i < t->nr; i++)
		CU_ASSERT_FATAL(t->maps[i - 1].end <= t->maps[i].start);
	for (size_t k = 0; k < n; k++) {
		const struct opd_gmap *m = opd_gtask_find_map(t, k * 0x2000 + 0x800);

		if (!want[k]) {
			CU_ASSERT(m == NULL);
			continue;
		}
		count++;
		CU_ASSERT_FATAL(m != NULL);
		CU_ASSERT(m->pgoff == k);
	}
	CU_ASSERT(t->nr == count);
}

/*
 * Mappings arrive in any order: top-down (the kernel's mmap), bottom-up
 * (the agent's snapshot), from both ends at once, and at random; each
 * insert moves the shorter side of the array.  Whatever the order, the
 * maps stay sorted and each is found; fork copies them, replacement and
 * exec work on the moved array.
 */
static void test_tasks_any_order(void)
{
	enum { N = 3000 };
	static bool want[N];
	struct opd_gbudget b = { .max = 64 << 20, .capped = &st.guest_bytes_capped };
	struct opd_gimg *x = (struct opd_gimg *)&b;
	struct opd_gtasks ts;
	struct opd_gtask *t;
	uint32_t rng = 12345;

	opd_gtasks_init(&ts, 8, 8 * N, &b, &st);
	for (int order = 0; order < 4; order++) {
		t = opd_gtasks_get(&ts, 20 + (uint32_t)order);
		CU_ASSERT_FATAL(t != NULL);
		memset(want, 0, sizeof(want));
		for (size_t i = 0; i < N; i++) {
			size_t k;

			switch (order) {
			case 0: k = N - 1 - i; break;			/* top-down */
			case 1: k = i; break;				/* bottom-up */
			case 2: k = i % 2 ? N - 1 - i / 2 : i / 2; break; /* both ends */
			default:					/* random */
				rng = rng * 1103515245u + 12345u;
				k = (rng >> 8) % N;
				break;
			}
			struct opd_gmap gm = { .start = k * 0x2000, .end = k * 0x2000 + 0x1000,
					       .pgoff = k, .gi = x };

			CU_ASSERT_FATAL(opd_gtasks_map(&ts, t, &gm) == 0);
			want[k] = true;
		}
		check_maps(t, want, N);
	}
	/* fork the random one, replace a run of its maps by one, exec */
	opd_gtasks_fork(&ts, 30, 23);
	t = opd_gtasks_find(&ts, 30);
	CU_ASSERT_FATAL(t != NULL);
	check_maps(t, want, N);
	{
		struct opd_gmap gm = { .start = 10 * 0x2000, .end = 20 * 0x2000 + 0x1000,
				       .pgoff = 10, .gi = x, .t = 50 };

		CU_ASSERT(opd_gtasks_map(&ts, t, &gm) == 0);
		for (size_t k = 11; k <= 20; k++)
			want[k] = false;
		want[10] = true;
		CU_ASSERT(opd_gtask_find_map(t, 20 * 0x2000 + 0x800)->pgoff == 10);
		want[20] = false;
		for (size_t k = 0; k < N; k++)
			if (k != 10 && want[k])
				CU_ASSERT(opd_gtask_find_map(t, k * 0x2000 + 0x800)->pgoff == k);
	}
	opd_gtasks_exec(&ts, 30, 40);	/* only the replacement (t 50) stays */
	CU_ASSERT(t->nr == 1 && t->maps[0].pgoff == 10);
	{
		struct opd_gmap gm = { .start = 0, .end = 0x1000, .pgoff = 0, .gi = x };

		CU_ASSERT(opd_gtasks_map(&ts, t, &gm) == 0);	/* below it, after the exec */
		CU_ASSERT(t->nr == 2 && t->maps[0].pgoff == 0 && t->maps[1].pgoff == 10);
	}
	opd_gtasks_fini(&ts);
	CU_ASSERT(b.used == 0);
}

/* ---- images ---- */

static void test_images(void)
{
	struct opd_gbudget b = { .max = 1 << 20, .capped = &st.guest_bytes_capped };
	struct opd_images *images = opd_images_new();
	struct opd_imgcache *cache;
	struct opd_gimgs is;
	struct opd_gout o;
	struct opd_gimg *x;
	char dir[128], mapf[160];
	uint8_t bid[20];
	struct dp_ag_image_data d = { .cookie = 7 };
	struct dp_ag_image_end e = { .cookie = 7, .status = DP_AG_IMAGE_SENT, .size = 4 };

	snprintf(dir, sizeof(dir), "%s/dom", top);
	CU_ASSERT_FATAL(mkdir(dir, 0755) == 0);
	cache = opd_imgcache_new(top, &st);
	CU_ASSERT_FATAL(images && cache);
	opd_gout_init(&o, &st.agent_output_dropped);
	CU_ASSERT_FATAL(opd_gimgs_init(&is, "dom", dir, 1, 1 << 20, images, cache, &o, &b,
				       &st) == 0);
	x = opd_gimgs_get(&is, "/bin/a", 6);
	CU_ASSERT_FATAL(x != NULL);
	CU_ASSERT(opd_gimgs_get(&is, "/bin/a", 6) == x);
	memset(bid, 0xab, sizeof(bid));
	opd_gimg_note(x, 7, bid, sizeof(bid));
	CU_ASSERT(opd_gimgs_image(&is, x) != NULL);
	/* one image filed at most (max_filed 1): the second is capped */
	CU_ASSERT(opd_gimgs_image(&is, opd_gimgs_get(&is, "/bin/b", 6)) == NULL);
	CU_ASSERT(st.guest_images_capped == 1);
	/* asked once; a wrong offset aborts the transfer, nothing cached */
	opd_gimgs_want(&is, x, true);
	opd_gimgs_want(&is, x, true);
	CU_ASSERT(st.guest_images_requested == 1);
	opd_gimgs_data(&is, &d, (const uint8_t *)"EL", 2);
	d.offset = 3;
	opd_gimgs_data(&is, &d, (const uint8_t *)"F!", 2);
	CU_ASSERT(st.guest_bad_values == 1);
	opd_gimgs_end(&is, &e);
	CU_ASSERT(st.guest_images_failed == 1 && st.guest_images_cached == 0);
	/* a new connection asks again; this time it arrives whole */
	opd_gimgs_reset(&is);
	opd_gimgs_want(&is, x, true);
	CU_ASSERT(st.guest_images_requested == 2);
	d.offset = 0;
	opd_gimgs_data(&is, &d, (const uint8_t *)"ELF!", 4);
	opd_gimgs_end(&is, &e);
	CU_ASSERT(st.guest_images_cached == 1);
	snprintf(mapf, sizeof(mapf), "%s/images", dir);
	CU_ASSERT(access(mapf, F_OK) == 0);
	opd_gimgs_fini(&is);
	CU_ASSERT(b.used == 0);
	opd_imgcache_free(cache);
	opd_images_free(images);
}

/* The map file cannot be written: the image is not taken for mapped (it
 * is counted failed), and it is not tried again on every sample. */
static void test_images_map_error(void)
{
	struct opd_gbudget b = { .max = 1 << 20, .capped = &st.guest_bytes_capped };
	struct opd_images *images = opd_images_new();
	struct opd_imgcache *cache;
	struct opd_gimgs is;
	struct opd_gout o;
	struct opd_gimg *x;
	char dir[128];
	uint8_t bid[20];
	struct dp_ag_image_data d = { .cookie = 7 };
	struct dp_ag_image_end e = { .cookie = 7, .status = DP_AG_IMAGE_SENT, .size = 4 };

	/* the domain directory is missing: SESSION/domains/x/images cannot
	 * be opened */
	snprintf(dir, sizeof(dir), "%s/no-such-dir", top);
	cache = opd_imgcache_new(top, &st);
	CU_ASSERT_FATAL(images && cache);
	opd_gout_init(&o, &st.agent_output_dropped);
	CU_ASSERT_FATAL(opd_gimgs_init(&is, "dom", dir, 8, 1 << 20, images, cache, &o, &b,
				       &st) == 0);
	x = opd_gimgs_get(&is, "/bin/a", 6);
	memset(bid, 0xcd, sizeof(bid));
	opd_gimg_note(x, 7, bid, sizeof(bid));
	opd_gimgs_want(&is, x, true);
	opd_gimgs_data(&is, &d, (const uint8_t *)"ELF!", 4);
	opd_gimgs_end(&is, &e);
	CU_ASSERT(st.guest_images_cached == 1);
	CU_ASSERT(st.guest_images_failed == 1);
	/* in the cache now; this domain is not retried per sample */
	opd_gimgs_want(&is, x, true);
	CU_ASSERT(st.guest_images_dedup == 0);
	CU_ASSERT(st.guest_images_failed == 1);
	opd_gimgs_fini(&is);
	opd_imgcache_free(cache);
	opd_images_free(images);
}

/* ---- kernel tables ---- */

static void test_kernel(void)
{
	struct opd_images *images = opd_images_new();
	struct opd_gkernel k;
	struct opd_image *img;
	uint64_t key;
	static const char ks[] = "ffffffff81000000 T _text\nffffffff81001000 T f\n";
	static const char mods[] = "virtio 4096 0 - Live 0xffffffffc0000000\n"
				   "bad/name 4096 0 - Live 0xffffffffc0100000\n";
	struct dp_ag_table_end e = { .total_bytes = sizeof(ks) - 1, .chunks = 1 };
	char path[160];

	CU_ASSERT_FATAL(images != NULL);
	CU_ASSERT_FATAL(opd_gkern_init(&k, "dom", top, 1 << 20, images, &st) == 0);
	CU_ASSERT(!opd_gkern_ready(&k));
	opd_gkern_text(&k, DP_AG_KALLSYMS, ks, sizeof(ks) - 1);
	CU_ASSERT(opd_gkern_ready(&k));
	/* before the END: within the largest kernel image from _text */
	CU_ASSERT(opd_gkern_resolve(&k, 0xffffffff81800000ULL, &img, &key));
	opd_gkern_end(&k, DP_AG_KALLSYMS, &e);
	CU_ASSERT(!opd_gkern_resolve(&k, 0xffffffff81800000ULL, &img, &key));
	CU_ASSERT(opd_gkern_resolve(&k, 0xffffffff81001010ULL, &img, &key));
	CU_ASSERT(key == 0x1010 && !strcmp(img->name, "vmlinux"));
	snprintf(path, sizeof(path), "%s/kallsyms", top);
	CU_ASSERT(access(path, F_OK) == 0);
	opd_gkern_text(&k, DP_AG_MODULES, mods, sizeof(mods) - 1);
	CU_ASSERT(opd_gkern_resolve(&k, 0xffffffffc0000010ULL, &img, &key));
	CU_ASSERT(key == 0x10 && !strcmp(img->name, "virtio"));
	CU_ASSERT(!opd_gkern_resolve(&k, 0xffffffffc0100010ULL, &img, &key));
	/* a count that disagrees with the text: counted */
	e.total_bytes = 1;
	opd_gkern_end(&k, DP_AG_MODULES, &e);
	CU_ASSERT(st.guest_bad_values == 1);
	/* the text cap */
	k.max_bytes = k.bytes;
	opd_gkern_text(&k, DP_AG_KALLSYMS, ks, sizeof(ks) - 1);
	CU_ASSERT(st.guest_bytes_capped == 1);
	opd_gkern_fini(&k);
	opd_images_free(images);
}

/* ---- holding ---- */

static void test_hold(void)
{
	struct opd_ghold h;
	struct opd_guest_sample s = { 0 };

	CU_ASSERT_FATAL(opd_ghold_init(&h, 3) == 0);
	CU_ASSERT(opd_ghold_oldest(&h) == NULL);
	for (uint64_t i = 1; i <= 3; i++) {
		s.pc = i;
		opd_ghold_push(&h, &s);
	}
	CU_ASSERT(opd_ghold_full(&h));
	CU_ASSERT(opd_ghold_oldest(&h)->pc == 1);
	opd_ghold_pop(&h);
	s.pc = 4;
	opd_ghold_push(&h, &s);	/* wraps */
	for (uint64_t i = 2; i <= 4; i++) {
		CU_ASSERT(opd_ghold_oldest(&h)->pc == i);
		opd_ghold_pop(&h);
	}
	CU_ASSERT(opd_ghold_oldest(&h) == NULL);
	opd_ghold_fini(&h);
}

/* One suite a part, each with the fixture of setup() and teardown(). */
#define PART(suite, name, fn) \
	{ suite, setup, teardown, (const struct du_test[]){ { name, fn } }, 1 }

int main(void)
{
	const struct du_test_suite suites[] = {
		PART("guest output queue", "whole frames out; overflow counted", test_out),
		PART("guest clock", "narrowest exchange wins; bad PONGs refused", test_clock),
		PART("guest timeline", "ring, order and budget", test_timeline),
		PART("guest tasks", "maps, fork, exec, caps, owner, linger", test_tasks),
		PART("guest tasks, maps in any order", "top-down, bottom-up, both ends, random",
		     test_tasks_any_order),
		PART("guest images", "intern, request, transfer, cap", test_images),
		PART("guest images map file", "a write error is not dropped",
		     test_images_map_error),
		PART("guest kernel tables", "kallsyms, modules, counts, cap", test_kernel),
		PART("guest holding", "FIFO with wrap", test_hold),
	};

	return du_test_run(suites, DU_TEST_N(suites));
}
