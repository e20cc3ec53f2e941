/*
 * The guest pipeline: where a guest sample goes once the registry has
 * named its domain (opd_trans.c asks opd_domain.h, then hands the sample
 * here).  The domain's guest state holds it until its agent's stream has
 * passed the sample's time (opd_guest.h: timeline, address spaces, the
 * vote), then resolves it; the pipeline files it, and the frames of its
 * call chain resolved the same way, through the filer (opd_filer.h) that
 * host samples go through.  Nothing comes back to the host path.
 *
 *   collector -> opd_trans (context) -> opd_domain (which domain)
 *             -> opd_gpipe_take -> opd_guest (hold, attribute)
 *             -> opd_gpipe_drain -> opd_guestfile (the key) -> opd_filer
 *
 * Not thread-safe; the daemon's thread.
 */
#ifndef OPD_GPIPE_H
#define OPD_GPIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd_agent.h"
#include "opd_cc.h"
#include "opd_conf.h"
#include "opd_domain.h"
#include "opd_filer.h"
#include "opd_guest.h"
#include "opd_stats.h"

struct opd_gpipe;

/* Over the agent channels @agents and sample files, batch and statistics
 * of @filer (copied: the daemon's, which keeps one batch for its life).
 * Borrowed: conf, agents, the filer's parts.  NULL with errno set. */
struct opd_gpipe *opd_gpipe_new(const struct opd_conf *conf, struct opd_agents *agents,
				const struct opd_filer *filer);
void opd_gpipe_free(struct opd_gpipe *p);	/* NULL accepted */

/* Call chains of guest samples are held with them and filed through @cc
 * (NULL: not filed).  Borrowed. */
void opd_gpipe_set_cc(struct opd_gpipe *p, struct opd_cc *cc);

/*
 * Take guest sample @s of domain @dom (its cc field is ignored), with
 * its call chain @chain (NULL: none), to be held until the domain's agent
 * explains it; *@chain_held says whether the chain went with it (chains
 * are filed: opd_gpipe_set_cc).  False, with nothing taken, when @dom has
 * no agent channel: the caller files it as unresolved (counted here as
 * guest_user_unresolved_no_agent or guest_kernel_unresolved).  Taking may
 * file an older sample at once (a full hold), which may release sample
 * files (opd_filer_gen).
 */
bool opd_gpipe_take(struct opd_gpipe *p, const struct opd_dom *dom,
		    const struct opd_guest_sample *s, const struct opd_cc_chain *chain,
		    bool *chain_held);

/* The hypervisor's read of @dom's guest TSC, for its guest clock
 * (opd_gtscline.h); nothing to keep for a domain with no agent channel. */
void opd_gpipe_guest_tsc(struct opd_gpipe *p, const struct opd_dom *dom,
			 const struct dp_raw_guest_tsc *rec);

/* Resolve and file the held samples due at host time @now_ns (@all:
 * every one; at a dump or stop); the state of domains that left is freed
 * after their last samples.  Returns how many were filed.  Only between
 * windows of the stream: a translator checks for released sample files
 * when a window begins (opd_trans_begin_window), not after each drain. */
size_t opd_gpipe_drain(struct opd_gpipe *p, uint64_t now_ns, bool all);

#endif
