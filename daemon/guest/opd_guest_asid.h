/*
 * One domain's guest address spaces, as the kernel collector sees them
 * (DP_RAW_ASID: the guest's CR3, masked; doc/raw-stream.md).
 *
 * With an agent: which guest process owns an address space is learned
 * from the samples the clock gives to one process (opd_guest.c: far from
 * any switch, or near one where the other candidates run in spaces with
 * confirmed owners, and the pc in that process's mappings): each
 * observation is a vote "ASID A ran pid P", clear (one candidate) or
 * inferred (through another space's owner).  A pid with enough votes and
 * three times the runner-up's is elected provisionally; it owns the space
 * (files its samples, and sets itself aside in other spaces) only once
 * OPD_GASID_CONFIRM_VOTES more votes agreed with it, two to one.  An
 * owner that most of the last OPD_GASID_WINDOW votes contradict is demoted
 * at once (asid_demoted), and the space is learned again.  The counts
 * follow the recent votes (a vote for one pid is one less for the others,
 * and a count stops at OPD_GASID_VOTE_CAP); a sample of the space in code
 * its owner does not map takes a vote from the owner's count
 * (opd_gasid_doubt), which weighs in the space's next election.
 * A clock that is wrong near switches only adds a minority of wrong
 * votes; a pid that exits or
 * execs loses its spaces from that time on (its CR3 is freed and may be
 * reused: a few past owners are kept for the samples from before), and
 * the votes of samples older than that are refused.
 *
 * Without an agent: each address space gets a number N, in the order they
 * are first seen, and its user samples go to the domain's
 * {anon:guest-user:asN} instead of the one {anon:guest-user} bucket
 * (doc/sample-files.md).
 *
 * Bounded: a set-associative table (OPD_GASID_SETS x OPD_GASID_WAYS,
 * allocated on the first ASID seen), the least recently used way of a set
 * evicted for a new space (asid_evicted); at most limits' max_spaces
 * numbered buckets per domain, later spaces share {anon:guest-user}
 * (asid_spaces_capped).  A guest cannot make the table grow.
 */
#ifndef OPD_GUEST_ASID_H
#define OPD_GUEST_ASID_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "opd_image.h"

#define OPD_GASID_SETS		256
#define OPD_GASID_WAYS		4
#define OPD_GASID_VOTERS	4
/* Votes a pid needs before it is elected (provisionally), with three
 * times the runner-up's. */
#define OPD_GASID_MIN_VOTES	8
/* Votes that must agree with a provisional owner (two to one) before it
 * owns the space; as many against drop it. */
#define OPD_GASID_CONFIRM_VOTES	8
/* An owner is demoted when OPD_GASID_DEMOTE of the last OPD_GASID_WINDOW
 * votes in its space name another pid. */
#define OPD_GASID_WINDOW	16
/* Votes after an election by which it must be confirmed, else dropped. */
#define OPD_GASID_DECIDE_VOTES	64
#define OPD_GASID_DEMOTE	12
/* Most a pid's count holds: about the contrary votes that unseat an owner. */
#define OPD_GASID_VOTE_CAP	64
/* Past owners kept per space (opd_gasid_owner at an older time). */
#define OPD_GASID_PAST		3
/* Numbered buckets per domain (no agent). */
#define OPD_GASID_MAX_SPACES	256

struct opd_gasid_vote {
	uint32_t pid, n;
};

struct opd_gasid_ent {
	uint64_t asid;		/* 0: free */
	uint64_t used;		/* LRU tick */
	uint64_t since;		/* guest time: older votes are refused */
	/* who owned it before @since, newest first: past[i].pid from
	 * past[i + 1].until (the last: from past_from) to past[i].until; 0
	 * nobody known.  Held samples are up to the hold older than the
	 * agent's word of an exit, and a freed CR3 is soon reused. */
	struct { uint32_t pid; uint64_t until; } past[OPD_GASID_PAST];
	uint64_t past_from;
	uint32_t npast;
	uint64_t last_obs;	/* the last vote's observation (host time) */
	uint32_t owner;		/* confirmed pid, 0 none */
	uint32_t prov;		/* provisional pid (no owner yet), 0 none */
	uint32_t last;		/* the last owner demoted, for asid_reversed */
	uint16_t pro, con;	/* votes for and against @prov since its election */
	uint16_t win;		/* the owner's last 16 votes, a bit each: 1 against */
	uint64_t wit_gt;	/* guest time the owner was last witnessed, 0 never */
	uint32_t space;		/* N of {anon:guest-user:asN}, 0 none yet */
	struct opd_image *img;	/* that bucket's image, once asked for */
	struct opd_gasid_vote v[OPD_GASID_VOTERS];
};

/* Per-domain counters, written to the domain's stats as asid_*. */
struct opd_gasid_stats {
	uint64_t seen;		/* guest-user samples that carried an ASID */
	uint64_t votes;		/* clock-placed samples that voted */
	uint64_t votes_clear;	/* ... the clock naming one candidate */
	uint64_t votes_inferred;	/* ... one left once those running elsewhere were set aside */
	uint64_t votes_stale;	/* refused: older than the owner's exit/exec */
	uint64_t votes_same_obs;	/* not counted: one observation's further samples */
	uint64_t votes_ahead;	/* not cast: the agent's stream had not reached the sample */
	uint64_t provisional;	/* a pid elected, not yet owner */
	uint64_t unconfirmed;	/* ... dropped: the votes after did not agree */
	uint64_t learned;	/* an owner confirmed */
	uint64_t reversed;	/* ... another pid than the one demoted before */
	uint64_t demoted;	/* owners most of the last votes contradicted */
	uint64_t doubted;	/* samples of an owned space its owner does not map */
	uint64_t filed;		/* samples filed by their ASID's owner */
	uint64_t overrode_clock;	/* ... where the clock named another pid */
	uint64_t no_mapping;	/* owner known but the pc is not in its mappings */
	uint64_t forgotten;	/* spaces whose owner exited or exec'd */
	uint64_t evicted;	/* spaces pushed out of a full set */
	uint64_t spaces;	/* numbered buckets made (no agent) */
	uint64_t spaces_capped;	/* samples of spaces past max_spaces */
	uint64_t waited;	/* held until their space's owner was learned */
	uint64_t wait_expired;	/* ... and placed without an owner after all */
	uint64_t filed_elected;	/* ... of these, by the space's elected pid, not the clock */
	uint64_t wait_full;	/* placed by the clock: too many waited */
	/* witnesses: the guest's memory named the space's process at a look
	 * (DP_RAW_GUEST_TASK) */
	uint64_t witnessed;	/* witnesses taken */
	uint64_t wit_owned;	/* ... that gave a space with no owner its owner */
	uint64_t wit_overruled;	/* ... that replaced an owner of another pid */
	uint64_t wit_stale;	/* refused: older than the space's last end */
	uint64_t votes_vs_witness;	/* votes against a witnessed owner (the clock wrong) */
};

struct opd_gasid {
	struct opd_gasid_ent *e;	/* SETS * WAYS, NULL until the first */
	uint64_t tick;
	uint32_t next_space, max_spaces;
	struct opd_images *images;	/* borrowed, for the bucket images */
	struct opd_gasid_stats s;
};

void opd_gasid_init(struct opd_gasid *a, uint32_t max_spaces, struct opd_images *images);
void opd_gasid_fini(struct opd_gasid *a);

/* What a vote changed (opd_gasid_vote). */
enum opd_gasid_change {
	OPD_GASID_SAME,		/* nothing */
	OPD_GASID_ELECTED,	/* a pid elected provisionally */
	OPD_GASID_DROPPED,	/* the provisional pid dropped */
	OPD_GASID_OWNED,	/* the provisional pid confirmed: the owner */
	OPD_GASID_DEMOTED,	/* the owner demoted: no owner now */
};

/* "ASID @asid ran pid @pid at guest time @gt" (a sample the clock gave
 * to @pid; @clear: the clock named only it, false: it was left once the
 * other candidates were set aside), seen by the collector at host time
 * @obs.  The samples of one observation (the xen collector's look
 * weighted by the vCPU time since the last: N samples with one time)
 * vote once, so that the votes count what was seen, not how long it
 * stood for. */
enum opd_gasid_change opd_gasid_vote(struct opd_gasid *a, uint64_t asid, uint32_t pid,
				     uint64_t gt, uint64_t obs, bool clear);

/*
 * "The guest's own memory showed pid @pid running in ASID @asid at guest
 * time @gt" (the xen collector's look, its vCPU paused: a fact, not a
 * vote).  @pid owns the space from then on, whatever the votes said, and
 * votes do not demote it (those against it are counted); another owner
 * before it ends at @gt.  Refused when older than the space's last end
 * (an exit or exec the agent reported).  OPD_GASID_OWNED when the owner
 * changed.
 */
enum opd_gasid_change opd_gasid_witness(struct opd_gasid *a, uint64_t asid, uint32_t pid,
					uint64_t gt);

/* @asid's entry, for the log's tallies; NULL if not known. */
const struct opd_gasid_ent *opd_gasid_find(const struct opd_gasid *a, uint64_t asid);

/* A sample of @asid's space fell in code its owner does not map: one
 * vote less for the owner (nothing when the space has none). */
void opd_gasid_doubt(struct opd_gasid *a, uint64_t asid);

/* The owner of @asid at guest time @gt (0: none, or @asid 0): before the
 * last owner's exit or exec, that owner.  Counts nothing. */
uint32_t opd_gasid_owner(const struct opd_gasid *a, uint64_t asid, uint64_t gt);

/* Guest pid @pid exited or (@exec) exec'd at guest time @gt.  A space it
 * owned (after an exec, unless witnessed after @gt: its new space, the
 * agent's word coming late) has no owner from @gt on (samples from before are still its own: held
 * samples come after the agent's word), and votes from before @gt are
 * refused; a space without an owner where it voted starts over the same
 * way; in a space another pid owns, only its votes go. */
void opd_gasid_forget(struct opd_gasid *a, uint32_t pid, uint64_t gt, bool exec);

/* The {anon:guest-user:asN} image of @asid's space (numbered on first
 * use), or NULL: @asid 0, past max_spaces (counted), out of memory. */
struct opd_image *opd_gasid_bucket(struct opd_gasid *a, uint64_t asid);

/* asid_* lines for the domain's stats file. */
void opd_gasid_write_stats(const struct opd_gasid *a, FILE *f);

/*
 * The tables of the domains whose guest-user samples are split here with
 * no agent (opd_trans: replay, or a domain with no channel), found by the
 * domain's name image through a hash.  At most OPD_GASID_MAX_DOMS of
 * them, later domains share {anon:guest-user}: a table is
 * OPD_GASID_SETS x OPD_GASID_WAYS entries of 144 bytes (144 KiB, of which
 * only the pages of the sets its spaces fall in are touched), so the cap
 * bounds the whole at 576 MiB, reached only if every domain shows a
 * thousand spaces.
 */
#define OPD_GASID_MAX_DOMS	4096
struct opd_gasid_doms;

/* @images borrowed (for the buckets).  NULL with errno set. */
struct opd_gasid_doms *opd_gasid_doms_new(struct opd_images *images);
void opd_gasid_doms_free(struct opd_gasid_doms *m);	/* NULL accepted */
/* The table of @domain, made on first use; NULL past the cap or out of
 * memory. */
struct opd_gasid *opd_gasid_doms_get(struct opd_gasid_doms *m, const struct opd_image *domain);

#endif
