/*
 * The one place a resolved sample is counted into its sample file, host
 * and guest alike: the host path (opd_trans.c) and the guest pipeline
 * (opd_gpipe.c) each hold a filer over the same sample files, batch and
 * statistics, so that a sample is filed the same way whoever resolved it.
 *
 * With a batch (the daemon's), a sample is queued under its file's index
 * and added when the batch is applied; without one (tests, tools), it is
 * added to the open file at once.
 */
#ifndef OPD_FILER_H
#define OPD_FILER_H

#include <stdbool.h>
#include <stdint.h>

#include "odb/odb.h"
#include "opd_batch.h"
#include "opd_sfile.h"
#include "opd_stats.h"

struct opd_filer {
	struct opd_sfiles *sfiles;
	struct opd_batch *batch;	/* NULL: added one by one */
	struct opd_stats *st;
};

/* The sample file of @k for opd_filer_add: its index, and without a batch
 * the open file (a batch reopens a closed file when it is applied).
 * False: it cannot be filed. */
static inline bool opd_filer_file(const struct opd_filer *f, const struct opd_sfile_key *k,
				  struct odb **db, uint32_t *id)
{
	if (f->batch) {
		*db = NULL;
		return opd_sfile_id(f->sfiles, k, id);
	}
	*db = opd_sfile_get_id(f->sfiles, k, id);
	return *db != NULL;
}

/* 1 at @key of sample file @db, whose index is @id (for the batch). */
static inline void opd_filer_add(const struct opd_filer *f, struct odb *db, uint32_t id,
				 uint64_t key)
{
	if (f->batch) {
		/* counted filed now; the batch counts what it cannot file
		 * as sample_file_errors, so its errors need no action here */
		f->st->samples_filed++;
		opd_batch_add(f->batch, id, key);
		return;
	}
	if (__builtin_expect(odb_add(db, key, 1) == 0, 1))
		f->st->samples_filed++;
	else
		f->st->sample_file_errors++;
}

/* A number that changes whenever a file index or open file handed out
 * before may no longer be good: with a batch, when index entries are
 * released; without, also when a file is closed under the cap.  A
 * caller that keeps them compares it before use. */
static inline uint64_t opd_filer_gen(const struct opd_filer *f)
{
	return f->batch ? opd_sfiles_releases(f->sfiles) : opd_sfiles_evictions(f->sfiles);
}

#endif
