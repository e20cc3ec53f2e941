/*
 * Sample files: a memory-mapped, append-only node array with a hash index
 * (layout and crash-safety rule in include/domprof/odb_format.h).
 *
 * One writer per file at a time (the daemon); any number of readers.
 * This is the writer's side and what both use; the reader is odb_read.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "domprof/odb_format.h"
#include "odb/odb.h"
#include "odb_int.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

_Static_assert(ODB_EVENT_NAME == ODB_FILE_EVENT_NAME, "odb_desc and file header agree");

/* Room for 512 nodes at first (12 KiB, a hole until nodes are written, so
 * a file with few keys takes no more disk than a smaller one), which spares
 * most files of a session the grows (truncate, mremap, re-index) that a
 * small start cost. */
#define ODB_MIN_CAPACITY	512
/* A new file is made and mapped this large (a hole too), so that its first
 * grow, while the writer that made it holds it, only rebuilds the index:
 * no reopen by its path, no truncate, no mremap, which were most of what a
 * grow cost (reopening a deep path) and every file of a busy image grows
 * once.  Its header still says ODB_MIN_CAPACITY: readers and the index go
 * by the header, not the size.  A writer that opens an existing file maps
 * what its header says and grows it as before (odb_extend). */
#define ODB_NEW_FILE_CAPACITY	(2 * ODB_MIN_CAPACITY)

static inline uint32_t odb_hash(uint64_t key, unsigned int shift)
{
	/* Fibonacci hashing: the top bits of the product mix all key bits, so
	 * aligned offsets (low bits zero) still spread over every bucket. */
	return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> shift);
}

/* The writer's hash index is in memory, not in the file: readers never use
 * it and the writer rebuilds it at every open, so in the file it only cost
 * page faults.  Files written before may still have it after the nodes;
 * nothing reads it. */
static size_t odb_file_size(uint32_t header_size, uint64_t capacity)
{
	return header_size + capacity * sizeof(struct odb_node);
}

static unsigned int odb_log2(uint64_t v)
{
	return 63 - (unsigned int)__builtin_clzll(v);
}

/* Point the nodes into the mapping, for @capacity nodes. */
static void odb_set_table(struct odb *db, uint64_t capacity)
{
	db->hdr = (struct odb_file_header *)db->map;
	db->nodes = (struct odb_node *)(db->map + db->hdr->header_size);
	db->capacity = capacity;
	db->shift = 64 - odb_log2(capacity);
}

/* A new, empty index of @capacity buckets, replacing the old one. */
static int odb_new_index(struct odb *db, uint64_t capacity)
{
	uint32_t *b = calloc(capacity, sizeof(*b));

	if (!b)
		return -ENOMEM;
	free(db->buckets);
	db->buckets = b;
	return 0;
}

void odb_free(struct odb *db)
{
	if (db->map)
		munmap(db->map, db->map_len);
	odb_free_handle(db);
}

void odb_free_handle(struct odb *db)
{
	if (db->mode == ODB_RDONLY)
		free(db->nodes);	/* a reader's own copy */
	if (db->fd >= 0)
		close(db->fd);
	free(db->path);
	free(db->buckets);
	free(db);
}

/* Where odb_open_rdwr makes no directories. */
#define ODB_NO_DIRS	((size_t)-1)

/* Open a writer's file: never through a symlink (util/du_sdir.h); with
 * its directories made below the first @there bytes of an absolute @path
 * (du_nf_open_made) unless @there is ODB_NO_DIRS. */
static int odb_open_path(const char *path, int flags, size_t there)
{
	int fd;

	/* The writer is the root daemon: never through a symlink, on the way
	 * or at the end; a relative path (tests, tools) gets O_NOFOLLOW on its
	 * last component. */
	if (path[0] == '/' && there != ODB_NO_DIRS)
		return du_nf_open_made(path, there, O_RDWR | flags, DU_SDIR_FILE_MODE);
	if (path[0] == '/')
		return du_nf_open(path, O_RDWR | flags, DU_SDIR_FILE_MODE, false);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | flags, DU_SDIR_FILE_MODE);
	return fd < 0 ? -errno : fd;
}

/* @fd if it is the file @db maps, else closed and -ESTALE. */
static int odb_same_file(const struct odb *db, int fd)
{
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != db->dev || st.st_ino != db->ino)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * A writer's file again, for what needs a descriptor (growing it, starting
 * its writeback): by its path, and only if it is still the file mapped.
 * Where the name no longer leads to it (its directory moved away, as
 * opcontrol --save does while the daemon still files what it had queued,
 * or another file took the name), through the mapping itself
 * (/proc/self/map_files: a root daemon's; the privsep worker's names are
 * below a directory it holds open, which a move does not change).
 * Returns the descriptor, or -errno (-ESTALE: another file has the name).
 */
static int odb_reopen(const struct odb *db)
{
	uintptr_t start = (uintptr_t)db->map, page = (uintptr_t)sysconf(_SC_PAGESIZE);
	char mf[64];
	int fd = odb_same_file(db, odb_open_path(db->path, 0, ODB_NO_DIRS)), alt;

	if (fd >= 0)
		return fd;
	/* (the mapping's name: its pages' range) */
	snprintf(mf, sizeof(mf), "/proc/self/map_files/%lx-%lx", (unsigned long)start,
		 (unsigned long)((start + db->map_len + page - 1) & ~(page - 1)));
	alt = odb_same_file(db, open(mf, O_RDWR | O_CLOEXEC));
	if (alt >= 0)
		return alt;
	return fd;
}

/*
 * Chain the committed nodes into the (empty) index.  A file reopened at
 * the capacity it was written with already holds these chains (odb_insert
 * chains a node to its bucket's head, as this does), so a link is written
 * only where it differs: a reopen then reads the nodes' pages without
 * dirtying them (a write fault each, and their writeback), which under
 * many files and an LRU of open ones was most of a reopen's cost.
 */
static void odb_rebuild_index(struct odb *db)
{
	uint64_t i;

	for (i = 0; i < db->committed; i++) {
		uint32_t h = odb_hash(db->nodes[i].key, db->shift);

		if (db->nodes[i].next != db->buckets[h])
			db->nodes[i].next = db->buckets[h];
		db->buckets[h] = (uint32_t)(i + 1);
	}
}

static void odb_sum(struct odb *db)
{
	uint64_t i;

	db->total = 0;
	for (i = 0; i < db->committed; i++)
		db->total += db->nodes[i].count;
}

/* Lay out a new (empty, @cur 0, or half-made) file; the magic goes in
 * last.  An empty file is not cut to 0 first: on ext4 a file cut to 0
 * has its data written out when it is closed (the writer closes it at
 * once, lib/odb), which made creating a file cost a writeback. */
static int odb_init_file(struct odb *db, const struct odb_desc *desc, off_t cur)
{
	size_t size = odb_file_size(sizeof(struct odb_file_header), ODB_NEW_FILE_CAPACITY);
	struct odb_file_header *h;
	void *map;

	if ((cur && ftruncate(db->fd, 0) < 0) || ftruncate(db->fd, size) < 0)
		return -errno;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, db->fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	/* Its pages are holes, written one after the other: a fault reading
	 * ahead would only zero pages not written yet (most of a small
	 * file's), so each fault takes its own page.  (A hint: not taken,
	 * the file is the same.) */
	madvise(map, size, MADV_RANDOM);
	db->map = map;
	db->map_len = size;
	db->file_len = size;
	h = map;
	h->version = ODB_VERSION;
	h->header_size = sizeof(*h);
	h->node_size = sizeof(struct odb_node);
	h->flags = desc->flags;
	memcpy(h->event, desc->event, strnlen(desc->event, sizeof(h->event)));
	h->count = desc->count;
	h->unit_mask = desc->unit_mask;
	h->mtime = desc->mtime;
	h->capacity = ODB_MIN_CAPACITY;
	h->committed = 0;
	__atomic_store_n(&h->magic, ODB_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* Map the valid file of header @h and size @st for writing and rebuild
 * its index.  0 or -errno. */
static int odb_map_existing(struct odb *db, const char *path, const struct odb_file_header *h,
			    ssize_t n, const struct stat *st)
{
	size_t want;
	void *map;
	int rc;

	rc = (size_t)n < sizeof(*h) ? -EBADMSG : odb_validate(h, h->committed, st->st_size, NULL);
	/* Our hash needs a power-of-two table of at least two buckets. */
	if (!rc && (h->capacity < 2 || (h->capacity & (h->capacity - 1))))
		rc = -EBADMSG;
	if (rc) {
		du_warn("odb: %s: not a valid sample file", path);
		return rc;
	}
	/* The node array may be cut short past the committed nodes: regrow it. */
	want = odb_file_size(h->header_size, h->capacity);
	if ((uint64_t)st->st_size < want && ftruncate(db->fd, want) < 0)
		return -errno;
	map = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, db->fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	db->map = map;
	db->map_len = want;
	/* (not the size seen: a file cut short since is extended again at
	 * its next grow, before a node is written past its end) */
	db->file_len = want;
	db->committed = h->committed;
	rc = odb_new_index(db, h->capacity);
	if (rc)
		return rc;
	odb_set_table(db, h->capacity);
	odb_rebuild_index(db);
	return 0;
}

static int odb_open_rdwr(struct odb *db, const char *path, const struct odb_desc *desc,
			 size_t there)
{
	struct odb_file_header h;
	struct stat st;
	ssize_t n;
	int rc;

	if (desc && strnlen(desc->event, sizeof(desc->event)) == sizeof(desc->event))
		return -EINVAL;
	/* Without a desc there is nothing to create the file with. */
	db->path = strdup(path);
	if (!db->path)
		return -ENOMEM;
	db->fd = odb_open_path(path, desc ? O_CREAT : 0, there);
	if (db->fd < 0)
		return db->fd;
	rc = odb_read_header(db->fd, &h, sizeof(h), &h, &n, &st);
	if (!rc) {
		db->dev = st.st_dev;
		db->ino = st.st_ino;
	}
	if (rc) {
		/* nothing more */
	} else if (odb_half_made(&h, n, &st)) {
		/* New, or made by a writer that died before it wrote the magic. */
		rc = desc ? odb_new_index(db, ODB_MIN_CAPACITY) : -EBADMSG;
		if (!rc)
			rc = odb_init_file(db, desc, st.st_size);
		if (!rc) {
			db->committed = 0;
			odb_set_table(db, ODB_MIN_CAPACITY);
		}
	} else {
		rc = odb_map_existing(db, path, &h, n, &st);
	}
	/* The mapping keeps the file: an open file then costs a mapping and
	 * no descriptor, so only vm.max_map_count bounds how many stay open.
	 * Growing it reopens it (odb_reopen). */
	close(db->fd);
	db->fd = -1;
	if (rc)
		return rc;
	odb_desc_from_header(&db->desc, db->hdr);
	odb_sum(db);
	return 0;
}

/* A writer of @path (odb_open_rdwr; @there: odb_open_path) */
static int odb_open_writer(struct odb **out, const char *path, const struct odb_desc *desc,
			   size_t there)
{
	struct odb *db;
	int rc;

	if (!out || !path)
		return -EINVAL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->mode = ODB_RDWR;
	db->fd = -1;
	rc = odb_open_rdwr(db, path, desc, there);
	if (rc) {
		odb_free(db);
		return rc;
	}
	*out = db;
	return 0;
}

int odb_open(struct odb **out, const char *path, enum odb_mode mode, const struct odb_desc *desc)
{
	if (mode == ODB_RDWR)
		return odb_open_writer(out, path, desc, ODB_NO_DIRS);
	return mode == ODB_RDONLY ? odb_open_rdonly_path(out, path) : -EINVAL;
}

int odb_open_made(struct odb **out, const char *path, size_t there, const struct odb_desc *desc)
{
	if (!desc)
		return -EINVAL;	/* nothing to make the file with */
	return odb_open_writer(out, path, desc, there);
}

void odb_close(struct odb *db)
{
	if (db)
		odb_free(db);
}

void odb_close_exiting(struct odb *db)
{
	if (db)
		odb_free_handle(db);
}

int odb_sync(struct odb *db)
{
	if (db->mode != ODB_RDWR)
		return 0;
	return msync(db->map, db->map_len, MS_SYNC) < 0 ? -errno : 0;
}

int odb_sync_start(struct odb *db)
{
	int fd, rc;

	if (db->mode != ODB_RDWR)
		return 0;
	fd = odb_reopen(db);
	if (fd < 0)
		return fd;
	rc = sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/*
 * Make the file and its mapping at least @size bytes: the file through a
 * descriptor (odb_reopen) only past the size it was made or last extended
 * to, the mapping by mremap only past its length.  0 or -errno; what
 * failed leaves the rest as it was.
 */
static int odb_extend(struct odb *db, size_t size)
{
	void *map;
	int fd, rc = 0;

	if (size > db->file_len) {
		fd = odb_reopen(db);
		if (fd < 0)
			return fd;
		if (ftruncate(fd, size) < 0)
			rc = -errno;
		close(fd);
		if (rc)
			return rc;
		db->file_len = size;
	}
	if (size > db->map_len) {
		map = mremap(db->map, db->map_len, size, MREMAP_MAYMOVE);
		if (map == MAP_FAILED)
			return -errno;
		db->map = map;
		db->map_len = size;
	}
	return 0;
}

/*
 * Double the table.  The file is extended before the header's capacity
 * says so, so at no instant do the header and the file size disagree in
 * a way a reader could trip on.
 */
static int odb_grow(struct odb *db)
{
	uint64_t cap = db->capacity * 2;
	uint32_t *buckets;
	int rc;

	if (cap > ODB_MAX_CAPACITY)
		return -EFBIG;
	buckets = calloc(cap, sizeof(*buckets));
	if (!buckets)
		return -ENOMEM;
	rc = odb_extend(db, odb_file_size(db->hdr->header_size, cap));
	if (rc) {
		free(buckets);
		if (!db->grow_warned)
			du_warn("odb: %s: cannot grow it (new keys are not counted): %s", db->path,
				strerror(-rc));
		db->grow_warned = true;
		return rc;	/* the old table and index still stand */
	}
	free(db->buckets);
	db->buckets = buckets;
	odb_set_table(db, cap);
	db->hdr->capacity = cap;
	odb_rebuild_index(db);
	return 0;
}

static int odb_insert(struct odb *db, uint64_t key, uint64_t inc)
{
	struct odb_node *n;
	uint32_t h;
	int rc;

	if (db->committed == db->capacity) {
		rc = odb_grow(db);
		if (rc)
			return rc;
	}
	h = odb_hash(key, db->shift);
	n = &db->nodes[db->committed];
	n->key = key;
	n->count = inc;
	n->next = db->buckets[h];
	n->pad = 0;
	/* The node is whole before it is counted. */
	__atomic_store_n(&db->hdr->committed, db->committed + 1, __ATOMIC_RELEASE);
	db->committed++;
	db->buckets[h] = (uint32_t)db->committed;
	db->total += inc;
	return 0;
}

int odb_add(struct odb *db, uint64_t key, uint64_t inc)
{
	const struct odb_node *nodes = db->nodes;
	uint32_t i;

	if (__builtin_expect(db->mode != ODB_RDWR, 0))
		return -EBADF;
	for (i = db->buckets[odb_hash(key, db->shift)]; i != ODB_NODE_END; i = nodes[i - 1].next) {
		if (nodes[i - 1].key == key) {
			db->nodes[i - 1].count += inc;
			db->total += inc;
			return 0;
		}
	}
	return odb_insert(db, key, inc);
}

void odb_prefetch(const struct odb *db, uint64_t key, int stage)
{
	odb_prefetch_keys(db, &key, 1, stage);
}

void odb_prefetch_keys(const struct odb *db, const uint64_t *keys, size_t n, int stage)
{
	if (db->mode != ODB_RDWR)
		return;
	for (size_t i = 0; i < n; i++) {
		uint32_t h = odb_hash(keys[i], db->shift), j;

		if (stage == 0) {
			__builtin_prefetch(&db->buckets[h]);
			continue;
		}
		j = db->buckets[h];
		if (j != ODB_NODE_END)
			__builtin_prefetch(&db->nodes[j - 1], 1);
	}
}

void odb_prefetch_handle(const struct odb *db)
{
	/* (the fields odb_prefetch and odb_add_keys read, mode to total,
	 * span two lines, or three where malloc put the handle off a line) */
	__builtin_prefetch(db);
	__builtin_prefetch((const char *)db + 64);
	__builtin_prefetch(&db->total);
}

/* How far ahead odb_add_keys prefetches: buckets at 2 * D, nodes at D. */
#define ODB_PREFETCH	8

int odb_add_keys(struct odb *db, const uint64_t *keys, size_t n, size_t *done)
{
	size_t i;
	int rc = 0;

	if (__builtin_expect(db->mode != ODB_RDWR, 0)) {
		rc = -EBADF;
		i = 0;
		goto out;
	}
	for (i = 0; i < n && i < 2 * ODB_PREFETCH; i++)
		__builtin_prefetch(&db->buckets[odb_hash(keys[i], db->shift)]);
	for (i = 0; i < n; i++) {
		uint64_t key = keys[i];
		const struct odb_node *nodes = db->nodes;
		uint32_t j;

		/* Independent lookups overlap only if their misses are issued
		 * early: the bucket two strides ahead, and the node its
		 * (by now cached) bucket names one stride ahead.  A grow in
		 * between only makes a hint stale. */
		if (i + 2 * ODB_PREFETCH < n)
			__builtin_prefetch(&db->buckets[odb_hash(keys[i + 2 * ODB_PREFETCH], db->shift)]);
		if (i + ODB_PREFETCH < n) {
			j = db->buckets[odb_hash(keys[i + ODB_PREFETCH], db->shift)];
			if (j != ODB_NODE_END)
				__builtin_prefetch(&nodes[j - 1], 1);
		}
		for (j = db->buckets[odb_hash(key, db->shift)]; j != ODB_NODE_END; j = nodes[j - 1].next)
			if (nodes[j - 1].key == key)
				break;
		if (j != ODB_NODE_END) {
			db->nodes[j - 1].count++;
			db->total++;
			continue;
		}
		rc = odb_insert(db, key, 1);
		if (rc)
			break;
	}
out:
	if (done)
		*done = i;
	return rc;
}

const struct odb_desc *odb_get_desc(const struct odb *db)
{
	return &db->desc;
}

uint64_t odb_nr_keys(const struct odb *db)
{
	return db->committed;
}

uint64_t odb_total(const struct odb *db)
{
	return db->total;
}

uint64_t odb_count(const struct odb *db, uint64_t key)
{
	uint64_t i, n = 0;

	if (db->buckets) {
		for (uint32_t b = db->buckets[odb_hash(key, db->shift)]; b; b = db->nodes[b - 1].next)
			if (db->nodes[b - 1].key == key)
				return db->nodes[b - 1].count;
		return 0;
	}
	/* a key is in one node only, but a reader checks nothing of that */
	for (i = 0; i < db->committed; i++)
		if (db->nodes[i].key == key)
			n += db->nodes[i].count;
	return n;
}

int odb_foreach(const struct odb *db, int (*fn)(void *ctx, uint64_t key, uint64_t count), void *ctx)
{
	uint64_t i;
	int rc;

	for (i = 0; i < db->committed; i++) {
		rc = fn(ctx, db->nodes[i].key, db->nodes[i].count);
		if (rc)
			return rc;
	}
	return 0;
}
