/*
 * Batch tests: a random stream fed to a daemon that batches its samples
 * (opd_batch) and to one that adds each sample at once must leave the
 * same sample files with the same nodes in the same order, at the end and
 * at a dump in the middle, also when a tiny open file cap evicts files all
 * the time, and with call chains, whose arcs go through the batch too
 * (their callers' arcs as repeats when a chain has the last one's callers).
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "odb/odb.h"
#include "opd_daemon.h"
#include "raw/raw_stream.h"
#include "util/du_test.h"
#include "util/du_fs.h"

#define KSTART 0xffffffff81000000ULL

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_sink(void *ctx, const void *data, size_t len)
{
	struct buf *b = ctx;

	if (b->len + len > b->cap) {
		size_t cap = (b->len + len) * 2;
		char *p = realloc(b->p, cap);

		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

static uint64_t rng_state = 0x853c49e6748fea9bULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A call chain of @depth frames before a sample: return addresses in the
 * process's app and libraries (a few of them in no mapping), the first
 * ones in the kernel for a kernel sample (@r's low bits). */
static void put_chain(struct raw_writer *w, uint64_t r, unsigned int depth)
{
	uint64_t f[DP_RAW_CC_MAX];
	uint32_t nk = r % 10 ? 0 : 2;

	for (unsigned int k = 0; k < depth; k++) {
		uint64_t x = rnd();

		f[k] = k < nk ? KSTART + (x >> 8) % 0x10000 :
		       x % 7 == 0 ? 0x1000 + k :
		       (x % 2 ? 0x400000 : 0x7f0000000000ULL + (x % 3 + 1) * 0x10000000ULL) +
		       (x >> 40) % 32 * 64 + 5;
	}
	CU_ASSERT(raw_put_callchain(w, depth, nk, 0, f) == 0);
}

/* Chains that repeat (make_stream): the last chain's return addresses
 * again, while the task stays, three times in four. */
static bool sticky;

static void put_sticky_chain(struct raw_writer *w, uint64_t r, unsigned int depth, bool task)
{
	static uint64_t f[DP_RAW_CC_MAX];
	static uint32_t nk;

	if (task || r % 4 == 0) {
		nk = r % 10 ? 0 : 2;
		for (unsigned int k = 0; k < depth; k++) {
			uint64_t x = rnd();

			f[k] = k < nk ? KSTART + (x >> 8) % 0x10000 :
			       x % 7 == 0 ? 0x1000 + k :
			       (x % 2 ? 0x400000 : 0x7f0000000000ULL +
				(x % 3 + 1) * 0x10000000ULL) + (x >> 40) % 32 * 64 + 5;
		}
	}
	CU_ASSERT(raw_put_callchain(w, depth, nk, 0, f) == 0);
}

/* 40 processes, each an app and 3 of 30 libraries, kernel samples, two
 * events, samples in short runs per task, every third with a call chain
 * of @depth frames (0: none); *@mid is a byte offset about half way,
 * between records. */
static void make_stream(struct buf *out, size_t nr_samples, size_t *mid, unsigned int depth)
{
	struct raw_writer *w = raw_writer_new(buf_sink, out, 4096);
	struct dp_raw_event ev[2];
	char path[64];

	CU_ASSERT_FATAL(w != NULL);
	memset(ev, 0, sizeof(ev));
	strcpy(ev[0].name, "CPU_CLK_UNHALTED");
	ev[0].count = 100000;
	ev[0].flags = DP_RAW_EV_KERNEL | DP_RAW_EV_USER;
	strcpy(ev[1].name, "INST_RETIRED");
	ev[1].count = 50000;
	ev[1].flags = DP_RAW_EV_USER;
	CU_ASSERT(raw_put_header(w, 0, DP_RAW_COLLECTOR_GEN, 0, ev, 2) == 0);
	CU_ASSERT(raw_put_kmod(w, KSTART, 0x1000000, "vmlinux", 7) == 0);
	for (uint32_t pid = 100; pid < 140; pid++) {
		struct dp_raw_mmap m = { .pid = pid, .tid = pid, .start = 0x400000,
					 .len = 0x100000, .prot = 5 };

		CU_ASSERT(raw_put_comm(w, pid, pid, DP_RAW_COMM_EXEC, "app") == 0);
		snprintf(path, sizeof(path), "/usr/bin/app%u", pid % 7);
		CU_ASSERT(raw_put_mmap(w, &m, path, strlen(path)) == 0);
		for (unsigned int l = 1; l <= 3; l++) {
			m.start = 0x7f0000000000ULL + l * 0x10000000ULL;
			snprintf(path, sizeof(path), "/usr/lib/lib%u.so", (pid * 7 + l * 11) % 30);
			CU_ASSERT(raw_put_mmap(w, &m, path, strlen(path)) == 0);
		}
	}
	for (size_t i = 0; i < nr_samples; i++) {
		uint64_t r = rnd(), pc;
		bool task = i % 16 == 0;

		/* (the middle of a task's run with repeating chains: the
		 * chain before it may repeat after it) */
		if (i % 16 == (sticky ? 8 : 0)) {
			CU_ASSERT(raw_writer_flush(w) == 0);
			if (!*mid && i >= nr_samples / 2)
				*mid = out->len;
		}
		if (task) {
			CU_ASSERT(raw_put_task(w, 100 + (uint32_t)(r % 40), 100 + (uint32_t)(r % 40)) == 0);
			CU_ASSERT(raw_put_mode(w, r % 10 ? DP_MODE_HOST_USER : DP_MODE_HOST_KERNEL) == 0);
			r = rnd();
		}
		/* skewed offsets: some hot, a long tail */
		pc = (r >> 40) % 4 ? (r >> 8) % 64 * 16 : (r >> 8) % 0x100000;
		if (r % 10 == 0)
			pc += KSTART;	/* user mode: in no mapping ({anon}) */
		else
			pc += r % 5 ? 0x7f0000000000ULL + (r % 3 + 1) * 0x10000000ULL : 0x400000;
		if (depth && sticky)
			put_sticky_chain(w, r, depth, task);
		else if (depth && i % 3 == 0)
			put_chain(w, r, depth);
		CU_ASSERT(raw_put_sample(w, pc, (uint32_t)(r >> 60) & 1) == 0);
	}
	CU_ASSERT(raw_writer_close(w) == 0);
}

struct run {
	char dir[64];
	struct opd_conf conf;
	struct opd_daemon d;
};

static void run_init(struct run *r, unsigned int max_open, size_t batch)
{
	memset(r, 0, sizeof(*r));
	/* in memory where there is a tmpfs: on ext4 most of the test's time
	 * went to making inodes among its own deleted ones (find_inode_bit) */
	strcpy(r->dir, access("/dev/shm", W_OK) == 0 ? "/dev/shm/test_batch.XXXXXX"
						      : "/tmp/test_batch.XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(r->dir) != NULL);
	opd_conf_defaults(&r->conf);
	r->conf.session_dir = r->dir;
	r->conf.collector = "file";
	r->conf.separate_str = "lib";
	CU_ASSERT_FATAL(opd_parse_separate("lib", &r->conf.separate) == 0);
	r->conf.max_open_files = max_open;
	CU_ASSERT_FATAL(opd_daemon_init(&r->d, &r->conf, "test") == 0);
	/* batch 0: file each sample at once (the reference) */
	opd_batch_free(r->d.batch);
	r->d.batch = batch ? opd_batch_new(r->d.sfiles, &r->d.st, batch) : NULL;
	opd_trans_set_batch(r->d.trans, r->d.batch);
	CU_ASSERT_FATAL(!batch || r->d.batch);
}

static void run_fini(struct run *r)
{
	opd_daemon_fini(&r->d);
	du_rm_tree(r->dir);
}

/* What a session's sample files hold: "path node key count" lines (node:
 * its place in the file), sorted. */
static struct buf listing;
static size_t prefix, node;

static int node_cb(void *ctx, uint64_t key, uint64_t count)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s %08zu %llx %llu\n", (const char *)ctx, node++,
			 (unsigned long long)key, (unsigned long long)count);

	return buf_sink(&listing, line, (size_t)n);
}

static int list_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	struct odb *db;

	(void)sb;
	(void)ftw;
	if (flag != FTW_F || strstr(path, "/{stacks}/"))
		return 0;
	if (odb_open(&db, path, ODB_RDONLY, NULL)) {
		CU_FAIL("a sample file does not open");
		return 0;
	}
	node = 0;
	odb_foreach(db, node_cb, (void *)(path + prefix));
	odb_close(db);
	return 0;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted listing of @r's files, as one malloc'd string. */
static char *list_files(const struct run *r)
{
	char root[128], **lines, *out, *p;
	size_t n = 0, i;

	snprintf(root, sizeof(root), "%s/samples/current", r->dir);
	prefix = strlen(root);
	listing.len = 0;
	nftw(root, list_cb, 16, FTW_PHYS);
	buf_sink(&listing, "", 1);
	for (p = listing.p; *p; p++)
		n += *p == '\n';
	lines = calloc(n + 1, sizeof(*lines));
	out = malloc(listing.len);
	CU_ASSERT_FATAL(lines && out);
	for (i = 0, p = strtok(listing.p, "\n"); p; p = strtok(NULL, "\n"))
		lines[i++] = p;
	qsort(lines, i, sizeof(*lines), line_cmp);
	out[0] = '\0';
	for (p = out, n = 0; n < i; n++)
		p += sprintf(p, "%s\n", lines[n]);
	free(lines);
	return out;
}

static void check_same(struct run *a, struct run *b, const char *what)
{
	char *la = list_files(a), *lb = list_files(b);

	if (strcmp(la, lb))
		fprintf(stderr, "\n%s: batched and unbatched files differ\n", what);
	CU_ASSERT(strlen(la) > 1000);
	CU_ASSERT_STRING_EQUAL(la, lb);
	free(la);
	free(lb);
}

/* The rest of stream @s from @mid fed to both runs, then its end and a stop. */
static void feed_rest_and_stop(struct run *a, struct run *b, const struct buf *s, size_t mid)
{
	CU_ASSERT(opd_daemon_feed(&a->d, s->p + mid, s->len - mid) == 0);
	CU_ASSERT(opd_daemon_feed(&b->d, s->p + mid, s->len - mid) == 0);
	CU_ASSERT(opd_stream_finish(a->d.stream) == 0);
	CU_ASSERT(opd_stream_finish(b->d.stream) == 0);
	CU_ASSERT(opd_daemon_stop(&a->d) == 0);
	CU_ASSERT(opd_daemon_stop(&b->d) == 0);
}

/* Also with call chains (@depth frames): their arcs go through the batch
 * as samples do, and must make the same {cg} files. */
static void same_as_unbatched(unsigned int max_open, size_t batch, unsigned int depth)
{
	/* (the reference files each arc at once: under a tiny cap that is
	 * an open and a close an arc; 127-frame chains are 127 arcs a
	 * sample).  50,000 samples touch every file of the stream's 40
	 * processes many times over: with 200,000 the test took 69 s. */
	size_t nr = depth && (max_open < 10 || depth > 16) ? 20000 : 50000;
	struct buf s = { 0 };
	struct run a, b;
	size_t mid = 0;

	make_stream(&s, nr, &mid, depth);
	CU_ASSERT_FATAL(mid > 0);
	run_init(&a, max_open, batch);
	run_init(&b, max_open, 0);
	CU_ASSERT(opd_daemon_feed(&a.d, s.p, mid) == 0);
	CU_ASSERT(opd_daemon_feed(&b.d, s.p, mid) == 0);
	/* a dump shows every sample so far */
	CU_ASSERT(opd_daemon_dump(&a.d) == 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) == 0);
	check_same(&a, &b, "at the dump");
	feed_rest_and_stop(&a, &b, &s, mid);
	check_same(&a, &b, "at the end");
	CU_ASSERT(a.d.st.samples_received == nr);
	CU_ASSERT(a.d.st.samples_filed == b.d.st.samples_filed);
	CU_ASSERT(a.d.st.samples_filed > nr * 3 / 4);
	CU_ASSERT(a.d.st.sample_file_errors == 0);
	CU_ASSERT(a.d.st.sample_files == b.d.st.sample_files);
	CU_ASSERT(a.d.st.cc_arcs == b.d.st.cc_arcs);
	CU_ASSERT(a.d.st.cc_arcs_dropped == b.d.st.cc_arcs_dropped);
	if (depth)
		CU_ASSERT(a.d.st.cc_arcs > nr);
	/* the repeats were there: flushes applied some */
	if (depth && sticky)
		CU_ASSERT(a.d.batch && opd_batch_repeats(a.d.batch) > nr / 4);
	if (max_open < 10)
		CU_ASSERT(a.d.st.sample_files_evicted > 0);
	run_fini(&a);
	run_fini(&b);
	free(s.p);
}

/*
 * opcontrol --save between two halves: the batched daemon's cached file
 * indexes are of the files the save released, and must not be used for
 * the second half (its samples went to sample_file_errors once).
 */
static void save_mid_stream(unsigned int depth)
{
	struct buf s = { 0 };
	struct run a, b;
	size_t mid = 0;

	make_stream(&s, 100000, &mid, depth);
	CU_ASSERT_FATAL(mid > 0);
	run_init(&a, 4096, OPD_BATCH_DEFAULT);
	run_init(&b, 4096, 0);
	CU_ASSERT(opd_daemon_feed(&a.d, s.p, mid) == 0);
	CU_ASSERT(opd_daemon_feed(&b.d, s.p, mid) == 0);
	CU_ASSERT(opd_daemon_new_current(&a.d) == 0);
	CU_ASSERT(opd_daemon_new_current(&b.d) == 0);
	feed_rest_and_stop(&a, &b, &s, mid);
	check_same(&a, &b, "after a save");
	CU_ASSERT(a.d.st.sample_file_errors == 0);
	CU_ASSERT(a.d.st.samples_filed == b.d.st.samples_filed);
	CU_ASSERT(a.d.st.cc_arcs == b.d.st.cc_arcs);
	CU_ASSERT(a.d.st.cc_arcs_dropped == b.d.st.cc_arcs_dropped);
	run_fini(&a);
	run_fini(&b);
	free(s.p);
}

static void test_save_mid_stream(void)
{
	save_mid_stream(0);
	/* the repeats' file indexes are of the old session too */
	sticky = true;
	save_mid_stream(16);
	sticky = false;
}

static void test_default_batch(void)
{
	same_as_unbatched(4096, OPD_BATCH_DEFAULT, 0);
}

static void test_small_batch(void)
{
	/* many flushes by a full batch, none a multiple of a run */
	same_as_unbatched(4096, 997, 0);
}

static void test_evictions(void)
{
	/* every new file evicts one with samples still queued */
	same_as_unbatched(3, 5000, 0);
}

static void test_chains(void)
{
	same_as_unbatched(4096, OPD_BATCH_DEFAULT, 6);
	same_as_unbatched(4096, 997, 6);
}

static void test_chains_evictions(void)
{
	/* arcs queued for {cg} files that are closed by then */
	same_as_unbatched(5, 5000, 6);
}

/*
 * Chains that repeat their callers: their arcs become repeats in the
 * batch, added at the flush after the queued runs.  The files must be the
 * unbatched daemon's, node order included (a repeat applied before the
 * runs would make its keys' nodes ahead of their turn), with the default
 * batch, many small flushes, a file cap that closes {cg} files with
 * repeats pending, and 127-frame chains.
 */
static void test_chains_repeat(void)
{
	sticky = true;
	same_as_unbatched(4096, OPD_BATCH_DEFAULT, 16);
	same_as_unbatched(4096, 997, 16);
	same_as_unbatched(5, 5000, 6);
	same_as_unbatched(4096, 4096, DP_RAW_CC_MAX);
	sticky = false;
}

/* The close hook flushes before a domain's files close; flush_due flushes
 * new files' first samples after a tenth of the interval, known files'
 * only after the whole; a batch with nothing queued flushes nothing. */
static void test_flush_due(void)
{
	struct buf s = { 0 };
	struct run a;
	size_t mid = 0;

	make_stream(&s, 1000, &mid, 0);
	run_init(&a, 4096, 1 << 16);
	CU_ASSERT(opd_batch_flush(a.d.batch) == 0);
	CU_ASSERT(opd_batch_flush_due(a.d.batch, 1000, 500) == 0);	/* empty at 1000 */
	CU_ASSERT(opd_daemon_feed(&a.d, s.p, s.len) == 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) > 900);
	/* every file is new: due before the interval, after a tenth of it */
	CU_ASSERT(opd_batch_flush_due(a.d.batch, 1040, 500) == 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) > 900);
	CU_ASSERT(opd_batch_flush_due(a.d.batch, 1100, 500) == 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) == 0);
	/* files the flush wrote (index 0 and the highest) wait the interval */
	CU_ASSERT(opd_batch_add(a.d.batch, 0, 0x1000) == 0);
	CU_ASSERT(opd_batch_add(a.d.batch, (uint32_t)a.d.st.sample_files - 1, 0x1000) == 0);
	CU_ASSERT(opd_batch_flush_due(a.d.batch, 1400, 500) == 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) == 2);
	CU_ASSERT(opd_batch_flush_due(a.d.batch, 1600, 500) == 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) == 0);
	run_fini(&a);
	free(s.p);
}

/* A file closed to stay under the cap forces no flush: its samples stay
 * queued under its index, and the flush reopens it once for all of them
 * (with a flush at each eviction, a flush touching more files than the
 * cap reopened them over and over). */
static void test_evict_no_flush(void)
{
	struct buf s = { 0 };
	struct run a;
	size_t mid = 0;

	make_stream(&s, 1000, &mid, 0);
	run_init(&a, 3, 1 << 16);
	CU_ASSERT(opd_daemon_feed(&a.d, s.p, s.len) == 0);
	CU_ASSERT(a.d.st.sample_files > 3);
	CU_ASSERT(a.d.st.sample_files_evicted > 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) == a.d.st.samples_filed);
	CU_ASSERT(opd_batch_flush(a.d.batch) == 0);
	CU_ASSERT(opd_batch_pending(a.d.batch) == 0);
	CU_ASSERT(a.d.st.sample_file_errors == 0);
	run_fini(&a);
	free(s.p);
}

/* A flush over more files than stay open applies the open ones first:
 * only the closed ones are reopened.  (In index order alone, under the
 * LRU, each reopen closed the file the next flush would start with, and
 * every flush reopened all of its files.) */
static void test_flush_open_first(void)
{
	const unsigned int cap = 4;
	struct buf s = { 0 };
	struct run a;
	uint64_t before;
	uint32_t nr;
	size_t mid = 0;

	make_stream(&s, 1000, &mid, 0);
	run_init(&a, cap, 1 << 16);
	CU_ASSERT(opd_daemon_feed(&a.d, s.p, s.len) == 0);
	CU_ASSERT(opd_batch_flush(a.d.batch) == 0);
	nr = (uint32_t)a.d.st.sample_files;
	CU_ASSERT_FATAL(nr > 2 * cap);
	for (int round = 0; round < 2; round++) {
		for (uint32_t id = 0; id < nr; id++)
			CU_ASSERT(opd_batch_add(a.d.batch, id, 0x1000) == 0);
		before = a.d.st.sample_files_evicted;
		CU_ASSERT(opd_batch_flush(a.d.batch) == 0);
		CU_ASSERT_EQUAL(a.d.st.sample_files_evicted - before, nr - cap);
	}
	CU_ASSERT(a.d.st.sample_file_errors == 0);
	run_fini(&a);
	free(s.p);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "default batch = unbatched, dump in the middle", test_default_batch },
		{ "small batch = unbatched", test_small_batch },
		{ "evictions with samples queued", test_evictions },
		{ "call chains' arcs batched = unbatched", test_chains },
		{ "arcs queued for closed files", test_chains_evictions },
		{ "repeated callers' arcs = unbatched, node order too", test_chains_repeat },
		{ "flush when due", test_flush_due },
		{ "an eviction forces no flush", test_evict_no_flush },
		{ "a flush applies the open files first", test_flush_open_first },
		{ "a save in the middle: no cached file of the old session", test_save_mid_stream },
	};
	int rc;

	rc = du_test_main("batch", tests, DU_TEST_N(tests), NULL, NULL);
	free(listing.p);
	return rc;
}
