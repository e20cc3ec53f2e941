#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "opd_guest_asid.h"
#include "opd_guest_int.h"
#include "util/du_log.h"

void opd_gasid_init(struct opd_gasid *a, uint32_t max_spaces, struct opd_images *images)
{
	memset(a, 0, sizeof(*a));
	a->max_spaces = max_spaces;
	a->images = images;
}

void opd_gasid_fini(struct opd_gasid *a)
{
	free(a->e);
	a->e = NULL;
}

/* The set of @asid.  CR3 values are page aligned and the low 13 bits are
 * masked off (doc/raw-stream.md): hash what is left. */
static struct opd_gasid_ent *set_of(const struct opd_gasid *a, uint64_t asid)
{
	uint64_t h = (asid >> 13) * 0x9e3779b97f4a7c15ull;

	return &a->e[(h >> 56) % OPD_GASID_SETS * OPD_GASID_WAYS];
}

static struct opd_gasid_ent *find(const struct opd_gasid *a, uint64_t asid)
{
	struct opd_gasid_ent *set;

	if (!a->e || !asid)
		return NULL;
	set = set_of(a, asid);
	for (int w = 0; w < OPD_GASID_WAYS; w++)
		if (set[w].asid == asid)
			return &set[w];
	return NULL;
}

/* Found or made (a free way, else the set's least recently used one);
 * NULL for @asid 0 or out of memory. */
static struct opd_gasid_ent *get(struct opd_gasid *a, uint64_t asid)
{
	struct opd_gasid_ent *e, *set, *lru;

	if (!asid)
		return NULL;
	if (!a->e) {
		a->e = calloc(OPD_GASID_SETS * OPD_GASID_WAYS, sizeof(*a->e));
		if (!a->e)
			return NULL;
	}
	e = find(a, asid);
	if (!e) {
		set = set_of(a, asid);
		lru = &set[0];
		for (int w = 0; w < OPD_GASID_WAYS && lru->asid; w++)
			if (!set[w].asid || set[w].used < lru->used)
				lru = &set[w];
		if (lru->asid)
			a->s.evicted++;
		e = lru;
		memset(e, 0, sizeof(*e));
		e->asid = asid;
	}
	e->used = ++a->tick;
	return e;
}

/*
 * One vote for @pid: its count goes up (to OPD_GASID_VOTE_CAP), every
 * other candidate's down by one.  So the counts follow what the recent
 * votes say: a pid that keeps being named wins, and an owner that the
 * votes stop naming loses its lead within about OPD_GASID_VOTE_CAP
 * contrary votes, however long it owned the space.  A pid that finds
 * no slot (all held by others still counting) is not counted.
 */
static void tally(struct opd_gasid_ent *e, uint32_t pid)
{
	struct opd_gasid_vote *mine = NULL, *free_slot = NULL;

	for (int k = 0; k < OPD_GASID_VOTERS; k++) {
		struct opd_gasid_vote *v = &e->v[k];

		if (v->n && v->pid == pid)
			mine = v;
		else if (v->n)
			v->n--;
		if (!v->n && !free_slot)
			free_slot = v;
	}
	if (!mine && free_slot)
		*(mine = free_slot) = (struct opd_gasid_vote){ .pid = pid, .n = 0 };
	if (mine && mine->n < OPD_GASID_VOTE_CAP)
		mine->n++;
}

/* The pid leading @e's counts with OPD_GASID_MIN_VOTES and three times
 * the runner-up's, else 0. */
static uint32_t leader(const struct opd_gasid_ent *e)
{
	const struct opd_gasid_vote *lead = NULL, *second = NULL;

	for (int k = 0; k < OPD_GASID_VOTERS; k++) {
		const struct opd_gasid_vote *v = &e->v[k];

		if (!v->n)
			continue;
		if (!lead || v->n > lead->n) {
			second = lead;
			lead = v;
		} else if (!second || v->n > second->n) {
			second = v;
		}
	}
	if (!lead || lead->n < OPD_GASID_MIN_VOTES ||
	    (second && lead->n < 3 * (uint64_t)second->n))
		return 0;
	return lead->pid;
}

/* @pid's count in @e goes to 0: the votes that made a wrong choice do not
 * make it again. */
static void unvote(struct opd_gasid_ent *e, uint32_t pid)
{
	for (int k = 0; k < OPD_GASID_VOTERS; k++)
		if (e->v[k].pid == pid)
			e->v[k].n = 0;
}

_Static_assert(OPD_GASID_WINDOW == 16, "the window is a uint16_t's bits");

/* A vote for @pid in a space with an owner: kept in the window of its
 * last votes; most of them against it demote it (the space has no owner
 * from then on, and is learned again). */
static enum opd_gasid_change judge_owner(struct opd_gasid *a, struct opd_gasid_ent *e,
					 uint32_t pid)
{
	e->win = (uint16_t)(e->win << 1 | (pid != e->owner));
	if (__builtin_popcount(e->win) < OPD_GASID_DEMOTE)
		return OPD_GASID_SAME;
	unvote(e, e->owner);
	e->last = e->owner;
	e->owner = 0;
	e->win = 0;
	a->s.demoted++;
	return OPD_GASID_DEMOTED;
}

static enum opd_gasid_change own(struct opd_gasid *a, struct opd_gasid_ent *e);

/* A vote for @pid in a space with no owner: it elects a provisional pid,
 * confirms it (OPD_GASID_CONFIRM_VOTES votes for it since, and two for
 * each against) or drops it once as many were against it (its votes go:
 * the burst of wrong ones that elected it does not elect it again).  A
 * clock wrong for the first 3 ms of each 10 ms turn votes wrong in runs
 * of 6 looks: neither rule may turn on one such run. */
static enum opd_gasid_change judge_prov(struct opd_gasid *a, struct opd_gasid_ent *e,
					uint32_t pid)
{
	if (!e->prov) {
		e->prov = leader(e);
		e->pro = e->con = 0;
		a->s.provisional += e->prov != 0;
		return e->prov ? OPD_GASID_ELECTED : OPD_GASID_SAME;
	}
	if (pid == e->prov)
		e->pro++;
	else
		e->con++;
	if (e->pro >= OPD_GASID_CONFIRM_VOTES && 2 * e->con <= e->pro)
		return own(a, e);
	/* as many against as for, or still undecided after
	 * OPD_GASID_DECIDE_VOTES: dropped */
	if ((e->con >= OPD_GASID_CONFIRM_VOTES && e->con >= e->pro) ||
	    e->pro + e->con >= OPD_GASID_DECIDE_VOTES) {
		unvote(e, e->prov);
		e->prov = 0;
		a->s.unconfirmed++;
		return OPD_GASID_DROPPED;
	}
	return OPD_GASID_SAME;
}

/* @e's elected pid confirmed: the owner. */
static enum opd_gasid_change own(struct opd_gasid *a, struct opd_gasid_ent *e)
{
	e->owner = e->prov;
	e->prov = 0;
	e->win = 0;
	a->s.learned++;
	a->s.reversed += e->last && e->last != e->owner;
	e->last = 0;
	return OPD_GASID_OWNED;
}

enum opd_gasid_change opd_gasid_vote(struct opd_gasid *a, uint64_t asid, uint32_t pid,
				     uint64_t gt, uint64_t obs, bool clear)
{
	struct opd_gasid_ent *e;

	if (!pid)
		return OPD_GASID_SAME;
	e = get(a, asid);
	if (!e)
		return OPD_GASID_SAME;
	if (gt < e->since) {
		a->s.votes_stale++;
		return OPD_GASID_SAME;
	}
	if (obs && e->last_obs == obs) {
		a->s.votes_same_obs++;
		return OPD_GASID_SAME;
	}
	e->last_obs = obs;
	a->s.votes++;
	if (clear)
		a->s.votes_clear++;
	else
		a->s.votes_inferred++;
	if (e->wit_gt) {
		/* the owner was seen: a vote only measures the clock */
		a->s.votes_vs_witness += pid != e->owner;
		return OPD_GASID_SAME;
	}
	tally(e, pid);
	return e->owner ? judge_owner(a, e, pid) : judge_prov(a, e, pid);
}

static void end_owner(struct opd_gasid_ent *e, uint64_t gt);

/* @e's learning starts over: no election, no window, no counts. */
static void clear_votes(struct opd_gasid_ent *e)
{
	e->prov = 0;
	e->last = 0;
	e->win = 0;
	memset(e->v, 0, sizeof(e->v));
}

enum opd_gasid_change opd_gasid_witness(struct opd_gasid *a, uint64_t asid, uint32_t pid,
					uint64_t gt)
{
	/* witnessed (wit_gt not 0) even before the clock is known */
	uint64_t seen = gt ? gt : 1;
	struct opd_gasid_ent *e;

	if (!pid || !(e = get(a, asid)))
		return OPD_GASID_SAME;
	if (gt < e->since) {
		a->s.wit_stale++;
		return OPD_GASID_SAME;
	}
	a->s.witnessed++;
	if (e->owner == pid) {
		if (seen > e->wit_gt)
			e->wit_gt = seen;
		return OPD_GASID_SAME;
	}
	if (e->owner) {
		a->s.wit_overruled++;
		end_owner(e, gt);
	} else {
		a->s.wit_owned++;
		clear_votes(e);
	}
	e->owner = pid;
	e->wit_gt = seen;
	return OPD_GASID_OWNED;
}

const struct opd_gasid_ent *opd_gasid_find(const struct opd_gasid *a, uint64_t asid)
{
	return find(a, asid);
}

void opd_gasid_doubt(struct opd_gasid *a, uint64_t asid)
{
	struct opd_gasid_ent *e = find(a, asid);

	if (!e || !e->owner)
		return;
	for (int k = 0; k < OPD_GASID_VOTERS; k++)
		if (e->v[k].n && e->v[k].pid == e->owner)
			e->v[k].n--;
	a->s.doubted++;
}

uint32_t opd_gasid_owner(const struct opd_gasid *a, uint64_t asid, uint64_t gt)
{
	const struct opd_gasid_ent *e = find(a, asid);

	if (!e)
		return 0;
	if (gt >= e->since)
		return e->owner;
	for (uint32_t i = 0; i < e->npast; i++) {
		uint64_t from = i + 1 < e->npast ? e->past[i + 1].until : e->past_from;

		if (gt >= from)
			return e->past[i].pid;
	}
	return 0;
}

/* @e's owner (0: none) ends at @gt: from then on the space is learned
 * again, and older votes are refused. */
static void end_owner(struct opd_gasid_ent *e, uint64_t gt)
{
	if (gt < e->since)
		gt = e->since;	/* out of order: the newest end stands */
	if (e->npast == OPD_GASID_PAST) {
		e->past_from = e->past[OPD_GASID_PAST - 1].until;
		e->npast--;
	}
	memmove(&e->past[1], &e->past[0], e->npast * sizeof(e->past[0]));
	e->past[0].pid = e->owner;
	e->past[0].until = gt;
	e->npast++;
	e->owner = 0;
	e->wit_gt = 0;
	clear_votes(e);
	e->since = gt;
}

void opd_gasid_forget(struct opd_gasid *a, uint32_t pid, uint64_t gt, bool exec)
{
	if (!a->e || !pid)
		return;
	for (size_t i = 0; i < OPD_GASID_SETS * OPD_GASID_WAYS; i++) {
		struct opd_gasid_ent *e = &a->e[i];
		struct opd_gasid_vote *mine = NULL;

		if (!e->asid)
			continue;
		for (int k = 0; k < OPD_GASID_VOTERS; k++)
			if (e->v[k].n && e->v[k].pid == pid)
				mine = &e->v[k];
		if ((e->owner && e->owner != pid) || (!e->owner && e->prov && e->prov != pid)) {
			/* another's space, or another's election: it stays */
			if (mine)
				mine->n = 0;
			continue;
		}
		if (e->owner != pid && e->prov != pid && !mine)
			continue;
		if (exec && e->owner == pid && e->wit_gt > gt)
			continue;	/* seen running there after its exec */
		/* its own space, or one it was learning to own */
		a->s.forgotten += e->owner == pid;
		end_owner(e, gt);
	}
}

struct opd_image *opd_gasid_bucket(struct opd_gasid *a, uint64_t asid)
{
	struct opd_gasid_ent *e = get(a, asid);
	char name[32];
	int n;

	if (!e)
		return NULL;
	if (!e->space) {
		if (a->next_space >= a->max_spaces) {
			a->s.spaces_capped++;
			return NULL;
		}
		e->space = ++a->next_space;
		a->s.spaces++;
	}
	if (!e->img) {
		n = snprintf(name, sizeof(name), "guest-user:as%" PRIu32, e->space);
		e->img = opd_image_get(a->images, SFN_ANON, name, (size_t)n);
	}
	return e->img;
}

void opd_gasid_write_stats(const struct opd_gasid *a, FILE *f)
{
	const struct opd_gasid_stats *s = &a->s;

	fprintf(f,
		"asid_seen %" PRIu64 "\nasid_votes %" PRIu64 "\nasid_votes_clear %" PRIu64
		"\nasid_votes_inferred %" PRIu64 "\nasid_votes_stale %" PRIu64
		"\nasid_votes_same_obs %" PRIu64 "\nasid_votes_ahead %" PRIu64
		"\nasid_provisional %" PRIu64 "\nasid_unconfirmed %" PRIu64
		"\nasid_learned %" PRIu64 "\nasid_reversed %" PRIu64 "\nasid_demoted %" PRIu64
		"\nasid_doubted %" PRIu64 "\nasid_filed %" PRIu64
		"\nasid_overrode_clock %" PRIu64 "\nasid_no_mapping %" PRIu64
		"\nasid_forgotten %" PRIu64 "\nasid_evicted %" PRIu64 "\nasid_spaces %" PRIu64
		"\nasid_spaces_capped %" PRIu64 "\nasid_waited %" PRIu64
		"\nasid_wait_expired %" PRIu64 "\nasid_filed_elected %" PRIu64
		"\nasid_wait_full %" PRIu64 "\n",
		s->seen, s->votes, s->votes_clear, s->votes_inferred, s->votes_stale,
		s->votes_same_obs, s->votes_ahead, s->provisional, s->unconfirmed, s->learned,
		s->reversed, s->demoted, s->doubted, s->filed, s->overrode_clock, s->no_mapping,
		s->forgotten, s->evicted, s->spaces, s->spaces_capped, s->waited, s->wait_expired,
		s->filed_elected, s->wait_full);
	fprintf(f,
		"asid_witnessed %" PRIu64 "\nasid_wit_owned %" PRIu64 "\nasid_wit_overruled %" PRIu64
		"\nasid_wit_stale %" PRIu64 "\nasid_votes_vs_witness %" PRIu64 "\n",
		s->witnessed, s->wit_owned, s->wit_overruled, s->wit_stale, s->votes_vs_witness);
}

/* ---- the tables of domains with no agent, by domain ---- */

struct opd_gasid_dom {
	const struct opd_image *domain;	/* NULL: a free slot */
	struct opd_gasid *a;
};

struct opd_gasid_doms {
	struct opd_images *images;
	struct opd_gasid_dom *slot;	/* open addressing, mask + 1 of them */
	size_t mask, used;
};

struct opd_gasid_doms *opd_gasid_doms_new(struct opd_images *images)
{
	struct opd_gasid_doms *m = calloc(1, sizeof(*m));

	if (m)
		m->images = images;
	return m;
}

void opd_gasid_doms_free(struct opd_gasid_doms *m)
{
	if (!m)
		return;
	for (size_t i = 0; m->slot && i <= m->mask; i++) {
		if (m->slot[i].a)
			opd_gasid_fini(m->slot[i].a);
		free(m->slot[i].a);
	}
	free(m->slot);
	free(m);
}

static struct opd_gasid_dom *doms_slot(struct opd_gasid_dom *slot, size_t mask,
				       const struct opd_image *domain)
{
	size_t i = (size_t)(((uintptr_t)domain * 0x9e3779b97f4a7c15ull) >> 32) & mask;

	while (slot[i].domain && slot[i].domain != domain)
		i = (i + 1) & mask;
	return &slot[i];
}

/* Room for one more, kept at most half full. */
static int doms_grow(struct opd_gasid_doms *m)
{
	size_t n = m->slot ? (m->mask + 1) * 2 : 64;
	struct opd_gasid_dom *slot;

	if (m->slot && (m->used + 1) * 2 <= m->mask + 1)
		return 0;
	slot = calloc(n, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; m->slot && i <= m->mask; i++)
		if (m->slot[i].domain)
			*doms_slot(slot, n - 1, m->slot[i].domain) = m->slot[i];
	free(m->slot);
	m->slot = slot;
	m->mask = n - 1;
	return 0;
}

struct opd_gasid *opd_gasid_doms_get(struct opd_gasid_doms *m, const struct opd_image *domain)
{
	struct opd_gasid_dom *d;

	if (m->slot) {
		d = doms_slot(m->slot, m->mask, domain);
		if (d->domain)
			return d->a;
	}
	if (m->used == OPD_GASID_MAX_DOMS || doms_grow(m))
		return NULL;
	d = doms_slot(m->slot, m->mask, domain);
	d->a = malloc(sizeof(*d->a));
	if (!d->a)
		return NULL;
	opd_gasid_init(d->a, OPD_GASID_MAX_SPACES, m->images);
	d->domain = domain;
	m->used++;
	return d->a;
}

/* ---- the votes: which process a sample's space is, and filing by it ---- */

/* The owner of @s's address space at its time (opd_gasid_owner). */
uint32_t opd_gvote_owner(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	return opd_gasid_owner(&g->asid, s->asid, opd_gclock_guest(&g->clock, s->host_ns));
}

uint32_t opd_gvote_elected(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	const struct opd_gasid_ent *e = opd_gasid_find(&g->asid, s->asid);

	return e && opd_gclock_guest(&g->clock, s->host_ns) >= e->since ? e->prov : 0;
}

/* Is @t known to run in another address space than @asid at guest time
 * @gt (the confirmed owner of one)?  A process runs in one at a time. */
static bool runs_elsewhere(const struct opd_guest *g, const struct opd_gtask *t, uint64_t asid,
			   uint64_t gt)
{
	return t->asid && t->asid != asid && opd_gasid_owner(&g->asid, t->asid, gt) == t->pid;
}

/*
 * The pid @s votes for as its address space's owner, or 0: the one task
 * among the clock's @nc candidates (opd_gres_candidates()), whose mappings
 * hold the pc; *@clear: the clock named only it.  While the space has no
 * owner, the tasks that own another address space are set aside first
 * (so that, of two processes taking turns, the second is learned from the
 * turns' edges too once the first is known): an inferred vote.  Only
 * confirmed owners set a task aside, so a wrong provisional choice in one
 * space does not make its mirror image in the other; and not once the
 * space has an owner: a wrong owner of each of two spaces would then set
 * the right one aside in both, and no vote could correct them.  A task
 * the agent has not named is never set aside.
 */
static uint32_t voter(const struct opd_guest *g, const struct opd_guest_sample *s,
		      const uint32_t *cand, int nc, bool *clear)
{
	uint64_t gt = opd_gclock_guest(&g->clock, s->host_ns);
	bool aside = !opd_gasid_owner(&g->asid, s->asid, gt);
	const struct opd_gtask *t;
	uint32_t one = 0;

	*clear = true;
	for (int k = 0; k < nc; k++) {
		if (!cand[k] || cand[k] == one)
			continue;
		t = opd_gtasks_find(&g->tasks, cand[k]);
		if (aside && t && runs_elsewhere(g, t, s->asid, gt)) {
			*clear = false;
			continue;
		}
		if (one)
			return 0;	/* two remain */
		one = cand[k];
	}
	t = one ? opd_gtasks_find(&g->tasks, one) : NULL;
	return t && opd_gtask_find_map(t, s->pc) ? one : 0;
}

/* The space's counts, for the log: "pid:count ..." */
static void tallies(const struct opd_gasid_ent *e, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int k = 0; e && k < OPD_GASID_VOTERS && off < size; k++)
		if (e->v[k].n)
			off += (size_t)snprintf(buf + off, size - off, " %" PRIu32 ":%" PRIu32,
						e->v[k].pid, e->v[k].n);
}

/* --verbose: the vote of @s for @pid and the switches around its time. */
static void log_vote(struct opd_guest *g, const struct opd_guest_sample *s, uint32_t pid,
		     bool clear, uint64_t gt)
{
	const struct opd_gswitch *a, *b;
	long i, n;

	if (s->host_ns / 1000000000ull != g->dbg_vote_sec) {
		g->dbg_vote_sec = s->host_ns / 1000000000ull;
		g->dbg_vote_n = 0;
	}
	if (g->dbg_vote_n >= OPD_GUEST_DEBUG_VOTES_PER_S)
		return;
	g->dbg_vote_n++;
	i = opd_gtl_find(&g->tl, s->vcpu, gt);
	n = (long)opd_gtl_count(&g->tl, s->vcpu);
	a = i >= 0 ? opd_gtl_at(&g->tl, s->vcpu, i) : NULL;
	b = i + 1 < n ? opd_gtl_at(&g->tl, s->vcpu, i + 1) : NULL;
	du_debug("domain %s: vote: space %#" PRIx64 " pid %" PRIu32 " (%s) pc %#" PRIx64
		 " at %" PRIu64 " (guest %" PRIu64 ", spread %" PRIu32 " us, near %" PRIu64
		 "); switch before %+" PRId64 " ns %" PRIu32 "->%" PRIu32 ", after %+" PRId64
		 " ns %" PRIu32 "->%" PRIu32, g->name, s->asid, pid, clear ? "clear" : "inferred",
		 s->pc, s->host_ns, gt, s->spread_us, opd_gres_near(g, s),
		 a ? (int64_t)(a->t - gt) : 0, a ? a->prev : 0, a ? a->next : 0,
		 b ? (int64_t)(b->t - gt) : 0, b ? b->prev : 0, b ? b->next : 0);
}

/* @pid now owns @asid: the samples waiting for an owner are looked at
 * again, and its task knows its space. */
static void new_owner(struct opd_guest *g, uint32_t pid, uint64_t asid)
{
	struct opd_gtask *t = opd_gtasks_find(&g->tasks, pid);

	g->wait_new_owner = true;
	g->wait.scanned = 0;
	if (t)
		t->asid = asid;
}

/* @s votes for @pid as its address space's owner; what that changed is
 * logged (--verbose) with the space's counts, and a new owner noted in
 * its task. */
static void vote(struct opd_guest *g, const struct opd_guest_sample *s, uint32_t pid, bool clear)
{
	static const char *const said[] = {
		[OPD_GASID_ELECTED] = "elects", [OPD_GASID_DROPPED] = "drops its choice of",
		[OPD_GASID_OWNED] = "is owned by", [OPD_GASID_DEMOTED] = "demotes its owner",
	};
	uint64_t gt = opd_gclock_guest(&g->clock, s->host_ns);
	const struct opd_gasid_ent *e = opd_gasid_find(&g->asid, s->asid);
	uint32_t was = e ? (e->owner ? e->owner : e->prov) : 0, who;
	enum opd_gasid_change c;

	if (!e || e->last_obs != s->host_ns)	/* a look's further samples: one line */
		log_vote(g, s, pid, clear, gt);
	c = opd_gasid_vote(&g->asid, s->asid, pid, gt, s->host_ns, clear);
	char counts[96];

	if (c == OPD_GASID_SAME)
		return;
	if (c == OPD_GASID_OWNED)
		new_owner(g, pid, s->asid);
	if (!opd_guest_debug_ok(g, s))
		return;
	e = opd_gasid_find(&g->asid, s->asid);
	who = c == OPD_GASID_ELECTED ? e->prov : c == OPD_GASID_OWNED ? e->owner : was;
	tallies(e, counts, sizeof(counts));
	du_debug("domain %s: address space %#" PRIx64 " %s pid %" PRIu32 " (a %s vote for %" PRIu32
		 "; counts%s; for %u, against %u), sample at %" PRIu64 " on vcpu %d, clock offset %"
		 PRId64 " near %" PRIu64, g->name, s->asid, said[c], who,
		 clear ? "clear" : "inferred", pid, counts, e->pro, e->con, s->host_ns, s->vcpu,
		 g->clock.off, opd_gclock_near(&g->clock));
}

/*
 * The kernel collector's guest address space (opd_guest_asid.h): a sample
 * the clock gives to one process votes for its ASID's owner; a known owner
 * whose mappings hold the pc takes the sample whatever the clock says.
 */
bool opd_gvote_resolve(struct opd_guest *g, const struct opd_guest_sample *s,
			 struct opd_guest_res *r)
{
	uint32_t cand[OPD_GUEST_MAX_CAND], clock_pid = 0, owner, v, elected = 0;
	const struct opd_gtask *t;
	const struct opd_gmap *m;
	bool early = false, clear;
	int nc = 0;

	g->asid.s.seen++;
	if (opd_gclock_known(&g->clock) && opd_gtl_count(&g->tl, s->vcpu))
		nc = opd_gres_candidates(g, s, cand, &early);
	if (nc >= 1 && !early)
		clock_pid = cand[0];
	if (!s->voted && nc && !early && (v = voter(g, s, cand, nc, &clear))) {
		/* only where the agent's stream has passed the sample: beyond
		 * it, the last switch known is not what ran */
		if (opd_ghold_ready(g, s))
			vote(g, s, v, clear);
		else
			g->asid.s.votes_ahead++;
	}
	owner = opd_gvote_owner(g, s);
	/* a sample whose owner wait ran out: the elected pid, not yet
	 * confirmed, knows more than the clock (votes at 3:1 against its
	 * guess at one moment) */
	if (!owner && s->expired)
		owner = elected = opd_gvote_elected(g, s);
	if (!owner)
		return false;
	t = opd_gtasks_find(&g->tasks, owner);
	m = t ? opd_gtask_find_map(t, s->pc) : NULL;
	if (!m) {
		g->asid.s.no_mapping++;
		opd_gasid_doubt(&g->asid, s->asid);
		return false;
	}
	opd_gres_place_user(g, s, r, t, m);
	g->asid.s.filed++;
	g->asid.s.filed_elected += elected != 0;
	g->asid.s.overrode_clock += clock_pid && clock_pid != owner;
	return true;
}

/*
 * A sample that came with a witness (DP_RAW_GUEST_TASK: the guest's
 * memory named its space's process at its look): the space's owner from
 * its time on (opd_gasid_witness); the samples waiting for an owner are
 * looked at again.
 */
void opd_gvote_witness(struct opd_guest *g, const struct opd_guest_sample *s)
{
	uint64_t gt;

	if (!s->witness || !s->asid || s->mode != DP_MODE_GUEST_USER)
		return;
	gt = opd_gclock_known(&g->clock) ? opd_gclock_guest(&g->clock, s->host_ns) : 0;
	if (opd_gasid_witness(&g->asid, s->asid, s->witness, gt) != OPD_GASID_OWNED)
		return;
	new_owner(g, s->witness, s->asid);
	if (opd_guest_debug_ok(g, s))
		du_debug("domain %s: address space %#" PRIx64 " is pid %" PRIu32
			 " (seen in the guest's memory), sample at %" PRIu64 " on vcpu %d",
			 g->name, s->asid, s->witness, s->host_ns, s->vcpu);
}

/* @q votes now, as opd_gvote_resolve would, and is marked voted. */
void opd_gvote_now(struct opd_guest *g, struct opd_guest_sample *q)
{
	uint32_t cand[OPD_GUEST_MAX_CAND], v;
	bool early = false, clear;
	int nc;

	q->voted = true;
	if (!opd_gclock_known(&g->clock) || !opd_gtl_count(&g->tl, q->vcpu))
		return;
	nc = opd_gres_candidates(g, q, cand, &early);
	if (!early && (v = voter(g, q, cand, nc, &clear)))
		vote(g, q, v, clear);
}
