/*
 * One guest domain's state, shared by the files of the guest pipeline
 * (opd_guest.h is its interface; nothing else includes this file):
 *   opd_guest.c          life, limits, facts and the domain's stats file
 *   opd_guest_frames.c   the agent's frames: decoding, what each one does
 *   opd_guest_resolve.c  which task, image and offset a guest sample is
 *   opd_guest_asid.c     address spaces: the table, and the votes that
 *                        bind one to a process and file samples by it
 *   opd_guest_hold.c     samples held until the sideband explains them,
 *                        and those waiting for their space's owner
 * and the parts of their own (clock, timeline, tasks, images, kernel, out).
 */
#ifndef OPD_GUEST_INT_H
#define OPD_GUEST_INT_H

#include "agent/agent.h"
#include "opd_guest.h"

/* Exited guest processes are kept this long (guest time) for held samples. */
#define LINGER_NS	(3ULL * OPD_GUEST_HOLD_NS)

/* The parts (each its own file) and what ties them: the agent protocol's
 * input, and the resolution of held samples against all of them. */
struct opd_guest {
	char *name, *dir;
	struct opd_guest_limits lim;
	struct opd_stats *st;
	/* the domain identity's memory account (opd_guest_new_in), shared by
	 * the states of one UUID (a VM and its restart), else own_budget */
	struct opd_gbudget *budget, own_budget;

	/* the agent's TASK_LAYOUT, not yet taken (opd_guest_take_layout) */
	struct dp_ag_task_layout layout;
	bool layout_new;

	/* input */
	uint8_t *in;
	size_t in_len;
	bool synced;		/* a HELLO was found on this connection */
	uint64_t fed;		/* bytes decoded on this connection, skipped ones too */
	uint64_t rx;		/* bytes received on this connection */
	uint64_t hello_at;	/* where its HELLO began (rx counts) */
	uint64_t acked;		/* rx - hello_at last said in a HOST_ACK */
	bool ack_due;		/* a HELLO was found: say HOST_ACK at once */
	uint64_t joins;		/* the last connection's HOST_JOIN token */
	bool has_agent;
	uint64_t instance;
	uint32_t flags;
	uint32_t nr_cpus;
	uint32_t agent_version;			/* from HELLO */
	char release[DP_AG_MAX_RELEASE + 1];	/* guest uname -r, from HELLO */
	uint64_t host_now;
	/* --verbose lines about address spaces, at most OPD_GUEST_DEBUG_PER_S
	 * in a second of samples (a guest can make many) */
	uint64_t dbg_sec;
	uint32_t dbg_n, dbg_dropped;
	/* and the votes shown, OPD_GUEST_DEBUG_VOTES_PER_S of them a second */
	uint64_t dbg_vote_sec;
	uint32_t dbg_vote_n;
	uint64_t seen_ns;	/* latest guest time in the stream */
	struct ap_stats ast;

	struct opd_gout out;
	struct opd_gclock clock;
	struct opd_gtimeline tl;
	struct opd_gtasks tasks;
	struct opd_gimgs imgs;
	struct opd_gkernel kern;
	struct opd_ghold hold;
	/* samples waiting for their address space's owner, beside the hold
	 * so that they hold up no other sample; wait_new_owner: a space got
	 * an owner since the last look through them */
	struct opd_ghold wait;
	bool wait_new_owner;
	size_t wait_filed;	/* filed out of turn, still in g->wait */
	struct opd_gasid asid;

	struct opd_guest_dstats ds;
	struct opd_image *domain;	/* the domain's name, as in sample files */
	struct opd_image *anon_kernel, *anon_user, *vdso;
	/* what sole_owner() may still look at, refilled over host time */
	uint64_t owner_tokens, owner_t;
	bool owner_started;
};

/* At most this many tasks may have run one sample (candidates). */
#define OPD_GUEST_MAX_CAND 16
/* --verbose lines about address spaces a second of sample time */
#ifndef OPD_GUEST_DEBUG_PER_S
#define OPD_GUEST_DEBUG_PER_S 20
#endif
/* --verbose votes shown a second of sample time (a diagnosis may build
 * with more: -DOPD_GUEST_DEBUG_VOTES_PER_S=N) */
#ifndef OPD_GUEST_DEBUG_VOTES_PER_S
#define OPD_GUEST_DEBUG_VOTES_PER_S 5
#endif

/* opd_guest_resolve.c */
/* The sample ran in task @t, in its mapping @m: fills @r. */
void opd_gres_place_user(struct opd_guest *g, const struct opd_guest_sample *s,
			 struct opd_guest_res *r, const struct opd_gtask *t,
			 const struct opd_gmap *m);
/* How far from a switch @s may have run (clock and sample uncertainty). */
uint64_t opd_gres_near(const struct opd_guest *g, const struct opd_guest_sample *s);
/* The tasks that may have run @s, most likely first (at most
 * OPD_GUEST_MAX_CAND); *@early: @s is clearly before its vCPU's timeline. */
int opd_gres_candidates(struct opd_guest *g, const struct opd_guest_sample *s,
			uint32_t cand[OPD_GUEST_MAX_CAND], bool *early);
/* May a --verbose line about sample @s be written (rate limit)? */
bool opd_guest_debug_ok(struct opd_guest *g, const struct opd_guest_sample *s);

/* opd_guest_asid.c: the votes */
/* The owner of @s's address space at its time, 0: none. */
uint32_t opd_gvote_owner(const struct opd_guest *g, const struct opd_guest_sample *s);
/* The pid elected (not yet owner) in @s's address space, 0 none. */
uint32_t opd_gvote_elected(const struct opd_guest *g, const struct opd_guest_sample *s);
/* File @s by its space's owner (voting first); false: the clock decides. */
bool opd_gvote_resolve(struct opd_guest *g, const struct opd_guest_sample *s,
		       struct opd_guest_res *r);
/* @q votes now, as opd_gvote_resolve would, and is marked voted. */
void opd_gvote_now(struct opd_guest *g, struct opd_guest_sample *q);
/* @s came with a witness of its space's process: taken (opd_gasid_witness). */
void opd_gvote_witness(struct opd_guest *g, const struct opd_guest_sample *s);

/* opd_guest_hold.c */
/* Has the sideband passed @s's time? */
bool opd_ghold_ready(const struct opd_guest *g, const struct opd_guest_sample *s);

#endif
