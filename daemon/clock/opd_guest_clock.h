/*
 * The guest-to-host clock offset of one domain, from PING/PONG exchanges
 * (NTP style: the offset at the exchange's midpoint, the recent exchange
 * with the smallest round trip wins).  Until the first PONG, HELLO's own
 * timestamp gives a rough offset with a wide uncertainty.  Where the
 * TSC path works (KVM's offsets, opd_kvmtsc, or the hypervisor's reads of
 * the guest TSC, opd_gtscline; doc/clock.md) an exact offset replaces
 * ping/pong's, which is kept beside it to fall back on.
 */
#ifndef OPD_GUEST_CLOCK_H
#define OPD_GUEST_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "opd_gtscline.h"

#define OPD_GCLOCK_PINGS	16
#define OPD_GCLOCK_WINDOW	32
/* TSC pairs from the agent not yet related to the host's clock */
#define OPD_GCLOCK_TSC_PAIRS	8
/* A sample this close to a switch may belong to either side of it. */
#define OPD_GCLOCK_NEAR_MIN_NS	(1000ULL * 1000)
/* With the exact (TSC) clock: its stated uncertainty plus this margin for
 * what neither side's stamp sees (doc/clock.md). */
#define OPD_GCLOCK_EXACT_MARGIN_NS	(20ULL * 1000)
/* How fast an exact offset is taken to age (opd_gclock_offer_exact). */
#define OPD_GCLOCK_AGE_PPM	100
/* How long it stands in for pairs that give none. */
#define OPD_GCLOCK_KEEP_NS	(10ULL * 1000 * 1000 * 1000)

enum opd_gclock_method {
	OPD_GCLOCK_NONE,	/* no estimate yet */
	OPD_GCLOCK_HELLO,	/* HELLO's timestamp, rtt 100 ms assumed */
	OPD_GCLOCK_PING,	/* PING/PONG exchanges */
	OPD_GCLOCK_TSC,		/* the TSC through KVM's offset, +- unc */
};

struct opd_gclock {
	struct { uint64_t token, host_ns; } pings[OPD_GCLOCK_PINGS];
	uint64_t next_token;
	struct { int64_t off; uint64_t rtt; } win[OPD_GCLOCK_WINDOW];
	size_t nr, pos;
	enum opd_gclock_method method;
	int64_t off;		/* guest - host, ns */
	uint64_t rtt;		/* of the winning exchange: uncertainty is rtt/2 */
	/* HELLO's or ping/pong's, kept while the TSC path is used */
	enum opd_gclock_method pp_method;
	int64_t pp_off;
	uint64_t pp_rtt;
	uint64_t unc;		/* the TSC path's stated uncertainty */
	uint64_t exact_host_ns;	/* host time of its pair (offer_exact) */
	struct dp_ag_tsc tsc[OPD_GCLOCK_TSC_PAIRS];
	size_t nr_tsc;
	/* the hypervisor's reads of the guest TSC (DP_RAW_GUEST_TSC: Xen);
	 * where there are any, they relate the pairs instead of KVM's offset */
	struct opd_gtscline line;
	/* why the clock is not exact ("" when it is or nobody tried), and
	 * the TSC path's troubles, for SESSION/domains/<esc>/stats */
	char why[160];
	uint64_t tsc_offset_changes, tsc_fallbacks;
};

void opd_gclock_init(struct opd_gclock *c);

/* A PING leaves at host time @host_ns: its token. */
uint64_t opd_gclock_ping(struct opd_gclock *c, uint64_t host_ns);

/* HELLO said guest time @guest_ns, read at host time @host_ns. */
void opd_gclock_hello(struct opd_gclock *c, uint64_t guest_ns, uint64_t host_ns);

/* A PONG read at host time @host_ns.  0, or -EINVAL when it answers no
 * PING of ours or its times cannot be (the caller counts it). */
int opd_gclock_pong(struct opd_gclock *c, const struct dp_ag_pong *p, uint64_t host_ns);

static inline bool opd_gclock_known(const struct opd_gclock *c)
{
	return c->method != OPD_GCLOCK_NONE;
}

/* Guest time of host time @host_ns (only meaningful once known). */
static inline uint64_t opd_gclock_guest(const struct opd_gclock *c, uint64_t host_ns)
{
	/* modulo 2^64: a guest's offset may be anything (no signed overflow) */
	return host_ns + (uint64_t)c->off;
}

/* Keep a TSC pair from the agent (the oldest goes when full). */
void opd_gclock_tsc_push(struct opd_gclock *c, const struct dp_ag_tsc *t);
/* Take up to @max TSC pairs, oldest first. */
size_t opd_gclock_tsc_take(struct opd_gclock *c, struct dp_ag_tsc *out, size_t max);

/* Use the exact offset @off +- @unc ns. */
void opd_gclock_set_exact(struct opd_gclock *c, int64_t off, uint64_t unc);
/*
 * An exact offset @off +- @unc from a pair read at host time @host_ns:
 * taken (true) unless the one in use is tighter, its uncertainty grown by
 * OPD_GCLOCK_AGE_PPM of the time since its pair (the two clocks may drift
 * apart that fast).  Pairs differ: one read on a busy host is dated to
 * milliseconds, the next to microseconds.
 */
bool opd_gclock_offer_exact(struct opd_gclock *c, int64_t off, uint64_t unc, uint64_t host_ns);
/* May the offset in use stand in for a pair that gave none, at host time
 * @host_ns?  While it is exact and its pair is under OPD_GCLOCK_KEEP_NS
 * old. */
bool opd_gclock_keep_exact(const struct opd_gclock *c, uint64_t host_ns);
/* Back to HELLO's or ping/pong's offset; @why (may be NULL) is kept. */
void opd_gclock_drop_exact(struct opd_gclock *c, const char *why);
/* Record why the clock is not exact ("" or NULL: it is). */
void opd_gclock_set_why(struct opd_gclock *c, const char *why);

static inline bool opd_gclock_exact(const struct opd_gclock *c)
{
	return c->method == OPD_GCLOCK_TSC;
}

/* The clock's uncertainty (+- ns): exact's stated, or half the round trip. */
static inline uint64_t opd_gclock_unc(const struct opd_gclock *c)
{
	return opd_gclock_exact(c) ? c->unc : c->rtt / 2;
}

/* How far from a switch a sample may have been on either side of it. */
static inline uint64_t opd_gclock_near(const struct opd_gclock *c)
{
	return opd_gclock_exact(c) ? c->unc + OPD_GCLOCK_EXACT_MARGIN_NS :
				     c->rtt / 2 + OPD_GCLOCK_NEAR_MIN_NS;
}

const char *opd_gclock_method_name(enum opd_gclock_method m);

#endif
