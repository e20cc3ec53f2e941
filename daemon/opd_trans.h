/*
 * The transient context (seeds: opd_trans.c): the CPU, task, mode, domain
 * and time that the raw stream's escape records set, and the raw_ops
 * handlers that update it.  The sample handler resolves a pc to
 * (image, dep, key) and adds it to the right sample file.
 *
 * Hot path: a run of samples in one context costs one range check and one
 * odb_add().  Each event index has a cache entry {pc range, key delta,
 * sample file} that stays valid while the context generation is unchanged;
 * anything that could change a resolution (context switch, a mapping of
 * the current process, kernel ranges, a process freed, a sample file
 * closed) bumps the generation.
 */
#ifndef OPD_TRANS_H
#define OPD_TRANS_H

#include <stdbool.h>
#include <stdint.h>

#include "raw/raw_stream.h"
#include "opd_batch.h"
#include "opd_conf.h"
#include "opd_domain.h"
#include "opd_image.h"
#include "opd_kernel.h"
#include "opd_proc.h"
#include "opd_sfile.h"
#include "opd_stats.h"

#define OPD_TRANS_CACHE_BITS	4
#define OPD_TRANS_CACHE_WAYS	(1 << OPD_TRANS_CACHE_BITS)
#define OPD_TRANS_CACHE_SHIFT	21

struct opd_trans_cache {
	uint64_t gen;
	uint64_t start, len;	/* pc in [start, start + len) */
	uint64_t delta;		/* key = pc + delta (mod 2^64) */
	struct odb *db;
	uint32_t id;		/* db's index in opd_sfiles (for the batch) */
	uint64_t *unresolved;	/* counter bumped per sample, or a dummy */
	uint64_t *extra;	/* a second one ({vmm}, unselected), or a dummy */
};

struct opd_trans {
	const struct opd_conf *conf;
	struct opd_stats *st;
	struct opd_images *images;
	struct opd_procs *procs;
	struct opd_kernel *kernel;
	struct opd_sfiles *sfiles;
	const char *proc_root;	/* for live lookups, "/proc" */
	/* Live domains (NULL in replay: guest samples then go to domain
	 * "pid-<hypervisor pid>", and no host work is {vmm}). */
	struct opd_domains *domains;
	/* Agent channels of live domains (NULL: guest samples are filed
	 * at once under {anon:guest-*}).  opd_guestfile.h. */
	struct opd_agents *agents;
	/* Samples are queued here when set (the daemon sets it), else
	 * added to their files one by one. */
	struct opd_batch *batch;

	/* the transient context */
	uint32_t cpu;
	uint32_t pid, tid;
	bool have_task;
	uint32_t mode;
	uint64_t domain_key;
	uint32_t domain_key_ns;	/* enum dp_domkey_ns of domain_key */
	uint32_t vcpu;
	uint64_t now_ns;
	unsigned int nr_events;
	struct opd_event_desc events[DP_RAW_MAX_EVENTS];

	/* caches */
	uint64_t gen;
	uint64_t *mode_counter;
	struct opd_proc *proc;		/* current task's process, NULL: look up */
	uint64_t sfile_evictions;
	uint64_t dummy;
	/* Per event, one entry per 2 MiB region of pc (direct-mapped), so a
	 * task that alternates between its binary and its libraries stays on
	 * the fast path. */
	struct opd_trans_cache cache[DP_RAW_MAX_EVENTS][OPD_TRANS_CACHE_WAYS];
	struct opd_image *anon_unknown, *anon_kernel, *guest_kernel, *guest_user;
	struct opd_image *dom_unknown;	/* domain "unknown": guest pc of no domain */
};

struct opd_agents;

/* The raw_ops table whose ctx is a struct opd_trans. */
extern const struct raw_ops opd_trans_ops;

/* Set up @t over borrowed modules.  0 or -errno. */
int opd_trans_init(struct opd_trans *t, const struct opd_conf *conf, struct opd_stats *st,
		   struct opd_images *images, struct opd_procs *procs, struct opd_kernel *kernel,
		   struct opd_sfiles *sfiles);

/* Take the event table of a stream's header.  0 or -errno. */
int opd_trans_set_events(struct opd_trans *t, const struct raw_header *h);

/* Forget every cached resolution (after changing modules underneath). */
void opd_trans_invalidate(struct opd_trans *t);

#endif
