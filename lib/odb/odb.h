/*
 * odb: a sample file.  One file per (image, context, event); it maps a key
 * (an offset into the image) to a 64-bit count.  The file is memory-mapped
 * and laid out so that a killed writer leaves a file that still opens and
 * reads correctly: readers look only at the node array up to the committed
 * node count; the hash index is rebuilt whenever a writer opens the file.
 * The layout is defined in include/domprof/odb_format.h.
 */
#ifndef ODB_H
#define ODB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ODB_EVENT_NAME 48

/* What a sample file counts.  Stored in the file header. */
struct odb_desc {
	char event[ODB_EVENT_NAME];	/* NUL-terminated */
	uint64_t count;			/* sampling period */
	uint32_t unit_mask;
	uint32_t flags;			/* ODB_F_* */
	int64_t mtime;			/* of the binary, 0 if unknown */
};
#define ODB_F_KERNEL	0x1		/* keys are kernel offsets */

struct odb;

enum odb_mode { ODB_RDONLY, ODB_RDWR };

/*
 * Open @path.  ODB_RDWR creates the file (and not its directories) with
 * @desc if it does not exist; an existing file keeps its own header (then
 * @desc may be NULL).  ODB_RDONLY validates the file completely and reads
 * its nodes into memory of its own (what the file holds later does not
 * matter): a bad header (magic, version, sizes against the file's size),
 * a node that no writer makes (a chain index that is not an earlier node,
 * nonzero padding), a count over ODB_MAX_COUNT or counts summing over
 * ODB_MAX_TOTAL are -EBADMSG; an empty or half-made file (a writer making
 * it now, or one killed before it wrote the magic) is -ENODATA, for a
 * reader a file with no samples yet.  Returns 0 and sets *@out, or -errno.
 */
int odb_open(struct odb **out, const char *path, enum odb_mode mode, const struct odb_desc *desc);
/*
 * odb_open(@path, ODB_RDWR, @desc) that makes the file's directories
 * where they are missing: below @path's first @there bytes, which name a
 * directory the caller believes there (0: none known), as
 * du_nf_open_made() in util/du_sdir.h does.  For an absolute @path; a
 * relative one gets no directories (as odb_open).
 */
int odb_open_made(struct odb **out, const char *path, size_t there, const struct odb_desc *desc);
/* odb_open(@path, ODB_RDONLY) that says in @why (@size bytes, "" on
 * success) what is wrong: for -EBADMSG which check failed. */
int odb_open_read(struct odb **out, const char *path, char *why, size_t size);
/* odb_open_read of the file open as @fd, which is the reader's then
 * (closed once read, and on any error): for a caller that opens sample
 * files its own way (from a directory it holds, no link on the way).
 * Open it O_NONBLOCK: a FIFO in a file's place is refused, not waited on. */
int odb_open_read_fd(struct odb **out, int fd, char *why, size_t size);
/* Closes (syncing nothing: the page cache owns the data). NULL accepted. */
void odb_close(struct odb *db);
/*
 * odb_close for a process about to exit: the handle is freed, the file's
 * mapping left for the exit to take down with the rest of the address
 * space.  The file ends the same (its pages are the page cache's either
 * way); a process closing thousands of files spares a munmap each, with
 * its TLB flush.  Not for a process that goes on: the mapping stays until
 * it exits.  NULL accepted.
 */
void odb_close_exiting(struct odb *db);
/* msync the mapping. 0 or -errno. */
int odb_sync(struct odb *db);
/*
 * Start writing the file's dirty pages back without waiting (a hint; 0
 * or -errno).  Syncing many files is cheaper as odb_sync_start on each,
 * then odb_sync on each: the writes are queued together, not one file's
 * at a time.  No-op for readers.
 */
int odb_sync_start(struct odb *db);

/* Add @inc to the count of @key, inserting it at 0 first. 0 or -errno. */
int odb_add(struct odb *db, uint64_t key, uint64_t inc);

/*
 * Hints that odb_add(@db, @key, ...) comes soon, so that several adds to
 * tables far apart in memory wait for their misses together: @stage 0
 * fetches the key's bucket; @stage 1, after it, the node the bucket
 * names.  Changes nothing; any writer handle, any key.
 */
void odb_prefetch(const struct odb *db, uint64_t key, int stage);
/* odb_prefetch(@db, @keys[i], @stage) for each of the @n keys. */
void odb_prefetch_keys(const struct odb *db, const uint64_t *keys, size_t n, int stage);
/* A hint before odb_prefetch's on @db: fetches the handle itself. */
void odb_prefetch_handle(const struct odb *db);

/*
 * Add 1 to the count of each of @keys[0..@n) (a key may repeat), as @n
 * calls of odb_add(db, key, 1) would, in order (new keys get nodes in
 * the order of their first occurrence), with the same crash safety.
 * Faster than single adds on a large table: it prefetches the buckets
 * and nodes of keys a few places ahead.  On an error, keys before
 * *@done (if @done is not NULL) were added and the rest were not.
 * 0 or -errno.
 */
int odb_add_keys(struct odb *db, const uint64_t *keys, size_t n, size_t *done);

const struct odb_desc *odb_get_desc(const struct odb *db);
/* Number of distinct keys. */
uint64_t odb_nr_keys(const struct odb *db);
/* Sum of all counts. */
uint64_t odb_total(const struct odb *db);

/* The count of @key (0 when absent): by the index for a writer, by a scan
 * of the nodes for a reader (readers keep no index). */
uint64_t odb_count(const struct odb *db, uint64_t key);
/* The count of @key in the file at @path, opened read-only for the look:
 * 0 or -errno from odb_open. */
int odb_read_count(const char *path, uint64_t key, uint64_t *count);

/* Calls @fn for every (key, count) in insertion order; stops at the first
 * nonzero return and returns it. */
int odb_foreach(const struct odb *db, int (*fn)(void *ctx, uint64_t key, uint64_t count), void *ctx);

#endif
