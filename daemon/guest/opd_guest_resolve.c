/*
 * Which task, image and offset a guest sample is: by its address space's
 * owner (opd_guest_asid.c), else by the clock and the agent's timeline
 * (doc/clock.md), else, before a vCPU's first switch, by the one task
 * whose mappings hold the pc.  Kernel samples by the guest's kernel tables.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "domprof/raw.h"
#include "opd_guest_int.h"
#include "util/du_log.h"

/* The sample ran in task @t, in its mapping @m. */
void opd_gres_place_user(struct opd_guest *g, const struct opd_guest_sample *s,
		       struct opd_guest_res *r, const struct opd_gtask *t,
		       const struct opd_gmap *m)
{
	r->pid = t->pid;
	if (m->vdso) {
		/* the kernel's own small ELF: a binary, without a file */
		r->image = t->main ? opd_gimgs_image(&g->imgs, t->main) : g->vdso;
		r->dep = g->vdso;
		r->key = s->pc - m->start;
		r->resolved = r->image != NULL;
		r->counter = &g->st->guest_user_resolved_vdso;
		return;
	}
	if (!m->gi) {
		r->counter = &g->st->guest_user_unresolved_anon;
		return;
	}
	r->dep = opd_gimgs_image(&g->imgs, m->gi);
	r->image = t->main ? opd_gimgs_image(&g->imgs, t->main) : r->dep;
	if (!r->dep || !r->image)
		return;	/* counted as capped; stays unresolved */
	r->key = s->pc - m->start + m->pgoff;
	r->resolved = true;
	r->counter = &g->st->guest_user_resolved;
	opd_gimgs_want(&g->imgs, m->gi, g->flags & DP_AG_HELLO_F_IMAGES);
}

/*
 * With no timeline to say which task ran: the sole owner of the pc
 * (opd_gtasks_sole_owner).  It scans every task: only samples from before
 * a vCPU's first switch come here, within a budget of task visits,
 * refilled at limits.owner_visits a second.
 */
static const struct opd_gtask *sole_owner(struct opd_guest *g, uint64_t pc, uint64_t host_ns,
					  const struct opd_gmap **mp)
{
	uint64_t cost = opd_gtasks_scan_cost(&g->tasks), cap = g->lim.owner_visits;

	if (!g->owner_started) {
		g->owner_tokens = cap;
		g->owner_t = host_ns;
		g->owner_started = true;
	} else if (host_ns > g->owner_t) {
		uint64_t dt = host_ns - g->owner_t;
		uint64_t add = dt >= 1000000000ULL ? cap :
			       (uint64_t)((unsigned __int128)cap * dt / 1000000000ULL);

		g->owner_tokens = g->owner_tokens + add > cap ? cap : g->owner_tokens + add;
		g->owner_t = host_ns;
	}
	if (g->owner_tokens < cost) {
		g->st->guest_owner_scans_capped++;
		return NULL;
	}
	g->owner_tokens -= cost;
	return opd_gtasks_sole_owner(&g->tasks, pc, mp);
}

/* How far from a switch @s may have run on either side of it: the clock's
 * uncertainty and the sample's own (DP_RAW_TIME_SPREAD). */
uint64_t opd_gres_near(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	return opd_gclock_near(&g->clock) + (uint64_t)s->spread_us * 1000;
}

/* The tasks that may have run @s, most likely first; *@early: the sample
 * is from before the vCPU's timeline, clearly. */
int opd_gres_candidates(struct opd_guest *g, const struct opd_guest_sample *s,
		      uint32_t cand[OPD_GUEST_MAX_CAND], bool *early)
{
	const struct opd_gtimeline *tl = &g->tl;
	uint64_t gt = opd_gclock_guest(&g->clock, s->host_ns);
	uint64_t near = opd_gres_near(g, s);
	size_t count = opd_gtl_count(tl, s->vcpu);
	long i = opd_gtl_find(tl, s->vcpu, gt);
	int nc = 0;

	if (i < 0) {
		/* Before the vCPU's first switch: the task that switch took
		 * off the vCPU had been running since the agent's events
		 * opened, and likely before; its mappings must hold the pc. */
		const struct opd_gswitch *f = opd_gtl_at(tl, s->vcpu, 0);

		*early = f->t - gt > near;
		cand[nc++] = f->prev;
		if (!*early)
			cand[nc++] = f->next;
		return nc;
	}
	/* the task that ran then first, then those that ran within the
	 * clock's uncertainty before and after, nearest first */
	cand[nc++] = opd_gtl_at(tl, s->vcpu, i)->next;
	for (long k = 0; nc + 2 <= OPD_GUEST_MAX_CAND; k++) {
		bool more = false;

		if (i - k >= 0 && gt - opd_gtl_at(tl, s->vcpu, i - k)->t < near) {
			cand[nc++] = opd_gtl_at(tl, s->vcpu, i - k)->prev;
			more = true;
		}
		if ((size_t)(i + k + 1) < count && opd_gtl_at(tl, s->vcpu, i + k + 1)->t - gt < near) {
			cand[nc++] = opd_gtl_at(tl, s->vcpu, i + k + 1)->next;
			more = true;
		}
		if (!more)
			break;
	}
	return nc;
}

/* The first candidate whose mappings hold the pc.  *@known: some
 * candidate is a task we know. */
static bool place_candidate(struct opd_guest *g, const struct opd_guest_sample *s,
			    struct opd_guest_res *r, const uint32_t *cand, int nc, bool *known)
{
	for (int k = 0; k < nc; k++) {
		const struct opd_gtask *t;
		const struct opd_gmap *m;

		if (!cand[k])
			continue;
		t = opd_gtasks_find(&g->tasks, cand[k]);
		if (!t)
			continue;
		*known = true;
		m = opd_gtask_find_map(t, s->pc);
		if (!m)
			continue;
		opd_gres_place_user(g, s, r, t, m);
		return true;
	}
	return false;
}

/* May a --verbose line about sample @s be written?  At most
 * OPD_GUEST_DEBUG_PER_S a second of sample time; the rest are counted and
 * said when the next second starts. */
bool opd_guest_debug_ok(struct opd_guest *g, const struct opd_guest_sample *s)
{
	uint64_t sec = s->host_ns / 1000000000ull;

	if (sec != g->dbg_sec) {
		if (g->dbg_dropped)
			du_debug("domain %s: %" PRIu32 " more lines on address spaces left out",
				 g->name, g->dbg_dropped);
		g->dbg_sec = sec;
		g->dbg_n = 0;
		g->dbg_dropped = 0;
	}
	if (g->dbg_n >= OPD_GUEST_DEBUG_PER_S) {
		g->dbg_dropped++;
		return false;
	}
	g->dbg_n++;
	return true;
}

static void resolve_user(struct opd_guest *g, const struct opd_guest_sample *s,
			 struct opd_guest_res *r)
{
	uint32_t cand[OPD_GUEST_MAX_CAND];
	bool known = false, early = true;
	const struct opd_gtask *ot;
	const struct opd_gmap *om;
	int nc;

	if (!g->has_agent) {
		r->counter = &g->st->guest_user_unresolved_no_agent;
		return;
	}
	if (s->asid && opd_gvote_resolve(g, s, r))
		return;
	if (!opd_gclock_known(&g->clock)) {
		r->counter = &g->st->guest_user_unresolved_no_clock;
		return;
	}
	if (opd_gtl_count(&g->tl, s->vcpu)) {
		early = false;
		nc = opd_gres_candidates(g, s, cand, &early);
		/* a switch within the clock's uncertainty: either side may
		 * have run it (the mappings decide below) */
		g->st->guest_user_ambiguous += nc > 1;
		/* the task whose mappings hold the pc wins, in order of likelihood */
		if (place_candidate(g, s, r, cand, nc, &known)) {
			g->st->guest_user_before_timeline += early && r->resolved;
			return;
		}
		if (!early) {
			r->counter = known ? &g->st->guest_user_unresolved_no_mapping :
					     &g->st->guest_user_unresolved_no_task;
			return;
		}
	}
	/* (an agent without switches would send every sample here: the scan
	 * is for the first moments of a timeline only) */
	ot = g->flags & DP_AG_HELLO_F_SWITCH ? sole_owner(g, s->pc, s->host_ns, &om) : NULL;
	if (!ot) {
		r->counter = &g->st->guest_user_unresolved_no_switch;
		return;
	}
	opd_gres_place_user(g, s, r, ot, om);
	g->st->guest_user_before_timeline += r->resolved;
}

static void resolve_kernel(struct opd_guest *g, const struct opd_guest_sample *s,
			   struct opd_guest_res *r)
{
	r->counter = &g->st->guest_kernel_unresolved;
	if (opd_gkern_resolve(&g->kern, s->pc, &r->image, &r->key)) {
		r->dep = r->image;
		r->resolved = true;
		r->counter = &g->st->guest_kernel_resolved;
	}
}

/*
 * The mode the pc's half of the x86-64 address space says.  The host's
 * guest/user flag comes from the guest's CPL as the hypervisor saw it,
 * which nested virtualization gets wrong at times; a pc in the other half
 * cannot be that mode's (counted guest_mode_by_address).
 */
static uint8_t effective_mode(struct opd_guest *g, const struct opd_guest_sample *s)
{
	if (s->mode == DP_MODE_GUEST_USER && s->pc >= 0xffff800000000000ULL) {
		g->st->guest_mode_by_address++;
		return DP_MODE_GUEST_KERNEL;
	}
	if (s->mode == DP_MODE_GUEST_KERNEL && s->pc < 0x0000800000000000ULL) {
		g->st->guest_mode_by_address++;
		return DP_MODE_GUEST_USER;
	}
	return s->mode;
}

void opd_guest_resolve(struct opd_guest *g, const struct opd_guest_sample *s,
		       struct opd_guest_res *r)
{
	memset(r, 0, sizeof(*r));
	r->mode = effective_mode(g, s);
	if (r->mode == DP_MODE_GUEST_KERNEL)
		resolve_kernel(g, s, r);
	else
		resolve_user(g, s, r);
	if (!r->counter)
		r->counter = &g->st->guest_user_unresolved_capped;
	if (!r->resolved) {
		r->image = r->dep = r->mode == DP_MODE_GUEST_KERNEL ? g->anon_kernel : g->anon_user;
		r->key = s->pc;
		/* no agent: one bucket per address space when the collector
		 * knows it, {anon:guest-user:asN} */
		if (r->mode != DP_MODE_GUEST_KERNEL && !g->has_agent && s->asid) {
			struct opd_image *b = opd_gasid_bucket(&g->asid, s->asid);

			if (b)
				r->image = r->dep = b;
		}
	}
}
