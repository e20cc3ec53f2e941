/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * On-disk layout of a domprof sample file (lib/odb).  Little-endian, fixed
 * width, memory-mapped by the daemon (writer) and by opreport (reader).
 *
 *   offset 0              struct odb_file_header (header_size bytes)
 *   header_size           struct odb_node nodes[capacity]
 *
 * The node array past committed is room to grow and may be a hole; the
 * file may be longer still (a new file has room for its first grow), and
 * a reader goes by the header's capacity, not the size.  The
 * writer's hash index (buckets, and the next fields of the nodes) is its
 * own business: it keeps the buckets in memory and rebuilds the index
 * every time it opens the file.  (Files of earlier builds have a
 * dp_u32 bucket array after the nodes; nothing reads it.)
 *
 * Crash safety rests on one rule: a writer fills nodes[committed]
 * completely and only then stores committed + 1 (a release store).  So
 * nodes [0, committed) are always whole, whatever instant the writer died
 * at, and a reader needs nothing else: it never looks at the index.  The file only grows, and it grows (the
 * size is extended) before capacity is raised, so header_size +
 * committed * node_size never exceeds the file size.
 *
 * A key appears in at most one node; counts are 64-bit and only increase.
 *
 * What a reader checks of the nodes, besides the header: a node's next is
 * 0 or names an earlier node (<= its own index: a writer chains a new node
 * to its bucket's head of the moment, and its index rebuilds walk the
 * nodes in order), pad is 0, a count is at most ODB_MAX_COUNT and the
 * counts of a file add up to at most ODB_MAX_TOTAL.  The bounds are far
 * beyond any real profile (2^56 samples of one address are 2,000 years of
 * a CPU sampling at 1 MHz) and keep sums of many files from wrapping.
 */
#ifndef DOMPROF_ODB_FORMAT_H
#define DOMPROF_ODB_FORMAT_H

#include <stdint.h>

#define ODB_MAGIC		0x31303042444f5044ULL	/* "DPODB001" */
#define ODB_VERSION		1
#define ODB_FILE_EVENT_NAME	48
#define ODB_MAX_COUNT		(1ULL << 56)	/* one node's count */
#define ODB_MAX_TOTAL		(1ULL << 60)	/* a file's sum of counts */

/* bucket value for "empty"; otherwise a bucket holds node index + 1 */
#define ODB_BUCKET_EMPTY	0
/* next value ending a hash chain; otherwise node index + 1 */
#define ODB_NODE_END		0

struct odb_file_header {
	uint64_t magic;		/* ODB_MAGIC; written last when a file is made */
	uint32_t version;	/* ODB_VERSION */
	uint32_t header_size;	/* bytes before the node array */
	uint32_t node_size;	/* sizeof(struct odb_node) */
	uint32_t flags;		/* ODB_F_* of lib/odb/odb.h */
	/* what is counted (struct odb_desc) */
	char event[ODB_FILE_EVENT_NAME];	/* NUL-padded */
	uint64_t count;		/* sampling period */
	uint32_t unit_mask;
	uint32_t pad0;
	int64_t mtime;		/* of the binary, 0 if unknown */
	/* table */
	uint64_t capacity;	/* nodes the file has room for; a power of two */
	uint64_t committed;	/* nodes [0, committed) are complete */
	uint64_t reserved[18];	/* zero; room for additive fields */
};

struct odb_node {
	uint64_t key;
	uint64_t count;
	uint32_t next;		/* writer's hash chain: node index + 1, or 0 */
	uint32_t pad;
};

_Static_assert(sizeof(struct odb_file_header) == 256, "odb_file_header layout");
_Static_assert(sizeof(struct odb_node) == 24, "odb_node layout");

#endif /* DOMPROF_ODB_FORMAT_H */
