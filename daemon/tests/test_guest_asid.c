/*
 * CUnit tests of the guest address-space id (opd_guest_asid): the
 * learned ASID -> guest pid table on its own, and through a domain's
 * guest state (opd_guest) the way the kernel collector's samples use it:
 * two processes at the same addresses, a clock that is wrong by a third
 * of a time slice, exit and exec, and a guest with no agent.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "domprof/raw.h"
#include "opd_guest.h"
#include "opd_guest_asid.h"
#include "opd_imgcache.h"
#include "sfname/sfname.h"
#include "test_stats_doc.h"
#include "test_fixture.h"
#include "util/du_test.h"

#define MS 1000000ULL
#define NOW UINT64_MAX	/* a guest time after everything */
#define AS_A 0x12346000ULL	/* pid 100's CR3 (masked) */
#define AS_B 0x2a000000ULL	/* pid 200's */

static struct tgs gs;
static uint8_t buf[65600];

static void setup(void)
{
	tgs_setup(&gs, "test_gasid");
}

static void teardown(void)
{
	tgs_teardown(&gs);
}

/* ---- the table alone ---- */

/* Votes a pid needs to own a space no one voted in. */
#define TO_OWN (OPD_GASID_MIN_VOTES + OPD_GASID_CONFIRM_VOTES)
/* Of the scene's 200 samples while both spaces are learned, the most the
 * clock (3 ms wrong) may misfile before their owners file them. */
#define LEARNING_MAX 30

/* @n clear votes for @pid in @asid at guest time @gt, each its own
 * observation (*@o); returns the last one's change. */
static enum opd_gasid_change votes(struct opd_gasid *a, uint64_t asid, uint32_t pid, uint64_t gt,
				   int n, uint64_t *o)
{
	enum opd_gasid_change c = OPD_GASID_SAME;

	for (int i = 0; i < n; i++)
		c = opd_gasid_vote(a, asid, pid, gt, ++*o, true);
	return c;
}

static void test_votes(void)
{
	struct opd_gasid a;
	uint64_t o = 0;	/* each vote its own observation */

	opd_gasid_init(&a, 8, gs.images);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	/* fewer than OPD_GASID_MIN_VOTES: nobody elected */
	CU_ASSERT(votes(&a, AS_A, 100, 10, OPD_GASID_MIN_VOTES - 1, &o) == OPD_GASID_SAME);
	CU_ASSERT(votes(&a, AS_A, 100, 10, 1, &o) == OPD_GASID_ELECTED);
	/* elected, not yet the owner: files nothing */
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	CU_ASSERT(votes(&a, AS_A, 100, 10, OPD_GASID_CONFIRM_VOTES - 1, &o) == OPD_GASID_SAME);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	CU_ASSERT(votes(&a, AS_A, 100, 10, 1, &o) == OPD_GASID_OWNED);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 100);
	CU_ASSERT(a.s.provisional == 1 && a.s.learned == 1);
	/* a minority of wrong votes (a clock off near switches) changes nothing */
	for (int i = 0; i < 40; i++) {
		opd_gasid_vote(&a, AS_A, 100, 20, ++o, true);
		if (i % 3 == 0)
			opd_gasid_vote(&a, AS_A, 200, 20, ++o, false);
	}
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 100);
	CU_ASSERT(a.s.demoted == 0);
	CU_ASSERT(a.s.votes_inferred == 14 && a.s.votes_clear == TO_OWN + 40);
	/* one observation weighted 40 times is one vote */
	for (int i = 0; i < 40; i++)
		opd_gasid_vote(&a, AS_B, 200, 20, 5000, true);
	CU_ASSERT(opd_gasid_owner(&a, AS_B, NOW) == 0);
	CU_ASSERT(a.s.votes_same_obs == 39);
	/* zero asid or pid: nothing */
	CU_ASSERT(opd_gasid_vote(&a, 0, 100, 20, ++o, true) == OPD_GASID_SAME);
	CU_ASSERT(opd_gasid_vote(&a, AS_B, 0, 20, ++o, true) == OPD_GASID_SAME);
	CU_ASSERT(opd_gasid_owner(&a, 0, NOW) == 0 && opd_gasid_owner(&a, AS_B, NOW) == 0);
	/* pid 200, a minority voter there, exits: pid 100 keeps its space */
	opd_gasid_forget(&a, 200, 28, false);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 100);
	CU_ASSERT(a.s.forgotten == 0);
	/* pid 100 exits at t=30: the space has no owner from then on, older
	 * votes are refused, and a sample from before is still pid 100's */
	opd_gasid_forget(&a, 100, 30, false);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 30) == 0);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 29) == 100);
	CU_ASSERT(a.s.forgotten == 1);
	votes(&a, AS_A, 100, 25, 10, &o);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	CU_ASSERT(a.s.votes_stale == 10);
	/* the CR3 reused by pid 300 after that: learned again */
	votes(&a, AS_A, 300, 40, TO_OWN, &o);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 300);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 29) == 100);
	/* a space with votes and no owner yet, its leader gone: starts over,
	 * and nobody owned it before */
	votes(&a, AS_B, 400, 50, 3, &o);
	opd_gasid_forget(&a, 400, 60, false);
	votes(&a, AS_B, 400, 55, OPD_GASID_MIN_VOTES - 1, &o);	/* stale */
	CU_ASSERT(a.s.votes_stale == 10 + OPD_GASID_MIN_VOTES - 1);
	votes(&a, AS_B, 500, 70, TO_OWN - 1, &o);
	CU_ASSERT(opd_gasid_owner(&a, AS_B, NOW) == 0);	/* one vote short */
	CU_ASSERT(opd_gasid_owner(&a, AS_B, 59) == 0);
	/* an elected pid that exits is no longer the space's choice */
	opd_gasid_forget(&a, 500, 80, false);
	CU_ASSERT(votes(&a, AS_B, 600, 90, OPD_GASID_MIN_VOTES, &o) == OPD_GASID_ELECTED);
	opd_gasid_fini(&a);
}

/*
 * An owner most of the last OPD_GASID_WINDOW votes contradict is demoted
 * at once, however long it owned the space: 1000 votes for pid 100, then
 * pid 200's; after OPD_GASID_DEMOTE of them 100 is demoted (its votes
 * gone), 200 is elected at the next and owns the space
 * OPD_GASID_CONFIRM_VOTES later.  (The counts alone, before the window,
 * took about 43 such votes.)
 */
static void test_reversal(void)
{
	struct opd_gasid a;
	uint64_t o = 0;
	int n;

	opd_gasid_init(&a, 8, gs.images);
	votes(&a, AS_A, 100, 10, 1000, &o);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 100);
	for (n = 0; n < 1000 && opd_gasid_owner(&a, AS_A, NOW) == 100; n++)
		opd_gasid_vote(&a, AS_A, 200, 20, ++o, true);
	CU_ASSERT_EQUAL(n, OPD_GASID_DEMOTE);
	CU_ASSERT(a.s.demoted == 1);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	CU_ASSERT(votes(&a, AS_A, 200, 20, 1, &o) == OPD_GASID_ELECTED);
	CU_ASSERT(votes(&a, AS_A, 200, 20, OPD_GASID_CONFIRM_VOTES, &o) == OPD_GASID_OWNED);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 200);
	CU_ASSERT(a.s.reversed == 1);
	CU_ASSERT(a.s.learned == 2);
	/* contrary votes spread among right ones (fewer than the window's
	 * OPD_GASID_DEMOTE in any OPD_GASID_WINDOW) do not demote */
	for (int i = 0; i < 1000; i++)
		opd_gasid_vote(&a, AS_A, i % 2 ? 200 : 300, 30, ++o, true);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 200);
	CU_ASSERT(a.s.demoted == 1);
	/* doubts count against the owner's votes, not its window */
	opd_gasid_doubt(&a, AS_A);
	CU_ASSERT(a.s.doubted == 1);
	/* a space with no owner: a doubt is nothing */
	opd_gasid_doubt(&a, AS_B);
	CU_ASSERT(a.s.doubted == 1);
	opd_gasid_fini(&a);
}

/*
 * A provisional choice the votes after it contradict is dropped, and its
 * votes go with it: a burst of 8 wrong votes (a clock wrong for a moment)
 * elects pid 200 in pid 100's space; the right votes that follow drop
 * 200 and make 100 the owner.  200 never owned the space.
 */
static void test_unconfirmed(void)
{
	struct opd_gasid a;
	uint64_t o = 0;

	opd_gasid_init(&a, 8, gs.images);
	CU_ASSERT(votes(&a, AS_A, 200, 10, OPD_GASID_MIN_VOTES, &o) == OPD_GASID_ELECTED);
	CU_ASSERT(votes(&a, AS_A, 100, 10, OPD_GASID_CONFIRM_VOTES - 1, &o) == OPD_GASID_SAME);
	CU_ASSERT(votes(&a, AS_A, 100, 10, 1, &o) == OPD_GASID_DROPPED);
	CU_ASSERT(a.s.unconfirmed == 1);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	votes(&a, AS_A, 100, 10, TO_OWN, &o);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 100);
	CU_ASSERT(a.s.learned == 1 && a.s.reversed == 0 && a.s.provisional == 2);
	/* votes that neither confirm nor drop (3 for, 2 against of each
	 * 5): dropped after OPD_GASID_DECIDE_VOTES, not left elected for ever */
	CU_ASSERT(votes(&a, AS_B, 300, 10, OPD_GASID_MIN_VOTES, &o) == OPD_GASID_ELECTED);
	for (int i = 1; i < OPD_GASID_DECIDE_VOTES; i++)	/* for, against, for, for, against */
		CU_ASSERT(opd_gasid_vote(&a, AS_B, i % 5 == 2 || i % 5 == 0 ? 400 : 300, 10, ++o, true) ==
			  OPD_GASID_SAME);
	CU_ASSERT(opd_gasid_vote(&a, AS_B, 300, 10, ++o, true) == OPD_GASID_DROPPED);
	CU_ASSERT(a.s.unconfirmed == 2);
	opd_gasid_fini(&a);
}

/* The owners of a space over time: each earlier time keeps its own, up
 * to OPD_GASID_PAST of them. */
static void test_past_owners(void)
{
	struct opd_gasid a;
	uint64_t o = 0;

	opd_gasid_init(&a, 8, gs.images);
	votes(&a, AS_A, 100, 10, TO_OWN, &o);
	opd_gasid_forget(&a, 100, 30, false);
	votes(&a, AS_A, 300, 40, TO_OWN, &o);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 300);
	/* pid 300 exits at 50: each earlier time keeps its owner */
	opd_gasid_forget(&a, 300, 50, false);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 29) == 100);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 45) == 300);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 55) == 0);
	/* pid 400 votes there, is not elected, exits at 70: nobody owned it
	 * from 50 to 70, and the older owners stay known */
	votes(&a, AS_A, 400, 60, 3, &o);
	opd_gasid_forget(&a, 400, 70, false);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 29) == 100);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 45) == 300);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 60) == 0);
	/* past OPD_GASID_PAST ends the oldest is no longer known */
	votes(&a, AS_A, 500, 80, TO_OWN, &o);
	opd_gasid_forget(&a, 500, 90, false);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 85) == 500);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 45) == 300);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 29) == 0);
	opd_gasid_fini(&a);
}

/* A guest cannot grow the table: many spaces evict, numbered buckets stop. */
static void test_bounds(void)
{
	struct opd_gasid a;
	struct opd_image *b1, *b2;
	uint64_t o = 200000;

	opd_gasid_init(&a, 3, gs.images);
	b1 = opd_gasid_bucket(&a, AS_A);
	b2 = opd_gasid_bucket(&a, AS_B);
	CU_ASSERT_FATAL(b1 && b2 && b1 != b2);
	CU_ASSERT(b1->kind == SFN_ANON && !strcmp(b1->name, "guest-user:as1"));
	CU_ASSERT(!strcmp(b2->name, "guest-user:as2"));
	CU_ASSERT(opd_gasid_bucket(&a, AS_A) == b1);
	CU_ASSERT(opd_gasid_bucket(&a, 0) == NULL);
	CU_ASSERT(opd_gasid_bucket(&a, 0x777000000) != NULL);	/* as3 */
	CU_ASSERT(opd_gasid_bucket(&a, 0x778000000) == NULL);	/* past 3 */
	CU_ASSERT(a.s.spaces == 3 && a.s.spaces_capped == 1);
	for (uint64_t i = 1; i <= 100000; i++)
		opd_gasid_vote(&a, i << 13, 7, 1, i, true);
	CU_ASSERT(a.s.evicted >= 100000 - OPD_GASID_SETS * OPD_GASID_WAYS);
	/* the most recent spaces are still there */
	votes(&a, 100000ULL << 13, 9, 2, TO_OWN, &o);
	CU_ASSERT(opd_gasid_owner(&a, 100000ULL << 13, NOW) == 9);
	opd_gasid_fini(&a);
}

/* ---- through a domain's guest state ---- */

static struct opd_guest *guest(const char *name)
{
	char dir[PATH_MAX];
	struct opd_guest_limits l;

	opd_guest_limits_default(&l);
	snprintf(dir, sizeof(dir), "%s/domains/%s", gs.session, name);
	return opd_guest_new(name, dir, &l, gs.images, gs.cache, &gs.st);
}

static void feed(struct opd_guest *g, ssize_t n, uint64_t host)
{
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT(opd_guest_feed(g, buf, (size_t)n, host) == 0);
}

static void hello(struct opd_guest *g, uint64_t guest_now)
{
	struct dp_ag_hello h = { .proto_min = 1, .proto_max = 1, .nr_cpus = 1, .clock_id = 1,
				 .flags = DP_AG_HELLO_F_PERF | DP_AG_HELLO_F_SWITCH,
				 .now_ns = guest_now, .instance = 7, .agent_version = 0x010000 };

	feed(g, ap_put_hello(buf, sizeof(buf), &h, "6.1", 3), 0);
}

static void mmap_(struct opd_guest *g, uint32_t pid, const char *path)
{
	struct dp_ag_mmap m = { .cpu = DP_AG_CPU_UNKNOWN, .pid = pid, .tid = pid,
				.cookie = pid, .start = 0x400000, .len = 0x10000, .prot = 5 };

	feed(g, ap_put_mmap(buf, sizeof(buf), &m, path, strlen(path)), 0);
}

static void sw(struct opd_guest *g, uint64_t t, uint32_t prev, uint32_t next)
{
	struct dp_ag_switch s = { .time_ns = t, .prev_pid = prev, .prev_tid = prev,
				  .next_pid = next, .next_tid = next };

	feed(g, ap_put_switches(buf, sizeof(buf), 0, &s, 1), 0);
}

/* PING at host @h0, PONG read back at host @h3; guest = host + @off:
 * a ping/pong clock with a round trip of @h3 - @h0. */
static void clock_sync(struct opd_guest *g, uint64_t h0, uint64_t h3, uint64_t off)
{
	struct dp_ag_pong p = { 0 };
	uint8_t out[4096];
	size_t n;

	opd_guest_ping(g, h0);
	n = opd_guest_output(g, out, sizeof(out));
	for (size_t o = 0; o + 12 <= n;) {
		struct dp_ag_frame f;

		memcpy(&f, out + o, sizeof(f));
		if (f.type == DP_AG_PING)
			memcpy(&p.token, out + o + 12, 8);
		o += 12 + f.len;
	}
	CU_ASSERT_FATAL(p.token != 0);
	p.recv_ns = (h0 + h3) / 2 + off;
	p.send_ns = p.recv_ns;
	feed(g, ap_put_pong(buf, sizeof(buf), &p), h3);
}

static void task_ev(struct opd_guest *g, uint16_t type, uint32_t pid, uint64_t t)
{
	struct dp_ag_task e = { .time_ns = t, .pid = pid, .ppid = 1, .tid = pid, .ptid = 1 };

	feed(g, ap_put_task(buf, sizeof(buf), type, &e), 0);
}

/*
 * Two programs mapped at the same address (the pc says nothing), pids 100
 * and 200, alternating in 10 ms slices on vCPU 0 from guest 1000 ms to
 * 1400 ms.  Ping/pong says guest = host + 1000 ms +- 0.1 ms; the truth is
 * + 1003 ms, so
 * the clock names the wrong task for 3 ms after each switch.
 */
static struct opd_guest *scene(void)
{
	struct opd_guest *g = guest("ge");

	CU_ASSERT_FATAL(g != NULL);
	hello(g, 1000 * MS);
	mmap_(g, 100, "/bin/exact-a");
	mmap_(g, 200, "/bin/exact-b");
	for (int k = 0; k < 40; k++)
		sw(g, (1000 + 10 * (uint64_t)k) * MS, k % 2 ? 100 : 200, k % 2 ? 200 : 100);
	clock_sync(g, 10 * MS, 10 * MS + 200000, 1000 * MS);
	return g;
}

static uint32_t truth(uint64_t gt)
{
	return ((gt / MS - 1000) / 10) % 2 ? 200 : 100;
}

/* Samples every 0.5 ms of true guest time in [@from, @to) ms, the truth
 * guest = host + @off ms; returns how many were filed under the wrong pid
 * (or not resolved). */
static int run_off(struct opd_guest *g, uint64_t from, uint64_t to, bool with_asid, uint64_t off)
{
	int wrong = 0;

	for (uint64_t gt = from * MS; gt < to * MS; gt += MS / 2) {
		struct opd_guest_sample s = { .host_ns = gt - off * MS, .pc = 0x400100,
					      .vcpu = 0, .mode = DP_MODE_GUEST_USER };
		struct opd_guest_res r;

		if (with_asid)
			s.asid = truth(gt) == 100 ? AS_A : AS_B;
		opd_guest_resolve(g, &s, &r);
		wrong += !r.resolved || r.pid != truth(gt);
	}
	return wrong;
}

/* The same, with the scene's clock 3 ms wrong. */
static int run(struct opd_guest *g, uint64_t from, uint64_t to, bool with_asid)
{
	return run_off(g, from, to, with_asid, 1003);
}

static int stat_of(const char *file, const char *key)
{
	char line[256], k[128];
	long v;
	int found = -1;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %ld", k, &v) == 2 && !strcmp(k, key))
			found = (int)v;
	fclose(f);
	return found;
}

static void test_wrong_clock(void)
{
	struct opd_guest *g = scene();
	char path[PATH_MAX];
	int clock_only, learning, learned;

	/* the clock alone: 3 ms of each 10 ms slice go to the other pid */
	clock_only = run(g, 1000, 1100, false);
	CU_ASSERT(clock_only >= 50 && clock_only <= 70);
	/* with the ASID: a few wrong while it learns (an owner needs
	 * TO_OWN votes: the clock files the first 8 ms or so of each
	 * space, 24 of 200 here, 17 when 8 votes made an owner), then none */
	learning = run(g, 1100, 1200, true);
	learned = run(g, 1200, 1400, true);
	printf("\n  wrong of 200: clock only %d, asid learning %d; of 400 learned: %d\n",
	       clock_only, learning, learned);
	CU_ASSERT(learning < LEARNING_MAX);
	CU_ASSERT(learned == 0);
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_learned") == 2);
	CU_ASSERT(stat_of(path, "asid_filed") > 350);
	CU_ASSERT(stat_of(path, "asid_overrode_clock") >= 100);
	CU_ASSERT(stat_of(path, "asid_seen") == 600);
	CU_ASSERT_EQUAL(stats_keys_undocumented(path), 0);
	opd_guest_free(g);
}

/*
 * One look the clock places wrongly, weighted by 30 periods (the xen
 * collector's 30 samples of one time, after its vCPU ran 30 ms unseen):
 * pid 200's space at true guest 1010.5 ms, which the clock (3 ms behind)
 * puts at 1007.5 ms, well inside pid 100's slice.  It is one vote, so the
 * space is not taken by it; counted as 30 votes it would hold the space
 * for pid 100 past the end of the scene.
 */
static void test_one_look(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_sample s = { .host_ns = 1010 * MS + MS / 2 - 1003 * MS, .pc = 0x400100,
				      .vcpu = 0, .mode = DP_MODE_GUEST_USER, .asid = AS_B };
	struct opd_guest_res r;
	char path[PATH_MAX];
	int learning, learned;

	for (int i = 0; i < 30; i++) {
		opd_guest_resolve(g, &s, &r);
		CU_ASSERT(r.resolved && r.pid == 100);	/* the clock's, for now */
	}
	learning = run(g, 1100, 1200, true);
	learned = run(g, 1200, 1400, true);
	printf("\n  after one wrong look of 30: wrong %d of 200 learning, %d of 400 learned\n",
	       learning, learned);
	CU_ASSERT(learning < LEARNING_MAX);
	CU_ASSERT(learned == 0);
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_votes_same_obs") == 29);
	CU_ASSERT(stat_of(path, "asid_learned") == 2);
	opd_guest_free(g);
}

/*
 * A sample's own time spread (DP_RAW_TIME_SPREAD: the xen collector's
 * context read) joins the clock's uncertainty: samples 1.5 ms before a
 * switch by the scene's clock (+- 1.1 ms) vote; with a spread of 1 ms
 * they may be either side of it, and do not.
 */
static void test_time_spread(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_res r;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	for (uint32_t spread = 1000;; spread = 0) {
		for (uint64_t k = 1; k < 10; k++) {
			struct opd_guest_sample s = {
				.host_ns = 10 * k * MS - 3 * MS / 2 + spread, .pc = 0x400100,
				.vcpu = 0, .mode = DP_MODE_GUEST_USER, .asid = AS_A,
				.spread_us = spread,
			};

			opd_guest_resolve(g, &s, &r);
		}
		CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
		CU_ASSERT(stat_of(path, "asid_votes") == (spread ? 0 : 9));
		if (!spread)
			break;
	}
	opd_guest_free(g);
}

/*
 * A task known to run in another address space is set aside: once pid 100
 * owns AS_A, a sample of a new space at the edge of a turn, which the
 * clock cannot give to either pid, is pid 200's.  pid 200 execs at 1200 ms
 * into AS_C; sixteen samples 3.5 ms into its turns (0.5 ms by the clock,
 * within its uncertainty) teach AS_C; then a sample 1 ms into its turn,
 * which the clock (2 ms before the switch) would give to pid 100, is
 * filed under pid 200.  Without the setting aside, AS_C would have no
 * votes and the clock would file it.
 */
static void test_elsewhere(void)
{
	struct opd_guest *g = scene();
	struct dp_ag_comm c = { .time_ns = 1200 * MS, .pid = 200, .tid = 200,
				.flags = DP_AG_COMM_EXEC };
	struct opd_guest_sample s = { .pc = 0x400100, .vcpu = 0, .mode = DP_MODE_GUEST_USER,
				      .asid = AS_B + 0x40000 };
	struct opd_guest_res r;
	struct dp_ag_mmap m = { .time_ns = 1200 * MS + 1, .cpu = DP_AG_CPU_UNKNOWN, .pid = 200,
				.tid = 200, .cookie = 201, .start = 0x400000, .len = 0x10000,
				.prot = 5 };

	CU_ASSERT(run(g, 1000, 1200, true) < LEARNING_MAX);
	feed(g, ap_put_comm(buf, sizeof(buf), &c, "b", 1), 0);
	feed(g, ap_put_mmap(buf, sizeof(buf), &m, "/bin/exact-b", 12), 0);
	for (uint64_t t = 1210; t <= 1350; t += 20) {	/* pid 200's turns */
		for (uint64_t k = 0; k < 2; k++) {
			s.host_ns = t * MS + 3 * MS + MS / 2 + k * MS / 10 - 1003 * MS;
			opd_guest_resolve(g, &s, &r);
		}
	}
	s.host_ns = 1371 * MS - 1003 * MS;
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(r.resolved && r.pid == 200);
	opd_guest_free(g);
}

/*
 * A wrong choice in one space does not make its mirror image in the
 * other.  Eight looks of AS_A (pid 100's) at the middle of pid 200's
 * turns by the clock (a clock wrong by a whole turn for a moment) elect
 * pid 200 in AS_A.  Then looks of AS_B, 1 ms into pid 200's turns with a
 * time spread of 2 ms, which the clock cannot give to either pid: were
 * pid 200 set aside as AS_A's (it is only elected there), they would all
 * vote for pid 100 and make it AS_B's owner, filing pid 200's samples
 * under pid 100.  They do not vote; the clock files them, right.
 */
static void test_mirror(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_res r;
	char path[PATH_MAX];
	int wrong = 0;

	for (uint64_t j = 0; j < OPD_GASID_MIN_VOTES; j++) {
		struct opd_guest_sample s = { .host_ns = (15 + 20 * j) * MS, .pc = 0x400100,
					      .vcpu = 0, .mode = DP_MODE_GUEST_USER, .asid = AS_A };

		opd_guest_resolve(g, &s, &r);
	}
	for (uint64_t j = 10; j < 19; j++) {
		struct opd_guest_sample s = { .host_ns = (11 + 20 * j) * MS, .pc = 0x400100,
					      .vcpu = 0, .mode = DP_MODE_GUEST_USER, .asid = AS_B,
					      .spread_us = 2000 };

		opd_guest_resolve(g, &s, &r);
		wrong += !r.resolved || r.pid != 200;
	}
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	printf("\n  mirror: %d of 9 wrong; provisional %d, learned %d, votes %d\n", wrong,
	       stat_of(path, "asid_provisional"), stat_of(path, "asid_learned"),
	       stat_of(path, "asid_votes"));
	CU_ASSERT_EQUAL(wrong, 0);
	CU_ASSERT(stat_of(path, "asid_provisional") == 1);	/* pid 200 in AS_A */
	CU_ASSERT(stat_of(path, "asid_learned") == 0);
	CU_ASSERT(stat_of(path, "asid_votes") == OPD_GASID_MIN_VOTES);
	opd_guest_free(g);
}

/*
 * Wrong owners are corrected: for the first 100 ms the clock is 5 ms
 * wrong (half of each turn placed in the other, both halves without
 * doubt), which may elect each pid the other's space; then 3 ms wrong as
 * in the scene (the turns go on to 2000 ms).  Setting aside the owner of
 * another space must not keep such owners: the right votes unseat them,
 * and in the last 190 ms every sample is filed right.
 */
static void test_wrong_owners_corrected(void)
{
	struct opd_guest *g = scene();
	char path[PATH_MAX];
	int first, middle, last;

	/* the turns go on to 2000 ms */
	for (int k = 40; k < 100; k++)
		sw(g, (1000 + 10 * (uint64_t)k) * MS, k % 2 ? 100 : 200, k % 2 ? 200 : 100);
	first = run_off(g, 1000, 1100, true, 1005);
	middle = run(g, 1100, 1800, true);
	last = run(g, 1800, 1990, true);
	printf("\n  wrong: %d of 200 at 5 ms, then at 3 ms %d of 1400 and %d of 380\n", first,
	       middle, last);
	CU_ASSERT(last == 0);
	/* the counts follow the recent votes: the wrong owners go within the
	 * first 100 ms at 3 ms (616 of 1400 wrong when a count only grew) */
	CU_ASSERT(middle <= 70);
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	/* each wrong choice undone: a wrong owner demoted, or a wrong
	 * provisional pid dropped before it owned anything */
	printf("  provisional %d, unconfirmed %d, learned %d, demoted %d, reversed %d\n",
	       stat_of(path, "asid_provisional"), stat_of(path, "asid_unconfirmed"),
	       stat_of(path, "asid_learned"), stat_of(path, "asid_demoted"),
	       stat_of(path, "asid_reversed"));
	CU_ASSERT(stat_of(path, "asid_unconfirmed") + stat_of(path, "asid_demoted") >= 2);
	opd_guest_free(g);
}

/*
 * Samples beyond the agent's stream do not vote: the scene's timeline ends
 * with pid 200 switched in at 1390 ms; 40 looks of a new space AS_C at
 * 1450 to 1470 ms (the agent lagging, the hold over) would all name pid
 * 200 by the last switch known, and elect it.
 */
static void test_lagging_stream(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_res r;
	char path[PATH_MAX];

	for (int i = 0; i < 40; i++) {
		struct opd_guest_sample s = { .host_ns = (1450 * MS + (uint64_t)i * MS / 2) - 1003 * MS,
					      .pc = 0x400100, .vcpu = 0,
					      .mode = DP_MODE_GUEST_USER, .asid = AS_A + 0x20000 };

		opd_guest_resolve(g, &s, &r);
	}
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_votes_ahead") == 40);
	CU_ASSERT(stat_of(path, "asid_votes") == 0);
	CU_ASSERT(stat_of(path, "asid_learned") == 0);
	opd_guest_free(g);
}

/* What the hold files, counted: one more in *@n, and in *@wrong when not
 * under the pid that ran it (the truth: guest = host + @off ms). */
struct filed {
	int n, wrong;
	uint64_t off;
};

static void count_filed(struct filed *f, const struct opd_guest_sample *out,
			const struct opd_guest_res *r)
{
	f->n++;
	f->wrong += !r->resolved || r->pid != truth(out->host_ns + f->off * MS);
}

/* @s into the hold, then what is filed by its time. */
static void hold_and_file(struct opd_guest *g, const struct opd_guest_sample *s, struct filed *f)
{
	struct opd_guest_sample out;
	struct opd_guest_res r;

	if (opd_guest_defer(g, s, &out, &r))
		count_filed(f, &out, &r);
	while (opd_guest_next(g, s->host_ns, false, &out, &r))
		count_filed(f, &out, &r);
}

/*
 * Held samples wait for their space's owner: the same scene through the
 * hold queue (opd_guest_defer, opd_guest_next), the ASIDs never seen
 * before.  The clock alone would pick a pid for the first samples of each
 * space (the two programs map the pc alike); held, they wait while the
 * samples behind them vote, and the owner files every one of them.
 */
static void test_wait_owner(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_sample s, out;
	struct opd_guest_res r;
	char path[PATH_MAX];
	struct filed f = { .off = 1003 };
	uint64_t last = 0;

	for (uint64_t gt = 1100 * MS; gt < 1300 * MS; gt += MS / 2) {
		/* voted and filed are the hold's own: what the caller
		 * leaves in them (the daemon's stack once) must not count */
		s = (struct opd_guest_sample){ .host_ns = gt - 1003 * MS, .pc = 0x400100,
					       .vcpu = 0, .mode = DP_MODE_GUEST_USER,
					       .asid = truth(gt) == 100 ? AS_A : AS_B,
					       .voted = true, .filed = true };
		last = s.host_ns;
		hold_and_file(g, &s, &f);
	}
	CU_ASSERT(!opd_guest_next(g, last, true, &out, &r));	/* all were filed */
	/* a space too few samples vote for waits out the hold, then the
	 * clock places its sample */
	s.host_ns = 1300 * MS - 1003 * MS;
	s.asid = AS_A + 0x10000;
	CU_ASSERT(!opd_guest_defer(g, &s, &out, &r));
	CU_ASSERT(!opd_guest_next(g, s.host_ns + OPD_GUEST_HOLD_NS, false, &out, &r));
	CU_ASSERT(!opd_guest_next(g, s.host_ns + OPD_GUEST_OWNER_WAIT_NS - 1, false, &out, &r));
	CU_ASSERT(opd_guest_next(g, s.host_ns + OPD_GUEST_OWNER_WAIT_NS, false, &out, &r) &&
		  r.resolved);
	printf("\n  held: wrong %d of %d\n", f.wrong, f.n);
	CU_ASSERT_EQUAL(f.n, 400);
	CU_ASSERT_EQUAL(f.wrong, 0);
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_waited") > 0);
	CU_ASSERT(stat_of(path, "asid_wait_expired") == 1);
	CU_ASSERT(stat_of(path, "asid_learned") == 2);
	opd_guest_free(g);
}

/*
 * A sample whose owner wait runs out goes to its space's elected pid, if
 * the space has one, not to the clock: eight looks of a new space AS_X
 * in the middle of pid 200's turns elect pid 200 there (fewer than an
 * owner needs: a starved collector's votes are few); then a look of AS_X
 * that the clock puts in pid 100's turn waits 6 s and is filed under pid
 * 200 (asid_filed_elected).
 */
static void test_wait_elected(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_sample x = { .pc = 0x400100, .vcpu = 0, .mode = DP_MODE_GUEST_USER,
				      .asid = AS_A + 0x50000 }, out;
	struct opd_guest_res r;
	char path[PATH_MAX];

	for (uint64_t j = 0; j < OPD_GASID_MIN_VOTES; j++) {
		x.host_ns = (15 + 20 * j) * MS;	/* guest 1015 + 20j: pid 200's */
		opd_guest_resolve(g, &x, &r);
	}
	x.host_ns = 265 * MS;			/* guest 1265: pid 100's by the clock */
	/* not waited out: the clock's, the elected pid does not file it */
	opd_guest_resolve(g, &x, &r);
	CU_ASSERT(r.resolved && r.pid == 100);
	CU_ASSERT(!opd_guest_defer(g, &x, &out, &r));
	CU_ASSERT(!opd_guest_next(g, x.host_ns + OPD_GUEST_OWNER_WAIT_NS - 1, false, &out, &r));
	CU_ASSERT_FATAL(opd_guest_next(g, x.host_ns + OPD_GUEST_OWNER_WAIT_NS, false, &out, &r));
	CU_ASSERT(out.asid == x.asid && r.resolved && r.pid == 200);
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_provisional") == 1 && stat_of(path, "asid_learned") == 0);
	CU_ASSERT(stat_of(path, "asid_wait_expired") == 1);
	CU_ASSERT(stat_of(path, "asid_filed_elected") == 1);
	CU_ASSERT_EQUAL(stats_keys_undocumented(path), 0);
	opd_guest_free(g);
}

/*
 * A sample waiting for its space's owner holds up no other sample: with
 * AS_A and AS_B learned, one look of a new space AS_X (one vote, fewer
 * than an owner needs) waits, while the samples of AS_A behind it leave
 * the hold as soon as the timeline has passed them, filed by their owner.
 * AS_X's sample leaves when its wait is over, placed by the clock.
 */
static void test_wait_beside(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_sample x = { .pc = 0x400100, .vcpu = 0, .mode = DP_MODE_GUEST_USER,
				      .asid = AS_A + 0x30000 }, s, out;
	struct opd_guest_res r;
	char path[PATH_MAX];
	int filed = 0;

	CU_ASSERT(run(g, 1000, 1200, true) < LEARNING_MAX);
	x.host_ns = 1251 * MS - 1003 * MS;
	CU_ASSERT(!opd_guest_defer(g, &x, &out, &r));
	for (uint64_t gt = 1252 * MS; gt < 1260 * MS; gt += MS / 2) {
		s = x;
		s.host_ns = gt - 1003 * MS;
		s.asid = AS_A;
		CU_ASSERT(!opd_guest_defer(g, &s, &out, &r));
	}
	/* the timeline reaches 1400 ms: every sample is ready now */
	while (opd_guest_next(g, 1260 * MS - 1003 * MS, false, &out, &r)) {
		filed++;
		CU_ASSERT(out.asid == AS_A && r.resolved && r.pid == 100);
	}
	CU_ASSERT_EQUAL(filed, 16);
	CU_ASSERT_EQUAL(opd_guest_held(g), 1);
	CU_ASSERT(!opd_guest_next(g, x.host_ns + OPD_GUEST_OWNER_WAIT_NS - 1, false, &out, &r));
	CU_ASSERT(opd_guest_next(g, x.host_ns + OPD_GUEST_OWNER_WAIT_NS, false, &out, &r) &&
		  out.asid == x.asid && r.resolved);
	CU_ASSERT_EQUAL(opd_guest_held(g), 0);
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_waited") == 1);
	CU_ASSERT(stat_of(path, "asid_wait_expired") == 1);
	opd_guest_free(g);
}

/*
 * Exit and exec: from that time on the space is learned again, not kept
 * for the old pid; a sample from before (held while the agent's word came)
 * is still the old pid's.  A pid with only a minority of votes in another
 * pid's space exits: that space keeps its owner.
 */
static void test_exit_exec(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_sample s = { .pc = 0x400100, .vcpu = 0, .mode = DP_MODE_GUEST_USER,
				      .asid = AS_A };
	struct opd_guest_res r;
	char path[PATH_MAX];

	/* the scene's 3 ms clock error gives pid 200 wrong votes in AS_A */
	CU_ASSERT(run(g, 1000, 1200, true) < LEARNING_MAX);
	/* the ASID wins over the clock: at guest 1001 ms (clock 998 ms) */
	s.host_ns = 1001 * MS - 1003 * MS;
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(r.resolved && r.pid == 100);
	/* pid 100 exits (guest 1385 ms): a sample from before is still its
	 * own, whatever the clock says */
	task_ev(g, DP_AG_EXIT, 100, 1385 * MS);
	s.host_ns = 1002 * MS - 1003 * MS;	/* clock: 999 ms, pid 200's slice */
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(r.resolved && r.pid == 100);
	/* after the exit AS_A has no owner: the clock decides (1392 ms by the
	 * clock, pid 200's slice) */
	s.host_ns = 1395 * MS - 1003 * MS;
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(r.resolved && r.pid == 200);
	/* pid 100 had wrong votes in AS_B: its exit leaves AS_B pid 200's
	 * after the exit too (1388 ms by the clock: pid 100's slice, which
	 * its lingering task would take) */
	s.asid = AS_B;
	s.host_ns = 1391 * MS - 1003 * MS;
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(r.resolved && r.pid == 200);
	/* pid 200 execs (guest 1396 ms): AS_B forgotten too */
	{
		struct dp_ag_comm c = { .time_ns = 1396 * MS, .pid = 200, .tid = 200,
					.flags = DP_AG_COMM_EXEC };

		feed(g, ap_put_comm(buf, sizeof(buf), &c, "b", 1), 0);
	}
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_forgotten") == 2);
	opd_guest_free(g);
}

/* No agent: user samples split per address space. */
static void test_no_agent(void)
{
	struct opd_guest *g = guest("web");
	struct opd_guest_sample s = { .host_ns = 5 * MS, .pc = 0x400100, .vcpu = 0,
				      .mode = DP_MODE_GUEST_USER, .asid = AS_A };
	struct opd_guest_res r;
	struct opd_image *a, *b;
	char path[PATH_MAX];

	CU_ASSERT_FATAL(g != NULL);
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(!r.resolved);
	a = r.image;
	CU_ASSERT(a && a->kind == SFN_ANON && !strcmp(a->name, "guest-user:as1"));
	CU_ASSERT(r.dep == a && r.key == 0x400100);
	s.asid = AS_B;
	opd_guest_resolve(g, &s, &r);
	b = r.image;
	CU_ASSERT(b && !strcmp(b->name, "guest-user:as2"));
	s.asid = AS_A;
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(r.image == a);
	/* no ASID (the perf collector): the one bucket */
	s.asid = 0;
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(!strcmp(r.image->name, "guest-user"));
	/* kernel samples are not split */
	s.asid = AS_A;
	s.mode = DP_MODE_GUEST_KERNEL;
	s.pc = 0xffffffff81000000ULL;
	opd_guest_resolve(g, &s, &r);
	CU_ASSERT(!strcmp(r.image->name, "guest-kernel"));
	CU_ASSERT_FATAL(opd_guest_write_stats(g, false) == 0);
	snprintf(path, sizeof(path), "%s/domains/web/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_spaces") == 2);
	opd_guest_free(g);
}

/*
 * A witness (the guest's memory naming a space's process) decides at once
 * and stays: pid 200 owns AS_A by votes, a witness of 100 overrules it,
 * and a thousand votes for 200 after it move nothing (counted); a space
 * without an owner gets one; a late word of pid 100's exec from before
 * the witness leaves the space, one from after it ends it; a witness
 * older than that end is refused.
 */
static void test_witness(void)
{
	struct opd_gasid a;
	uint64_t o = 0;

	opd_gasid_init(&a, 8, gs.images);
	CU_ASSERT(votes(&a, AS_A, 200, 10, TO_OWN, &o) == OPD_GASID_OWNED);
	CU_ASSERT(opd_gasid_witness(&a, AS_A, 100, 20) == OPD_GASID_OWNED);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 25) == 100);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, 15) == 200);	/* before it: the past owner */
	votes(&a, AS_A, 200, 30, 1000, &o);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 100);
	CU_ASSERT(a.s.votes_vs_witness == 1000);
	CU_ASSERT(a.s.demoted == 0);
	CU_ASSERT(opd_gasid_witness(&a, AS_A, 100, 40) == OPD_GASID_SAME);
	CU_ASSERT(opd_gasid_witness(&a, AS_B, 200, 40) == OPD_GASID_OWNED);
	CU_ASSERT(a.s.witnessed == 3);
	CU_ASSERT(a.s.wit_owned == 1);	/* AS_B's */
	CU_ASSERT(a.s.wit_overruled == 1);
	/* pid 100's exec at 35, told late: it was seen in AS_A at 40 */
	opd_gasid_forget(&a, 100, 35, true);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 100);
	/* its exit is its exit, whatever the clock made of the witness */
	opd_gasid_forget(&a, 200, 36, false);
	CU_ASSERT(opd_gasid_owner(&a, AS_B, NOW) == 0);
	CU_ASSERT(opd_gasid_witness(&a, AS_B, 200, 40) == OPD_GASID_OWNED);
	opd_gasid_forget(&a, 100, 50, true);
	CU_ASSERT(opd_gasid_owner(&a, AS_A, NOW) == 0);
	CU_ASSERT(opd_gasid_witness(&a, AS_A, 100, 45) == OPD_GASID_SAME);
	CU_ASSERT(a.s.wit_stale == 1);
	CU_ASSERT(opd_gasid_owner(&a, AS_B, NOW) == 200);
	opd_gasid_fini(&a);
}

/*
 * The scene with the clock 8 ms wrong in 10 ms turns (it names the wrong
 * process most of the time: the votes would learn the spaces wrong), and
 * the first look at each space carrying a witness: every sample is filed
 * under its process, the waiting ones too, and no vote decided anything.
 */
static void test_witness_files(void)
{
	struct opd_guest *g = scene();
	struct opd_guest_sample s, out;
	struct opd_guest_res r;
	char path[PATH_MAX];
	struct filed f = { .off = 1008 };
	bool seen_a = false, seen_b = false;
	uint64_t last = 0;

	for (uint64_t gt = 1100 * MS; gt < 1300 * MS; gt += MS / 2) {
		bool a = truth(gt) == 100;

		s = (struct opd_guest_sample){ .host_ns = gt - 1008 * MS, .pc = 0x400100,
					       .vcpu = 0, .mode = DP_MODE_GUEST_USER,
					       .asid = a ? AS_A : AS_B };
		if (!(a ? seen_a : seen_b))
			s.witness = truth(gt);
		*(a ? &seen_a : &seen_b) = true;
		last = s.host_ns;
		hold_and_file(g, &s, &f);
	}
	while (opd_guest_next(g, last, true, &out, &r))
		count_filed(&f, &out, &r);
	printf("\n  witnessed: wrong %d of %d\n", f.wrong, f.n);
	CU_ASSERT_EQUAL(f.n, 400);
	CU_ASSERT_EQUAL(f.wrong, 0);
	CU_ASSERT_FATAL(opd_guest_write_stats(g, true) == 0);
	snprintf(path, sizeof(path), "%s/domains/ge/stats", gs.session);
	CU_ASSERT(stat_of(path, "asid_wit_owned") == 2);
	CU_ASSERT(stat_of(path, "asid_learned") == 0);
	CU_ASSERT(stat_of(path, "asid_votes_vs_witness") > 0);
	opd_guest_free(g);
}

#define WRAP(fn) static void fn##_w(void) { setup(); fn(); teardown(); }
WRAP(test_witness)
WRAP(test_witness_files)
WRAP(test_votes)
WRAP(test_reversal)
WRAP(test_unconfirmed)
WRAP(test_mirror)
WRAP(test_past_owners)
WRAP(test_bounds)
WRAP(test_wrong_clock)
WRAP(test_one_look)
WRAP(test_elsewhere)
WRAP(test_time_spread)
WRAP(test_wrong_owners_corrected)
WRAP(test_lagging_stream)
WRAP(test_wait_owner)
WRAP(test_wait_beside)
WRAP(test_wait_elected)
WRAP(test_exit_exec)
WRAP(test_no_agent)

int main(void)
{
	static const struct du_test tests[] = {
		{ "votes, owner, forget, stale votes", test_votes_w },
		{ "an owner the votes stop naming is demoted and replaced", test_reversal_w },
		{ "a provisional choice contradicted is dropped", test_unconfirmed_w },
		{ "a wrong choice in one space makes no mirror image", test_mirror_w },
		{ "past owners kept with their times", test_past_owners_w },
		{ "bounded table and numbered buckets", test_bounds_w },
		{ "ASID wins over a clock wrong by 3 ms", test_wrong_clock_w },
		{ "one weighted look is one vote", test_one_look_w },
		{ "a task known to run elsewhere is set aside", test_elsewhere_w },
		{ "a sample's time spread widens what is near a switch", test_time_spread_w },
		{ "wrong owners are corrected", test_wrong_owners_corrected_w },
		{ "samples beyond the agent's stream do not vote", test_lagging_stream_w },
		{ "held samples wait for their space's owner", test_wait_owner_w },
		{ "a waiting sample holds up no other", test_wait_beside_w },
		{ "a wait run out: the elected pid files it", test_wait_elected_w },
		{ "exit and exec forget the space", test_exit_exec_w },
		{ "no agent: a bucket per address space", test_no_agent_w },
		{ "a witness decides a space's owner and stays", test_witness_w },
		{ "witnessed spaces file every sample under a wrong clock", test_witness_files_w },
	};

	return du_test_main("guest asid", tests, DU_TEST_N(tests), NULL, NULL);
}
