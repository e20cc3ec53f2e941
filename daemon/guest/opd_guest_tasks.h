/*
 * The guest processes of one domain and their executable mappings, as the
 * agent's MMAP/FORK/COMM/EXIT frames describe them.  Counts are capped
 * (limits.max_tasks, max_maps) and memory is taken from the domain's
 * budget; an exited process lingers a while for the samples still held.
 */
#ifndef OPD_GUEST_TASKS_H
#define OPD_GUEST_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd_guest_budget.h"
#include "opd_guest_hash.h"
#include "opd_stats.h"
#include "util/du_hash.h"

/* Buckets: a power of two near max_tasks / 2, within these. */
#define OPD_GTASK_BUCKETS_MIN	16
#define OPD_GTASK_BUCKETS_MAX	16384
/* Executable mappings one process may have (a real one has hundreds):
 * what a FORK copies and an MMAP moves is bounded by it. */
#define OPD_GTASK_MAX_TASK_MAPS 4096

struct opd_gimg;

struct opd_gmap {
	uint64_t start, end, pgoff;
	uint64_t t;		/* guest time of the MMAP (exec drops older ones) */
	bool vdso;		/* the kernel's [vdso] image */
	struct opd_gimg *gi;	/* NULL: anonymous ([vdso], no file) */
};

struct opd_gtask {
	struct du_hlink link;	/* in opd_gtasks.tab, by keyed hash of the pid */
	uint32_t pid;
	bool exited;
	uint64_t exit_ns;
	struct opd_gimg *main;	/* the executable: its oldest mapping */
	uint64_t main_t;
	uint64_t asid;		/* the address space it was last elected owner of
				 * (opd_guest_asid.h; checked there on use), 0 none */
	/* maps[0..nr), sorted by start, disjoint, lie in base[0..cap) at
	 * base + front: free slots on both sides, so that an insert moves
	 * the shorter side (the kernel places new mappings top-down, the
	 * snapshot lists them bottom-up: both are then O(1)) */
	struct opd_gmap *maps;
	struct opd_gmap *base;
	size_t nr, cap, front;
};

struct opd_gtasks {
	struct du_htab tab;		/* fixed buckets (never grown): the
					 * chains are short by the keyed hash */
	size_t nr_tasks, nr_maps;
	size_t max_tasks, max_maps;
	size_t max_task_maps;		/* OPD_GTASK_MAX_TASK_MAPS */
	struct opd_ghkey key;		/* the hash each link stores */
	uint64_t last_reap;
	struct opd_gbudget *budget;	/* borrowed */
	struct opd_stats *st;		/* borrowed */
};

/* 0 or -ENOMEM (then fini is still safe). */
int opd_gtasks_init(struct opd_gtasks *ts, size_t max_tasks, size_t max_maps,
		    struct opd_gbudget *budget, struct opd_stats *st);
void opd_gtasks_fini(struct opd_gtasks *ts);

struct opd_gtask *opd_gtasks_find(const struct opd_gtasks *ts, uint32_t pid);
/* Found or made; NULL when capped (counted) or out of memory. */
struct opd_gtask *opd_gtasks_get(struct opd_gtasks *ts, uint32_t pid);

/* Insert @m into @t (overlapped mappings are replaced: MMAP is
 * idempotent) and keep @t's main image.  0, -ENOSPC (capped, counted) or
 * -ENOMEM. */
int opd_gtasks_map(struct opd_gtasks *ts, struct opd_gtask *t, const struct opd_gmap *m);

/* @pid forked from @ppid: a copy of the parent's mappings, in one pass
 * (the parent's are sorted already), as many as the caps leave room for
 * (the rest counted guest_maps_capped). */
void opd_gtasks_fork(struct opd_gtasks *ts, uint32_t pid, uint32_t ppid);

/* @pid exec'd at guest time @when: mappings made before it go (an MMAP of
 * the new image may have arrived before the COMM that says exec). */
void opd_gtasks_exec(struct opd_gtasks *ts, uint32_t pid, uint64_t when);

/* @pid exited at guest time @when; processes gone longer than @linger
 * before @seen are freed (at most once per @linger / 3). */
void opd_gtasks_exit(struct opd_gtasks *ts, uint32_t pid, uint64_t when, uint64_t seen,
		     uint64_t linger);

/* @t's mapping holding @pc, or NULL. */
const struct opd_gmap *opd_gtask_find_map(const struct opd_gtask *t, uint64_t pc);

/* Tasks a full scan visits (the owner scan's cost). */
static inline uint64_t opd_gtasks_scan_cost(const struct opd_gtasks *ts)
{
	return (ts->tab.buckets ? ts->tab.mask + 1 : 0) + ts->nr_tasks;
}

/*
 * The live task whose mappings hold @pc, if all the live tasks that map
 * it map the same file at the same offset; NULL if none does or they
 * disagree.  Visits every task.
 */
const struct opd_gtask *opd_gtasks_sole_owner(const struct opd_gtasks *ts, uint64_t pc,
					      const struct opd_gmap **mp);

#endif
