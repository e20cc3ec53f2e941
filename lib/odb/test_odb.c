/* Unit tests for lib/odb: sample files. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "domprof/odb_format.h"
#include "odb/odb.h"
#include "util/du_log.h"
#include "util/du_test.h"

static char tmpdir[64];
static const struct odb_desc test_desc = {
	.event = "CPU_CLK_UNHALTED", .count = 100000, .unit_mask = 2,
	.flags = ODB_F_KERNEL, .mtime = 1700000000,
};

static const char *tpath(const char *name)
{
	static char buf[2][256];
	static int which;

	which ^= 1;
	snprintf(buf[which], sizeof(buf[which]), "%s/%s", tmpdir, name);
	return buf[which];
}

/* Everything a file holds, in insertion order. */
struct dump {
	uint64_t *keys, *counts;
	size_t n, cap;
};

static int dump_fn(void *ctx, uint64_t key, uint64_t count)
{
	struct dump *d = ctx;

	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 1024;
		d->keys = realloc(d->keys, d->cap * sizeof(*d->keys));
		d->counts = realloc(d->counts, d->cap * sizeof(*d->counts));
		if (!d->keys || !d->counts)
			return -ENOMEM;
	}
	d->keys[d->n] = key;
	d->counts[d->n] = count;
	d->n++;
	return 0;
}

static void dump_free(struct dump *d)
{
	free(d->keys);
	free(d->counts);
	memset(d, 0, sizeof(*d));
}

static int dump_file(const char *path, struct dump *d, uint64_t *total)
{
	struct odb *db;
	int rc = odb_open(&db, path, ODB_RDONLY, NULL);

	if (rc)
		return rc;
	memset(d, 0, sizeof(*d));
	rc = odb_foreach(db, dump_fn, d);
	if (!rc && odb_nr_keys(db) != d->n)
		rc = -EPROTO;
	if (total)
		*total = odb_total(db);
	odb_close(db);
	return rc;
}

static int copy_file(const char *from, const char *to, off_t len)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;
	off_t done = 0;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		close(in);
		return -errno;
	}
	while (done < len && (n = read(in, buf, sizeof(buf))) > 0) {
		if (n > len - done)
			n = len - done;
		if (write(out, buf, n) != n)
			break;
		done += n;
	}
	close(in);
	close(out);
	return 0;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

/* ---- tests -------------------------------------------------------------- */

static void test_basic(void)
{
	const char *path = tpath("basic");
	const struct odb_desc *d;
	struct odb *db = NULL;
	struct dump dp;
	uint64_t total;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(odb_nr_keys(db), 0);
	CU_ASSERT_EQUAL(odb_add(db, 0x1000, 1), 0);
	CU_ASSERT_EQUAL(odb_add(db, 0x2000, 5), 0);
	CU_ASSERT_EQUAL(odb_add(db, 0x1000, 2), 0);
	CU_ASSERT_EQUAL(odb_add(db, 0, 0), 0);		/* key 0, inserted at 0 */
	CU_ASSERT_EQUAL(odb_add(db, UINT64_MAX, 1ULL << 40), 0);
	CU_ASSERT_EQUAL(odb_nr_keys(db), 4);
	CU_ASSERT_EQUAL(odb_total(db), 8 + (1ULL << 40));
	CU_ASSERT_EQUAL(odb_count(db, 0x1000), 3);
	CU_ASSERT_EQUAL(odb_count(db, UINT64_MAX), 1ULL << 40);
	CU_ASSERT_EQUAL(odb_count(db, 0x3000), 0);
	CU_ASSERT_EQUAL(odb_sync(db), 0);
	d = odb_get_desc(db);
	CU_ASSERT_STRING_EQUAL(d->event, "CPU_CLK_UNHALTED");
	odb_close(db);
	{
		uint64_t c = 7;

		CU_ASSERT_EQUAL(odb_read_count(path, 0x2000, &c), 0);
		CU_ASSERT_EQUAL(c, 5);
		CU_ASSERT_EQUAL(odb_read_count(path, 0x1000, &c), 0);
		CU_ASSERT_EQUAL(c, 3);
		CU_ASSERT_EQUAL(odb_read_count(path, 0x3000, &c), 0);
		CU_ASSERT_EQUAL(c, 0);
		CU_ASSERT_EQUAL(odb_read_count(tpath("absent"), 0x1000, &c), -ENOENT);
	}

	CU_ASSERT_EQUAL_FATAL(dump_file(path, &dp, &total), 0);
	CU_ASSERT_EQUAL_FATAL(dp.n, 4);
	CU_ASSERT(dp.keys[0] == 0x1000 && dp.counts[0] == 3);
	CU_ASSERT(dp.keys[1] == 0x2000 && dp.counts[1] == 5);
	CU_ASSERT(dp.keys[2] == 0 && dp.counts[2] == 0);
	CU_ASSERT(dp.keys[3] == UINT64_MAX && dp.counts[3] == 1ULL << 40);
	CU_ASSERT_EQUAL(total, 8 + (1ULL << 40));
	dump_free(&dp);

	/* The header keeps the desc; an existing file ignores a new one. */
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDONLY, NULL), 0);
	d = odb_get_desc(db);
	CU_ASSERT_STRING_EQUAL(d->event, "CPU_CLK_UNHALTED");
	CU_ASSERT_EQUAL(d->count, 100000);
	CU_ASSERT_EQUAL(d->unit_mask, 2);
	CU_ASSERT_EQUAL(d->flags, ODB_F_KERNEL);
	CU_ASSERT_EQUAL(d->mtime, 1700000000);
	CU_ASSERT_EQUAL(odb_add(db, 1, 1), -EBADF);
	CU_ASSERT_EQUAL(odb_sync(db), 0);
	odb_close(db);
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, NULL), 0);
	CU_ASSERT_STRING_EQUAL(odb_get_desc(db)->event, "CPU_CLK_UNHALTED");
	odb_close(db);
	odb_close(NULL);
}

static void test_open_errors(void)
{
	struct odb *db = (struct odb *)0x1;
	struct odb_desc long_name;

	CU_ASSERT_EQUAL(odb_open(&db, tpath("nonexistent"), ODB_RDONLY, NULL), -ENOENT);
	/* No desc: nothing to create it with, and nothing is created. */
	CU_ASSERT_EQUAL(odb_open(&db, tpath("nonexistent"), ODB_RDWR, NULL), -ENOENT);
	CU_ASSERT_EQUAL(file_size(tpath("nonexistent")), -1);
	CU_ASSERT_EQUAL(odb_open(&db, tpath("nodir/x"), ODB_RDWR, &test_desc), -ENOENT);
	memset(&long_name, 0, sizeof(long_name));
	memset(long_name.event, 'x', sizeof(long_name.event));
	CU_ASSERT_EQUAL(odb_open(&db, tpath("longname"), ODB_RDWR, &long_name), -EINVAL);
	CU_ASSERT_PTR_EQUAL(db, (struct odb *)0x1);
}

/* Many keys: the table grows from 64 nodes through a dozen doublings. */
static void test_many_keys_and_reopen(void)
{
	const char *path = tpath("many");
	const uint64_t nkeys = 200000;
	struct odb *db;
	struct dump dp;
	uint64_t i, total = 0, t;
	int round, ok;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < nkeys; i++) {
			/* aligned keys, the common case for offsets */
			CU_ASSERT_EQUAL_FATAL(odb_add(db, i * 16, i % 7 + 1), 0);
			total += i % 7 + 1;
		}
		CU_ASSERT_EQUAL(odb_nr_keys(db), nkeys);
		CU_ASSERT_EQUAL(odb_total(db), total);
		/* reopen between rounds: the index is rebuilt from the nodes */
		odb_close(db);
		CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, NULL), 0);
		CU_ASSERT_EQUAL(odb_nr_keys(db), nkeys);
		CU_ASSERT_EQUAL(odb_total(db), total);
	}
	/* Adds after a reopen land on the existing nodes. */
	CU_ASSERT_EQUAL(odb_add(db, 16, 1000), 0);
	CU_ASSERT_EQUAL(odb_nr_keys(db), nkeys);
	odb_close(db);

	CU_ASSERT_EQUAL_FATAL(dump_file(path, &dp, &t), 0);
	CU_ASSERT_EQUAL(dp.n, nkeys);
	CU_ASSERT_EQUAL(t, total + 1000);
	ok = 1;
	for (i = 0; i < dp.n && ok; i++)
		ok = dp.keys[i] == i * 16 && dp.counts[i] == 2 * (i % 7 + 1) + (i == 1 ? 1000 : 0);
	CU_ASSERT(ok);
	dump_free(&dp);
}

static uint64_t rnd_state = 0x853c49e6748fea9bULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Random adds against a plain list; reopened now and then. */
static void test_reference_model(void)
{
	const char *path = tpath("model");
	struct { uint64_t key, count; } *ref;
	size_t nref = 0, cap = 8192, i, j;
	uint64_t total = 0, t;
	struct odb *db;
	struct dump dp;
	int op, ok;

	ref = calloc(cap, sizeof(*ref));
	CU_ASSERT_FATAL(ref != NULL);
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	for (op = 0; op < 60000; op++) {
		uint64_t r = rnd(), key, inc = rnd() % 1000;

		/* hot small keys, a wide range, and colliding high bits */
		switch (r % 3) {
		case 0:
			key = (r >> 8) % 64;
			break;
		case 1:
			key = (r >> 8) % 5000 * 4096;
			break;
		default:
			key = ((r >> 8) % 1000) << 52;
		}
		for (i = 0; i < nref && ref[i].key != key; i++)
			;
		if (i == nref) {
			CU_ASSERT_FATAL(nref < cap);
			ref[nref].key = key;
			ref[nref].count = 0;
			nref++;
		}
		ref[i].count += inc;
		total += inc;
		CU_ASSERT_EQUAL_FATAL(odb_add(db, key, inc), 0);
		if (op % 9973 == 0) {
			odb_close(db);
			CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, NULL), 0);
		}
	}
	CU_ASSERT_EQUAL(odb_nr_keys(db), nref);
	CU_ASSERT_EQUAL(odb_total(db), total);
	odb_close(db);
	CU_ASSERT_EQUAL_FATAL(dump_file(path, &dp, &t), 0);
	CU_ASSERT_EQUAL_FATAL(dp.n, nref);
	CU_ASSERT_EQUAL(t, total);
	ok = 1;
	for (j = 0; j < nref && ok; j++)
		ok = dp.keys[j] == ref[j].key && dp.counts[j] == ref[j].count;
	CU_ASSERT(ok);
	dump_free(&dp);
	free(ref);
}

/*
 * odb_add_keys is n single adds of 1: same nodes, same order, same counts
 * as odb_add on a twin file, across grows and in runs of every length
 * (shorter and longer than its prefetch distance).
 */
static void test_add_keys(void)
{
	const char *pa = tpath("keys_bulk"), *pb = tpath("keys_single");
	struct odb *a, *b;
	struct dump da, db_;
	uint64_t keys[3000], ta, tb;
	size_t done, i, run, ok;

	CU_ASSERT_EQUAL_FATAL(odb_open(&a, pa, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL_FATAL(odb_open(&b, pb, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(odb_add_keys(a, keys, 0, &done), 0);
	CU_ASSERT_EQUAL(done, 0);
	for (run = 1; run <= 3000; run = run * 3 + 1) {
		for (i = 0; i < run; i++) {
			uint64_t r = rnd();

			/* repeats within a run, new keys (grows), high bits */
			keys[i] = r % 4 ? (r >> 8) % 20000 : ((r >> 8) % 512) << 50;
			CU_ASSERT_EQUAL_FATAL(odb_add(b, keys[i], 1), 0);
		}
		done = 12345;
		CU_ASSERT_EQUAL_FATAL(odb_add_keys(a, keys, run, &done), 0);
		CU_ASSERT_EQUAL(done, run);
		CU_ASSERT_EQUAL(odb_nr_keys(a), odb_nr_keys(b));
		CU_ASSERT_EQUAL(odb_total(a), odb_total(b));
	}
	CU_ASSERT(odb_nr_keys(a) > 1000);	/* it grew several times */
	odb_close(a);
	odb_close(b);
	CU_ASSERT_EQUAL_FATAL(dump_file(pa, &da, &ta), 0);
	CU_ASSERT_EQUAL_FATAL(dump_file(pb, &db_, &tb), 0);
	CU_ASSERT_EQUAL_FATAL(da.n, db_.n);
	CU_ASSERT_EQUAL(ta, tb);
	ok = 1;
	for (i = 0; i < da.n && ok; i++)
		ok = da.keys[i] == db_.keys[i] && da.counts[i] == db_.counts[i];
	CU_ASSERT(ok);
	dump_free(&da);
	dump_free(&db_);

	/* a reader adds nothing */
	CU_ASSERT_EQUAL_FATAL(odb_open(&a, pa, ODB_RDONLY, NULL), 0);
	done = 7;
	CU_ASSERT_EQUAL(odb_add_keys(a, keys, 10, &done), -EBADF);
	CU_ASSERT_EQUAL(done, 0);
	CU_ASSERT_EQUAL(odb_sync_start(a), 0);
	odb_close(a);
	/* a writer's sync_start then sync */
	CU_ASSERT_EQUAL_FATAL(odb_open(&a, pa, ODB_RDWR, NULL), 0);
	CU_ASSERT_EQUAL(odb_add_keys(a, keys, 10, NULL), 0);
	CU_ASSERT_EQUAL(odb_sync_start(a), 0);
	CU_ASSERT_EQUAL(odb_sync(a), 0);
	odb_close(a);
}

/* A file cut short is rejected exactly when its committed nodes do not fit. */
static void test_truncated(void)
{
	const char *src = tpath("full"), *cut = tpath("cut");
	const size_t hs = sizeof(struct odb_file_header), ns = sizeof(struct odb_node);
	const uint64_t nkeys = 300;
	struct odb *db;
	off_t full, sizes[32];
	size_t nsizes = 0, i;
	uint64_t k;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, src, ODB_RDWR, &test_desc), 0);
	for (k = 0; k < nkeys; k++)
		CU_ASSERT_EQUAL(odb_add(db, k * 8, 1), 0);
	odb_close(db);
	full = file_size(src);
	CU_ASSERT_FATAL(full > (off_t)(hs + nkeys * ns));

	sizes[nsizes++] = 0;
	sizes[nsizes++] = 1;
	sizes[nsizes++] = 8;
	sizes[nsizes++] = hs - 1;
	sizes[nsizes++] = hs;
	sizes[nsizes++] = hs + 1;
	sizes[nsizes++] = hs + ns;
	sizes[nsizes++] = hs + 100 * ns + 7;
	sizes[nsizes++] = hs + nkeys * ns - 1;
	sizes[nsizes++] = hs + nkeys * ns;	/* nodes fit, index gone: readable */
	sizes[nsizes++] = hs + nkeys * ns + 5;
	sizes[nsizes++] = full - 1;
	sizes[nsizes++] = full;
	for (i = 0; i < nsizes; i++) {
		int expect = sizes[i] >= (off_t)(hs + nkeys * ns) ? 0 : -EBADMSG;
		/* empty: a writer making it now; no samples yet for a reader */
		int rd_expect = sizes[i] ? expect : -ENODATA;
		struct dump dp;
		uint64_t t;
		int rc;

		CU_ASSERT_EQUAL_FATAL(copy_file(src, cut, sizes[i]), 0);
		CU_ASSERT_EQUAL_FATAL(file_size(cut), sizes[i]);
		rc = dump_file(cut, &dp, &t);
		CU_ASSERT_EQUAL(rc, rd_expect);
		if (rc != rd_expect)
			fprintf(stderr, "\n  size %lld: %d\n", (long long)sizes[i], rc);
		if (!rc) {
			CU_ASSERT_EQUAL(dp.n, nkeys);
			CU_ASSERT_EQUAL(t, nkeys);
			dump_free(&dp);
		}
		/* A writer (without a desc to start over with) agrees. */
		rc = odb_open(&db, cut, ODB_RDWR, NULL);
		CU_ASSERT_EQUAL(rc, expect);
		if (!rc) {
			CU_ASSERT_EQUAL(odb_nr_keys(db), nkeys);
			CU_ASSERT_EQUAL(odb_add(db, 8, 1), 0);
			CU_ASSERT_EQUAL(odb_add(db, 1, 1), 0);
			CU_ASSERT_EQUAL(odb_nr_keys(db), nkeys + 1);
			odb_close(db);
		}
	}
	unlink(cut);
}

/* Corrupt header fields: rejected by readers and writers alike. */
static void test_corrupt_header(void)
{
	const char *src = tpath("good"), *bad = tpath("bad");
	struct odb_file_header h;
	struct odb *db;
	int i, fd;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, src, ODB_RDWR, &test_desc), 0);
	for (i = 0; i < 100; i++)
		CU_ASSERT_EQUAL(odb_add(db, i, i), 0);
	odb_close(db);

	for (i = 0; i < 12; i++) {
		CU_ASSERT_EQUAL_FATAL(copy_file(src, bad, file_size(src)), 0);
		fd = open(bad, O_RDWR);
		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_FATAL(pread(fd, &h, sizeof(h), 0) == sizeof(h));
		switch (i) {
		case 0: h.magic ^= 0x100; break;
		case 1: h.version = 2; break;
		case 2: h.node_size = 16; break;
		case 3: h.header_size = 0; break;
		case 4: h.header_size = 257; break;
		case 5: h.header_size = 0x40000000; break;
		case 6: h.committed = h.capacity + 1; break;
		case 7: h.committed = UINT64_MAX; break;
		case 8: h.capacity = UINT64_MAX; break;
		case 9: h.capacity = 1ULL << 40; h.committed = 1ULL << 39; break;
		case 10: h.committed = 1ULL << 20; h.capacity = 1ULL << 21; break;
		case 11: h.magic = 0; break;	/* committed != 0: not a half-made file */
		}
		CU_ASSERT_FATAL(pwrite(fd, &h, sizeof(h), 0) == sizeof(h));
		close(fd);
		CU_ASSERT_EQUAL(odb_open(&db, bad, ODB_RDONLY, NULL), -EBADMSG);
		CU_ASSERT_EQUAL(odb_open(&db, bad, ODB_RDWR, NULL), -EBADMSG);
		CU_ASSERT_EQUAL(odb_open(&db, bad, ODB_RDWR, &test_desc), -EBADMSG);
	}
	/* A writer's capacity must be a power of two (it sizes the hash). */
	CU_ASSERT_EQUAL_FATAL(copy_file(src, bad, file_size(src)), 0);
	fd = open(bad, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(pread(fd, &h, sizeof(h), 0) == sizeof(h));
	h.capacity = 100;
	CU_ASSERT_FATAL(pwrite(fd, &h, sizeof(h), 0) == sizeof(h));
	close(fd);
	CU_ASSERT_EQUAL(odb_open(&db, bad, ODB_RDWR, NULL), -EBADMSG);
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, bad, ODB_RDONLY, NULL), 0);
	CU_ASSERT_EQUAL(odb_nr_keys(db), 100);
	odb_close(db);
	unlink(bad);
}

/* Overwrite node @i of @path (a good file) with @n. */
static void poke_node(const char *path, uint64_t i, const struct odb_node *n)
{
	int fd = open(path, O_RDWR);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(pwrite(fd, n, sizeof(*n), sizeof(struct odb_file_header) +
			       i * sizeof(*n)) == sizeof(*n));
	close(fd);
}

/*
 * A good header over a garbage body (issue 23: opreport summed such a
 * body to 18,255,380,680,800,945,783 samples, exit 0): refused with a
 * reason, as is each kind of bad node alone; a chain that loops is
 * refused, not followed.  A reader's copy ignores later writes.
 */
static void test_corrupt_body(void)
{
	const char *src = tpath("body"), *bad = tpath("badbody");
	struct odb_node n;
	char why[128];
	struct odb *db;
	uint64_t i;
	int fd;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, src, ODB_RDWR, &test_desc), 0);
	for (i = 0; i < 100; i++)
		CU_ASSERT_EQUAL(odb_add(db, i * 16, i + 1), 0);
	odb_close(db);
	CU_ASSERT_EQUAL_FATAL(odb_open_read(&db, src, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(odb_total(db), 5050);
	CU_ASSERT_STRING_EQUAL(why, "");
	odb_close(db);
	/* the same file open already; a FIFO (opened without blocking) is
	 * not a sample file; a descriptor given is closed either way */
	{
		char fifo[300];

		snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);	/* (tpath's two are taken) */
		fd = open(src, O_RDONLY);

		CU_ASSERT_FATAL(fd >= 0);
		CU_ASSERT_EQUAL_FATAL(odb_open_read_fd(&db, fd, why, sizeof(why)), 0);
		CU_ASSERT_EQUAL(odb_total(db), 5050);
		odb_close(db);
		CU_ASSERT(fcntl(fd, F_GETFD) < 0);
		CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
		fd = open(fifo, O_RDONLY | O_NONBLOCK);
		CU_ASSERT_FATAL(fd >= 0);
		/* (its header's pread fails first: no seek on a FIFO) */
		CU_ASSERT_EQUAL(odb_open_read_fd(&db, fd, why, sizeof(why)), -ESPIPE);
		CU_ASSERT(fcntl(fd, F_GETFD) < 0);
		unlink(fifo);
	}
	CU_ASSERT_EQUAL_FATAL(odb_open_read(&db, src, why, sizeof(why)), 0);
	/* the file changes under a reader: what it read stays */
	n = (struct odb_node){ .key = 0, .count = UINT64_MAX };
	CU_ASSERT_EQUAL_FATAL(copy_file(src, bad, file_size(src)), 0);
	poke_node(src, 0, &n);
	CU_ASSERT_EQUAL(odb_count(db, 0), 1);
	odb_close(db);
	CU_ASSERT_EQUAL_FATAL(copy_file(bad, src, file_size(bad)), 0);

	/* the body is random bytes */
	CU_ASSERT_EQUAL_FATAL(copy_file(src, bad, file_size(src)), 0);
	srandom(23);
	fd = open(bad, O_RDWR);
	CU_ASSERT_FATAL(fd >= 0);
	for (i = sizeof(struct odb_file_header); i < (uint64_t)file_size(bad); i += 4) {
		uint32_t r = (uint32_t)random() ^ (uint32_t)random() << 16;

		CU_ASSERT_FATAL(pwrite(fd, &r, 4, (off_t)i) == 4);
	}
	close(fd);
	CU_ASSERT_EQUAL(odb_open_read(&db, bad, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(why[0] != '\0');
	CU_ASSERT_EQUAL(odb_open(&db, bad, ODB_RDONLY, NULL), -EBADMSG);

	for (i = 0; i < 6; i++) {
		CU_ASSERT_EQUAL_FATAL(copy_file(src, bad, file_size(src)), 0);
		n = (struct odb_node){ .key = 7, .count = 1 };
		switch (i) {
		case 0: n.next = 51; break;		/* node 50 names itself: a loop */
		case 1: n.next = 52; break;		/* a later node */
		case 2: n.next = UINT32_MAX; break;
		case 3: n.pad = 1; break;
		case 4: n.count = ODB_MAX_COUNT + 1; break;
		case 5: n.count = ODB_MAX_COUNT; break;	/* one is fine ... */
		}
		poke_node(bad, 50, &n);
		if (i == 5) {
			CU_ASSERT_EQUAL(odb_open_read(&db, bad, why, sizeof(why)), 0);
			odb_close(db);
			/* ... the sum of seventeen is over the bound */
			for (uint64_t j = 51; j < 67; j++)
				poke_node(bad, j, &n);
		}
		CU_ASSERT_EQUAL(odb_open_read(&db, bad, why, sizeof(why)), -EBADMSG);
		CU_ASSERT_STRING_EQUAL(why, i < 4 ? "bad node (chain index or padding)" :
				       "counts over the bound");
	}
	/* the writer never made such nodes: a chain to node 49 is fine */
	CU_ASSERT_EQUAL_FATAL(copy_file(src, bad, file_size(src)), 0);
	n = (struct odb_node){ .key = 7, .count = 1, .next = 50 };
	poke_node(bad, 50, &n);
	CU_ASSERT_EQUAL(odb_open_read(&db, bad, why, sizeof(why)), 0);
	odb_close(db);
	unlink(bad);
}

/* A writer killed before it wrote the magic left an all-zero header: the
 * next writer starts the file over; a reader finds no samples in it yet
 * (-ENODATA, not a corrupt file). */
static void test_half_made(void)
{
	const char *path = tpath("half");
	struct odb *db;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(ftruncate(fd, 4096) == 0);
	close(fd);
	CU_ASSERT_EQUAL(odb_open(&db, path, ODB_RDONLY, NULL), -ENODATA);
	CU_ASSERT_EQUAL(odb_open(&db, path, ODB_RDWR, NULL), -EBADMSG);
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(odb_add(db, 5, 5), 0);
	odb_close(db);
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDONLY, NULL), 0);
	CU_ASSERT_EQUAL(odb_total(db), 5);
	odb_close(db);
}

/*
 * A file of an earlier build, whose writer kept its hash index after the
 * nodes (64 buckets of garbage here), is read, added to without duplicate
 * keys, and grown; a new file has no index in it.
 */
static void test_old_layout(void)
{
	const char *path = tpath("old");
	struct odb_file_header h = {
		.magic = ODB_MAGIC, .version = ODB_VERSION, .header_size = sizeof(h),
		.node_size = sizeof(struct odb_node), .count = 100000, .capacity = 64,
		.committed = 3,
	};
	struct odb_node nodes[64] = {
		{ .key = 10, .count = 1, .next = 7 }, { .key = 20, .count = 2, .next = 99 },
		{ .key = 30, .count = 3 },
	};
	uint32_t buckets[64];
	struct dump dp;
	uint64_t total, k20 = 0;
	struct odb *db;
	int fd;

	memcpy(h.event, "CPU_CLK_UNHALTED", 17);
	memset(buckets, 0xa5, sizeof(buckets));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(write(fd, &h, sizeof(h)) == sizeof(h));
	CU_ASSERT(write(fd, nodes, sizeof(nodes)) == sizeof(nodes));
	CU_ASSERT(write(fd, buckets, sizeof(buckets)) == sizeof(buckets));
	close(fd);

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(odb_add(db, 20, 5), 0);
	for (uint64_t k = 1000; k < 1100; k++)
		CU_ASSERT_EQUAL(odb_add(db, k, 1), 0);
	CU_ASSERT_EQUAL(odb_add(db, 20, 1), 0);
	odb_close(db);
	CU_ASSERT_EQUAL_FATAL(dump_file(path, &dp, &total), 0);
	CU_ASSERT_EQUAL(dp.n, 103);
	CU_ASSERT_EQUAL(total, 1 + 2 + 3 + 5 + 100 + 1);
	for (size_t i = 0; i < dp.n; i++)
		if (dp.keys[i] == 20)
			k20 += dp.counts[i] + 1000;
	CU_ASSERT_EQUAL(k20, 1008);	/* one node, count 8 */
	dump_free(&dp);

	/* new files: header and nodes only */
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, tpath("new"), ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(odb_add(db, 1, 1), 0);
	odb_close(db);
	CU_ASSERT_EQUAL((file_size(tpath("new")) - (off_t)sizeof(h)) % sizeof(struct odb_node), 0);
}

/*
 * The point of the format: SIGKILL a writer at arbitrary moments (during
 * the insert phase with its grows, and during the increment phase).  Each
 * add is +1 on key i % K in order, so after n adds node j must hold key j
 * with count n / K + (j < n % K): any torn or lost update shows.
 */
#define CRASH_K		(1 << 18)

static int check_pattern(const char *path, uint64_t *n_out)
{
	struct dump dp;
	uint64_t total, n, j;
	int rc = dump_file(path, &dp, &total);

	if (rc)
		return rc;
	n = total;
	rc = dp.n == (n < CRASH_K ? n : CRASH_K) ? 0 : -EPROTO;
	for (j = 0; j < dp.n && !rc; j++)
		if (dp.keys[j] != j * 64 || dp.counts[j] != n / CRASH_K + (j < n % CRASH_K))
			rc = -EPROTO;
	dump_free(&dp);
	*n_out = n;
	return rc;
}

static void crash_child(const char *path, uint64_t start, int ready_fd)
{
	struct odb *db;
	uint64_t i;
	time_t t0 = time(NULL);

	if (odb_open(&db, path, ODB_RDWR, &test_desc))
		_exit(2);
	if (write(ready_fd, "x", 1) != 1)
		_exit(2);
	for (i = start;; i++) {
		if (odb_add(db, i % CRASH_K * 64, 1))
			_exit(3);
		/* never outlive a parent that failed to kill us */
		if ((i & 0xfffff) == 0 && time(NULL) - t0 > 20)
			_exit(4);
	}
}

static void test_crash(void)
{
	static const int delays_us[] = { 0, 200, 1000, 3000, 10000, 30000, 100000 };
	const char *path = tpath("crash");
	const size_t nr_delays = sizeof(delays_us) / sizeof(delays_us[0]);
	uint64_t n = 0, n2;
	size_t d;

	unlink(path);
	/*
	 * The fixed delays kill the writer in every phase on an idle machine;
	 * on a loaded one the child may have done little by then, so the
	 * last delay repeats (up to 100 more kills) until the increment phase
	 * has been reached.
	 */
	for (d = 0; d < nr_delays || (n <= CRASH_K && d < nr_delays + 100); d++) {
		int pfd[2], status;
		char c;
		pid_t pid;

		CU_ASSERT_FATAL(pipe(pfd) == 0);
		pid = fork();
		CU_ASSERT_FATAL(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			crash_child(path, n, pfd[1]);
		}
		close(pfd[1]);
		CU_ASSERT_FATAL(read(pfd[0], &c, 1) == 1);
		close(pfd[0]);
		usleep(delays_us[d < nr_delays ? d : nr_delays - 1]);
		kill(pid, SIGKILL);
		CU_ASSERT_FATAL(waitpid(pid, &status, 0) == pid);
		CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

		/* Readable, well-formed, and the adds are whole: n2 >= n, and the
		 * next child continues the pattern from n2. */
		CU_ASSERT_EQUAL_FATAL(check_pattern(path, &n2), 0);
		CU_ASSERT(n2 >= n);
		if (getenv("TEST_ODB_VERBOSE"))
			fprintf(stderr, "\n  killed after %d us: %llu adds",
				delays_us[d < nr_delays ? d : nr_delays - 1],
				(unsigned long long)(n2 - n));
		n = n2;
	}
	/* The last rounds ran well into the increment phase. */
	CU_ASSERT(n > CRASH_K);

	/* A writer reopens the killed file and carries on. */
	{
		struct odb *db;
		uint64_t i;

		CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, NULL), 0);
		for (i = n; i < n + 1000; i++)
			CU_ASSERT_EQUAL(odb_add(db, i % CRASH_K * 64, 1), 0);
		odb_close(db);
		CU_ASSERT_EQUAL(check_pattern(path, &n2), 0);
		CU_ASSERT_EQUAL(n2, n + 1000);
	}
}

/* A reader opens no link (-ELOOP) and reads no FIFO (refused, no hang). */
static void test_read_not_link(void)
{
	char path[256], link[256], fifo[256], why[64];
	struct odb *db;

	/* (tpath's buffers are reused: copies) */
	snprintf(path, sizeof(path), "%s", tpath("real"));
	snprintf(link, sizeof(link), "%s", tpath("link"));
	snprintf(fifo, sizeof(fifo), "%s", tpath("fifo"));

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(odb_add(db, 8, 1), 0);
	odb_close(db);
	CU_ASSERT_EQUAL_FATAL(symlink(path, link), 0);
	CU_ASSERT_EQUAL(odb_open_read(&db, link, why, sizeof(why)), -ELOOP);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	CU_ASSERT(odb_open_read(&db, fifo, why, sizeof(why)) < 0);
	CU_ASSERT_EQUAL_FATAL(odb_open_read(&db, path, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(odb_count(db, 8), 1);
	odb_close(db);
}

/* Descriptors this process has open. */
static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 4096; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/*
 * A writer keeps its mapping and no descriptor, so only the mappings bound
 * how many files stay open; it reopens the file by its name to grow it,
 * and refuses to grow a file whose name another file has taken since.
 */
static void test_no_descriptor(void)
{
	struct odb *db[32];
	const char *path;
	char name[32];
	uint64_t i, count = 0;
	int before = count_fds(), k;
	struct stat st;

	for (k = 0; k < 32; k++) {
		snprintf(name, sizeof(name), "nofd.%d", k);
		CU_ASSERT_EQUAL_FATAL(odb_open(&db[k], tpath(name), ODB_RDWR, &test_desc), 0);
	}
	CU_ASSERT_EQUAL(count_fds(), before);
	/* grows (512 nodes at first) through a reopen, and still no descriptor */
	for (i = 0; i < 5000; i++)
		CU_ASSERT_EQUAL_FATAL(odb_add(db[0], i * 8, 1), 0);
	CU_ASSERT_EQUAL(count_fds(), before);
	CU_ASSERT_EQUAL(odb_sync_start(db[0]), 0);
	CU_ASSERT_EQUAL(odb_sync(db[0]), 0);
	CU_ASSERT_EQUAL(count_fds(), before);
	CU_ASSERT_EQUAL(odb_read_count(tpath("nofd.0"), 4999 * 8, &count), 0);
	CU_ASSERT_EQUAL(count, 1);

	/* nofd.1 moved away and its name taken by another file: the other
	 * file is left as it was.  Its first grow (512 to 1,024 nodes) is in
	 * the room the file was made with: no reopen, for any user.  The next
	 * goes through the mapping where this process may open it (root:
	 * /proc/self/map_files), else it refuses (-ESTALE) and what was
	 * mapped stays whole */
	path = tpath("nofd.1");
	for (i = 0; i < 512; i++)
		CU_ASSERT_EQUAL_FATAL(odb_add(db[1], i, 2), 0);
	CU_ASSERT_EQUAL_FATAL(rename(path, tpath("nofd.1.old")), 0);
	k = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	CU_ASSERT_FATAL(k >= 0);
	CU_ASSERT_EQUAL(write(k, "other", 5), 5);
	close(k);
	for (i = 512; i < 1024; i++)
		CU_ASSERT_EQUAL_FATAL(odb_add(db[1], i, 1), 0);
	CU_ASSERT_EQUAL(odb_add(db[1], 1024, 1), geteuid() == 0 ? 0 : -ESTALE);
	CU_ASSERT_EQUAL(odb_add(db[1], 7, 1), 0);
	CU_ASSERT_EQUAL(odb_sync_start(db[1]), geteuid() == 0 ? 0 : -ESTALE);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_size, 5);
	CU_ASSERT_EQUAL(odb_read_count(tpath("nofd.1.old"), 7, &count), 0);
	CU_ASSERT_EQUAL(count, 3);
	CU_ASSERT_EQUAL(odb_read_count(tpath("nofd.1.old"), 1023, &count), 0);
	CU_ASSERT_EQUAL(count, 1);
	CU_ASSERT_EQUAL(odb_read_count(tpath("nofd.1.old"), 1024, &count), 0);
	CU_ASSERT_EQUAL(count, geteuid() == 0 ? 1 : 0);
	CU_ASSERT_EQUAL(count_fds(), before);
	for (k = 0; k < 32; k++)
		odb_close(db[k]);
}

/*
 * A new file is made with room for 1,024 nodes (a hole), so its first grow
 * (past 512) neither reopens nor extends it; the grow after extends it.
 */
static void test_new_file_room(void)
{
	const off_t room = sizeof(struct odb_file_header) + 1024 * sizeof(struct odb_node);
	const char *path = tpath("room");
	struct odb *db = NULL;
	uint64_t count = 0;
	uint64_t i;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(file_size(path), room);
	for (i = 0; i < 1024; i++)
		CU_ASSERT_EQUAL_FATAL(odb_add(db, i * 16, 1), 0);
	CU_ASSERT_EQUAL(file_size(path), room);
	CU_ASSERT_EQUAL(odb_read_count(path, 1023 * 16, &count), 0);
	CU_ASSERT_EQUAL(count, 1);
	CU_ASSERT_EQUAL(odb_add(db, 1024 * 16, 1), 0);
	CU_ASSERT_EQUAL(file_size(path), room + 1024 * (off_t)sizeof(struct odb_node));
	odb_close(db);
	/* a writer reopening it keeps the size and every count */
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, NULL), 0);
	CU_ASSERT_EQUAL(odb_nr_keys(db), 1025);
	CU_ASSERT_EQUAL(odb_total(db), 1025);
	odb_close(db);

	/* a file reopened before its first grow, and one cut short to its
	 * header's capacity while reopened: the grow maps the room again (and
	 * extends the cut one first: no node past its end), every count kept */
	for (int cut = 0; cut < 2; cut++) {
		path = tpath(cut ? "room.cut" : "room.re");
		CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
		for (i = 0; i < 100; i++)
			CU_ASSERT_EQUAL_FATAL(odb_add(db, i * 16, 1), 0);
		odb_close(db);
		CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, NULL), 0);
		if (cut)
			CU_ASSERT_EQUAL_FATAL(truncate(path, room - 512 * (off_t)sizeof(struct odb_node)),
					      0);
		for (i = 100; i < 1024; i++)
			CU_ASSERT_EQUAL_FATAL(odb_add(db, i * 16, 1), 0);
		CU_ASSERT_EQUAL(file_size(path), room);
		CU_ASSERT_EQUAL(odb_nr_keys(db), 1024);
		odb_close(db);
		CU_ASSERT_EQUAL(odb_read_count(path, 1023 * 16, &count), 0);
		CU_ASSERT_EQUAL(count, 1);
	}
}

/*
 * A new file's pages are holes: a write faults in its own page only, no
 * zeroed pages read ahead (mincore: the file's pages in the page cache).
 */
static void test_new_file_no_readahead(void)
{
	const char *path = tpath("noahead");
	const size_t len = sizeof(struct odb_file_header) + 1024 * sizeof(struct odb_node);
	const size_t psize = (size_t)sysconf(_SC_PAGESIZE);
	const size_t pages = (len + psize - 1) / psize;
	unsigned char vec[16];
	struct odb *db = NULL;
	size_t resident = 0;
	void *map;
	int fd;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL_FATAL(odb_add(db, 0x100, 1), 0);	/* node 0: page 0 */
	fd = open(path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0 && pages <= sizeof(vec));
	memset(vec, 0, sizeof(vec));
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	CU_ASSERT_FATAL(map != MAP_FAILED);
	CU_ASSERT_EQUAL_FATAL(mincore(map, len, vec), 0);
	for (size_t i = 0; i < pages; i++)
		resident += vec[i] & 1;
	CU_ASSERT_EQUAL(vec[0] & 1, 1);
	CU_ASSERT_EQUAL(resident, 1);
	munmap(map, len);
	odb_close(db);
}

/*
 * odb_close_exiting frees the handle and leaves the mapping to the
 * process's exit: the file stays mapped, and every count is in it.
 */
static void test_close_exiting(void)
{
	const char *path = tpath("exiting");
	struct odb *db = NULL;
	uint64_t count = 0, i;

	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &test_desc), 0);
	for (i = 0; i < 3000; i++)	/* grown past its room: mremapped */
		CU_ASSERT_EQUAL_FATAL(odb_add(db, i * 8, i % 3 + 1), 0);
	CU_ASSERT_EQUAL(du_test_count_maps(path), 1);
	odb_close_exiting(db);
	CU_ASSERT_EQUAL(du_test_count_maps(path), 1);
	CU_ASSERT_EQUAL(odb_read_count(path, 2999 * 8, &count), 0);
	CU_ASSERT_EQUAL(count, 2999 % 3 + 1);
	odb_close_exiting(NULL);
	/* odb_close unmaps */
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, tpath("closed"), ODB_RDWR, &test_desc), 0);
	CU_ASSERT_EQUAL(du_test_count_maps(tpath("closed")), 1);
	odb_close(db);
	CU_ASSERT_EQUAL(du_test_count_maps(tpath("closed")), 0);
}

/* The library's warnings about the corrupt files made on purpose. */
static void quiet_log(enum du_log_level level, const char *fmt, va_list ap)
{
}

static int rm_tmpdir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "add, lookup, sum", test_basic },
		{ "open errors", test_open_errors },
		{ "many keys, grows, reopen", test_many_keys_and_reopen },
		{ "randomized against a reference", test_reference_model },
		{ "bulk add equals single adds", test_add_keys },
		{ "truncated files", test_truncated },
		{ "corrupt headers", test_corrupt_header },
		{ "corrupt bodies", test_corrupt_body },
		{ "half-made file", test_half_made },
		{ "file of an earlier layout", test_old_layout },
		{ "SIGKILLed writer", test_crash },
		{ "a writer holds no descriptor", test_no_descriptor },
		{ "a new file has room for its first grow", test_new_file_room },
		{ "a reader opens no link and no FIFO", test_read_not_link },
		{ "closing at exit leaves the mapping", test_close_exiting },
		{ "a new file's first write reads nothing ahead", test_new_file_no_readahead },
	};
	int rc;

	du_log_set(quiet_log);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_odb.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 2;
	rc = du_test_main("odb", tests, DU_TEST_N(tests), NULL, NULL);
	rm_tmpdir();
	return rc;
}
