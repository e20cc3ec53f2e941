/*
 * Guest samples held until the sideband explains them: the bounded FIFO
 * (opd_ghold_*), and what leaves it when (opd_guest_defer, opd_guest_next),
 * with the samples that wait beside it for their address space's owner.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "opd_guest_int.h"
#include "util/du_log.h"

int opd_ghold_init(struct opd_ghold *h, size_t cap)
{
	h->q = calloc(cap ? cap : 1, sizeof(*h->q));
	h->head = h->count = h->scanned = 0;
	h->cap = cap;
	return h->q ? 0 : -ENOMEM;
}

void opd_ghold_fini(struct opd_ghold *h)
{
	free(h->q);
	h->q = NULL;
	h->count = 0;
}

void opd_ghold_push(struct opd_ghold *h, const struct opd_guest_sample *s)
{
	h->q[(h->head + h->count) % h->cap] = *s;
	h->count++;
}

const struct opd_guest_sample *opd_ghold_oldest(const struct opd_ghold *h)
{
	return h->count ? &h->q[h->head] : NULL;
}

void opd_ghold_pop(struct opd_ghold *h)
{
	h->head = (h->head + 1) % h->cap;
	h->count--;
	if (h->scanned)
		h->scanned--;
}

struct opd_guest_sample *opd_ghold_at(struct opd_ghold *h, size_t i)
{
	return &h->q[(h->head + i) % h->cap];
}

/* ---- what leaves the hold, and when ---- */

/* Resolve @s into *@out, *@r (counted by what it resolved to). */
static void take(struct opd_guest *g, const struct opd_guest_sample *s,
		 struct opd_guest_sample *out, struct opd_guest_res *r)
{
	*out = *s;
	opd_guest_resolve(g, out, r);
	(*r->counter)++;
	if (r->resolved)
		g->ds.resolved++;
	else
		g->ds.anon++;
	if (r->mode != DP_MODE_GUEST_KERNEL) {
		if (r->resolved)
			g->ds.user_resolved++;
		else
			g->ds.user_unresolved++;
	}
}

bool opd_guest_defer(struct opd_guest *g, const struct opd_guest_sample *s,
		     struct opd_guest_sample *out, struct opd_guest_res *r)
{
	struct opd_guest_sample q = *s;
	bool now = false;

	/* the hold's own marks start clear, whatever the caller left there */
	q.voted = false;
	q.filed = false;
	q.expired = false;
	g->ds.received++;
	if (q.witness && g->has_agent)
		opd_gvote_witness(g, &q);	/* a fact of its time: taken on arrival */
	if (!g->hold.cap) {
		take(g, &q, out, r);
		return true;
	}
	if (opd_ghold_full(&g->hold)) {
		g->st->guest_queue_overflow++;
		g->ds.queue_overflow++;
		take(g, opd_ghold_oldest(&g->hold), out, r);
		opd_ghold_pop(&g->hold);
		now = true;
	}
	opd_ghold_push(&g->hold, &q);
	return now;
}

/*
 * Should @s, the oldest held sample, its time passed by the timeline, wait
 * for its address space's owner?  While a space has none yet, its samples
 * vote as they leave the hold (this one first), and the owner they elect
 * files them (doc/guest-asid.md), not the clock, which may be wrong by
 * more than it knows (a ping/pong clock over a slow channel) and cannot
 * tell apart two processes of one binary.  They wait beside the hold
 * (g->wait), so that no other sample waits behind them: one space that
 * never gets an owner (a process the agent does not report, the agent
 * itself) would otherwise hold every sample of the domain back.  At most
 * OPD_GUEST_OWNER_WAIT_NS after its time; then the clock places it.
 */
static bool wait_for_owner(struct opd_guest *g, struct opd_guest_sample *s)
{
	if (!s->asid || s->mode != DP_MODE_GUEST_USER || !g->has_agent)
		return false;
	if (!s->voted)
		opd_gvote_now(g, s);
	if (opd_gvote_owner(g, s))
		return false;
	if (opd_ghold_full(&g->wait)) {
		g->asid.s.wait_full++;
		return false;
	}
	g->asid.s.waited++;
	opd_ghold_push(&g->wait, s);
	return true;
}

/*
 * The next waiting sample to file (opd_guest_next): the oldest once its
 * space has an owner or its wait is over (@all: now), else, after a space
 * got an owner, the next one of the samples behind it that has one now.
 */
static struct opd_guest_sample *wait_next(struct opd_guest *g, uint64_t host_ns, bool all)
{
	struct opd_guest_sample *q;
	bool owned;

	if (!g->wait.count)
		return NULL;
	q = opd_ghold_at(&g->wait, 0);
	owned = opd_gvote_owner(g, q) != 0;
	if (all || host_ns - q->host_ns >= OPD_GUEST_OWNER_WAIT_NS || owned) {
		if (!owned) {
			q->expired = true;
			g->asid.s.wait_expired++;
			if (opd_guest_debug_ok(g, q)) {
				uint32_t elected = opd_gvote_elected(g, q);
				char who[32] = "the clock";

				if (elected)
					snprintf(who, sizeof(who), "its elected pid %" PRIu32, elected);
				du_debug("domain %s: address space %#" PRIx64 " has no owner after %"
					 PRIu64 " ms: %s places its sample at %" PRIu64,
					 g->name, q->asid, (host_ns - q->host_ns) / 1000000, who,
					 q->host_ns);
			}
		}
		return q;
	}
	for (; g->wait_new_owner && g->wait.scanned < g->wait.count; g->wait.scanned++) {
		q = opd_ghold_at(&g->wait, g->wait.scanned);
		if (!q->filed && opd_gvote_owner(g, q))
			return q;
	}
	g->wait_new_owner = false;
	return NULL;
}

/* Has the sideband passed @s's time?  Its vCPU's timeline says so when a
 * switch after it arrived; kernel samples need no timeline. */
bool opd_ghold_ready(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	size_t n;
	uint64_t gt;

	if (s->mode == DP_MODE_GUEST_KERNEL && s->pc >= 0xffff800000000000ULL)
		return opd_gkern_ready(&g->kern);
	if (!opd_gclock_known(&g->clock))
		return false;
	gt = opd_gclock_guest(&g->clock, s->host_ns) + opd_gres_near(g, s);
	n = opd_gtl_count(&g->tl, s->vcpu);
	return n && opd_gtl_at(&g->tl, s->vcpu, (long)n - 1)->t >= gt;
}

bool opd_guest_next(struct opd_guest *g, uint64_t host_ns, bool all,
		    struct opd_guest_sample *out, struct opd_guest_res *r)
{
	uint64_t hold = g->has_agent ? OPD_GUEST_HOLD_NS : OPD_GUEST_HOLD_NOAGENT_NS;
	struct opd_guest_sample *s = wait_next(g, host_ns, all);
	bool is_ready;

	if (s) {
		take(g, s, out, r);
		s->filed = true;
		g->wait_filed++;
		while (g->wait.count && opd_ghold_at(&g->wait, 0)->filed) {
			opd_ghold_pop(&g->wait);
			g->wait_filed--;
		}
		return true;
	}
	while ((s = g->hold.count ? opd_ghold_at(&g->hold, 0) : NULL)) {
		is_ready = opd_ghold_ready(g, s);
		if (!all && !is_ready && host_ns - s->host_ns < hold)
			return false;
		if (all || !is_ready || !wait_for_owner(g, s))
			break;
		opd_ghold_pop(&g->hold);
	}
	if (!s)
		return false;
	take(g, s, out, r);
	/* placed by the last switch known, though the agent's stream had not
	 * passed the sample's time: a guess if the agent lags (doc/clock.md) */
	g->st->guest_user_past_timeline += !is_ready && r->resolved && !s->asid &&
					   r->mode != DP_MODE_GUEST_KERNEL && g->has_agent;
	opd_ghold_pop(&g->hold);
	return true;
}

void opd_guest_note_deferred(struct opd_guest *g)
{
	g->st->guest_budget_deferred++;
	g->ds.budget_deferred++;
}
