/*
 * A domain's guest TSC on the host clock, as the hypervisor's side reads
 * it (DP_RAW_GUEST_TSC records; on Xen the collector asks Xen for a PV
 * domain's TSC information about once a second, doc/clock.md).  With the
 * agent's pairs of guest clock and guest TSC it gives the guest-minus-host
 * clock offset to microseconds, the same way KVM's offsets do
 * (opd_kvmtsc), without reading anything of the host's here.
 *
 * The last OPD_GTSCLINE_READS reads are kept.  A read is dated to within
 * its window, which a busy host makes long (the reader waited between its
 * two clock reads), so each pair is converted from the read that gives it
 * the least uncertainty, and the rate is measured between the two reads
 * at least OPD_GTSCLINE_MIN_SPAN_NS apart that date it best, where that
 * beats the stated rate's OPD_GTSCLINE_RATE_PPM of doubt.  A read whose
 * TSC went back, or whose rate changed, starts the line over (a restored
 * or migrated domain).  Pure: no I/O, no clock reads.
 */
#ifndef OPD_GTSCLINE_H
#define OPD_GTSCLINE_H

#include <stddef.h>
#include <stdint.h>

#include "domprof/agent.h"
#include "domprof/raw.h"

#define OPD_GTSCLINE_READS	16
#define OPD_GTSCLINE_MIN_SPAN_NS	(500ULL * 1000 * 1000)
/* Doubt on the stated rate until one is measured. */
#define OPD_GTSCLINE_RATE_PPM	100
/* A pair farther than this from the nearest read is not converted. */
#define OPD_GTSCLINE_MAX_DIST_NS	(30ULL * 1000 * 1000 * 1000)
/* A measured rate this far from the stated one is not believed. */
#define OPD_GTSCLINE_RATE_SANE_PPM	5000
/* What neither stamp sees (the guest's pair, the host's read). */
#define OPD_GTSCLINE_MARGIN_NS	2000

struct opd_gtsc_read {
	uint64_t host_ns, window_ns, tsc;
	uint32_t khz;
};

struct opd_gtscline {
	struct opd_gtsc_read r[OPD_GTSCLINE_READS];	/* a ring, oldest at pos */
	uint32_t n, pos;	/* reads kept (0: no line), the next slot */
	uint64_t restarts;	/* the TSC went back or its rate changed */
};

/* A read arrived (@g->khz > 0, decoder-checked). */
void opd_gtscline_note(struct opd_gtscline *l, const struct dp_raw_guest_tsc *g);

/* The newest read (the line must have one). */
static inline const struct opd_gtsc_read *opd_gtscline_last(const struct opd_gtscline *l)
{
	return &l->r[(l->pos + OPD_GTSCLINE_READS - 1) % OPD_GTSCLINE_READS];
}

static inline int opd_gtscline_have(const struct opd_gtscline *l)
{
	return l->n > 0;
}

/*
 * The guest-minus-host offset (ns) the agent's pair @p implies, and its
 * uncertainty (ns).  0, or -ENODATA (no read yet), -ERANGE (the pair is
 * far from every read, or the rate measured is not believable) with the
 * reason in @why.
 */
int opd_gtscline_offset(const struct opd_gtscline *l, const struct dp_ag_tsc *p, int64_t *off,
			uint64_t *unc, char *why, size_t why_len);

#endif
