/*
 * One domain's guest state, built from its agent's frames
 * (doc/architecture.md, "A guest sample"; doc/agent-protocol.md;
 * doc/trust.md): guest tasks with their executable mappings, a bounded
 * per-vCPU timeline of context switches, the guest-to-host clock offset,
 * guest kernel and module ranges, and the guest images the host asked for.
 * Kallsyms and modules text go to SESSION/domains/<esc>/{kallsyms,modules}
 * for opreport.
 *
 * Everything a guest says is hostile: every count is capped before it
 * costs memory (tasks, mappings, bytes), each cap hit is counted, paths go
 * through ap_sanitize_path() and are only ever used in names through
 * lib/sfname's escaping, and nothing is written outside the session.
 *
 * Guest samples are held (opd_guest_defer) until the agent's stream has
 * passed their time, at most OPD_GUEST_HOLD_NS, then resolved against what
 * is known and handed back to the caller to file (opd_guest_next).  No
 * sample is dropped: overflow resolves the oldest at once.
 *
 * Not thread-safe; one guest per domain, used by the daemon's thread.
 */
#ifndef OPD_GUEST_H
#define OPD_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd_guest_asid.h"
#include "opd_guest_clock.h"
#include "opd_guest_hold.h"
#include "opd_guest_images.h"
#include "opd_guest_kernel.h"
#include "opd_guest_out.h"
#include "opd_guest_tasks.h"
#include "opd_guest_timeline.h"
#include "opd_image.h"
#include "opd_imgcache.h"
#include "opd_stats.h"

#define OPD_GUEST_HOLD_NS (2000ULL * 1000 * 1000)
/* How long past its own time a held guest-user sample whose address space
 * has no owner yet waits for one (doc/guest-asid.md): on Xen, where a
 * look's time is known to a millisecond, two processes switching every
 * few ms on one vCPU gave few clear votes, and a space was learned about
 * 3 s after its process started; with 2 s the clock placed the samples
 * before that, 7.5% of a late pair wrongly (xen-all, 2026-11-29). */
#define OPD_GUEST_OWNER_WAIT_NS (6000ULL * 1000 * 1000)
/* The hold while no agent has said HELLO: no sideband is coming that could
 * explain a sample, so waiting longer only delays it (a domain with a
 * channel but no agent, just turned on, showed its first samples 2 s
 * late).  Long enough for an agent that answers as soon as the daemon
 * opens its channel to be heard first. */
#define OPD_GUEST_HOLD_NOAGENT_NS (250ULL * 1000 * 1000)
/* Longest guest path used in a sample file name (after sanitizing); a
 * longer one makes its mapping anonymous (guest_paths_rejected). */
#define OPD_GUEST_PATH_MAX 1024

struct opd_guest_limits {
	size_t max_tasks;	/* guest processes known at once */
	size_t max_maps;	/* executable mappings, all tasks */
	size_t max_bytes;	/* memory of the state (paths, tables) */
	size_t max_table_bytes;	/* kallsyms + modules text written */
	size_t max_image_bytes;	/* image bytes received */
	size_t max_images;	/* distinct guest images filed */
	unsigned int max_cpus;	/* vCPUs with a timeline */
	unsigned int ring;	/* switches kept per vCPU */
	size_t queue;		/* samples held */
	uint64_t owner_visits;	/* tasks a second looked at for samples with
				 * no timeline (sole owner of the pc) */
	uint64_t cpu_ns;	/* daemon CPU a second for the domain's frames:
				 * past it, its channel waits for the next
				 * second (guest_budget_deferred; opd_agent) */
	uint64_t total_cpu_ns;	/* the same for all domains together, in fair
				 * shares (guest_budget_share_deferred) */
};

/* Defaults for a live daemon. */
void opd_guest_limits_default(struct opd_guest_limits *l);

/* What a guest sample resolved to. */
struct opd_guest_res {
	bool resolved;		/* false: the {anon:guest-*} bucket, key = pc */
	uint8_t mode;		/* guest mode as resolved (the pc's half wins) */
	struct opd_image *image;	/* main binary (user) or the kernel image */
	struct opd_image *dep;		/* the binary the pc is in */
	uint64_t key;
	uint32_t pid, tid;	/* guest task (user samples), 0 unknown */
	uint64_t *counter;	/* stats counter to bump for this sample */
};

struct opd_guest;

/*
 * State for domain @name (raw name, for messages), whose metadata
 * directory is @dir (SESSION/domains/<esc>, created if missing).  The
 * images, cache and stats are borrowed.  NULL with errno set.
 */
struct opd_guest *opd_guest_new(const char *name, const char *dir,
				const struct opd_guest_limits *lim, struct opd_images *images,
				struct opd_imgcache *cache, struct opd_stats *st);
/* The same, its memory taken from @budget (borrowed; NULL: its own of
 * lim->max_bytes): one account for every state of a domain identity,
 * so that a VM restarted while its old state drains does not get the
 * cap twice. */
struct opd_guest *opd_guest_new_in(const char *name, const char *dir,
				   const struct opd_guest_limits *lim, struct opd_images *images,
				   struct opd_imgcache *cache, struct opd_stats *st,
				   struct opd_gbudget *budget);
void opd_guest_free(struct opd_guest *g);	/* NULL accepted */

/*
 * Agent bytes read from the channel at host time @host_ns.  Complete
 * frames are applied, the rest kept for the next call (the guest holds
 * one frame's worth at most).  Returns 0, or -EBADMSG when the stream is
 * not this protocol (the caller closes the channel; counted), or -errno.
 */
int opd_guest_feed(struct opd_guest *g, const void *buf, size_t len, uint64_t host_ns);

/* A new connection: forget partial input and queued output, queue a
 * HOST_JOIN (the agent on a channel without hang-up, a Xen PV console,
 * starts over on it), wait for a HELLO. */
void opd_guest_reset_input(struct opd_guest *g);

/* No HELLO yet on this connection: queue its HOST_JOIN again, the same
 * token (the daemon does so each second).  A partial frame the previous
 * connection left in a tty's buffer can swallow one JOIN; the agent takes
 * a JOIN with the token it already started over for as a repeat. */
void opd_guest_rejoin(struct opd_guest *g);

/* HOST_ACK (doc/agent-protocol.md): the bytes of this connection taken
 * off the channel since the HELLO, when a HELLO was just found, when
 * OPD_GUEST_ACK_EVERY more came since the last one, or with @force (each
 * PING does).  An agent on a lossy channel (a Xen PV console) keeps its
 * bulk within a window of bytes not yet acknowledged. */
#define OPD_GUEST_ACK_EVERY (32u << 10)
void opd_guest_ack(struct opd_guest *g, bool force);

/* Frames for the agent (HOST_HELLO, CONFIG, PING, IMAGE_REQUEST) are
 * queued in the guest; take up to @size bytes of them (whole frames).
 * Returns the bytes copied into @buf. */
size_t opd_guest_output(struct opd_guest *g, void *buf, size_t size);
/* Queue a PING sent at host time @host_ns. */
void opd_guest_ping(struct opd_guest *g, uint64_t host_ns);

/* Resolve a sample against what is known now (no holding). */
void opd_guest_resolve(struct opd_guest *g, const struct opd_guest_sample *s,
		       struct opd_guest_res *r);

/*
 * Hold @s until the sideband passes its time.  True when a sample must be
 * filed now: the oldest held one when the queue was full (counted
 * guest_queue_overflow), or @s itself with no queue (limits.queue 0); it
 * is then resolved into *@out and *@r (its counter already bumped).
 */
bool opd_guest_defer(struct opd_guest *g, const struct opd_guest_sample *s,
		     struct opd_guest_sample *out, struct opd_guest_res *r);

/*
 * The oldest held sample whose time the agent's stream has passed, or
 * that is older than OPD_GUEST_HOLD_NS (OPD_GUEST_HOLD_NOAGENT_NS while
 * no agent has said HELLO) at host time @host_ns (@all: any
 * held sample), resolved into *@out and *@r (counter bumped) and no
 * longer held.  False when there is none.
 */
bool opd_guest_next(struct opd_guest *g, uint64_t host_ns, bool all,
		    struct opd_guest_sample *out, struct opd_guest_res *r);

/* What one domain's guest samples and agent came to (its
 * SESSION/domains/<esc>/stats; the daemon-wide counters are in
 * opd_stats). */
struct opd_guest_dstats {
	uint64_t received;	/* guest samples held for this domain */
	uint64_t resolved;	/* filed to a guest binary or kernel image */
	uint64_t anon;		/* filed {anon:guest-*} */
	/* of these, guest-user ones (after the address check): to a binary
	 * or its [vdso], or {anon:guest-user} */
	uint64_t user_resolved, user_unresolved;
	uint64_t queue_overflow;	/* resolved early: the queue was full */
	uint64_t lost_records;	/* the agent's own losses (LOST frames) */
	uint64_t agent_closed_bad;	/* channel closed: not the protocol */
	uint64_t budget_deferred;	/* seconds its channel was left unread,
					 * its CPU budget spent */
};

/* The domain's channel spent its CPU budget and waits (counted). */
void opd_guest_note_deferred(struct opd_guest *g);

const struct opd_guest_dstats *opd_guest_dstats(const struct opd_guest *g);

/*
 * Write the domain's statistics to DIR/stats (DIR as given to
 * opd_guest_new; "key value" lines as SESSION/stats): agent_connected
 * (@connected: its channel is open now), agent_seen, clock_method
 * (none|hello|ping|tsc), clock_offset_ns, clock_uncertainty_ns (how near a
 * switch a sample is ambiguous), clock_pingpong_rtt_ns/_offset_ns,
 * clock_tsc_offset_changes, clock_tsc_fallbacks, clock_why (why not
 * exact, when it is not), the samples and losses of opd_guest_dstats
 * (samples_user_resolved and samples_user_unresolved for the guest-user
 * ones), budget_deferred, samples_held, tasks, mappings, bytes.
 * 0 or -errno.
 */
int opd_guest_write_stats(const struct opd_guest *g, bool connected);

/* The domain's name image (SFN_ANON @name), the {domain} of its samples. */
struct opd_image *opd_guest_domain(const struct opd_guest *g);

/* True once a HELLO arrived on some connection (the domain has an agent). */
bool opd_guest_has_agent(const struct opd_guest *g);

/* What the last HELLO said: the agent's version (major<<16|minor<<8|patch)
 * and the guest kernel release (guest text, NUL-terminated, at most
 * DP_AG_MAX_RELEASE bytes, valid until the next feed).  False before any
 * HELLO. */
bool opd_guest_facts(const struct opd_guest *g, uint32_t *agent_version, const char **release);
/* The TASK_LAYOUT the agent sent since the last call, into @l (guest
 * numbers, unchecked); false when none came. */
bool opd_guest_take_layout(struct opd_guest *g, struct dp_ag_task_layout *l);
/* Estimated guest clock minus host clock, ns; false if none yet. */
bool opd_guest_offset(const struct opd_guest *g, int64_t *offset, uint64_t *rtt);
/* The domain's clock, for the TSC path (opd_agent; doc/clock.md). */
struct opd_gclock *opd_guest_gclock(struct opd_guest *g);
size_t opd_guest_nr_tasks(const struct opd_guest *g);
size_t opd_guest_nr_maps(const struct opd_guest *g);
size_t opd_guest_bytes(const struct opd_guest *g);
size_t opd_guest_held(const struct opd_guest *g);

#endif
