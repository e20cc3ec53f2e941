#include "config.h"

#include <errno.h>
#include <stdio.h>
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
	if (c->pp_method != OPD_GCLOCK_NONE)
		return;
	c->pp_off = (int64_t)(guest_ns - host_ns);
	c->pp_rtt = 100ULL * 1000 * 1000;
	c->pp_method = OPD_GCLOCK_HELLO;
	if (!opd_gclock_exact(c)) {
		c->off = c->pp_off;
		c->rtt = c->pp_rtt;
		c->method = c->pp_method;
	}
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
	/* in unsigned arithmetic: the guest's times may be anything, and a
	 * signed difference of them could overflow */
	c->win[c->pos].off = (int64_t)((p->recv_ns / 2 + p->send_ns / 2) - (t0 / 2 + t3 / 2));
	c->win[c->pos].rtt = rtt;
	c->pos = (c->pos + 1) % OPD_GCLOCK_WINDOW;
	if (c->nr < OPD_GCLOCK_WINDOW)
		c->nr++;
	/* a window (not all time) follows drift */
	for (size_t i = 0; i < c->nr; i++) {
		if (c->win[i].rtt < best) {
			best = c->win[i].rtt;
			c->pp_off = c->win[i].off;
		}
	}
	c->pp_rtt = best;
	c->pp_method = OPD_GCLOCK_PING;
	if (!opd_gclock_exact(c)) {
		c->off = c->pp_off;
		c->rtt = c->pp_rtt;
		c->method = c->pp_method;
	}
	return 0;
}

void opd_gclock_tsc_push(struct opd_gclock *c, const struct dp_ag_tsc *t)
{
	if (c->nr_tsc == OPD_GCLOCK_TSC_PAIRS) {
		memmove(c->tsc, c->tsc + 1, sizeof(c->tsc[0]) * (OPD_GCLOCK_TSC_PAIRS - 1));
		c->nr_tsc--;
	}
	c->tsc[c->nr_tsc++] = *t;
}

size_t opd_gclock_tsc_take(struct opd_gclock *c, struct dp_ag_tsc *out, size_t max)
{
	size_t n = c->nr_tsc < max ? c->nr_tsc : max;

	memcpy(out, c->tsc, n * sizeof(*out));
	memmove(c->tsc, c->tsc + n, (c->nr_tsc - n) * sizeof(*out));
	c->nr_tsc -= n;
	return n;
}

void opd_gclock_set_exact(struct opd_gclock *c, int64_t off, uint64_t unc)
{
	c->method = OPD_GCLOCK_TSC;
	c->off = off;
	c->unc = unc;
	c->rtt = 0;
	c->why[0] = 0;
}

bool opd_gclock_offer_exact(struct opd_gclock *c, int64_t off, uint64_t unc, uint64_t host_ns)
{
	uint64_t age = host_ns > c->exact_host_ns ? host_ns - c->exact_host_ns : 0;

	if (opd_gclock_exact(c) && unc > c->unc + age / (1000000 / OPD_GCLOCK_AGE_PPM))
		return false;
	opd_gclock_set_exact(c, off, unc);
	c->exact_host_ns = host_ns;
	return true;
}

bool opd_gclock_keep_exact(const struct opd_gclock *c, uint64_t host_ns)
{
	return opd_gclock_exact(c) && host_ns >= c->exact_host_ns &&
	       host_ns - c->exact_host_ns < OPD_GCLOCK_KEEP_NS;
}

void opd_gclock_set_why(struct opd_gclock *c, const char *why)
{
	snprintf(c->why, sizeof(c->why), "%s", why ? why : "");
}

void opd_gclock_drop_exact(struct opd_gclock *c, const char *why)
{
	if (why)
		opd_gclock_set_why(c, why);
	if (!opd_gclock_exact(c))
		return;
	c->tsc_fallbacks++;
	c->method = c->pp_method;
	c->off = c->pp_off;
	c->rtt = c->pp_rtt;
	c->unc = 0;
}

const char *opd_gclock_method_name(enum opd_gclock_method m)
{
	switch (m) {
	case OPD_GCLOCK_HELLO:
		return "hello";
	case OPD_GCLOCK_PING:
		return "ping";
	case OPD_GCLOCK_TSC:
		return "tsc";
	default:
		return "none";
	}
}
