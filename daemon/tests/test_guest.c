/*
 * CUnit tests of the per-domain guest state (opd_guest) and the image
 * cache (opd_imgcache): frames made with ap_put_* are fed in as opagent
 * would send them; samples are resolved and filed as the daemon does.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "test_elf.h"
#include "opd_imgcache.h"
#include "opd_imgproof.h"
#include "opd_sfile.h"
#include "test_fixture.h"
#include "util/du_test.h"

#define MS 1000000ULL

static struct tgs gs;
static uint8_t buf[2 * 65600];

static void setup(void)
{
	tgs_setup(&gs, "test_guest");
}

static void teardown(void)
{
	tgs_teardown(&gs);
}

static struct opd_guest *guest(const char *name, const struct opd_guest_limits *lim)
{
	char dir[PATH_MAX], esc[256];
	struct opd_guest_limits l;

	/* as the daemon does: the directory is named by the escaped name */
	CU_ASSERT_FATAL(sfn_escape_component(name, strlen(name), esc, sizeof(esc)) > 0);
	if (!lim) {
		opd_guest_limits_default(&l);
		lim = &l;
	}
	snprintf(dir, sizeof(dir), "%s/domains/%s", gs.session, esc);
	return opd_guest_new(name, dir, lim, gs.images, gs.cache, &gs.st);
}

static int feed(struct opd_guest *g, ssize_t n, uint64_t host)
{
	CU_ASSERT_FATAL(n > 0);
	return opd_guest_feed(g, buf, (size_t)n, host);
}

static void hello(struct opd_guest *g, uint64_t guest_now, uint64_t host_now)
{
	struct dp_ag_hello h = { .proto_min = 1, .proto_max = 1, .nr_cpus = 2, .clock_id = 1,
				 .flags = DP_AG_HELLO_F_PERF | DP_AG_HELLO_F_SWITCH |
					  DP_AG_HELLO_F_IMAGES,
				 .now_ns = guest_now, .instance = 7,
				 .agent_version = 0x010203 };

	CU_ASSERT(feed(g, ap_put_hello(buf, sizeof(buf), &h, "6.1", 3), host_now) == 0);
}

static void mmap_(struct opd_guest *g, uint32_t pid, uint64_t start, uint64_t len,
		  uint64_t pgoff, uint32_t cookie, const char *path, size_t plen, uint8_t bid)
{
	struct dp_ag_mmap m = { .time_ns = 0, .cpu = DP_AG_CPU_UNKNOWN, .pid = pid, .tid = pid,
				.cookie = cookie, .start = start, .len = len, .pgoff = pgoff,
				.prot = 5 };

	if (bid) {
		m.build_id_size = 20;
		memset(m.build_id, bid, 20);
	}
	CU_ASSERT(feed(g, ap_put_mmap(buf, sizeof(buf), &m, path, plen), 0) == 0);
}

static void sw(struct opd_guest *g, uint32_t cpu, uint64_t t, uint32_t prev, uint32_t next)
{
	struct dp_ag_switch s = { .time_ns = t, .prev_pid = prev, .prev_tid = prev,
				  .next_pid = next, .next_tid = next };

	CU_ASSERT(feed(g, ap_put_switches(buf, sizeof(buf), cpu, &s, 1), 0) == 0);
}

/* PING at host @h0, PONG read back at host @h3; guest = host + @off. */
static void clock_sync(struct opd_guest *g, uint64_t h0, uint64_t h3, uint64_t off)
{
	struct dp_ag_pong p;
	uint8_t out[4096];
	size_t n;

	opd_guest_ping(g, h0);
	n = opd_guest_output(g, out, sizeof(out));
	CU_ASSERT(n > 0);
	p.token = 0;
	for (size_t o = 0; o + 12 <= n;) {
		struct dp_ag_frame f;

		memcpy(&f, out + o, sizeof(f));
		if (f.type == DP_AG_PING)
			memcpy(&p.token, out + o + 12, 8);
		o += 12 + f.len;
	}
	CU_ASSERT(p.token != 0);
	p.recv_ns = (h0 + h3) / 2 + off;
	p.send_ns = p.recv_ns;
	CU_ASSERT(feed(g, ap_put_pong(buf, sizeof(buf), &p), h3) == 0);
}

static void table(struct opd_guest *g, uint16_t type, const char *text)
{
	struct dp_ag_table_end e = { .total_bytes = strlen(text), .chunks = 1 };

	CU_ASSERT(feed(g, ap_put_text(buf, sizeof(buf), type, text, strlen(text)), 0) == 0);
	CU_ASSERT(feed(g, ap_put_table_end(buf, sizeof(buf), type + 1, &e), 0) == 0);
}

/* A guest with two processes and a timeline on vCPU 0:
 *   pid 100 runs /bin/a at 0x400000, pid 200 runs /usr/bin/b at 0x800000
 *   guest t=1000ms: 100 starts; t=1100ms: 200 starts
 * guest clock = host clock + 1000 ms. */
static struct opd_guest *scene(const char *name)
{
	struct opd_guest *g = guest(name, NULL);

	CU_ASSERT_FATAL(g != NULL);
	hello(g, 1000 * MS, 0);
	table(g, DP_AG_KALLSYMS, "ffffffff81000000 T _text\nffffffff81000100 T do_work\n"
				 "ffffffff82000000 T _etext\n");
	table(g, DP_AG_MODULES, "virtio_net 65536 0 - Live 0xffffffffc0100000\n");
	mmap_(g, 100, 0x400000, 0x10000, 0x1000, 1, "/bin/a", 6, 0xaa);
	mmap_(g, 200, 0x800000, 0x10000, 0, 2, "/usr/bin/b", 10, 0xbb);
	mmap_(g, 200, 0x7f0000000000, 0x100000, 0x2000, 3, "/lib/libc.so.6", 14, 0xcc);
	sw(g, 0, 1000 * MS, 0, 100);
	sw(g, 0, 1100 * MS, 100, 200);
	sw(g, 0, 1200 * MS, 200, 100);
	clock_sync(g, 10 * MS, 10 * MS + 200000, 1000 * MS);
	return g;
}

static void resolve(struct opd_guest *g, uint8_t mode, int vcpu, uint64_t host, uint64_t pc,
		    struct opd_guest_res *r)
{
	struct opd_guest_sample s = { .host_ns = host, .pc = pc, .vcpu = vcpu, .mode = mode };

	opd_guest_resolve(g, &s, r);
}

static void test_timeline(void)
{
	struct opd_guest *g = scene("web");
	struct opd_guest_res r;
	int64_t off;
	uint32_t version = 0;
	const char *release = NULL;

	/* HELLO's facts, for the domain's info file */
	CU_ASSERT_FATAL(opd_guest_facts(g, &version, &release));
	CU_ASSERT(version == 0x010203);
	CU_ASSERT_STRING_EQUAL(release, "6.1");
	CU_ASSERT(opd_guest_offset(g, &off, NULL));
	CU_ASSERT(off == (int64_t)(1000 * MS));
	/* host 150 ms = guest 1150 ms: pid 200 */
	resolve(g, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(r.resolved);
	CU_ASSERT(r.pid == 200);
	CU_ASSERT_STRING_EQUAL(r.dep->name, "/usr/bin/b");
	CU_ASSERT(r.key == 0x123);
	/* a library of pid 200: image = main, dep = libc, key = file offset */
	resolve(g, DP_MODE_GUEST_USER, 0, 150 * MS, 0x7f0000000010, &r);
	CU_ASSERT(r.resolved);
	CU_ASSERT_STRING_EQUAL(r.image->name, "/usr/bin/b");
	CU_ASSERT_STRING_EQUAL(r.dep->name, "/lib/libc.so.6");
	CU_ASSERT(r.key == 0x2010);
	/* host 50 ms = guest 1050: pid 100, /bin/a, key = pc - start + pgoff */
	resolve(g, DP_MODE_GUEST_USER, 0, 50 * MS, 0x400010, &r);
	CU_ASSERT(r.resolved && r.pid == 100);
	CU_ASSERT(r.key == 0x1010);
	/* pid 100's pc while pid 200 runs (mid-slice): not pid 200's mapping */
	resolve(g, DP_MODE_GUEST_USER, 0, 150 * MS, 0x400010, &r);
	CU_ASSERT(!r.resolved);
	CU_ASSERT(r.key == 0x400010);
	CU_ASSERT(r.counter == &gs.st.guest_user_unresolved_no_mapping);
	/* vCPU 1 has no timeline yet: the one task that maps the pc */
	resolve(g, DP_MODE_GUEST_USER, 1, 150 * MS, 0x400010, &r);
	CU_ASSERT(r.resolved && r.pid == 100 && r.key == 0x1010);
	CU_ASSERT(gs.st.guest_user_before_timeline == 1);
	/* ... or several that map the same file at the same offset */
	mmap_(g, 300, 0x400000, 0x10000, 0x1000, 1, "/bin/a", 6, 0xaa);
	resolve(g, DP_MODE_GUEST_USER, 1, 150 * MS, 0x400010, &r);
	CU_ASSERT(r.resolved && (r.pid == 100 || r.pid == 300) && r.key == 0x1010);
	CU_ASSERT_STRING_EQUAL(r.dep->name, "/bin/a");
	/* two tasks mapping different files there: no telling */
	mmap_(g, 301, 0x400000, 0x10000, 0, 4, "/bin/c", 6, 0xdd);
	resolve(g, DP_MODE_GUEST_USER, 1, 150 * MS, 0x400010, &r);
	CU_ASSERT(!r.resolved && r.counter == &gs.st.guest_user_unresolved_no_switch);
	CU_ASSERT(gs.st.guest_user_before_timeline == 2);
	/* long before vCPU 1's first switch (guest 1300 ms, 200 -> 100):
	 * the task it switched out ran, when its mappings hold the pc */
	sw(g, 1, 1300 * MS, 200, 100);
	resolve(g, DP_MODE_GUEST_USER, 1, 150 * MS, 0x800123, &r);
	CU_ASSERT(r.resolved && r.pid == 200 && r.key == 0x123);
	CU_ASSERT(gs.st.guest_user_before_timeline == 3);
	/* not its pc, and the owners disagree */
	resolve(g, DP_MODE_GUEST_USER, 1, 150 * MS, 0x400010, &r);
	CU_ASSERT(!r.resolved && r.counter == &gs.st.guest_user_unresolved_no_switch);
	CU_ASSERT(gs.st.guest_user_before_timeline == 3);
	opd_guest_free(g);
}

/* Near a switch the candidate whose mappings hold the pc wins. */
static void test_tie_break(void)
{
	struct opd_guest *g = scene("web");
	struct opd_guest_res r;

	/* guest 1100.2 ms: just after 200 started, but the pc is 100's */
	resolve(g, DP_MODE_GUEST_USER, 0, 100 * MS + 200000, 0x400010, &r);
	CU_ASSERT(r.resolved && r.pid == 100);
	/* guest 1099.8 ms: just before, the pc is 200's */
	resolve(g, DP_MODE_GUEST_USER, 0, 100 * MS - 200000, 0x800010, &r);
	CU_ASSERT(r.resolved && r.pid == 200);
	/* far from a switch, no tie-break: guest 1150 ms, pc of 100 */
	resolve(g, DP_MODE_GUEST_USER, 0, 150 * MS, 0x400010, &r);
	CU_ASSERT(!r.resolved);
	opd_guest_free(g);
}

static void test_kernel(void)
{
	struct opd_guest *g = scene("web");
	struct opd_guest_res r;
	char path[PATH_MAX];

	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffff81000123ULL, &r);
	CU_ASSERT(r.resolved && r.key == 0x123);
	CU_ASSERT(r.dep->kind == SFN_KERN && !strcmp(r.dep->name, "vmlinux"));
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffffc0100010ULL, &r);
	CU_ASSERT(r.resolved && r.key == 0x10 && !strcmp(r.dep->name, "virtio_net"));
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffffa0000000ULL, &r);
	CU_ASSERT(!r.resolved && r.counter == &gs.st.guest_kernel_unresolved);
	snprintf(path, sizeof(path), "%s/domains/web/kallsyms", gs.session);
	CU_ASSERT(access(path, R_OK) == 0);
	snprintf(path, sizeof(path), "%s/domains/web/modules", gs.session);
	CU_ASSERT(access(path, R_OK) == 0);
	opd_guest_free(g);
}

/* Samples handed back to be filed, as the daemon would file them. */
static size_t filed;

static void defer(struct opd_guest *g, const struct opd_guest_sample *s)
{
	struct opd_guest_sample out;
	struct opd_guest_res r;

	if (opd_guest_defer(g, s, &out, &r))
		filed++;
}

static size_t drain(struct opd_guest *g, uint64_t host_ns, bool all)
{
	struct opd_guest_sample out;
	struct opd_guest_res r;
	size_t n = 0;

	while (opd_guest_next(g, host_ns, all, &out, &r))
		n++;
	filed += n;
	return n;
}

/* Held samples wait for the timeline to pass them, at most the hold time;
 * overflow files the oldest at once. */
static void test_hold(void)
{
	struct opd_guest_limits lim;
	struct opd_guest *g;
	struct opd_guest_sample s = { .host_ns = 250 * MS, .pc = 0x400010, .vcpu = 0,
				      .mode = DP_MODE_GUEST_USER };

	opd_guest_limits_default(&lim);
	lim.queue = 4;
	g = guest("q", &lim);
	hello(g, 1000 * MS, 0);
	clock_sync(g, 10 * MS, 10 * MS, 1000 * MS);
	sw(g, 0, 1000 * MS, 0, 100);
	filed = 0;
	defer(g, &s);
	CU_ASSERT(drain(g, 300 * MS, false) == 0);
	sw(g, 0, 1300 * MS, 100, 0);	/* the stream passed guest 1250 ms */
	CU_ASSERT(drain(g, 300 * MS, false) == 1);
	for (int i = 0; i < 6; i++)
		defer(g, &s);
	CU_ASSERT(gs.st.guest_queue_overflow == 2);
	CU_ASSERT(filed == 3);
	CU_ASSERT(drain(g, 300 * MS + OPD_GUEST_HOLD_NS, false) == 4);
	CU_ASSERT(opd_guest_held(g) == 0);
	opd_guest_free(g);
}

/* A sample the agent's stream has passed is placed by the timeline; one
 * it has not passed when the hold ends is placed by the last switch known,
 * and counted as such (guest_user_past_timeline). */
static void test_hold_past_timeline(void)
{
	struct opd_guest *g = guest("late", NULL);
	struct opd_guest_sample s = { .host_ns = 150 * MS, .pc = 0x400010, .vcpu = 0,
				      .mode = DP_MODE_GUEST_USER };

	CU_ASSERT_FATAL(g != NULL);
	hello(g, 1000 * MS, 0);
	clock_sync(g, 10 * MS, 10 * MS, 1000 * MS);
	mmap_(g, 100, 0x400000, 0x10000, 0, 1, "/bin/a", 6, 0xaa);
	sw(g, 0, 1000 * MS, 0, 100);
	defer(g, &s);
	sw(g, 0, 1300 * MS, 100, 0);
	CU_ASSERT(drain(g, 160 * MS, false) == 1);
	CU_ASSERT(gs.st.guest_user_past_timeline == 0);
	sw(g, 0, 1400 * MS, 0, 100);
	s.host_ns = 500 * MS;
	defer(g, &s);
	CU_ASSERT(drain(g, 500 * MS + OPD_GUEST_HOLD_NS - 1, false) == 0);
	CU_ASSERT(drain(g, 500 * MS + OPD_GUEST_HOLD_NS, false) == 1);
	CU_ASSERT(gs.st.guest_user_past_timeline == 1);
	CU_ASSERT(gs.st.guest_user_resolved >= 2);
	opd_guest_free(g);
}

/* With no agent heard (a channel nothing answers on), samples wait only
 * the short hold: no sideband is coming; an agent's HELLO brings the
 * full hold back. */
static void test_hold_no_agent(void)
{
	struct opd_guest *g = guest("silent", NULL);
	struct opd_guest_sample s = { .host_ns = 100 * MS, .pc = 0x400010, .vcpu = 0,
				      .mode = DP_MODE_GUEST_USER };

	filed = 0;
	defer(g, &s);
	CU_ASSERT(drain(g, 100 * MS + OPD_GUEST_HOLD_NOAGENT_NS - 1, false) == 0);
	CU_ASSERT(drain(g, 100 * MS + OPD_GUEST_HOLD_NOAGENT_NS, false) == 1);
	CU_ASSERT(gs.st.guest_user_unresolved_no_agent == 1);
	hello(g, 1000 * MS, 0);
	s.host_ns = 1000 * MS;
	defer(g, &s);
	CU_ASSERT(drain(g, 1000 * MS + OPD_GUEST_HOLD_NOAGENT_NS, false) == 0);
	CU_ASSERT(drain(g, 1000 * MS + OPD_GUEST_HOLD_NS, false) == 1);
	CU_ASSERT(opd_guest_held(g) == 0);
	opd_guest_free(g);
}

/* The symbol table arrives beside the stream: with only its first chunk
 * in (which names _text) and the modules, kernel samples are placed and
 * not held. */
static void test_kernel_early(void)
{
	struct opd_guest *g = guest("early", NULL);
	struct opd_guest_sample s = { .host_ns = 5 * MS, .pc = 0xffffffff81000123ULL, .vcpu = 0,
				      .mode = DP_MODE_GUEST_KERNEL };
	struct dp_ag_table_end e = { .total_bytes = 0, .chunks = 0 };
	static const char first[] = "ffffffff81000000 T _text\nffffffff81000100 T do_work\n";
	struct opd_guest_res r;

	CU_ASSERT_FATAL(g != NULL);
	hello(g, 1000 * MS, 0);
	table(g, DP_AG_MODULES, "virtio_net 65536 0 - Live 0xffffffffc0100000\n");
	filed = 0;
	defer(g, &s);
	/* no _text yet: held, then placed nowhere */
	CU_ASSERT(drain(g, 5 * MS, false) == 0);
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffff81000123ULL, &r);
	CU_ASSERT(!r.resolved);
	CU_ASSERT(feed(g, ap_put_text(buf, sizeof(buf), DP_AG_KALLSYMS, first, strlen(first)), 0) == 0);
	CU_ASSERT(drain(g, 6 * MS, false) == 1);
	CU_ASSERT(filed == 1);
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffff81000123ULL, &r);
	CU_ASSERT(r.resolved && r.key == 0x123 && !strcmp(r.dep->name, "vmlinux"));
	/* a module's pc is the module's, not the image's */
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffffc0100010ULL, &r);
	CU_ASSERT(r.resolved && r.key == 0x10 && !strcmp(r.dep->name, "virtio_net"));
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffff80000000ULL, &r);
	CU_ASSERT(!r.resolved);
	/* the end of the table bounds the image at its last symbol */
	e.total_bytes = strlen(first);
	e.chunks = 1;
	CU_ASSERT(feed(g, ap_put_table_end(buf, sizeof(buf), DP_AG_KALLSYMS_END, &e), 0) == 0);
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffff81000123ULL, &r);
	CU_ASSERT(r.resolved);
	resolve(g, DP_MODE_GUEST_KERNEL, 0, 0, 0xffffffff90000000ULL, &r);
	CU_ASSERT(!r.resolved);
	opd_guest_free(g);
}

/* Samples with no timeline look at every task for the pc's owner, within
 * a budget of task visits a second (a guest that promises switches and
 * sends none cannot make that the cost of every sample). */
static void test_owner_budget(void)
{
	struct opd_guest_limits lim;
	struct opd_guest *g;
	struct opd_guest_res r;

	opd_guest_limits_default(&lim);
	/* one scan (the task table's 4096 buckets, for 8192 tasks, and its
	 * tasks), not two */
	lim.max_tasks = 8192;
	lim.owner_visits = 6000;
	g = guest("budget", &lim);
	CU_ASSERT_FATAL(g != NULL);
	hello(g, 1000 * MS, 0);
	mmap_(g, 100, 0x400000, 0x10000, 0x1000, 1, "/bin/a", 6, 0xaa);
	clock_sync(g, 10 * MS, 10 * MS + 200000, 1000 * MS);
	resolve(g, DP_MODE_GUEST_USER, 0, 150 * MS, 0x400010, &r);
	CU_ASSERT(r.resolved && r.pid == 100);
	resolve(g, DP_MODE_GUEST_USER, 0, 151 * MS, 0x400010, &r);
	CU_ASSERT(!r.resolved && r.counter == &gs.st.guest_user_unresolved_no_switch);
	CU_ASSERT(gs.st.guest_owner_scans_capped == 1);
	/* a second later the budget is back */
	resolve(g, DP_MODE_GUEST_USER, 0, 1151 * MS, 0x400010, &r);
	CU_ASSERT(r.resolved && r.pid == 100);
	CU_ASSERT(gs.st.guest_owner_scans_capped == 1);
	opd_guest_free(g);
}

/* ---- hostile guests ---- */

static void test_bad_frames(void)
{
	struct opd_guest *g = scene("bad"), *other = scene("good");
	struct dp_ag_frame f = { .magic = DP_AG_MAGIC, .type = DP_AG_MMAP, .len = 4 };
	struct opd_guest_res r;
	ssize_t n;

	/* wrong length for the type: skipped and counted */
	memcpy(buf, &f, sizeof(f));
	memset(buf + 12, 0, 4);
	CU_ASSERT(opd_guest_feed(g, buf, 16, 0) == 0);
	CU_ASSERT(gs.st.agent_bad_frames == 1);
	/* unknown type: skipped by length */
	f.type = 999;
	f.len = 3;
	memcpy(buf, &f, sizeof(f));
	CU_ASSERT(opd_guest_feed(g, buf, 15, 0) == 0);
	CU_ASSERT(gs.st.agent_unknown_frames == 1);
	/* giant switch count: the count disagrees with the payload */
	n = ap_put_frame(buf, sizeof(buf), DP_AG_SWITCH, "\0\0\0\0\xff\xff\xff\x7f", 8);
	CU_ASSERT(opd_guest_feed(g, buf, (size_t)n, 0) == 0);
	CU_ASSERT(gs.st.agent_bad_frames == 2);
	/* the state still works */
	resolve(g, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(r.resolved);
	/* giant length: not the protocol, the channel is closed */
	f.type = DP_AG_MMAP;
	f.len = 1u << 30;
	memcpy(buf, &f, sizeof(f));
	CU_ASSERT(opd_guest_feed(g, buf, 12, 0) == -EBADMSG);
	CU_ASSERT(gs.st.agent_closed_bad == 1);
	/* the other domain is unaffected */
	resolve(other, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(r.resolved && r.pid == 200);
	/* after a reconnect stale bytes are skipped up to the next HELLO */
	opd_guest_reset_input(g);
	memset(buf, 0x41, 100);
	CU_ASSERT(opd_guest_feed(g, buf, 100, 0) == 0);
	hello(g, 1000 * MS, 0);
	CU_ASSERT(gs.st.agent_skipped_bytes >= 89);
	opd_guest_free(g);
	opd_guest_free(other);
}

static int count_entries(const char *d);

/* Entries of directory @d, hidden ones too (-1: cannot be read). */
static int count_all(const char *d)
{
	DIR *dir = opendir(d);
	struct dirent *de;
	int n = 0;

	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(dir);
	return n;
}

/* "/.." repeated @n times then @rest: more ".." than the session's depth,
 * so that, were it not sanitized, the path would climb to the root and
 * come down into @rest (an absolute path). */
static size_t climb(char *out, size_t size, int n, const char *rest)
{
	size_t len = 0;

	for (int i = 0; i < n && len + 3 < size; i++)
		len += (size_t)snprintf(out + len, size - len, "/..");
	len += (size_t)snprintf(out + len, size - len, "%s", rest);
	return len < size ? len : size - 1;
}

/*
 * Hostile paths: "..", braces, NUL bytes, 4 KiB; filed as the daemon files
 * them.  The ".." paths climb from the sample file's directory past the
 * filesystem root and come down into "outside", a sibling of the session:
 * unsanitized, the sample files would be made there.  Nothing may exist
 * in it afterwards.
 */
static void test_paths(void)
{
	struct opd_guest *g = guest("h/../../x", NULL);
	struct opd_conf conf;
	struct opd_sfiles *sf;
	static const char nul_path[] = "/bin/\0../../etc/x";
	char longp[DP_AG_MAX_PATH], outside[160], up[1024], up_nul[1024], up_esc[1024], rest[512];
	struct {
		const char *p;
		size_t len;
	} paths[] = {
		{ up, 0 },
		{ "/a/{root}/../{kern}/b}{", 23 },
		{ nul_path, sizeof(nul_path) - 1 },
		{ up_esc, 0 },
		{ up_nul, 0 },
		{ longp, sizeof(longp) },
	};

	CU_ASSERT_FATAL(g != NULL);
	snprintf(outside, sizeof(outside), "%s/outside", gs.top);
	CU_ASSERT_FATAL(mkdir(outside, 0755) == 0);
	paths[0].len = climb(up, sizeof(up), 40, outside);
	snprintf(rest, sizeof(rest), "/x/%%2e%%2e%s/evil", outside);
	paths[3].len = climb(up_esc, sizeof(up_esc), 40, rest);
	snprintf(rest, sizeof(rest), "%s/b\n{dep}", outside);
	paths[4].len = climb(up_nul, sizeof(up_nul), 40, rest);
	memset(longp, 'z', sizeof(longp));
	for (size_t i = 0; i < sizeof(longp); i += 200)
		longp[i] = '/';
	opd_conf_defaults(&conf);
	conf.session_dir = gs.session;
	sf = opd_sfiles_new(&conf, &gs.st);
	CU_ASSERT_FATAL(sf != NULL);
	struct opd_event_desc ev = { .name = "CPU_CLK", .count = 100000 };
	CU_ASSERT(opd_sfiles_set_events(sf, &ev, 1) == 0);
	hello(g, 1000 * MS, 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		mmap_(g, 300 + (uint32_t)i, 0x400000, 0x1000, 0, 10 + (uint32_t)i, paths[i].p,
		      paths[i].len, 0);
	clock_sync(g, 0, 0, 1000 * MS);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct opd_guest_res r;
		struct opd_sfile_key k = { .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL };
		struct odb *db;

		sw(g, 0, (2000 + i) * MS, 0, 300 + (uint32_t)i);
		resolve(g, DP_MODE_GUEST_USER, 0, (1000 + i) * MS + 500000, 0x400010, &r);
		/* the 4 KiB path is too long for a name: anonymous, counted */
		CU_ASSERT(r.resolved == (paths[i].p != longp));
		if (!r.resolved)
			continue;
		CU_ASSERT(r.dep->name[0] == '/' && !strstr(r.dep->name, "/../"));
		k.domain = opd_image_get(gs.images, SFN_ANON, "h/../../x", 9);
		k.image = r.image;
		k.dep = r.dep;
		db = opd_sfile_get(sf, &k);
		CU_ASSERT(db != NULL);
		if (db)
			CU_ASSERT(odb_add(db, r.key, 1) == 0);
	}
	opd_sfiles_sync(sf);
	opd_sfiles_free(sf);
	opd_guest_free(g);
	/* nothing was made outside the session, and the session and the
	 * outside directory are all the top directory holds */
	CU_ASSERT(count_all(outside) == 0);
	CU_ASSERT(count_all(gs.top) == 2);
	CU_ASSERT(gs.st.guest_paths_rejected == 1);
}

/* Floods of tasks and mappings hit the caps (counted), memory stays
 * bounded; 64 KiB of table text is taken in chunks within its cap. */
static void test_floods(void)
{
	struct opd_guest_limits lim;
	struct opd_guest *g;
	static char text[65536];

	opd_guest_limits_default(&lim);
	lim.max_tasks = 8;
	lim.max_maps = 20;
	lim.max_table_bytes = 100000;
	g = guest("flood", &lim);
	hello(g, 0, 0);
	for (uint32_t pid = 1; pid <= 50; pid++)
		mmap_(g, pid, 0x400000, 0x1000, 0, pid, "/bin/x", 6, 0);
	CU_ASSERT(opd_guest_nr_tasks(g) == 8);
	CU_ASSERT(gs.st.guest_tasks_capped == 42);
	for (uint64_t i = 0; i < 50; i++)
		mmap_(g, 1, 0x1000000 + i * 0x2000, 0x1000, 0, 1, "/bin/y", 6, 0);
	CU_ASSERT(opd_guest_nr_maps(g) == 20);
	CU_ASSERT(gs.st.guest_maps_capped > 0);
	memset(text, 'k', sizeof(text));
	CU_ASSERT(feed(g, ap_put_text(buf, sizeof(buf), DP_AG_KALLSYMS, text, sizeof(text)), 0) == 0);
	CU_ASSERT(feed(g, ap_put_text(buf, sizeof(buf), DP_AG_KALLSYMS, text, sizeof(text)), 0) == 0);
	CU_ASSERT(gs.st.guest_bytes_capped == 1);
	CU_ASSERT(opd_guest_bytes(g) < lim.max_bytes);
	opd_guest_free(g);
}

static size_t image_request(struct opd_guest *g, uint32_t *cookie)
{
	uint8_t out[4096];
	size_t n = opd_guest_output(g, out, sizeof(out)), found = 0;

	for (size_t o = 0; o + 12 <= n;) {
		struct dp_ag_frame f;

		memcpy(&f, out + o, sizeof(f));
		if (f.type == DP_AG_IMAGE_REQUEST) {
			memcpy(cookie, out + o + 12, 4);
			found++;
		}
		o += 12 + f.len;
	}
	return found;
}

/* Content entries ("h" + SHA-256) of the cache directory @d. */
static int count_entries(const char *d)
{
	DIR *dir = opendir(d);
	struct dirent *de;
	int n = 0;

	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		n += de->d_name[0] == 'h' && strlen(de->d_name) == 65;
	closedir(dir);
	return n;
}

/* @g answers its one outstanding IMAGE_REQUEST (@cookie) with @len bytes. */
static void upload(struct opd_guest *g, uint32_t cookie, const uint8_t *bytes, size_t len)
{
	struct dp_ag_image_data d = { .cookie = cookie };
	struct dp_ag_image_end e = { .cookie = cookie, .status = DP_AG_IMAGE_SENT, .size = len };

	CU_ASSERT(feed(g, ap_put_image_data(buf, sizeof(buf), &d, bytes, len), 0) == 0);
	CU_ASSERT(feed(g, ap_put_image_end(buf, sizeof(buf), &e), 0) == 0);
}

/* The cache entry domain @dom's map names for @guest_path ("" if none). */
static void mapped(const char *dom, const char *guest_path, char *rel, size_t size)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	rel[0] = '\0';
	snprintf(path, sizeof(path), "%s/domains/%s/images", gs.session, dom);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');

		line[strcspn(line, "\n")] = '\0';
		if (tab && !strcmp(tab + 1, guest_path)) {
			*tab = '\0';
			snprintf(rel, size, "%s", line);
			break;
		}
	}
	fclose(f);
}

/* Whether the session file @rel holds exactly @bytes. */
static bool holds(const char *rel, const uint8_t *bytes, size_t len)
{
	char path[PATH_MAX];
	uint8_t got[2 * TEST_ELF_MAX];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", gs.session, rel);
	f = fopen(path, "rb");
	if (!f)
		return false;
	n = fread(got, 1, sizeof(got), f);
	fclose(f);
	return n == len && !memcmp(got, bytes, len);
}

/* Two domains run the same binary: each is asked for it (the build id
 * proves nothing), its bytes are stored once, both maps name that entry,
 * and the build-id hint lists it. */
static void test_image_dedup(void)
{
	struct opd_guest *g1 = scene("one"), *g2 = scene("two");
	struct opd_guest_res r;
	struct dp_ag_image_data d = { .cookie = 3 };
	struct dp_ag_image_end e = { .cookie = 3, .status = DP_AG_IMAGE_SENT };
	uint32_t cookie = 0;
	char path[PATH_MAX], rel1[PATH_MAX], rel2[PATH_MAX], line[512];
	uint8_t elf[TEST_ELF_MAX];
	size_t elf_len = test_elf(elf, 0xbb, 20);
	FILE *f;

	image_request(g1, &cookie);	/* drop HOST_HELLO etc. */
	image_request(g2, &cookie);
	resolve(g1, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(r.resolved);
	CU_ASSERT(image_request(g1, &cookie) == 1);
	CU_ASSERT(cookie == 2);
	upload(g1, 2, elf, elf_len);
	CU_ASSERT(gs.st.guest_images_cached == 1);
	/* asked once only */
	resolve(g1, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800124, &r);
	CU_ASSERT(image_request(g1, &cookie) == 0);
	/* the second domain is asked too; the same bytes are not stored again */
	resolve(g2, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(image_request(g2, &cookie) == 1);
	upload(g2, 2, elf, elf_len);
	CU_ASSERT(gs.st.guest_images_cached == 1);
	CU_ASSERT(gs.st.guest_images_dedup == 1);
	snprintf(path, sizeof(path), "%s/images", gs.session);
	CU_ASSERT(count_entries(path) == 1);
	mapped("one", "/usr/bin/b", rel1, sizeof(rel1));
	mapped("two", "/usr/bin/b", rel2, sizeof(rel2));
	CU_ASSERT_STRING_EQUAL(rel1, rel2);
	CU_ASSERT(strncmp(rel1, "images/h", 8) == 0 && strlen(rel1) == 7 + 65 + 2);
	CU_ASSERT(holds(rel1, elf, elf_len));
	snprintf(path, sizeof(path), "%s/images/by-build-id/%s", gs.session,
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	f = fopen(path, "r");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(fgets(line, sizeof(line), f) != NULL);
	CU_ASSERT(fgets(line + 100, sizeof(line) - 100, f) == NULL);	/* listed once */
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	CU_ASSERT(strncmp(rel1 + 7, line, 65) == 0);
	/* a wrong offset aborts a transfer; nothing is cached, no temporary
	 * file is left, and the image stays unmapped */
	resolve(g1, DP_MODE_GUEST_USER, 0, 150 * MS, 0x7f0000000010, &r);
	CU_ASSERT(r.resolved);
	CU_ASSERT(image_request(g1, &cookie) == 1);
	CU_ASSERT(cookie == 3);
	d.offset = 0;
	e.size = 5;
	CU_ASSERT(feed(g1, ap_put_image_data(buf, sizeof(buf), &d, "ELF", 3), 0) == 0);
	d.offset = 4;
	CU_ASSERT(feed(g1, ap_put_image_data(buf, sizeof(buf), &d, "!!", 2), 0) == 0);
	CU_ASSERT(feed(g1, ap_put_image_end(buf, sizeof(buf), &e), 0) == 0);
	CU_ASSERT(gs.st.guest_images_cached == 1);
	CU_ASSERT(gs.st.guest_images_failed == 1);
	snprintf(path, sizeof(path), "%s/images", gs.session);
	CU_ASSERT(count_all(path) == 2);	/* the entry and by-build-id */
	mapped("one", "/lib/libc.so.6", rel1, sizeof(rel1));
	CU_ASSERT_STRING_EQUAL(rel1, "");
	opd_guest_free(g1);
	opd_guest_free(g2);
}

/*
 * Issue 23, item 4: domain "evil" uploads first, bytes whose own build-id
 * note is the one domain "victim"'s /usr/bin/b has (claimed in its MMAP
 * and IMAGE_END too, and the note agrees, so nothing looks amiss).  The
 * victim is still asked for its own file; each domain's map names the
 * bytes that domain uploaded, in an entry of their own, and the hint
 * lists both.  (Before, the forged note made the evil bytes the cache's
 * entry for that build id, and the victim was mapped to them unasked.)
 */
static void test_image_poison(void)
{
	struct opd_guest *evil = scene("evil"), *victim = scene("victim");
	struct opd_guest_res r;
	uint8_t good[TEST_ELF_MAX], bad[TEST_ELF_MAX + 8];
	size_t good_len = test_elf(good, 0xbb, 20), bad_len = test_elf(bad, 0xbb, 20);
	char path[PATH_MAX], rel_e[PATH_MAX], rel_v[PATH_MAX], line[512];
	uint32_t cookie = 0;
	int hints = 0;
	FILE *f;

	memcpy(bad + bad_len, "\xcc\xcc\xcc\xcc\x90\x90\x90\xc3", 8);	/* other code */
	bad_len += 8;
	image_request(evil, &cookie);
	image_request(victim, &cookie);
	resolve(evil, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(image_request(evil, &cookie) == 1);
	upload(evil, cookie, bad, bad_len);
	CU_ASSERT(gs.st.guest_images_cached == 1);
	CU_ASSERT(gs.st.guest_hostile_image_mismatch == 0);	/* a consistent forgery */
	resolve(victim, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(gs.st.guest_images_dedup == 0);
	CU_ASSERT_FATAL(image_request(victim, &cookie) == 1);	/* its own copy */
	upload(victim, cookie, good, good_len);
	CU_ASSERT(gs.st.guest_images_cached == 2);
	CU_ASSERT(gs.st.guest_images_dedup == 0);
	snprintf(path, sizeof(path), "%s/images", gs.session);
	CU_ASSERT(count_entries(path) == 2);
	mapped("evil", "/usr/bin/b", rel_e, sizeof(rel_e));
	mapped("victim", "/usr/bin/b", rel_v, sizeof(rel_v));
	CU_ASSERT(strcmp(rel_e, rel_v) != 0);
	CU_ASSERT(holds(rel_e, bad, bad_len));
	CU_ASSERT(holds(rel_v, good, good_len));
	/* the hint lists both claimants: candidates, not proof */
	snprintf(path, sizeof(path), "%s/images/by-build-id/%s", gs.session,
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	f = fopen(path, "r");
	CU_ASSERT_FATAL(f != NULL);
	while (fgets(line, sizeof(line), f))
		hints++;
	fclose(f);
	CU_ASSERT(hints == 2);
	opd_guest_free(evil);
	opd_guest_free(victim);
}

/* A claim that the uploaded file's own note denies is counted, and
 * changes nothing else: the bytes are filed by their hash. */
static void test_image_claim_denied(void)
{
	struct opd_guest *g = scene("one");
	struct opd_guest_res r;
	uint8_t elf[TEST_ELF_MAX];
	size_t elf_len = test_elf(elf, 0x66, 20);	/* MMAP said bb */
	char rel[PATH_MAX];
	uint32_t cookie = 0;

	image_request(g, &cookie);
	resolve(g, DP_MODE_GUEST_USER, 0, 150 * MS, 0x800123, &r);
	CU_ASSERT(image_request(g, &cookie) == 1);
	upload(g, cookie, elf, elf_len);
	CU_ASSERT(gs.st.guest_images_cached == 1);
	CU_ASSERT(gs.st.guest_hostile_image_mismatch == 1);
	mapped("one", "/usr/bin/b", rel, sizeof(rel));
	CU_ASSERT(holds(rel, elf, elf_len));
	opd_guest_free(g);
}

/* The content id is SHA-256 (FIPS 180-2's "abc" vector). */
static void test_sha256(void)
{
	static const uint8_t want[OPD_SHA256_SIZE] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
		0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61,
		0xf2, 0x00, 0x15, 0xad,
	};
	uint8_t got[OPD_SHA256_SIZE];
	char path[PATH_MAX];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/abc", gs.top);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f && fputs("abc", f) >= 0 && !fclose(f));
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(opd_sha256_fd(fd, got) == 0);
	CU_ASSERT(memcmp(got, want, sizeof(want)) == 0);
	close(fd);
}

/* Per-domain counts: guest-user samples apart from the kernel's. */
static void test_dstats(void)
{
	struct opd_guest *g = scene("web");
	struct opd_guest_sample s = { .host_ns = 150 * MS, .pc = 0x800123, .vcpu = 0,
				      .mode = DP_MODE_GUEST_USER };
	const struct opd_guest_dstats *ds = opd_guest_dstats(g);

	defer(g, &s);			/* /usr/bin/b */
	s.pc = 0x900000;		/* no mapping */
	defer(g, &s);
	s.pc = 0xffffffff81000100;	/* do_work */
	s.mode = DP_MODE_GUEST_KERNEL;
	defer(g, &s);
	drain(g, 150 * MS, true);
	CU_ASSERT(ds->received == 3);
	CU_ASSERT(ds->resolved == 2);
	CU_ASSERT(ds->anon == 1);
	CU_ASSERT(ds->user_resolved == 1);
	CU_ASSERT(ds->user_unresolved == 1);
	opd_guest_free(g);
}

#define WRAP(fn) static void fn##_w(void) { setup(); fn(); teardown(); }
WRAP(test_timeline)
WRAP(test_tie_break)
WRAP(test_kernel)
WRAP(test_hold)
WRAP(test_hold_no_agent)
WRAP(test_hold_past_timeline)
WRAP(test_kernel_early)
WRAP(test_owner_budget)
WRAP(test_bad_frames)
WRAP(test_paths)
WRAP(test_floods)
WRAP(test_image_dedup)
WRAP(test_image_poison)
WRAP(test_image_claim_denied)
WRAP(test_sha256)
WRAP(test_dstats)

int main(void)
{
	static const struct du_test tests[] = {
		{ "timeline and clock offset", test_timeline_w },
		{ "pc-in-mappings tie-break near a switch", test_tie_break_w },
		{ "guest kernel and modules", test_kernel_w },
		{ "held samples", test_hold_w },
		{ "short hold with no agent heard", test_hold_no_agent_w },
		{ "a hold that ends before the timeline is counted", test_hold_past_timeline_w },
		{ "kernel samples placed before the whole symbol table", test_kernel_early_w },
		{ "owner scans within a budget", test_owner_budget_w },
		{ "bad frames; other domain unaffected", test_bad_frames_w },
		{ "hostile paths stay in the session", test_paths_w },
		{ "floods hit caps", test_floods_w },
		{ "image cache dedup across domains", test_image_dedup_w },
		{ "a forged build-id note gets its own entry", test_image_poison_w },
		{ "a claim the file denies is counted", test_image_claim_denied_w },
		{ "content ids are SHA-256", test_sha256_w },
		{ "per-domain guest-user counts", test_dstats_w },
	};

	return du_test_main("guest", tests, DU_TEST_N(tests), NULL, NULL);
}
