#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opd_batch.h"
#include "util/du_log.h"
#include "util/du_array.h"

/* A group of repeats: entries rep_ids/rep_keys[first, first + n), each
 * to be added count times at the flush. */
struct batch_rep {
	uint32_t first, n;
	uint64_t count;
};

/* An entry of a repeat group already applied in a flush's first pass. */
#define REP_DONE	UINT32_MAX

struct opd_batch {
	struct opd_sfiles *sfiles;
	struct opd_stats *st;
	size_t cap, n;
	uint32_t *ids;		/* pending samples, in stream order */
	uint64_t *keys;
	uint64_t *sorted;	/* keys grouped by file (flush scratch) */
	/* per file index: pending samples, counted as they come so a flush
	 * needs no histogram pass; then each run's start */
	uint32_t *count;
	size_t nr_count;
	uint32_t max_id;	/* highest index pending */
	/* Files get their index in the order they are made, so indexes below
	 * this one have been through a flush; a sample for a higher one is
	 * the first of a new file (a domain just turned on, a new binary)
	 * and makes the batch due a tenth of the interval after it was last
	 * empty: a new tree shows its samples at the daemon's next turn
	 * after that, while known files keep their batching. */
	uint32_t flushed_ids;
	bool fresh;		/* a pending sample is a new file's first */
	bool flushing;
	uint64_t empty_ns;	/* when opd_batch_flush_due last saw it empty */
	/* repeats (opd_batch_repeat_new), allocated at the first */
	uint32_t *rep_ids;
	uint64_t *rep_keys;
	struct batch_rep *reps;
	size_t nrep_entries, nreps;
	uint64_t flushes, repeats;
	struct batch_run *runs;	/* the open files' runs of a flush */
	size_t nr_runs_cap;
};

static void close_hook(void *ctx)
{
	/* Files' entries are about to be freed: their pending samples go in
	 * first, while their indexes still name them. */
	opd_batch_flush(ctx);
}

struct opd_batch *opd_batch_new(struct opd_sfiles *sfiles, struct opd_stats *st, size_t cap)
{
	struct opd_batch *b = calloc(1, sizeof(*b));

	if (!b)
		goto out_nomem;
	b->sfiles = sfiles;
	b->st = st;
	b->cap = cap ? cap : OPD_BATCH_DEFAULT;
	if (b->cap > UINT32_MAX)
		b->cap = UINT32_MAX;
	b->ids = malloc(b->cap * sizeof(*b->ids));
	b->keys = malloc(b->cap * sizeof(*b->keys));
	b->sorted = malloc(b->cap * sizeof(*b->sorted));
	b->nr_count = 1024;
	b->count = calloc(b->nr_count, sizeof(*b->count));
	if (!b->ids || !b->keys || !b->sorted || !b->count)
		goto out_free;
	opd_sfiles_set_close_hook(sfiles, close_hook, b);
	return b;

out_free:
	free(b->ids);
	free(b->keys);
	free(b->sorted);
	free(b->count);
	free(b);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

void opd_batch_free(struct opd_batch *b)
{
	if (!b)
		return;
	opd_sfiles_set_close_hook(b->sfiles, NULL, NULL);
	free(b->ids);
	free(b->keys);
	free(b->sorted);
	free(b->count);
	free(b->rep_ids);
	free(b->rep_keys);
	free(b->reps);
	free(b->runs);
	free(b);
}

size_t opd_batch_pending(const struct opd_batch *b)
{
	return b->n;
}

static int grow_count(struct opd_batch *b, uint32_t id)
{
	size_t n = b->nr_count;
	uint32_t *c;

	while (n <= id)
		n *= 2;
	c = realloc(b->count, n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	memset(c + b->nr_count, 0, (n - b->nr_count) * sizeof(*c));
	b->count = c;
	b->nr_count = n;
	return 0;
}

/* Entries counted as filed (samples, or arcs of a {cg} file) that could
 * not be. */
static void unfiled(struct opd_batch *b, uint32_t id, uint64_t n)
{
	if (opd_sfile_is_arcs(b->sfiles, id)) {
		b->st->cc_arcs -= n;
		b->st->cc_arcs_dropped += n;
	} else {
		b->st->samples_filed -= n;
		b->st->sample_file_errors += n;
	}
}

int opd_batch_add(struct opd_batch *b, uint32_t id, uint64_t key)
{
	int ret = 0;

	if (__builtin_expect(b->n == b->cap, 0))
		ret = opd_batch_flush(b);
	if (__builtin_expect(id >= b->nr_count, 0)) {
		int r = grow_count(b, id);

		if (r) {
			/* cannot queue it: file it alone */
			struct odb *db = opd_sfile_by_id(b->sfiles, id);

			if (!db || odb_add(db, key, 1))
				unfiled(b, id, 1);
			return ret ? : r;
		}
	}
	if (id > b->max_id)
		b->max_id = id;
	if (id >= b->flushed_ids)
		b->fresh = true;
	b->count[id]++;
	b->ids[b->n] = id;
	b->keys[b->n] = key;
	b->n++;
	return ret;
}

uint64_t opd_batch_flushes(const struct opd_batch *b)
{
	return b->flushes;
}

uint64_t opd_batch_repeats(const struct opd_batch *b)
{
	return b->repeats;
}

static int rep_alloc(struct opd_batch *b)
{
	b->rep_ids = malloc(OPD_BATCH_REPEAT_ENTRIES * sizeof(*b->rep_ids));
	b->rep_keys = malloc(OPD_BATCH_REPEAT_ENTRIES * sizeof(*b->rep_keys));
	b->reps = malloc(OPD_BATCH_REPEAT_GROUPS * sizeof(*b->reps));
	if (b->rep_ids && b->rep_keys && b->reps)
		return 0;
	free(b->rep_ids);
	free(b->rep_keys);
	free(b->reps);
	b->rep_ids = NULL;
	b->rep_keys = NULL;
	b->reps = NULL;
	return -ENOMEM;
}

uint32_t opd_batch_repeat_new(struct opd_batch *b, const uint32_t *ids, const uint64_t *keys,
			      size_t n)
{
	struct batch_rep *r;

	if (!n || n > OPD_BATCH_REPEAT_ENTRIES || b->flushing)
		return 0;
	if (!b->reps && rep_alloc(b))
		return 0;
	if (b->nreps == OPD_BATCH_REPEAT_GROUPS || b->nrep_entries + n > OPD_BATCH_REPEAT_ENTRIES)
		opd_batch_flush(b);	/* (errors counted there) */
	r = &b->reps[b->nreps];
	r->first = (uint32_t)b->nrep_entries;
	r->n = (uint32_t)n;
	r->count = 1;
	memcpy(b->rep_ids + b->nrep_entries, ids, n * sizeof(*ids));
	memcpy(b->rep_keys + b->nrep_entries, keys, n * sizeof(*keys));
	b->nrep_entries += n;
	b->repeats++;
	return (uint32_t)++b->nreps;
}

void opd_batch_repeat_add(struct opd_batch *b, uint32_t h)
{
	b->reps[h - 1].count++;
	b->repeats++;
}

/* File @id's run of @n keys into @db, its handle (NULL: it would not
 * open). */
static int apply_run(struct opd_batch *b, uint32_t id, struct odb *db, const uint64_t *keys,
		     size_t n)
{
	size_t off = 0, done;
	int ret = 0, r;

	if (!db) {
		unfiled(b, id, n);
		return -EIO;
	}
	while (off < n) {
		r = odb_add_keys(db, keys + off, n - off, &done);
		off += done;
		if (!r)
			break;
		/* that key failed (a full disk, a file at its limit): skip it */
		if (!ret)
			ret = r;
		unfiled(b, id, 1);
		off++;
	}
	return ret;
}

/* A file's run of the sorted keys in a flush: its handle, found once. */
struct batch_run {
	struct odb *db;
	uint32_t id;
	uint32_t n;
	size_t pos;
};

/* How many runs ahead apply_open_runs fetches: a handle at 3, buckets
 * at 2, nodes at 1. */
#define RUN_AHEAD	3

/* Keys at the start of a run that get their misses issued before it:
 * odb_add_keys prefetches its later keys itself (odb.c: 2 x 8 ahead). */
#define RUN_HEAD_KEYS	16

/*
 * Apply the open files' runs in order, each one's misses started before
 * its turn: with thousands of files a flush's run is a few dozen keys
 * (10 M samples over 30,000 files: 33 a run), and a run's first keys
 * waited for the handle, then the bucket, then the node, one after the
 * other, before odb_add_keys' own prefetching got ahead.  Here a run's
 * handle is fetched three runs before, its first buckets two and their
 * nodes one, so those misses overlap the runs in between.
 */
static int apply_open_runs(struct opd_batch *b, const struct batch_run *runs, size_t nr)
{
	int ret = 0, r;

	for (size_t k = 0; k < nr; k++) {
		if (k + RUN_AHEAD < nr)
			odb_prefetch_handle(runs[k + RUN_AHEAD].db);
		for (size_t ahead = 2; ahead >= 1; ahead--) {
			const struct batch_run *q;

			if (k + ahead >= nr)
				continue;
			q = &runs[k + ahead];
			odb_prefetch_keys(q->db, b->sorted + q->pos,
					  q->n < RUN_HEAD_KEYS ? q->n : RUN_HEAD_KEYS, (int)(2 - ahead));
		}
		r = apply_run(b, runs[k].id, runs[k].db, b->sorted + runs[k].pos, runs[k].n);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

/*
 * Apply each file's run of the sorted keys (count[id]: the end of id's
 * run), the files open now first, then the closed ones, which reopen.
 * In id order alone, a flush that touches more files than stay open
 * reopened every one of them at every flush: each reopen closed the least
 * recently used file, which was the next flush's first (a cyclic scan
 * under LRU).  Open files first, they are done before any reopen can
 * close them (an open file's runs open nothing, so the handles taken
 * first stay good).  The closed runs wait in the ids and keys arrays,
 * free after the scatter: the id, and the run's start.  Without room
 * for the open runs' list, each is applied as it is found.
 */
static int apply_runs(struct opd_batch *b)
{
	uint32_t *count = b->count;
	size_t pos = 0, nr_closed = 0, nr_open = 0;
	/* (a run per file with samples: no more than the samples, nor than
	 * the indexes, which a long daemon's files number in millions) */
	bool listed = !DU_GROW(b->runs, b->nr_runs_cap,
			       b->n < (size_t)b->max_id + 1 ? b->n : (size_t)b->max_id + 1, 1024);
	int ret = 0, r;

	for (uint32_t id = 0; id <= b->max_id; id++) {
		size_t end = count[id];

		if (end == pos)
			continue;
		if (opd_sfile_is_open(b->sfiles, id)) {
			struct odb *db = opd_sfile_by_id(b->sfiles, id);

			if (listed) {
				b->runs[nr_open++] = (struct batch_run){ .db = db, .id = id,
									 .n = (uint32_t)(end - pos),
									 .pos = pos };
			} else {
				r = apply_run(b, id, db, b->sorted + pos, end - pos);
				if (r && !ret)
					ret = r;
			}
		} else {
			b->ids[nr_closed] = id;
			b->keys[nr_closed++] = pos;
		}
		pos = end;
	}
	r = apply_open_runs(b, b->runs, nr_open);
	if (r && !ret)
		ret = r;
	for (size_t i = 0; i < nr_closed; i++) {
		uint32_t id = b->ids[i];

		/* may evict other files; their runs reopen them (the hook
		 * does nothing while we flush) */
		r = apply_run(b, id, opd_sfile_by_id(b->sfiles, id), b->sorted + b->keys[i],
			      count[id] - b->keys[i]);
		if (r && !ret)
			ret = r;
	}
	memset(count, 0, ((size_t)b->max_id + 1) * sizeof(*count));
	return ret;
}

/* One entry of a repeat group: @count more at @key of file @id. */
static int apply_rep(struct opd_batch *b, uint32_t id, uint64_t key, uint64_t count)
{
	struct odb *db = opd_sfile_by_id(b->sfiles, id);
	int r = db ? odb_add(db, key, count) : -EIO;

	if (r)
		unfiled(b, id, count);
	return r;
}

/*
 * The repeat groups, after the runs: their keys have their nodes by now
 * (made by the first occurrences, in this flush's runs or before), so the
 * adds change counts only, never the order of nodes.  Entries of open
 * files first, then the others, as apply_runs does.
 */
static int apply_reps(struct opd_batch *b)
{
	int ret = 0, r;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t g = 0; g < b->nreps; g++) {
			const struct batch_rep *rp = &b->reps[g];

			for (uint32_t i = rp->first; i < rp->first + rp->n; i++) {
				uint32_t id = b->rep_ids[i];

				if (id == REP_DONE || (!pass && !opd_sfile_is_open(b->sfiles, id)))
					continue;
				r = apply_rep(b, id, b->rep_keys[i], rp->count);
				if (r && !ret)
					ret = r;
				b->rep_ids[i] = REP_DONE;
			}
		}
	}
	b->nreps = 0;
	b->nrep_entries = 0;
	return ret;
}

int opd_batch_flush(struct opd_batch *b)
{
	uint32_t *count;
	size_t i, pos = 0;
	int ret, r;

	if (!b || b->flushing || (!b->n && !b->nreps))
		return 0;
	count = b->count;
	b->flushing = true;
	/* run starts: count[id] becomes the end of its run after scatter */
	for (uint32_t id = 0; id <= b->max_id; id++) {
		uint32_t c = count[id];

		count[id] = (uint32_t)pos;
		pos += c;
	}
	for (i = 0; i < b->n; i++)
		b->sorted[count[b->ids[i]]++] = b->keys[i];
	ret = apply_runs(b);
	r = apply_reps(b);
	if (r && !ret)
		ret = r;
	b->flushes++;
	if (b->max_id >= b->flushed_ids)
		b->flushed_ids = b->max_id + 1;
	b->n = 0;
	b->max_id = 0;
	b->fresh = false;
	b->flushing = false;
	return ret;
}

/* A new file's samples are due after this fraction of the interval. */
#define FRESH_DIV	10

int opd_batch_flush_due(struct opd_batch *b, uint64_t now_ns, uint64_t max_ns)
{
	if (!b)
		return 0;
	if (!b->n && !b->nreps) {
		b->empty_ns = now_ns;
		return 0;
	}
	/* a new file's first samples wait a tenth of the interval at most
	 * (at once, they flushed a batch of a few samples for each of the
	 * 30,000 files a daemon reopens at its start with 1,000 domains) */
	if (now_ns - b->empty_ns < (b->fresh ? max_ns / FRESH_DIV : max_ns))
		return 0;
	b->empty_ns = now_ns;
	return opd_batch_flush(b);
}
