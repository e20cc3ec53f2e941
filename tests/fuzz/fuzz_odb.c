/*
 * libFuzzer target for the sample-file reader (lib/odb, ODB_RDONLY), the
 * report tools' parser of files an unprivileged writer may have made.
 *
 * The input is a whole file.  When its first byte is odd, the header's
 * fixed fields (magic, version, sizes) are set right and its node count
 * fitted to the bytes, so that most inputs reach the node checks rather
 * than stop at the magic.  Besides "no crash, no hang, no sanitizer
 * report", for any bytes: a file the reader accepts has nodes within the
 * file, every count within ODB_MAX_COUNT, a total that is the sum of what
 * odb_foreach gives and within ODB_MAX_TOTAL; a refused one is -EBADMSG
 * with a reason, or -ENODATA (empty or half-made).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "domprof/odb_format.h"
#include "odb/odb.h"
#include "util/du_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t file[1 << 20];

struct sum {
	uint64_t total, n;
};

static int add(void *ctx, uint64_t key, uint64_t count)
{
	struct sum *s = ctx;

	(void)key;
	if (count > ODB_MAX_COUNT || s->total + count < s->total)
		abort();
	s->total += count;
	s->n++;
	return 0;
}

/* Set the header's fixed fields right; committed fitted to the nodes. */
static void fix_header(uint8_t *f, size_t size)
{
	struct odb_file_header h;
	uint64_t nodes = (size - sizeof(h)) / sizeof(struct odb_node), cap = 1;

	memcpy(&h, f, sizeof(h));
	h.magic = ODB_MAGIC;
	h.version = ODB_VERSION;
	h.header_size = sizeof(h);
	h.node_size = sizeof(struct odb_node);
	h.event[sizeof(h.event) - 1] = '\0';
	if (h.committed > nodes)
		h.committed = nodes;
	while (cap < h.committed)
		cap <<= 1;
	if (h.capacity < h.committed)
		h.capacity = cap;
	memcpy(f, &h, sizeof(h));
}

static void quiet(enum du_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

static char path[] = "/tmp/fuzz_odb.XXXXXX";

static void remove_file(void)
{
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a file of its own, read by its name: the reader refuses a link,
	 * and /proc/self/fd/N is one */
	static int fd = -1;
	char why[128];
	struct odb *db;
	struct sum s = { 0, 0 };
	int rc;

	if (fd < 0) {
		du_log_set(quiet);
		fd = mkstemp(path);
		if (fd < 0)
			abort();
		atexit(remove_file);
	}
	if (size > sizeof(file))
		return 0;
	memcpy(file, data, size);
	if (size > sizeof(struct odb_file_header) && (data[0] & 1))
		fix_header(file, size);
	if (ftruncate(fd, 0) || pwrite(fd, file, size, 0) != (ssize_t)size)
		abort();
	rc = odb_open_read(&db, path, why, sizeof(why));
	if (rc) {
		if ((rc != -EBADMSG || !why[0]) && rc != -ENODATA)
			abort();
		return 0;
	}
	if (sizeof(struct odb_file_header) + odb_nr_keys(db) * sizeof(struct odb_node) > size)
		abort();
	if (odb_foreach(db, add, &s) || s.n != odb_nr_keys(db) || s.total != odb_total(db) ||
	    s.total > ODB_MAX_TOTAL)
		abort();
	odb_close(db);
	return 0;
}
