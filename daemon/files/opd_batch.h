/*
 * The sample batch: the hot path appends (sample file index, key) pairs
 * here instead of adding each to its sample file; a flush groups them by
 * file (a counting sort on the dense file index) and applies each file's
 * run with one odb_add_keys(), so a file's table is touched once per
 * flush while it is hot in cache, instead of once per sample among
 * thousands of mapped files.
 *
 * Pending samples are already counted as filed (samples_filed); a flush
 * that cannot reopen a file or add a key moves them to
 * sample_file_errors.  The arcs of call chains (opd_cc.h) go through the
 * batch too, counted cc_arcs, and cc_arcs_dropped when they cannot be
 * filed; a chain with the last one's callers adds their arcs as a repeat
 * (below), applied by the same flushes.  Flush before anything reads the sample files or
 * frees its entry: at every dump and stop, when a domain's files are
 * released (opd_sfiles' close hook, set by opd_batch_new; a file closed
 * under the cap is reopened once at the flush), and in live mode at
 * least every second (opd_batch_flush_due; a new file's first samples
 * within a tenth of that).  A killed daemon loses at
 * most the pending samples; the files stay as crash-safe as odb makes
 * them.
 */
#ifndef OPD_BATCH_H
#define OPD_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "opd_sfile.h"
#include "opd_stats.h"

/*
 * Default number of pending samples: 20 bytes each (12 queued, 8 for the
 * flush's sort), 80 MiB at most, allocated at once but touched only as
 * samples come: a live daemon flushes at least every second, so it
 * touches what a second brings (64 CPUs at 1 kHz: 1.2 MiB).  Each flush
 * touches every file with samples once, so more samples a flush is fewer
 * misses a sample: under a replay of 9,000 files, 4 M of them filed a
 * sample in 28 ns against 35 with 1 M (doc/performance.md).
 */
#define OPD_BATCH_DEFAULT	(1u << 22)

struct opd_batch;

/*
 * A batch of up to @cap samples (0: OPD_BATCH_DEFAULT) for the files of
 * @sfiles, borrowed (it must outlive the batch).  Installs itself as
 * @sfiles' close hook.  NULL with errno set.
 */
struct opd_batch *opd_batch_new(struct opd_sfiles *sfiles, struct opd_stats *st, size_t cap);
/* Removes the close hook and frees the batch, applying nothing: flush
 * first.  NULL accepted. */
void opd_batch_free(struct opd_batch *b);

/*
 * Add 1 at @key of the sample file of index @id (from opd_sfile_get_id),
 * flushing first when the batch is full.  0 or the flush's -errno (the
 * sample is queued all the same).
 */
int opd_batch_add(struct opd_batch *b, uint32_t id, uint64_t key);

/* Apply every pending sample to its file.  0 or the first -errno
 * (samples that could not be filed are counted in sample_file_errors).
 * NULL accepted (no batch: nothing pending), here and in flush_due. */
int opd_batch_flush(struct opd_batch *b);

/* Pending samples (entries queued by opd_batch_add; repeats not
 * counted). */
size_t opd_batch_pending(const struct opd_batch *b);

/*
 * Repeats: a group of @n entries (file index @ids[i], key @keys[i]), each
 * already queued by opd_batch_add (in this batch, or filed by an earlier
 * flush), to be added once more for each repeat without being queued
 * again: a flush adds a group's count to each of its keys with one
 * odb_add, after the queued runs, so each key's node is still made where
 * its first occurrence put it and the files end as if every repeat had
 * been queued.  opd_batch_repeat_new counts one repeat and returns the
 * group's handle (> 0), valid while opd_batch_flushes() is unchanged;
 * 0 if the group cannot be kept (@n too large, no memory): then queue the
 * entries one by one.  It may flush first, to make room.  The caller
 * counts the entries as filed; a flush moves what it cannot file, as for
 * queued entries.  At most OPD_BATCH_REPEAT_ENTRIES entries and
 * OPD_BATCH_REPEAT_GROUPS groups are pending.
 */
#define OPD_BATCH_REPEAT_ENTRIES	16384
#define OPD_BATCH_REPEAT_GROUPS		1024
uint32_t opd_batch_repeat_new(struct opd_batch *b, const uint32_t *ids, const uint64_t *keys,
			      size_t n);
/* One more repeat of group @h (a handle of this batch's, still valid). */
void opd_batch_repeat_add(struct opd_batch *b, uint32_t h);
/* Flushes done so far (that applied something). */
uint64_t opd_batch_flushes(const struct opd_batch *b);
/* Repeats counted so far (opd_batch_repeat_new and _add). */
uint64_t opd_batch_repeats(const struct opd_batch *b);

/*
 * Flush if samples are pending and the batch was last seen empty (after
 * a flush, or by this call) at least @max_ns before @now_ns (monotonic
 * clock): called often, no sample waits much longer than @max_ns.  The
 * first samples of a file no flush has written yet are due after a tenth
 * of it (a domain just turned on shows in its tree promptly, at the
 * first call after that).
 * 0 or -errno as opd_batch_flush.
 */
int opd_batch_flush_due(struct opd_batch *b, uint64_t now_ns, uint64_t max_ns);

#endif
