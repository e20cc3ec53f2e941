#include "config.h"

#include <errno.h>
#include <string.h>

#include "opd_guest_clock.h"

void opd_gclock_init(struct opd_gclock *c)
{
	memset(c, 0, sizeof(*c));
}

uint64_t opd_gclock_ping(struct opd_gclock *c, uint64_t host_ns)
{
	uint64_t token = ++c->next_token;

	c->pings[token % OPD_GCLOCK_PINGS].token = token;
	c->pings[token % OPD_GCLOCK_PINGS].host_ns = host_ns;
	return token;
}

void opd_gclock_hello(struct opd_gclock *c, uint64_t guest_ns, uint64_t host_ns)
{
	/* A first, rough offset: HELLO left the guest moments ago.  PONGs
	 * replace it. */
	if (c->method != OPD_GCLOCK_NONE)
		return;
	c->off = (int64_t)(guest_ns - host_ns);
	c->rtt = 100ULL * 1000 * 1000;
	c->method = OPD_GCLOCK_HELLO;
}

int opd_gclock_pong(struct opd_gclock *c, const struct dp_ag_pong *p, uint64_t host_ns)
{
	uint64_t t0, t3 = host_ns, rtt, best = UINT64_MAX;
	size_t slot = p->token % OPD_GCLOCK_PINGS;

	if (p->token == 0 || c->pings[slot].token != p->token || p->send_ns < p->recv_ns)
		return -EINVAL;
	t0 = c->pings[slot].host_ns;
	c->pings[slot].token = 0;
	if (t3 < t0 || t3 - t0 < p->send_ns - p->recv_ns)
		return -EINVAL;
	rtt = (t3 - t0) - (p->send_ns - p->recv_ns);
	/* offset = guest - host at the midpoint of the exchange */
	c->win[c->pos].off = (int64_t)(p->recv_ns / 2 + p->send_ns / 2) - (int64_t)(t0 / 2 + t3 / 2);
	c->win[c->pos].rtt = rtt;
	c->pos = (c->pos + 1) % OPD_GCLOCK_WINDOW;
	if (c->nr < OPD_GCLOCK_WINDOW)
		c->nr++;
	/* a window (not all time) follows drift */
	for (size_t i = 0; i < c->nr; i++) {
		if (c->win[i].rtt < best) {
			best = c->win[i].rtt;
			c->off = c->win[i].off;
		}
	}
	c->rtt = best;
	c->method = OPD_GCLOCK_PING;
	return 0;
}

const char *opd_gclock_method_name(enum opd_gclock_method m)
{
	switch (m) {
	case OPD_GCLOCK_HELLO:
		return "hello";
	case OPD_GCLOCK_PING:
		return "ping";
	default:
		return "none";
	}
}
