/*
 * Guest samples through the agents' sideband: the glue between the
 * transient context (opd_trans) and the per-domain guest state
 * (opd_agent, opd_guest).  A guest sample of a domain with an agent
 * channel is held and filed once resolved:
 *
 *   user   {domain}/NAME/{root}/MAIN/{dep}/{root}/LIB, key = file offset
 *          (--separate=none: image = dep = the binary the pc is in)
 *   kernel {domain}/NAME/{kern}/vmlinux (key = pc - guest _text) or
 *          {kern}/MODULE (key = pc - module start)
 *   else   {domain}/NAME/{anon:guest-user|guest-kernel}, key = pc,
 *          counted by reason (guest_user_unresolved_*)
 */
#ifndef OPD_GUESTFILE_H
#define OPD_GUESTFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "opd_agent.h"
#include "opd_trans.h"

/*
 * Hold the sample (@pc, @event) of the current context for @dom, whose
 * vCPU is @vcpu (-1 unknown).  False when @dom has no agent channel: the
 * caller files it as before (counted guest_*_unresolved / no_agent).
 */
bool opd_trans_defer_guest(struct opd_trans *t, const struct opd_dom *dom, int vcpu, uint64_t pc,
			   uint32_t event);

/* Resolve and file held samples (opd_agents_drain).  Returns how many. */
size_t opd_trans_drain_guests(struct opd_trans *t, uint64_t now_ns, bool all);

#endif
