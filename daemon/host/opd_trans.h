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
#include <stddef.h>
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

struct opd_trans;
struct opd_gpipe;

/* The raw_ops table whose ctx is a struct opd_trans. */
extern const struct raw_ops opd_trans_ops;

/* A context over borrowed modules (they must outlive it).  NULL with
 * errno set. */
struct opd_trans *opd_trans_new(const struct opd_conf *conf, struct opd_stats *st,
				struct opd_images *images, struct opd_procs *procs,
				struct opd_kernel *kernel, struct opd_sfiles *sfiles);
void opd_trans_free(struct opd_trans *t);	/* NULL accepted */

/* Live lookups of unknown processes through @fn (opd_procfs.h) instead of
 * /proc: the privsep worker asks its monitor. */
void opd_trans_set_maps_source(struct opd_trans *t, opd_maps_src_fn fn, void *ctx);

/* Live domains (NULL, the default, in replay: guest samples then go to
 * domain "pid-<hypervisor pid>", and no host work is {vmm}).  Borrowed. */
void opd_trans_set_domains(struct opd_trans *t, struct opd_domains *domains);
/* The guest pipeline of live domains (opd_gpipe.h), which takes their
 * guest samples once the registry named the domain (NULL, the default:
 * guest samples are filed at once under {anon:guest-*}).  Borrowed. */
void opd_trans_set_gpipe(struct opd_trans *t, struct opd_gpipe *gpipe);
/* Host samples and those filed at once (and the arcs of call chains,
 * through the opd_cc set) are queued in @batch when set (the daemon sets
 * it), else added to their files one by one; held guest samples go
 * through the guest pipeline's filer (opd_gpipe_new).  Borrowed. */
void opd_trans_set_batch(struct opd_trans *t, struct opd_batch *batch);

/* Call chains (DP_RAW_CALLCHAIN) are filed through @cc when set (the
 * daemon sets it), else only counted.  Borrowed. */
struct opd_cc;
void opd_trans_set_cc(struct opd_trans *t, struct opd_cc *cc);

/* The statistics it counts into (borrowed, as given to opd_trans_new). */
struct opd_stats *opd_trans_stats(const struct opd_trans *t);

/* Take the event table of a stream's header.  0 or -errno. */
int opd_trans_set_events(struct opd_trans *t, const struct raw_header *h);

/* Forget every cached resolution (after changing modules underneath). */
void opd_trans_invalidate(struct opd_trans *t);

/* Before a window of records: forget the cached sample files if any was
 * released since the last window (a --save's fresh samples/current, a
 * stopped domain's files), whoever released it. */
void opd_trans_begin_window(struct opd_trans *t);

#endif
