/*
 * Daemon tests: raw streams built in memory with raw_writer are fed to the
 * daemon's decode path over a temporary session; the sample files that come
 * out are found by name (sfn_parse) and read back (odb).
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "events/ev.h"
#include "opd_collector.h"
#include "opd_main.h"
#include "odb/odb.h"
#include "opd_daemon.h"
#include "opd_proc.h"
#include "opd_sfile.h"
#include "opd_image.h"
#include "raw/raw_stream.h"
#include "sfname/sfname.h"
#include "test_fixture.h"
#include "test_stats_doc.h"
#include "util/du_test.h"
#include "util/du_fs.h"

#define APP "/usr/bin/app"
#define LIBC "/usr/lib/libc.so.6"
#define KSTART 0xffffffff81000000ULL
#define MSTART 0xffffffffc0000000ULL

static struct tfx fx;	/* its session is fx.dir */

static void setup(const char *separate)
{
	struct dp_raw_event ev[2];

	tfx_tmpdir(&fx, "test_opd", false);
	tfx_conf(&fx);
	fx.conf.separate_str = separate;
	CU_ASSERT_FATAL(opd_parse_separate(separate, &fx.conf.separate) == 0);
	tfx_event_clk(&ev[0]);
	memset(&ev[1], 0, sizeof(ev[1]));
	strcpy(ev[1].name, "INST_RETIRED");
	ev[1].count = 50000;
	ev[1].unit_mask = 1;
	ev[1].flags = DP_RAW_EV_USER;
	tfx_start(&fx, ev, 2, 0);
}

/* ---- finding sample files ---- */

struct want {
	const char *domain;
	enum sfn_kind ikind;
	const char *image;
	enum sfn_kind dkind;
	const char *dep;
	const char *cg;		/* NULL: a flat file; else the {cg} image (kind of dep) */
	enum sfn_kind ckind;
	const char *event;
	int64_t tgid, tid, cpu;
	uint64_t key;
	/* results */
	uint64_t count;		/* count of key in the matching file */
	uint64_t total;		/* all counts in the matching file */
	int files;		/* files matching */
	int all_files;
};

static struct want *cur_want;
static size_t prefix_len;

static int key_cb(void *ctx, uint64_t key, uint64_t count)
{
	struct want *w = ctx;

	if (key == w->key)
		w->count += count;
	return 0;
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static int find_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	struct want *w = cur_want;
	struct sfn_name n;
	struct odb *db;

	if (flag != FTW_F || strstr(path, "/{stacks}/") || strstr(path, "/{images}"))
		return 0;
	w->all_files++;
	if (sfn_parse(path + prefix_len, &n)) {
		CU_FAIL("sample file name does not parse");
		fprintf(stderr, "bad name: %s\n", path + prefix_len);
		return 0;
	}
	if (str_eq(n.domain, w->domain) && n.image.kind == w->ikind && !strcmp(n.image.name, w->image) &&
	    n.dep.kind == w->dkind && !strcmp(n.dep.name, w->dep) &&
	    str_eq(n.cg.name, w->cg) && (!w->cg || n.cg.kind == w->ckind) &&
	    !strcmp(n.event, w->event ? w->event : "CPU_CLK_UNHALTED") &&
	    n.tgid == w->tgid && n.tid == w->tid && n.cpu == w->cpu) {
		w->files++;
		if (odb_open(&db, path, ODB_RDONLY, NULL) == 0) {
			odb_foreach(db, key_cb, w);
			w->total += odb_total(db);
			odb_close(db);
		} else {
			CU_FAIL("sample file does not open");
		}
	}
	sfn_name_release(&n);
	return 0;
}

static void lookup(struct want *w)
{
	char root[128];

	snprintf(root, sizeof(root), "%s/samples/current/", fx.dir);
	prefix_len = strlen(root);
	w->count = w->total = 0;
	w->files = w->all_files = 0;
	cur_want = w;
	nftw(root, find_cb, 16, FTW_PHYS);
}

/* A host file with (image, dep), all ids "all". */
static uint64_t count_at(enum sfn_kind ik, const char *image, enum sfn_kind dk, const char *dep,
			 uint64_t key)
{
	struct want w = { .ikind = ik, .image = image, .dkind = dk, .dep = dep,
			  .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL, .key = key };

	lookup(&w);
	return w.count;
}

/* A host {cg} file's count of arc (@from, @to). */
static uint64_t arc_at(enum sfn_kind dk, const char *dep, enum sfn_kind ck, const char *cg,
		       uint64_t from, uint64_t to)
{
	struct want w = { .ikind = dk, .image = dep, .dkind = dk, .dep = dep, .ckind = ck,
			  .cg = cg, .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL,
			  .key = from << 32 | to };

	lookup(&w);
	return w.count;
}

/* ---- stream helpers ---- */

static void put_map(uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff, const char *path)
{
	struct dp_raw_mmap m;

	memset(&m, 0, sizeof(m));
	m.pid = m.tid = pid;
	m.start = start;
	m.len = len;
	m.pgoff = pgoff;
	m.prot = 5;
	CU_ASSERT(raw_put_mmap(fx.w, &m, path, strlen(path)) == 0);
}

/* pid 100 runs APP at 0x400000 (pgoff 0) and libc at 0x7f0000000000 (pgoff 0x1000) */
static void put_app(uint32_t pid)
{
	CU_ASSERT(raw_put_comm(fx.w, pid, pid, DP_RAW_COMM_EXEC, "app") == 0);
	put_map(pid, 0x400000, 0x10000, 0, APP);
	put_map(pid, 0x7f0000000000ULL, 0x20000, 0x1000, LIBC);
}

static void put_kernel(void)
{
	CU_ASSERT(raw_put_kmod(fx.w, KSTART, 0x1000000, "vmlinux", 7) == 0);
	CU_ASSERT(raw_put_kmod(fx.w, MSTART, 0x10000, "kvm", 3) == 0);
}

static void put_ctx(uint32_t cpu, uint32_t pid, uint32_t tid, uint32_t mode)
{
	CU_ASSERT(raw_put_cpu(fx.w, cpu) == 0);
	CU_ASSERT(raw_put_task(fx.w, pid, tid) == 0);
	CU_ASSERT(raw_put_mode(fx.w, mode) == 0);
}

static uint64_t stat_key(const char *key)
{
	uint64_t v = ~0ULL;

	CU_ASSERT(opd_stats_read_key(fx.dir, key, &v) == 0);
	return v;
}

/* ---- tests ---- */

/* Call chains (raw type 14): the sample filed as ever, each caller-callee
 * pair an arc of the {cg} file naming both binaries (call site = return
 * address - 1), the whole stack in the stacks file; a chain that no
 * sample takes is counted. */
static void test_callchain_host(void)
{
	const uint64_t user[2] = { 0x400200, 0x7f0000000300ULL };
	const uint64_t kern[2] = { KSTART + 0x100, 0x400200 };
	char path[256], line[512];
	FILE *f;
	int stacks = 0;

	setup("none");
	put_kernel();
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT(raw_put_callchain(fx.w, 2, 0, 0, user) == 0);
		CU_ASSERT(raw_put_sample(fx.w, 0x401234, 0) == 0);
	}
	CU_ASSERT(raw_put_callchain(fx.w, 2, 0, 0, user) == 0);	/* orphan */
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_HOST_KERNEL) == 0);
	CU_ASSERT(raw_put_callchain(fx.w, 2, 1, 0, kern) == 0);
	CU_ASSERT(raw_put_sample(fx.w, KSTART + 0x50, 0) == 0);
	CU_ASSERT(raw_put_sample(fx.w, KSTART + 0x50, 0) == 0);	/* no chain */
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x1234) == 3);
	CU_ASSERT(count_at(SFN_KERN, "vmlinux", SFN_KERN, "vmlinux", 0x50) == 2);
	CU_ASSERT(arc_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x1ff, 0x1234) == 3);
	CU_ASSERT(arc_at(SFN_ROOT, LIBC, SFN_ROOT, APP, 0x12ff, 0x1ff) == 3);
	CU_ASSERT(arc_at(SFN_KERN, "vmlinux", SFN_KERN, "vmlinux", 0xff, 0x50) == 1);
	CU_ASSERT(arc_at(SFN_ROOT, APP, SFN_KERN, "vmlinux", 0x1ff, 0xff) == 1);
	CU_ASSERT(stat_key("cc_chains") == 5);
	CU_ASSERT(stat_key("cc_chains_orphan") == 1);
	CU_ASSERT(stat_key("cc_arcs") == 8);
	CU_ASSERT(stat_key("cc_stacks") == 2);
	CU_ASSERT(stat_key("samples_filed") == 5);
	snprintf(path, sizeof(path), "find %s/samples/current/{stacks} -type f", fx.dir);
	f = popen(path, "r");
	CU_ASSERT_FATAL(f && fgets(path, sizeof(path), f));
	pclose(f);
	path[strcspn(path, "\n")] = '\0';
	f = fopen(path, "r");
	CU_ASSERT_FATAL(f != NULL);
	while (fgets(line, sizeof(line), f))
		stacks += !strncmp(line, "stack 3 {root}" APP "/{dep}/{root}" APP "/CPU_CLK", 36) &&
			  strstr(line, " 0x1234 ") != NULL;
	fclose(f);
	CU_ASSERT(stacks == 1);
	tfx_teardown(&fx);
}

/* The {cg} file of an arc is found by the chain's context (thread,
 * event), not only by its binaries: chains of 20 threads and 2 events
 * with the same frames, one context after another (more contexts than
 * the arcs' cache keeps), each context's arcs counted in its own file. */
static void test_callchain_contexts(void)
{
	const uint64_t user[2] = { 0x400200, 0x7f0000000300ULL };
	struct want w = { .ikind = SFN_ROOT, .image = LIBC, .dkind = SFN_ROOT, .dep = LIBC,
			  .ckind = SFN_ROOT, .cg = APP, .tgid = 100, .cpu = SFN_ALL,
			  .key = 0x12ffULL << 32 | 0x1ff };
	unsigned int nr = 0;

	setup("thread");
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	/* context (t, e) has (t + e) % 4 + 1 chains, round by round */
	for (unsigned int round = 0; round < 4; round++)
		for (uint32_t c = 0; c < 40; c++) {
			if (round >= (c / 2 + c % 2) % 4 + 1)
				continue;
			CU_ASSERT(raw_put_task(fx.w, 100, 100 + c / 2) == 0);
			CU_ASSERT(raw_put_callchain(fx.w, 2, 0, 0, user) == 0);
			CU_ASSERT(raw_put_sample(fx.w, 0x401234, c % 2) == 0);
			nr++;
		}
	tfx_finish(&fx);
	for (uint32_t c = 0; c < 40; c++) {
		w.tid = 100 + c / 2;
		w.event = c % 2 ? "INST_RETIRED" : NULL;
		lookup(&w);
		CU_ASSERT(w.files == 1);
		CU_ASSERT(w.count == (c / 2 + c % 2) % 4 + 1);
	}
	CU_ASSERT(stat_key("cc_arcs") == 2 * nr);
	tfx_teardown(&fx);
}

/*
 * A chain with the last one's return addresses is not resolved again,
 * only while they resolve the same: in another process (other binaries
 * at those addresses) and after a new mapping over one of them, it is;
 * each repeat counts its arcs and its unresolved frame.
 */
static void test_callchain_repeat(void)
{
	const uint64_t user[3] = { 0x400200, 0x7f0000000300ULL, 0x2001 };
	const char *other = "/usr/bin/other", *libm = "/usr/lib/libm.so.6";

	setup("none");
	put_app(100);
	CU_ASSERT(raw_put_comm(fx.w, 101, 101, DP_RAW_COMM_EXEC, "other") == 0);
	put_map(101, 0x400000, 0x10000, 0, other);
	put_map(101, 0x7f0000000000ULL, 0x20000, 0x1000, LIBC);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	for (int i = 0; i < 8; i++) {
		if (i == 3)
			CU_ASSERT(raw_put_task(fx.w, 101, 101) == 0);
		if (i == 5)
			CU_ASSERT(raw_put_task(fx.w, 100, 100) == 0);
		if (i == 6)	/* libm over libc in 100 */
			put_map(100, 0x7f0000000000ULL, 0x20000, 0x1000, libm);
		CU_ASSERT(raw_put_callchain(fx.w, 3, 0, 0, user) == 0);
		CU_ASSERT(raw_put_sample(fx.w, 0x401234, 0) == 0);
	}
	tfx_finish(&fx);
	/* 0-2 and 5 in 100 with libc, 3-4 in 101, 6-7 in 100 with libm */
	CU_ASSERT(arc_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x1ff, 0x1234) == 6);
	CU_ASSERT(arc_at(SFN_ROOT, LIBC, SFN_ROOT, APP, 0x12ff, 0x1ff) == 4);
	CU_ASSERT(arc_at(SFN_ROOT, other, SFN_ROOT, other, 0x1ff, 0x1234) == 2);
	CU_ASSERT(arc_at(SFN_ROOT, LIBC, SFN_ROOT, other, 0x12ff, 0x1ff) == 2);
	CU_ASSERT(arc_at(SFN_ROOT, libm, SFN_ROOT, APP, 0x12ff, 0x1ff) == 2);
	CU_ASSERT(stat_key("cc_frames_unresolved") == 8);
	CU_ASSERT(stat_key("cc_arcs") + stat_key("cc_arcs_dropped") == 24);
	tfx_teardown(&fx);
}

static void test_user_main_binary(void)
{
	setup("none");
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	for (int i = 0; i < 5; i++)
		raw_put_sample(fx.w, 0x401234, 0);
	raw_put_sample(fx.w, 0x401238, 0);
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x1234) == 5);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x1238) == 1);
	CU_ASSERT(stat_key("samples_received") == 6);
	CU_ASSERT(stat_key("samples_filed") == 6);
	CU_ASSERT(stat_key("samples_host_user") == 6);
	CU_ASSERT(stat_key("unresolved_no_mapping") == 0);
	tfx_teardown(&fx);
}

static void test_library_separate_none(void)
{
	setup("none");
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x7f0000000010ULL, 0);
	tfx_finish(&fx);
	/* key = pc - start + pgoff */
	CU_ASSERT(count_at(SFN_ROOT, LIBC, SFN_ROOT, LIBC, 0x1010) == 1);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, LIBC, 0x1010) == 0);
	tfx_teardown(&fx);
}

static void test_library_separate_lib(void)
{
	setup("lib");
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x7f0000000010ULL, 0);
	raw_put_sample(fx.w, 0x400010, 0);
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, LIBC, 0x1010) == 1);
	CU_ASSERT(count_at(SFN_ROOT, LIBC, SFN_ROOT, LIBC, 0x1010) == 0);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x10) == 1);
	tfx_teardown(&fx);
}

static void test_kernel_and_module(void)
{
	setup("none");
	put_kernel();
	put_app(100);
	put_ctx(1, 100, 100, DP_MODE_HOST_KERNEL);
	raw_put_sample(fx.w, KSTART + 0x500, 0);
	raw_put_sample(fx.w, KSTART + 0x500, 0);
	raw_put_sample(fx.w, MSTART + 0x20, 0);
	raw_put_sample(fx.w, 0xffffffffa0000000ULL, 0);	/* in no range */
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_KERN, "vmlinux", SFN_KERN, "vmlinux", 0x500) == 2);
	CU_ASSERT(count_at(SFN_KERN, "kvm", SFN_KERN, "kvm", 0x20) == 1);
	CU_ASSERT(count_at(SFN_ANON, "kernel", SFN_ANON, "kernel", 0xffffffffa0000000ULL) == 1);
	CU_ASSERT(stat_key("unresolved_kernel") == 1);
	CU_ASSERT(stat_key("samples_host_kernel") == 4);
	CU_ASSERT(stat_key("samples_filed") == 4);
	tfx_teardown(&fx);
}

static void test_kernel_separate_kernel(void)
{
	setup("kernel");
	put_kernel();
	put_app(100);
	put_ctx(1, 100, 100, DP_MODE_HOST_KERNEL);
	raw_put_sample(fx.w, KSTART + 0x500, 0);
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_KERN, "vmlinux", 0x500) == 1);
	tfx_teardown(&fx);
}

static void test_fork_inherits(void)
{
	struct dp_raw_task_ev f = { .pid = 200, .ppid = 100, .tid = 200, .ptid = 100 };

	setup("none");
	put_app(100);
	CU_ASSERT(raw_put_fork(fx.w, &f) == 0);
	put_ctx(0, 200, 200, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400100, 0);
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x100) == 1);
	CU_ASSERT(stat_key("unresolved_no_mapping") == 0);
	tfx_teardown(&fx);
}

static void test_exec_drops(void)
{
	setup("none");
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400100, 0);
	CU_ASSERT(raw_put_comm(fx.w, 100, 100, DP_RAW_COMM_EXEC, "other") == 0);
	raw_put_sample(fx.w, 0x400100, 0);	/* the old mapping is gone */
	put_map(100, 0x400000, 0x1000, 0, "/usr/bin/other");
	raw_put_sample(fx.w, 0x400100, 0);
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x100) == 1);
	CU_ASSERT(count_at(SFN_ANON, "unknown", SFN_ANON, "unknown", 0x400100) == 1);
	CU_ASSERT(count_at(SFN_ROOT, "/usr/bin/other", SFN_ROOT, "/usr/bin/other", 0x100) == 1);
	CU_ASSERT(stat_key("unresolved_no_mapping") == 1);
	tfx_teardown(&fx);
}

static void test_sample_after_exit(void)
{
	struct dp_raw_task_ev e = { .pid = 100, .ppid = 1, .tid = 100, .ptid = 1 };
	const uint64_t s = 1000000000ULL;

	setup("none");
	CU_ASSERT(raw_put_time(fx.w, 10 * s) == 0);
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	CU_ASSERT(raw_put_exit(fx.w, &e) == 0);
	/* another CPU's buffer delivers a sample taken before the exit */
	put_ctx(1, 100, 100, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400200, 0);
	CU_ASSERT(raw_put_time(fx.w, 11 * s) == 0);
	raw_put_sample(fx.w, 0x400200, 0);
	/* long after: the process is gone */
	CU_ASSERT(raw_put_time(fx.w, 30 * s) == 0);
	raw_put_sample(fx.w, 0x400200, 0);
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x200) == 2);
	CU_ASSERT(stat_key("processes_exited") == 1);
	CU_ASSERT(stat_key("processes_freed") == 1);
	CU_ASSERT(stat_key("unresolved_no_mapping") == 1);
	tfx_teardown(&fx);
}

static void test_unknown_pid(void)
{
	setup("none");
	put_app(100);
	put_ctx(0, 555, 555, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400100, 0);
	raw_put_sample(fx.w, 0x400100, 0);
	tfx_finish(&fx);
	CU_ASSERT(count_at(SFN_ANON, "unknown", SFN_ANON, "unknown", 0x400100) == 2);
	CU_ASSERT(stat_key("unresolved_no_mapping") == 2);
	CU_ASSERT(stat_key("samples_filed") == 2);
	tfx_teardown(&fx);
}

static void test_no_task(void)
{
	setup("none");
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_HOST_USER) == 0);
	raw_put_sample(fx.w, 0x1234, 0);
	tfx_finish(&fx);
	CU_ASSERT(stat_key("unresolved_no_task") == 1);
	CU_ASSERT(count_at(SFN_ANON, "unknown", SFN_ANON, "unknown", 0x1234) == 1);
	tfx_teardown(&fx);
}

static void test_thread_cpu_names(void)
{
	struct want w = { .ikind = SFN_ROOT, .image = APP, .dkind = SFN_ROOT, .dep = APP,
			  .tgid = 100, .tid = 101, .cpu = 3, .key = 0x10 };

	setup("thread,cpu");
	put_app(100);
	put_ctx(3, 100, 101, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400010, 0);
	put_ctx(3, 100, 100, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400010, 0);
	put_ctx(2, 100, 101, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400010, 0);
	tfx_finish(&fx);
	lookup(&w);
	CU_ASSERT(w.files == 1 && w.count == 1);
	CU_ASSERT(w.all_files == 3);
	w.tid = 100;
	lookup(&w);
	CU_ASSERT(w.files == 1 && w.count == 1);
	w.tid = 101;
	w.cpu = 2;
	lookup(&w);
	CU_ASSERT(w.files == 1 && w.count == 1);
	tfx_teardown(&fx);
}

static void test_events_and_bad_event(void)
{
	struct want w = { .ikind = SFN_ROOT, .image = APP, .dkind = SFN_ROOT, .dep = APP,
			  .event = "INST_RETIRED", .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL,
			  .key = 0x10 };

	setup("none");
	put_app(100);
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	raw_put_sample(fx.w, 0x400010, 0);
	raw_put_sample(fx.w, 0x400010, 1);
	raw_put_sample(fx.w, 0x400010, 1);
	raw_put_sample(fx.w, 0x400010, 7);
	tfx_finish(&fx);
	lookup(&w);
	CU_ASSERT(w.count == 2);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 0x10) == 1);
	CU_ASSERT(stat_key("unresolved_bad_event") == 1);
	CU_ASSERT(stat_key("samples_received") == 4);
	CU_ASSERT(stat_key("samples_filed") == 3);
	tfx_teardown(&fx);
}

static void test_guest(void)
{
	struct want w = { .domain = "pid-4242", .ikind = SFN_ANON, .image = "guest-kernel",
			  .dkind = SFN_ANON, .dep = "guest-kernel", .tgid = SFN_ALL, .tid = SFN_ALL,
			  .cpu = SFN_ALL, .key = 0xffffffff81000010ULL };

	setup("none");
	put_ctx(0, 4242, 4250, DP_MODE_GUEST_KERNEL);
	raw_put_sample(fx.w, 0xffffffff81000010ULL, 0);
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_USER) == 0);
	raw_put_sample(fx.w, 0x401000, 0);
	tfx_finish(&fx);
	lookup(&w);
	CU_ASSERT(w.count == 1);
	w.image = w.dep = "guest-user";
	w.key = 0x401000;
	lookup(&w);
	CU_ASSERT(w.count == 1);
	CU_ASSERT(stat_key("samples_guest_kernel") == 1);
	CU_ASSERT(stat_key("samples_guest_user") == 1);
	tfx_teardown(&fx);
}

/* The kernel collector's ASID with no agent (replay here): guest-user
 * samples split per address space, {anon:guest-user:asN}; a CPU record
 * forgets the ASID until it is stated again. */
static void test_guest_asid_buckets(void)
{
	struct want w = { .domain = "pid-4242", .ikind = SFN_ANON, .image = "guest-user:as1",
			  .dkind = SFN_ANON, .dep = "guest-user:as1", .tgid = SFN_ALL,
			  .tid = SFN_ALL, .cpu = SFN_ALL, .key = 0x401000 };

	setup("none");
	put_ctx(0, 4242, 4250, DP_MODE_GUEST_USER);
	CU_ASSERT(raw_put_asid(fx.w, 0x1234000) == 0);
	raw_put_sample(fx.w, 0x401000, 0);
	raw_put_sample(fx.w, 0x401000, 0);
	CU_ASSERT(raw_put_asid(fx.w, 0x5678000) == 0);
	raw_put_sample(fx.w, 0x401000, 0);
	CU_ASSERT(raw_put_asid(fx.w, 0x1234000) == 0);
	raw_put_sample(fx.w, 0x401000, 0);
	put_ctx(1, 4242, 4250, DP_MODE_GUEST_USER);	/* no ASID stated */
	raw_put_sample(fx.w, 0x401000, 0);
	tfx_finish(&fx);
	lookup(&w);
	CU_ASSERT(w.count == 3);
	w.image = w.dep = "guest-user:as2";
	lookup(&w);
	CU_ASSERT(w.count == 1);
	w.image = w.dep = "guest-user";
	lookup(&w);
	CU_ASSERT(w.count == 1);
	tfx_teardown(&fx);
}

/* Many domains (the benchmark's 1,000; the split once stopped at 64):
 * each domain's address spaces get their own buckets. */
static void test_guest_asid_many_domains(void)
{
	struct want w = { .ikind = SFN_ANON, .image = "guest-user:as1", .dkind = SFN_ANON,
			  .dep = "guest-user:as1", .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL,
			  .key = 0x401000 };
	char name[32];

	setup("none");
	for (uint32_t d = 0; d < 200; d++) {
		put_ctx(0, 5000 + d, 5000 + d, DP_MODE_GUEST_USER);
		CU_ASSERT(raw_put_domain(fx.w, 5000 + d, 0) == 0);
		CU_ASSERT(raw_put_asid(fx.w, 0x1234000) == 0);
		raw_put_sample(fx.w, 0x401000, 0);
	}
	tfx_finish(&fx);
	for (uint32_t d = 0; d < 200; d += 199) {
		snprintf(name, sizeof(name), "pid-%u", 5000 + d);
		w.domain = name;
		lookup(&w);
		CU_ASSERT(w.count == 1);
	}
	tfx_teardown(&fx);
}

/* A host sample keeps one context however many guest runs (each with
 * its DOMAIN and ASID) come between its samples, and a guest kernel
 * sample one per domain whatever the ASID: a context made per guest run
 * before it would fill and drop the caches of a host with many domains.
 * A guest bucket serves the whole address space. */
static void test_contexts_many_domains(void)
{
	struct want w = { .domain = "pid-5007", .ikind = SFN_ANON, .image = "guest-user:as1",
			  .dkind = SFN_ANON, .dep = "guest-user:as1", .tgid = SFN_ALL,
			  .tid = SFN_ALL, .cpu = SFN_ALL, .key = 0x401000 };

	setup("none");
	put_kernel();
	for (uint32_t round = 0; round < 3; round++) {
		for (uint32_t d = 0; d < 100; d++) {
			put_ctx(0, 5000 + d, 5000 + d, DP_MODE_GUEST_USER);
			CU_ASSERT(raw_put_domain(fx.w, 5000 + d, 0) == 0);
			CU_ASSERT(raw_put_asid(fx.w, 0x1000 * (1 + round % 2)) == 0);
			raw_put_sample(fx.w, 0x401000, 0);
			raw_put_sample(fx.w, 0x7f0000401000ULL, 0);	/* another region */
			CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_KERNEL) == 0);
			raw_put_sample(fx.w, 0xffffffff81001000ULL, 0);
			put_ctx(0, 100, 100, DP_MODE_HOST_KERNEL);
			raw_put_sample(fx.w, KSTART + 0x50, 0);
		}
	}
	tfx_finish(&fx);
	lookup(&w);
	CU_ASSERT(w.count == 2);	/* rounds 0 and 2 */
	w.key = 0x7f0000401000ULL;
	lookup(&w);
	CU_ASSERT(w.count == 2);
	w.image = w.dep = "guest-kernel";
	w.key = 0xffffffff81001000ULL;
	lookup(&w);
	CU_ASSERT(w.count == 3);
	CU_ASSERT(count_at(SFN_KERN, "vmlinux", SFN_KERN, "vmlinux", 0x50) == 300);
	/* 100 domains x 2 spaces in user mode, 100 in kernel mode, 1 host */
	CU_ASSERT(stat_key("contexts") == 301);
	CU_ASSERT(stat_key("context_resets") == 0);
	tfx_teardown(&fx);
}

/* A context is found again through the one its task changed mode to
 * last time (the guess a run's first change of mode takes instead of the
 * hash), only when its tag is the sample's: a guest user context that
 * went to guest kernel mode before must not take the kernel's context
 * for another address space's samples. */
static void test_context_guess(void)
{
	struct want w = { .domain = "pid-5000", .ikind = SFN_ANON, .image = "guest-user:as2",
			  .dkind = SFN_ANON, .dep = "guest-user:as2", .tgid = SFN_ALL,
			  .tid = SFN_ALL, .cpu = SFN_ALL, .key = 0x401000 };

	setup("none");
	put_kernel();
	for (uint32_t round = 0; round < 3; round++) {
		put_ctx(0, 5000, 5001, DP_MODE_GUEST_USER);
		CU_ASSERT(raw_put_domain(fx.w, 5000, 0) == 0);
		CU_ASSERT(raw_put_asid(fx.w, 0x1000) == 0);
		raw_put_sample(fx.w, 0x401000, 0);
		CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_KERNEL) == 0);
		raw_put_sample(fx.w, 0xffffffff81001000ULL, 0);
		CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_USER) == 0);
		raw_put_sample(fx.w, 0x401000, 0);
		/* the same task, now another space: not the guess */
		CU_ASSERT(raw_put_asid(fx.w, 0x2000) == 0);
		raw_put_sample(fx.w, 0x401000, 0);
		/* another task between runs: no guess kept for it */
		put_ctx(0, 100, 100, DP_MODE_HOST_KERNEL);
		raw_put_sample(fx.w, KSTART + 0x50, 0);
	}
	tfx_finish(&fx);
	lookup(&w);
	CU_ASSERT(w.count == 3);
	w.image = w.dep = "guest-user:as1";
	lookup(&w);
	CU_ASSERT(w.count == 6);
	w.image = w.dep = "guest-kernel";
	w.key = 0xffffffff81001000ULL;
	lookup(&w);
	CU_ASSERT(w.count == 3);
	CU_ASSERT(count_at(SFN_KERN, "vmlinux", SFN_KERN, "vmlinux", 0x50) == 3);
	/* two spaces in user mode, kernel mode, the host's */
	CU_ASSERT(stat_key("contexts") == 4);
	tfx_teardown(&fx);
}

static void test_stats_file(void)
{
	char path[128], line[256];
	struct timespec before, after;
	FILE *f;
	int keys = 0;
	uint64_t t;
	bool running = false, collector = false, lost = false;

	setup("none");
	CU_ASSERT(raw_put_lost(fx.w, 7) == 0);
	CU_ASSERT(raw_put_record(fx.w, 200, "abcdefgh", 8) == 0);	/* unknown type */
	CU_ASSERT(raw_writer_flush(fx.w) == 0);
	clock_gettime(CLOCK_MONOTONIC, &before);
	CU_ASSERT(opd_daemon_dump(&fx.d) == 0);
	clock_gettime(CLOCK_MONOTONIC, &after);
	CU_ASSERT(stat_key("dumps") == 1);
	/* the dump's moment, on the clock another profiler can be told to use */
	t = stat_key("dump_time_ns");
	CU_ASSERT(t >= (uint64_t)before.tv_sec * 1000000000ULL + (uint64_t)before.tv_nsec);
	CU_ASSERT(t <= (uint64_t)after.tv_sec * 1000000000ULL + (uint64_t)after.tv_nsec);
	tfx_finish(&fx);
	snprintf(path, sizeof(path), "%s/stats", fx.dir);
	f = fopen(path, "r");
	CU_ASSERT_FATAL(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		keys++;
		running |= !strcmp(line, "running 0\n");
		collector |= !strcmp(line, "collector file\n");
		lost |= !strcmp(line, "samples_lost 7\n");
	}
	fclose(f);
	CU_ASSERT(running && collector && lost);
	CU_ASSERT(keys >= 20);
	/* every key the daemon writes is documented */
	CU_ASSERT_EQUAL(stats_keys_undocumented(path), 0);
	CU_ASSERT(stat_key("stream_unknown_records") == 1);
	snprintf(path, sizeof(path), "%s/session.conf", fx.dir);
	f = fopen(path, "r");
	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(fgets(line, sizeof(line), f) && !strcmp(line, "event CPU_CLK_UNHALTED:100000:0:1:1\n"));
	fclose(f);
	tfx_teardown(&fx);
}

/* Process 100 maps @n libraries /lib/lI.so and takes @rounds samples in
 * each, at offset 8. */
static void put_libs(int n, int rounds)
{
	char path[64];

	CU_ASSERT(raw_put_comm(fx.w, 100, 100, 0, "app") == 0);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/lib/l%d.so", i);
		put_map(100, 0x10000000ULL * (i + 1), 0x1000, 0, path);
	}
	put_ctx(0, 100, 100, DP_MODE_HOST_USER);
	for (int round = 0; round < rounds; round++)
		for (int i = 0; i < n; i++)
			raw_put_sample(fx.w, 0x10000000ULL * (i + 1) + 8, 0);
}

/* Each of put_libs' @n libraries holds @rounds samples at offset 8. */
static void check_libs(int n, uint64_t rounds)
{
	char path[64];

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/lib/l%d.so", i);
		CU_ASSERT(count_at(SFN_ROOT, path, SFN_ROOT, path, 8) == rounds);
	}
}

static void test_lru_cap(void)
{
	setup("none");
	fx.conf.max_open_files = 2;
	put_libs(6, 3);
	tfx_finish(&fx);
	check_libs(6, 3);
	CU_ASSERT(stat_key("sample_files") == 6);
	CU_ASSERT(stat_key("sample_files_evicted") > 0);
	tfx_teardown(&fx);
}

/*
 * The directories a new sample file is made below are remembered: where
 * they were moved away since (samples/current set aside, as a save does)
 * a new file of a remembered directory, and one of a new directory below
 * remembered ones, are still made, in the new tree.
 */
static void test_sfile_dirs_moved(void)
{
	char tmpl[] = "/tmp/test_opd_dirs.XXXXXX", cur[256], moved[128];
	struct opd_event_desc ev[2] = { { .name = "CPU_CLK", .count = 100000 },
					{ .name = "INST", .count = 50000 } };
	struct opd_images *images = opd_images_new();
	struct opd_sfile_key k = { .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL };
	struct opd_stats st = { 0 };
	struct opd_sfiles *sf;
	struct opd_conf conf;
	struct odb *db;
	uint32_t id;

	CU_ASSERT_FATAL(images && mkdtemp(tmpl));
	opd_conf_defaults(&conf);
	conf.session_dir = tmpl;
	sf = opd_sfiles_new(&conf, &st);
	CU_ASSERT_FATAL(sf && opd_sfiles_set_events(sf, ev, 2) == 0);
	k.image = k.dep = opd_image_get(images, SFN_ROOT, "/bin/a", 6);
	db = opd_sfile_get_id(sf, &k, &id);
	CU_ASSERT_FATAL(db != NULL);
	CU_ASSERT(odb_add(db, 0x10, 1) == 0);
	snprintf(cur, sizeof(cur), "%s/samples/current", tmpl);
	snprintf(moved, sizeof(moved), "%s/samples/moved", tmpl);
	CU_ASSERT_FATAL(rename(cur, moved) == 0);
	/* the directory of /bin/a's files is remembered, and gone */
	k.event = 1;
	CU_ASSERT(opd_sfile_get_id(sf, &k, &id) != NULL);
	snprintf(cur, sizeof(cur), "%s/samples/current/%s", tmpl,
		 "{root}/bin/a/{dep}/{root}/bin/a/INST.50000.0.all.all.all");
	CU_ASSERT(access(cur, F_OK) == 0);
	/* and again, for a new directory below remembered ones */
	snprintf(cur, sizeof(cur), "%s/samples/current", tmpl);
	snprintf(moved, sizeof(moved), "%s/samples/moved2", tmpl);
	CU_ASSERT_FATAL(rename(cur, moved) == 0);
	k.event = 0;
	k.image = k.dep = opd_image_get(images, SFN_ROOT, "/bin/b", 6);
	CU_ASSERT(opd_sfile_get_id(sf, &k, &id) != NULL);
	snprintf(cur, sizeof(cur), "%s/samples/current/%s", tmpl,
		 "{root}/bin/b/{dep}/{root}/bin/b/CPU_CLK.100000.0.all.all.all");
	CU_ASSERT(access(cur, F_OK) == 0);
	CU_ASSERT(st.sample_file_errors == 0);
	opd_sfiles_free(sf);
	opd_images_free(images);
	du_rm_tree(tmpl);
}

/*
 * The sample files of a daemon about to exit are closed without their
 * munmaps (the exit takes them down at once): opd_sfiles_free_exiting
 * leaves the mappings, opd_sfiles_free removes them, and the counts are
 * in the files either way.
 */
static void test_sfiles_free_exiting(void)
{
	char tmpl[] = "/tmp/test_opd_exit.XXXXXX", path[256];
	struct opd_event_desc ev = { .name = "CPU_CLK", .count = 100000 };
	struct opd_images *images = opd_images_new();
	struct opd_sfile_key k = { .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL };
	struct opd_stats st = { 0 };
	struct opd_sfiles *sf;
	struct opd_conf conf;
	uint64_t count = 0;

	CU_ASSERT_FATAL(images && mkdtemp(tmpl));
	opd_conf_defaults(&conf);
	conf.session_dir = tmpl;
	for (int exiting = 0; exiting < 2; exiting++) {
		sf = opd_sfiles_new(&conf, &st);
		CU_ASSERT_FATAL(sf && opd_sfiles_set_events(sf, &ev, 1) == 0);
		for (int i = 0; i < 3; i++) {
			char name[16];
			struct odb *db;

			snprintf(name, sizeof(name), "/bin/e%d", i);
			k.image = k.dep = opd_image_get(images, SFN_ROOT, name, strlen(name));
			db = opd_sfile_get(sf, &k);
			CU_ASSERT_FATAL(db != NULL);
			CU_ASSERT(odb_add(db, 0x40, (uint64_t)exiting + 1) == 0);
		}
		CU_ASSERT(du_test_count_maps(tmpl) == 3);
		if (exiting)
			opd_sfiles_free_exiting(sf);
		else
			opd_sfiles_free(sf);
		CU_ASSERT(du_test_count_maps(tmpl) == 3 * exiting);
	}
	snprintf(path, sizeof(path), "%s/samples/current/%s", tmpl,
		 "{root}/bin/e2/{dep}/{root}/bin/e2/CPU_CLK.100000.0.all.all.all");
	CU_ASSERT(odb_read_count(path, 0x40, &count) == 0);
	CU_ASSERT(count == 3);
	opd_sfiles_free_exiting(NULL);
	opd_images_free(images);
	du_rm_tree(tmpl);
}

/* This process's address space now, in bytes (VmSize). */
static unsigned long long vm_size(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long kib = 0;
	char line[256];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %llu kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib * 1024;
}

/* The system's limits met below --max-open-files (here the address
 * space, room for a few of the 40 files' mappings: where vm.max_map_count
 * would stop a host's daemon, mmap fails alike): files are closed and
 * reopened, the cap lowered and counted, and no sample is lost. */
static void test_lru_sys_limit(void)
{
	struct rlimit old, low;

	setup("none");
	fx.conf.max_open_files = 1000;
	CU_ASSERT_FATAL(getrlimit(RLIMIT_AS, &old) == 0);
	put_libs(40, 3);
	low = old;
	low.rlim_cur = vm_size() + 256 * 1024;
	CU_ASSERT_FATAL(setrlimit(RLIMIT_AS, &low) == 0);
	tfx_finish(&fx);
	CU_ASSERT(setrlimit(RLIMIT_AS, &old) == 0);
	check_libs(40, 3);
	CU_ASSERT(stat_key("sample_files") == 40);
	CU_ASSERT(stat_key("sample_file_errors") == 0);
	CU_ASSERT(stat_key("sample_files_sys_capped") > 0);
	CU_ASSERT(stat_key("sample_files_evicted") > 0);
	tfx_teardown(&fx);
}

static void test_map_overlap(void)
{
	struct opd_stats st = { 0 };
	struct opd_conf c;
	struct opd_images *im = opd_images_new();
	struct opd_procs *t;
	struct opd_proc *p;
	struct dp_raw_mmap m = { .pid = 1, .tid = 1, .start = 0x1000, .len = 0x3000, .pgoff = 0 };
	const struct opd_map *r;

	opd_conf_defaults(&c);
	t = opd_procs_new(&c, im, &st);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT(opd_proc_mmap(t, &m, "/a", 2) == 0);
	m.start = 0x2000;
	m.len = 0x1000;
	m.pgoff = 0x9000;
	CU_ASSERT(opd_proc_mmap(t, &m, "/b", 2) == 0);	/* splits /a */
	p = opd_proc_find(t, 1);
	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT(opd_proc_nr_maps(p) == 3);
	r = opd_proc_find_map(p, 0x3800, NULL, NULL);
	CU_ASSERT(r && !strcmp(r->image->name, "/a") && r->start == 0x3000 && r->pgoff == 0x2000);
	r = opd_proc_find_map(p, 0x2800, NULL, NULL);
	CU_ASSERT(r && !strcmp(r->image->name, "/b"));
	CU_ASSERT(opd_proc_main_image(p) && !strcmp(opd_proc_main_image(p)->name, "/a"));
	m.start = 0;
	m.len = 0x10000;
	CU_ASSERT(opd_proc_mmap(t, &m, "/c", 2) == 0);	/* covers all */
	CU_ASSERT(opd_proc_nr_maps(p) == 1);
	opd_procs_free(t);
	opd_images_free(im);
}

/* Replay through the file collector: corrupt and truncated files fail with
 * an error, a good one gives the same counts. */
static int file_sink(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -EIO;
}

/* Replay @raw through the collector table's "file" entry and the
 * daemon's loop, as oprofiled does. */
static int replay(const char *raw)
{
	const struct opd_collector_ops *ops = opd_collector_find("file");
	struct opd_collector_args a;
	void *state = NULL;
	int ret;

	CU_ASSERT_FATAL(ops != NULL);
	fx.conf.input = raw;
	memset(&a, 0, sizeof(a));
	a.conf = &fx.conf;
	a.sink = &fx.d.sink;
	ret = ops->open(&a, &state);
	if (!ret)
		ret = opd_daemon_run(&fx.d, ops, state);
	ops->close(state);
	return ret;
}

/* A small host stream (1000 samples in APP) in @raw; its size. */
static long write_stream(const char *raw)
{
	struct raw_writer *w;
	struct dp_raw_event ev;
	FILE *f;
	long size;

	f = fopen(raw, "w");
	CU_ASSERT_FATAL(f != NULL);
	w = raw_writer_new(file_sink, f, 0);
	memset(&ev, 0, sizeof(ev));
	strcpy(ev.name, "CPU_CLK_UNHALTED");
	ev.count = 100000;
	CU_ASSERT(raw_put_header(w, 0, DP_RAW_COLLECTOR_GEN, 0, &ev, 1) == 0);
	raw_put_comm(w, 100, 100, DP_RAW_COMM_EXEC, "app");
	{
		struct dp_raw_mmap m = { .pid = 100, .tid = 100, .start = 0x400000, .len = 0x1000 };

		raw_put_mmap(w, &m, APP, strlen(APP));
	}
	raw_put_task(w, 100, 100);
	raw_put_mode(w, DP_MODE_HOST_USER);
	for (int i = 0; i < 1000; i++)
		raw_put_sample(w, 0x400000 + (i % 16), 0);
	CU_ASSERT(raw_writer_close(w) == 0);
	size = ftell(f);
	fclose(f);
	return size;
}

static void test_file_collector(void)
{
	char raw[128];
	FILE *f;
	long size;

	setup("none");
	snprintf(raw, sizeof(raw), "%s/in.raw", fx.dir);
	size = write_stream(raw);
	CU_ASSERT(replay(raw) == 0);
	CU_ASSERT(opd_stream_finish(fx.d.stream) == 0);
	CU_ASSERT(opd_daemon_stop(&fx.d) == 0);
	CU_ASSERT(stat_key("samples_filed") == 1000);
	CU_ASSERT(count_at(SFN_ROOT, APP, SFN_ROOT, APP, 3) == 63);
	opd_daemon_fini(&fx.d);

	/* truncated: cut in the middle of a sample */
	CU_ASSERT(truncate(raw, size - 4) == 0);
	CU_ASSERT_FATAL(opd_daemon_init(&fx.d, &fx.conf, raw) == 0);
	CU_ASSERT(replay(raw) == -EBADMSG);
	opd_daemon_fini(&fx.d);

	/* corrupt: an escape with an impossible payload length */
	f = fopen(raw, "r+");
	CU_ASSERT_FATAL(f != NULL);
	{
		uint64_t bad[2] = { DP_RAW_ESCAPE, ((uint64_t)60000 << 32) | DP_RAW_TIME };

		fseek(f, size - 64, SEEK_SET);
		fwrite(bad, sizeof(bad), 1, f);
	}
	fclose(f);
	CU_ASSERT_FATAL(opd_daemon_init(&fx.d, &fx.conf, raw) == 0);
	CU_ASSERT(replay(raw) == -EBADMSG);
	CU_ASSERT(opd_stream_offset(fx.d.stream) == (uint64_t)(size - 64));
	tfx_teardown(&fx);
}

/* Options that must be refused before anything starts. */
static void test_bad_options(void)
{
	static const char *const bad[][3] = {
		{ "oprofiled", "--max-open-files=10x", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--max-open-files=0", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--max-open-files=-5", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--max-open-files=", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--max-open-files=99999999999", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--collector=nope", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--collector=file", "--session-dir=/nonexistent/s" },	/* no --input */
		{ "oprofiled", "--input=x.raw", "--session-dir=/nonexistent/s" },	/* perf */
		{ "oprofiled", "--domain-backend=nope", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--xen-read-budget=101", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--xen-read-budget=-1", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--xen-read-budget=2.5", "--session-dir=/nonexistent/s" },
		{ "oprofiled", "--xen-read-budget=", "--session-dir=/nonexistent/s" },
	};
	FILE *saved = stderr;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[4] = { (char *)bad[i][0], (char *)bad[i][1], (char *)bad[i][2], NULL };
		char out[4096];
		size_t n;

		/* refused by the parser: the message, then one line pointing at
		 * --help (not the whole usage text) */
		stderr = tmpfile();
		CU_ASSERT_FATAL(stderr != NULL);
		CU_ASSERT_EQUAL(opd_main(3, argv), 1);
		rewind(stderr);
		n = fread(out, 1, sizeof(out) - 1, stderr);
		out[n] = '\0';
		fclose(stderr);
		stderr = saved;
		if (!strstr(out, "Try 'oprofiled --help'"))
			printf("\n  not refused: %s\n", argv[1]);
		CU_ASSERT(strstr(out, "Try 'oprofiled --help'") != NULL);
		CU_ASSERT(strncmp(out, "oprofiled: ", 11) == 0);
		CU_ASSERT(strstr(out, "usage: oprofiled") == NULL);
	}
}

/* --collector=NAME goes through one table; each entry says what it needs. */
static void test_collector_table(void)
{
	const struct opd_collector_ops *perf = opd_collector_find("perf");
	const struct opd_collector_ops *file = opd_collector_find("file");
	char names[64];

	CU_ASSERT_FATAL(perf && file);
	CU_ASSERT_STRING_EQUAL(perf->name, "perf");
	CU_ASSERT(perf->caps & OPD_CAP_LIVE);
	CU_ASSERT(perf->caps & OPD_CAP_EVENTS);
	CU_ASSERT(!(perf->caps & OPD_CAP_INPUT));
	CU_ASSERT(file->caps & OPD_CAP_INPUT);
	CU_ASSERT(!(file->caps & (OPD_CAP_LIVE | OPD_CAP_EVENTS)));
	CU_ASSERT(opd_collector_find("kmod ") == NULL);
	CU_ASSERT(opd_collector_find("") == NULL);
	opd_collector_names(names, sizeof(names));
#ifdef HAVE_XEN
	CU_ASSERT_STRING_EQUAL(names, "perf|file|kmod|xen");
#else
	CU_ASSERT_STRING_EQUAL(names, "perf|file|kmod");
#endif
	opd_collector_names(names, 6);
	CU_ASSERT_STRING_EQUAL(names, "perf|");
}

/* --list-collectors (what opcontrol asks): every entry of the table, one
 * line each, its name and the words of its caps. */
static void test_collector_list(void)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0, n = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(f != NULL);
	opd_collector_list(f);
	fclose(f);
	CU_ASSERT(strstr(buf, "perf live events callchain\n") == buf);
	CU_ASSERT(strstr(buf, "\nfile input\n") != NULL);
	CU_ASSERT(strstr(buf, "\nkmod live events-optional callchain\n") != NULL);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, " ")] = '\0';
		CU_ASSERT(opd_collector_find(line) != NULL);
		n++;
	}
#ifdef HAVE_XEN
	CU_ASSERT_EQUAL(n, 4);
#else
	CU_ASSERT_EQUAL(n, 3);
#endif
	free(buf);
}

/* --record is the daemon's: a replay through the collector ops records
 * exactly the bytes it decoded, and a missing input fails at open. */
static void test_record_by_daemon(void)
{
	char raw[128], rec[128], *a, *b;
	const struct opd_collector_ops *ops = opd_collector_find("file");
	struct opd_collector_args args;
	void *state = NULL;
	long size;
	FILE *f;

	setup("none");
	snprintf(raw, sizeof(raw), "%s/in.raw", fx.dir);
	snprintf(rec, sizeof(rec), "%s/rec.raw", fx.dir);
	size = write_stream(raw);
	raw_writer_close(fx.w);
	fx.w = NULL;
	opd_daemon_fini(&fx.d);
	fx.conf.record = rec;
	CU_ASSERT_FATAL(opd_daemon_init(&fx.d, &fx.conf, raw) == 0);
	CU_ASSERT(replay(raw) == 0);
	CU_ASSERT(opd_daemon_stop(&fx.d) == 0);
	CU_ASSERT(stat_key("samples_filed") == 1000);
	a = calloc(2, (size_t)size + 1);
	CU_ASSERT_FATAL(a != NULL);
	b = a + size + 1;
	f = fopen(raw, "r");
	CU_ASSERT(f && fread(a, 1, (size_t)size + 1, f) == (size_t)size);
	if (f)
		fclose(f);
	f = fopen(rec, "r");
	CU_ASSERT(f && fread(b, 1, (size_t)size + 1, f) == (size_t)size);
	if (f)
		fclose(f);
	CU_ASSERT(memcmp(a, b, (size_t)size) == 0);
	free(a);

	memset(&args, 0, sizeof(args));
	fx.conf.input = "/nonexistent/in.raw";
	args.conf = &fx.conf;
	args.sink = &fx.d.sink;
	CU_ASSERT(ops->open(&args, &state) == -ENOENT);
	ops->close(NULL);
	tfx_teardown(&fx);
}

/* A guest's path is never stat()ed on the host: the sample file of a guest
 * image that also exists on the host records no mtime; the host's does. */
static void test_guest_path_not_statted(void)
{
	char tmpl[] = "/tmp/test_opd_nostat.XXXXXX", cmd[128];
	struct opd_event_desc ev = { .name = "CPU_CLK", .count = 100000 };
	struct opd_images *images = opd_images_new();
	struct opd_stats st;
	struct opd_sfiles *sf;
	struct opd_conf conf;
	struct opd_sfile_key k = { .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL };
	struct odb *db;

	CU_ASSERT_PTR_NOT_NULL_FATAL(images);
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpl));
	memset(&st, 0, sizeof(st));
	opd_conf_defaults(&conf);
	conf.session_dir = tmpl;
	sf = opd_sfiles_new(&conf, &st);
	CU_ASSERT_PTR_NOT_NULL_FATAL(sf);
	CU_ASSERT(opd_sfiles_set_events(sf, &ev, 1) == 0);
	k.image = k.dep = opd_image_get(images, SFN_ROOT, "/bin/sh", 7);
	k.domain = opd_image_get(images, SFN_ANON, "g1", 2);
	db = opd_sfile_get(sf, &k);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	CU_ASSERT_EQUAL(odb_get_desc(db)->mtime, 0);
	k.domain = NULL;
	db = opd_sfile_get(sf, &k);
	CU_ASSERT_PTR_NOT_NULL_FATAL(db);
	CU_ASSERT_NOT_EQUAL(odb_get_desc(db)->mtime, 0);
	opd_sfiles_free(sf);
	opd_images_free(images);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

/* ---- the perf collector embedded in another's stream ---- */

struct mem {
	unsigned char *p;
	size_t len;
};

static int mem_sink(void *ctx, const void *data, size_t len)
{
	struct mem *m = ctx;
	unsigned char *n = realloc(m->p, m->len + len);

	if (!n)
		return -ENOMEM;
	memcpy(n + m->len, data, len);
	m->p = n;
	m->len += len;
	return 0;
}

/* What the records in @m from @from say: TIME records, samples, and
 * which of CPU, TASK and MODE came before the first sample (bits). */
struct chunk {
	unsigned int times, samples, before_first;
};

static void walk_chunk(const struct mem *m, size_t off, struct chunk *c)
{
	memset(c, 0, sizeof(*c));
	while (off + 16 <= m->len) {
		uint64_t w0, w1;
		uint32_t type, len;

		memcpy(&w0, m->p + off, 8);
		memcpy(&w1, m->p + off + 8, 8);
		off += 16;
		if (w0 != DP_RAW_ESCAPE) {
			c->samples++;
			continue;
		}
		type = (uint32_t)w1;
		len = (uint32_t)(w1 >> 32);
		c->times += type == DP_RAW_TIME;
		if (!c->samples)
			c->before_first |= (type == DP_RAW_CPU ? 1u : 0) |
					   (type == DP_RAW_TASK ? 2u : 0) | (type == DP_RAW_MODE ? 4u : 0);
		off += (len + 7) / 8 * 8;
	}
	CU_ASSERT_EQUAL(off, m->len);
}

static void spin_ms(long ms)
{
	struct timespec a, b;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

/*
 * The xen collector's dom0 part: the perf collector with args.embedded
 * writes no header and no TIME record (the other collector's clock rules),
 * and every read re-states CPU, task and mode before its first sample,
 * even when they did not change, since other records came between.
 * Real perf_event_open (cpu-clock); skipped, saying so, where not allowed.
 */
static void test_perf_embedded(void)
{
	const struct opd_collector_ops *ops = opd_collector_find("perf");
	char dir[] = "/tmp/test_embed.XXXXXX", err[256];
	struct mem m = { NULL, 0 };
	struct opd_raw_sink sink = { .ctx = &m, .feed = mem_sink };
	struct opd_collector_args a;
	struct opd_conf c;
	struct ev_table *tab;
	struct pollfd pfd[64];
	struct chunk ch;
	uint64_t magic = 0;
	void *st = NULL;
	int ret;

	CU_ASSERT_FATAL(ops != NULL);
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	tab = ev_table_load(ev_default_dir(), "timer", err, sizeof(err));
	CU_ASSERT_FATAL(tab != NULL);
	opd_conf_defaults(&c);
	c.session_dir = dir;
	c.perf_pages = 16;
	c.nr_events = 1;
	strcpy(c.events[0].name, "TIMER");
	c.events[0].count = 100000;
	c.events[0].kernel = c.events[0].user = true;
	memset(&a, 0, sizeof(a));
	a.conf = &c;
	a.events = tab;
	a.sink = &sink;
	a.embedded = true;
	ret = ops->open(&a, &st);
	if ((ret == -EACCES || ret == -EPERM || ret == -ENOENT || ret == -ENODEV) &&
	    !getenv("DOMPROF_TEST_REQUIRE_PERF")) {
		printf("\n  skipped: the perf collector cannot open here (%s); "
		       "DOMPROF_TEST_REQUIRE_PERF=1 makes this a failure\n", strerror(-ret));
		goto out;
	}
	CU_ASSERT_EQUAL_FATAL(ret, 0);
	CU_ASSERT_EQUAL_FATAL(ops->start(st), 0);
	if (m.len >= 8)
		memcpy(&magic, m.p, 8);
	CU_ASSERT_NOT_EQUAL(magic, DP_RAW_MAGIC);	/* no header */
	for (int round = 0; round < 6; round++) {
		size_t from = m.len, n;

		spin_ms(50);
		n = ops->pollfds(st, pfd, 64);
		CU_ASSERT_EQUAL(ops->read(st, pfd, n), 0);
		walk_chunk(&m, from, &ch);
		CU_ASSERT(ch.samples > 0);
		CU_ASSERT_EQUAL(ch.times, 0);
		CU_ASSERT_EQUAL(ch.before_first, 7u);	/* CPU, task and mode again */
	}
	CU_ASSERT_EQUAL(ops->stop(st), 0);
	walk_chunk(&m, 0, &ch);
	CU_ASSERT_EQUAL(ch.times, 0);
out:
	ops->close(st);
	ev_table_free(tab);
	free(m.p);
	du_rm_tree(dir);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "user sample in the main binary", test_user_main_binary },
		{ "host call chains: {cg} arcs and stacks", test_callchain_host },
		{ "host call chains: arcs filed by their thread and event", test_callchain_contexts },
		{ "host call chains: a repeated chain resolved again where it differs", test_callchain_repeat },
		{ "library, --separate=none", test_library_separate_none },
		{ "library, --separate=lib", test_library_separate_lib },
		{ "kernel and module", test_kernel_and_module },
		{ "kernel, --separate=kernel", test_kernel_separate_kernel },
		{ "fork inherits mappings", test_fork_inherits },
		{ "exec drops mappings", test_exec_drops },
		{ "sample after exit on another cpu", test_sample_after_exit },
		{ "unknown pid", test_unknown_pid },
		{ "no task", test_no_task },
		{ "thread and cpu in names", test_thread_cpu_names },
		{ "events and a bad event index", test_events_and_bad_event },
		{ "guest samples", test_guest },
		{ "guest-user samples per address space (ASID)", test_guest_asid_buckets },
		{ "... in each of 200 domains", test_guest_asid_many_domains },
		{ "host and guest contexts among 100 domains", test_contexts_many_domains },
		{ "a mode's context found again by its task's last change", test_context_guess },
		{ "stats and session.conf", test_stats_file },
		{ "open file cap", test_lru_cap },
		{ "a new file's remembered directories moved away", test_sfile_dirs_moved },
		{ "a daemon about to exit leaves its files' mappings", test_sfiles_free_exiting },
		{ "the system's limits below the cap: nothing lost", test_lru_sys_limit },
		{ "overlapping mappings", test_map_overlap },
		{ "file collector", test_file_collector },
		{ "collector table", test_collector_table },
		{ "bad options refused", test_bad_options },
		{ "--record written by the daemon", test_record_by_daemon },
		{ "a guest path is not stat()ed on the host", test_guest_path_not_statted },
		{ "perf collector embedded in another stream", test_perf_embedded },
		{ "--list-collectors prints the collector table", test_collector_list },
	};

	/* the ingest benchmark that was here is daemon/bench_opd (not a test) */
	return du_test_main("daemon", tests, DU_TEST_N(tests), NULL, NULL);
}
