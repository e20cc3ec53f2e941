/*
 * The guest-to-host clock offset of one domain, from PING/PONG exchanges
 * (NTP style: the offset at the exchange's midpoint, the recent exchange
 * with the smallest round trip wins).  Until the first PONG, HELLO's own
 * timestamp gives a rough offset with a wide uncertainty.
 */
#ifndef OPD_GUEST_CLOCK_H
#define OPD_GUEST_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"

#define OPD_GCLOCK_PINGS	16
#define OPD_GCLOCK_WINDOW	32

enum opd_gclock_method {
	OPD_GCLOCK_NONE,	/* no estimate yet */
	OPD_GCLOCK_HELLO,	/* HELLO's timestamp, rtt 100 ms assumed */
	OPD_GCLOCK_PING,	/* PING/PONG exchanges */
};

struct opd_gclock {
	struct { uint64_t token, host_ns; } pings[OPD_GCLOCK_PINGS];
	uint64_t next_token;
	struct { int64_t off; uint64_t rtt; } win[OPD_GCLOCK_WINDOW];
	size_t nr, pos;
	enum opd_gclock_method method;
	int64_t off;		/* guest - host, ns */
	uint64_t rtt;		/* of the winning exchange: uncertainty is rtt/2 */
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
	return (uint64_t)((int64_t)host_ns + c->off);
}

const char *opd_gclock_method_name(enum opd_gclock_method m);

#endif
