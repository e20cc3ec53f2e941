/*
 * Agent channels (doc/architecture.md, "The guest agent and its protocol";
 * doc/trust.md): for every domain with an agent socket (QEMU is the
 * server, the daemon a client), a non-blocking connection polled in the
 * collector's loop, feeding that domain's guest state (opd_guest.h).  The
 * daemon says HOST_HELLO and CONFIG after each HELLO, PINGs every
 * OPD_AGENT_PING_NS for the clock, reconnects when the socket closes (QEMU
 * or the agent restarted), and closes a channel whose bytes are not the
 * protocol (counted agent_closed_bad; retried after a back-off).  One
 * domain's channel costs the others nothing.
 *
 * Guest state is kept per domain (name and QEMU pid) while the domain is
 * in the registry (running, or in its grace period after it stopped);
 * once it has left, its held samples are filed (opd_gpipe_drain)
 * and its state freed (opd_agents_reap), its last statistics written.
 */
#ifndef OPD_AGENT_H
#define OPD_AGENT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "opd_conf.h"
#include "opd_domain.h"
#include "opd_guest.h"
#include "opd_image.h"
#include "opd_imgcache.h"
#include "opd_kvmtsc_trace.h"
#include "opd_stats.h"

#define OPD_AGENT_PING_NS (250ULL * 1000 * 1000)

struct opd_agents;

/* Over @session_dir (SESSION/images, SESSION/domains).  @lim NULL: the
 * defaults.  Borrowed: images, st.  NULL with errno set. */
struct opd_agents *opd_agents_new(const char *session_dir, const struct opd_guest_limits *lim,
				  struct opd_images *images, struct opd_stats *st);
void opd_agents_free(struct opd_agents *a);	/* NULL accepted; no filing */

/*
 * The guest state of @dom, created on first use with a channel to
 * @dom->agent_path; NULL when the domain has no agent socket (or no
 * memory).
 */
struct opd_guest *opd_agents_guest(struct opd_agents *a, const struct opd_dom *dom);

/*
 * Bring channels in line with the domain registry: a channel per running
 * domain with an agent path; channels of domains no longer running are
 * closed (their state is kept); domains no longer in the registry are
 * marked gone (see opd_agents_next, opd_agents_reap).
 */
void opd_agents_sync(struct opd_agents *a, struct opd_domains *ds);

/* Fill up to @max pollfds for the open channels; returns how many. */
size_t opd_agents_pollfds(struct opd_agents *a, struct pollfd *pfd, size_t max);

/*
 * Do the I/O the poll results @pfd[0..@n) allow (and connects, pings and
 * writes that are due at host time @now_ns).  @pfd may be NULL (n = 0):
 * then every channel is tried.
 */
void opd_agents_io(struct opd_agents *a, const struct pollfd *pfd, size_t n, uint64_t now_ns);

/* The guest states, one by one: *@cursor NULL starts; NULL at the end.
 * *@gone (may be NULL): its domain left the registry, so no more sideband
 * will come; file all it holds.  No channel may be added or reaped during
 * the walk. */
struct opd_guest *opd_agents_next(struct opd_agents *a, void **cursor, bool *gone);

/* Free the state of gone domains that hold no sample, writing their last
 * statistics first.  Returns how many were freed. */
size_t opd_agents_reap(struct opd_agents *a);

/*
 * Connect agent sockets through @fn instead of directly (the privsep
 * worker asks its monitor): @fn returns 0 with *@fd a connected socket,
 * -EPERM when the listener is not the domain's process (counted
 * privsep_agent_refused), or another -errno (retried).
 */
typedef int (*opd_agent_connect_fn)(void *ctx, pid_t pid, const char *path, int *fd);
void opd_agents_set_connector(struct opd_agents *a, opd_agent_connect_fn fn, void *ctx);

/* Open KVM's TSC offset tracepoint through @fn (opd_kvmtsc_trace.h)
 * instead of directly: the privsep worker asks its monitor. */
void opd_agents_set_tsc_opener(struct opd_agents *a, opd_kvmtsc_open_fn fn, void *ctx);

/* Hand each domain's TASK_LAYOUT to @fn (the collector's task_layout),
 * the domain by its key: its backend id (a Xen domid) where it has one,
 * else its host pid (DP_DOMKEY_HOST_PID). */
typedef void (*opd_agent_layout_fn)(void *ctx, uint32_t key_ns, uint64_t key,
				    const struct dp_ag_task_layout *l);
void opd_agents_set_layout_sink(struct opd_agents *a, opd_agent_layout_fn fn, void *ctx);

/* Measure the CPU the frames take (the budgets of opd_guest_limits) by
 * @fn instead of this thread's CPU clock: a test's clock makes each read
 * cost what it says. */
typedef uint64_t (*opd_agent_cpu_clock_fn)(void *ctx);
void opd_agents_set_cpu_clock(struct opd_agents *a, opd_agent_cpu_clock_fn fn, void *ctx);

/* True when the listener of the connected unix socket @fd is process
 * @pid (SO_PEERCRED), or a thread of it, or with @root_ok any process of
 * root's (a backend's daemon that hands the socket to the domain). */
bool opd_agent_peer_ok(int fd, pid_t pid, bool root_ok);

/* Write every domain's SESSION/domains/<esc>/stats (opd_guest_write_stats);
 * failures are logged. */
void opd_agents_write_stats(struct opd_agents *a);

#endif
