/*
 * Call graphs (--callgraph; raw type 14, doc/raw-stream.md): what the
 * daemon does with a sample's resolved call chain.
 *
 *  - arcs, OProfile's way: for each caller/callee pair of the chain, 1 at
 *    key (from << 32 | to) of the {cg} sample file
 *    IMAGE/{dep}/CALLER_BINARY/{cg}/CALLEE_BINARY/EVENT..., from and to
 *    being offsets in those binaries (doc/sample-files.md);
 *  - whole stacks for the flame graph and pprof: distinct stacks counted
 *    in memory, bounded, written at every dump and stop to
 *    SESSION/samples/current/{stacks}/<start>.<pid> (text, replaced
 *    atomically).
 *
 * opd_trans resolves the frames (the same resolvers as a pc of the
 * sample's side) and hands them here.  Not thread-safe.
 */
#ifndef OPD_CC_H
#define OPD_CC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domprof/raw.h"
#include "opd_image.h"
#include "opd_sfile.h"
#include "opd_stats.h"

/* Distinct stacks kept, and frames in them all: beyond, a stack is only
 * counted (cc_stacks_dropped); its arcs are filed all the same. */
#define OPD_CC_MAX_STACKS	65536
#define OPD_CC_MAX_FRAMES	(4u << 20)

/* One resolved frame: the sample itself (frame 0) or a caller. */
struct opd_cc_frame {
	struct opd_image *image;	/* the process's binary (--separate), for
					 * the {cg} files of arcs from here */
	struct opd_image *dep;		/* the binary the address is in */
	uint64_t off;			/* key in dep: offset, or the address */
};

struct opd_cc;

/* A call-graph store over @sfiles (borrowed); stacks go below
 * @session_dir.  NULL with errno set. */
struct opd_cc *opd_cc_new(const char *session_dir, struct opd_sfiles *sfiles,
			  struct opd_stats *st);
void opd_cc_free(struct opd_cc *cc);	/* NULL accepted */

/* Arcs are queued in @batch (borrowed; NULL: added to their files at
 * once), as samples are; opd_trans_set_batch sets it. */
struct opd_batch;
void opd_cc_set_batch(struct opd_cc *cc, struct opd_batch *batch);

/*
 * File the chain of one sample: @f[0] is the sample (its sample file key
 * is @leaf: domain, vmm, event, ids), @f[1..n-1] its callers, innermost
 * first.  Arcs go to {cg} files, the stack to the table.  Cannot fail:
 * what cannot be filed is counted (cc_arcs_dropped, cc_stacks_dropped).
 */
void opd_cc_file(struct opd_cc *cc, const struct opd_sfile_key *leaf,
		 const struct opd_cc_frame *f, size_t n);

/*
 * Guest chains wait with their sample until the agent's sideband explains
 * it (opd_guest_defer): held here, named by a small id (> 0) that the
 * held sample carries.  At most OPD_CC_MAX_HELD chains are held; beyond,
 * 0 is returned and the chain is counted in cc_chains_dropped.
 */
#define OPD_CC_MAX_HELD		16384

struct opd_cc_chain {
	uint32_t nr, nk, flags;
	uint64_t f[DP_RAW_CC_MAX];
};

uint32_t opd_cc_hold(struct opd_cc *cc, const struct opd_cc_chain *ch);
/* The chain held as @id into *@out, no longer held; false for an id that
 * holds nothing. */
bool opd_cc_take(struct opd_cc *cc, uint32_t id, struct opd_cc_chain *out);

/* Write the stacks file (if any stack was seen).  0 or -errno (logged). */
int opd_cc_write(struct opd_cc *cc);
/* Forget the stacks counted so far (written first with opd_cc_write): the
 * sample directory they belong to was set aside.  Held chains stay. */
void opd_cc_restart(struct opd_cc *cc);

#endif
