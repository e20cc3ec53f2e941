/*
 * What the writer (odb.c) and the reader (odb_read.c) of sample files
 * share: the handle, and the header checks both make.  Not installed; no
 * caller outside lib/odb.
 */
#ifndef ODB_INT_H
#define ODB_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "domprof/odb_format.h"
#include "odb/odb.h"

/* next and bucket values are node index + 1 in 32 bits. */
#define ODB_MAX_CAPACITY	(1ULL << 31)

struct odb {
	enum odb_mode mode;
	int fd;				/* -1 once closed (readers, and writers
					 * once the file is mapped) */
	char *path;			/* a writer's, to reopen it to grow it */
	dev_t dev;			/* a writer's file, to know it again */
	ino_t ino;
	size_t file_len;		/* a writer's: the file's size as made
					 * or last extended (>= map_len) */
	bool grow_warned;		/* a grow failed: said once */
	uint8_t *map;
	size_t map_len;
	struct odb_file_header *hdr;
	struct odb_node *nodes;
	uint32_t *buckets;		/* writers only, in memory: capacity entries */
	uint64_t capacity;
	uint64_t committed;		/* the writer's count; the file's copy equals it */
	unsigned int shift;		/* 64 - log2(capacity) */
	uint64_t total;
	struct odb_desc desc;
};

/* Frees @db, its mapping, index or copied nodes and descriptor. */
void odb_free(struct odb *db);
/* odb_free leaving the mapping in place (odb_close_exiting). */
void odb_free_handle(struct odb *db);
/* odb_open(@path, ODB_RDONLY): a reader of @path. */
int odb_open_rdonly_path(struct odb **out, const char *path);

/*
 * Check a header against the size of its file.  @committed is the node
 * count to trust (a snapshot taken before the size was read, so that a
 * writer growing the file meanwhile cannot make it look truncated).  What
 * is wrong goes to @why (when not NULL).  0 or -EBADMSG.
 */
int odb_validate(const struct odb_file_header *h, uint64_t committed, uint64_t size,
		 const char **why);
/* @d from the descriptive fields of header @h. */
void odb_desc_from_header(struct odb_desc *d, const struct odb_file_header *h);
/*
 * Read the file's first @size bytes (its header, and what follows where
 * @size is more) into @buf (*@got: bytes read, maybe short), then stat
 * the file into @st: in that order, see odb_validate().  The header is
 * copied into @h (which may be @buf itself), zero past what was read.
 * 0 or -errno.
 */
int odb_read_header(int fd, void *buf, size_t size, struct odb_file_header *h, ssize_t *got,
		    struct stat *st);
/* Empty, or made by a writer that has not written the magic yet (or was
 * killed before): no samples yet. */
bool odb_half_made(const struct odb_file_header *h, ssize_t got, const struct stat *st);

#endif
