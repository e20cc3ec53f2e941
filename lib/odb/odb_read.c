/*
 * Sample files, the reader's side: a file checked whole and its nodes
 * copied out (odb_open_read*), and the header checks a writer's open
 * shares (odb_int.h).  The writer is odb.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "domprof/odb_format.h"
#include "odb/odb.h"
#include "odb_int.h"

int odb_validate(const struct odb_file_header *h, uint64_t committed, uint64_t size,
		 const char **why)
{
	const char *w = NULL;

	if (size < sizeof(*h))
		w = "shorter than its header";
	else if (h->magic != ODB_MAGIC)
		w = "bad magic";
	else if (h->version != ODB_VERSION)
		w = "unknown version";
	else if (h->node_size != sizeof(struct odb_node))
		w = "bad node size";
	else if (h->header_size < sizeof(*h) || h->header_size % 8 || h->header_size > size)
		w = "bad header size";
	else if (h->capacity > ODB_MAX_CAPACITY || committed > h->capacity)
		w = "node count over the capacity";
	else if (h->header_size + committed * sizeof(struct odb_node) > size)
		w = "nodes past the end of the file";
	else if (!memchr(h->event, '\0', sizeof(h->event)))
		w = "event name not terminated";
	if (why)
		*why = w;
	return w ? -EBADMSG : 0;
}

void odb_desc_from_header(struct odb_desc *d, const struct odb_file_header *h)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->event, h->event, sizeof(d->event));
	d->event[sizeof(d->event) - 1] = '\0';
	d->count = h->count;
	d->unit_mask = h->unit_mask;
	d->flags = h->flags;
	d->mtime = h->mtime;
}

int odb_read_header(int fd, void *buf, size_t size, struct odb_file_header *h, ssize_t *got,
		    struct stat *st)
{
	*got = pread(fd, buf, size, 0);
	if (*got < 0)
		return -errno;
	if (fstat(fd, st) < 0)
		return -errno;
	if ((void *)h != buf) {
		memset(h, 0, sizeof(*h));
		memcpy(h, buf, (size_t)*got < sizeof(*h) ? (size_t)*got : sizeof(*h));
	}
	return 0;
}

/*
 * Check the nodes a reader copied: each writer's chain index names an
 * earlier node (a writer chains a node to the bucket's head of the
 * moment, and its rebuilds keep that order), pad is zero, no count is
 * over ODB_MAX_COUNT and their sum not over ODB_MAX_TOTAL.  A file that
 * fails any of these was not written by lib/odb: random bytes pass all of
 * them with a chance of about 2^-64 per node.  Sets db->total.
 */
static int odb_check_nodes(struct odb *db, const char **why)
{
	uint64_t total = 0;

	for (uint64_t i = 0; i < db->committed; i++) {
		const struct odb_node *n = &db->nodes[i];

		if (n->next > i || n->pad)
			*why = "bad node (chain index or padding)";
		else if (n->count > ODB_MAX_COUNT || n->count > ODB_MAX_TOTAL - total)
			*why = "counts over the bound";
		else {
			total += n->count;
			continue;
		}
		return -EBADMSG;
	}
	db->total = total;
	return 0;
}

bool odb_half_made(const struct odb_file_header *h, ssize_t got, const struct stat *st)
{
	return st->st_size == 0 || ((size_t)got >= sizeof(*h) && h->magic == 0 && h->committed == 0);
}

/*
 * A reader copies the committed nodes out of the file (pread, no mapping)
 * and checks the copy: a writer that changed the file after the check, or
 * cut it short, changes nothing the reader has (no SIGBUS, no count that
 * grew past the bound after it was checked).
 */
/* Read the sample file open as @fd (the reader's now, closed when read). */
static int odb_open_rdonly(struct odb *db, int fd, const char **why)
{
	char first[4096];	/* the header and, in most files, every node */
	struct odb_file_header h;
	struct stat st;
	size_t len;
	ssize_t n, got;
	int rc;

	*why = NULL;
	db->fd = fd;
	/* Header (and its committed count) first, size second: see validate.
	 * The nodes read with the header were read before the size too, as
	 * a second read would have read them. */
	rc = odb_read_header(db->fd, first, sizeof(first), &h, &got, &st);
	if (!rc && !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		rc = -EBADMSG;
	}
	if (rc)
		goto out_close;
	if (odb_half_made(&h, got, &st)) {
		rc = -ENODATA;
		goto out_close;
	}
	if ((size_t)got < sizeof(h)) {
		*why = "shorter than its header";
		rc = -EBADMSG;
	} else {
		rc = odb_validate(&h, h.committed, st.st_size, why);
	}
	if (rc)
		goto out_close;
	len = h.committed * sizeof(struct odb_node);
	db->nodes = malloc(len ? len : 1);
	if (!db->nodes) {
		rc = -ENOMEM;
		goto out_close;
	}
	if (h.header_size + len <= (size_t)got) {
		memcpy(db->nodes, first + h.header_size, len);
		n = (ssize_t)len;
	} else {
		n = len ? pread(db->fd, db->nodes, len, h.header_size) : 0;
	}
	if (n < 0) {
		rc = -errno;
		goto out_close;
	}
	db->committed = h.committed;
	db->capacity = h.capacity;
	if ((size_t)n != len) {
		*why = "cut short while read";
		rc = -EBADMSG;
	} else {
		rc = odb_check_nodes(db, why);
	}
	if (rc)
		goto out_close;
	/* The header's descriptive fields as validated, not as they may be now. */
	odb_desc_from_header(&db->desc, &h);
	close(db->fd);
	db->fd = -1;
	return 0;

out_close:
	close(db->fd);
	db->fd = -1;
	return rc;
}

/* A reader of @path, or of the file already open as @fd (@path NULL). */
static int odb_open_reader(struct odb **out, int fd, const char *path, const char **why)
{
	struct odb *db = NULL;
	int rc = -EINVAL;

	/* A sample file is a regular file: a link is not followed (a session
	 * is readable by its group, whose members may plant one), and a FIFO
	 * put in a file's place after the caller's look does not hang us. */
	if (path) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			return -errno;
	}
	if (out && fd >= 0) {
		db = calloc(1, sizeof(*db));
		rc = db ? 0 : -ENOMEM;
	}
	if (rc) {
		if (fd >= 0)
			close(fd);	/* a reader's, opened here or given */
		return rc;
	}
	db->mode = ODB_RDONLY;
	db->fd = -1;
	rc = odb_open_rdonly(db, fd, why);
	if (rc) {
		odb_free(db);
		return rc;
	}
	*out = db;
	return 0;
}

int odb_open_rdonly_path(struct odb **out, const char *path)
{
	const char *why = NULL;

	return odb_open_reader(out, -1, path, &why);
}

static int odb_open_read_any(struct odb **out, int fd, const char *path, char *why, size_t size)
{
	const char *w = NULL;
	int rc = odb_open_reader(out, fd, path, &w);

	if (why && size)
		snprintf(why, size, "%s", rc == -EBADMSG && w ? w : rc ? strerror(-rc) : "");
	return rc;
}

int odb_open_read(struct odb **out, const char *path, char *why, size_t size)
{
	return odb_open_read_any(out, -1, path, why, size);
}

int odb_open_read_fd(struct odb **out, int fd, char *why, size_t size)
{
	return odb_open_read_any(out, fd, NULL, why, size);
}

int odb_read_count(const char *path, uint64_t key, uint64_t *count)
{
	struct odb *db;
	int rc = odb_open(&db, path, ODB_RDONLY, NULL);

	if (rc)
		return rc;
	*count = odb_count(db, key);
	odb_close(db);
	return 0;
}
