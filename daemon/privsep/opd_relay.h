/*
 * A collector the privsep monitor runs for the worker (OPD_CAP_MONITOR):
 * one whose every read needs root.  The xen collector is one: each look
 * is a hypercall through a privcmd fd, and that fd can also map, pause or
 * destroy any domain, so the worker, which parses guest bytes, must never
 * hold it.
 *
 * The monitor opens the collector (as root, after the split) with a sink
 * that sends the bytes down a pipe, and polls its fds beside its own; the
 * worker's collector is the relay, which reads the pipe into the daemon's
 * sink.  The worker's start() and stop() travel as COLLECT requests on the
 * privsep channel (opd_privsep.h), so the collector starts when the
 * worker's loop does and, at stop, delivers what it holds before the
 * monitor closes the pipe: the worker reads to the end of the stream,
 * then takes the answer.
 *
 * The pipe is written without blocking: what does not fit waits in the
 * monitor (up to OPD_RELAY_MAX_PENDING bytes), so a slow worker never
 * blocks the monitor while it waits for an answer.  Past that the monitor
 * stops the collector and ends the stream, and the worker stops with an
 * error: a stream with a hole in it would file samples under the wrong
 * domain.
 */
#ifndef OPD_RELAY_H
#define OPD_RELAY_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#include "events/ev.h"
#include "opd_collector.h"
#include "opd_conf.h"

#define OPD_RELAY_MAX_PENDING (16u << 20)
/* How long the worker's stop waits for the rest of the stream. */
#define OPD_RELAY_STOP_MS 20000

/* ---- monitor side -------------------------------------------------------- */

struct opd_relay_mon;

/* Open @ops (its open(), as root) to write its stream into @wfd, the
 * pipe's write end (made non-blocking; the relay owns it).  NULL on
 * failure, logged; the worker's start then fails. */
struct opd_relay_mon *opd_relay_mon_open(const struct opd_collector_ops *ops,
					 const struct opd_conf *conf,
					 const struct ev_table *events, int wfd);
/* The fds to poll: the collector's, and the pipe while bytes wait. */
size_t opd_relay_mon_pollfds(struct opd_relay_mon *r, struct pollfd *pfd, size_t max);
/* After poll: read the collector, write what waits.  0 or -errno (the
 * stream was ended, logged). */
int opd_relay_mon_service(struct opd_relay_mon *r, const struct pollfd *pfd, size_t n);
/* A COLLECT request: start, or stop and end the stream.  0 or -errno. */
int opd_relay_mon_collect(struct opd_relay_mon *r, bool start);
/* A TASK_LAYOUT request (checked by opd_ps_check) for the collector:
 * 0, or -EOPNOTSUPP when it takes none, -ENODEV with no collector. */
struct opd_ps_layout;
int opd_relay_mon_task_layout(struct opd_relay_mon *r, const struct opd_ps_layout *l);
void opd_relay_mon_close(struct opd_relay_mon *r);	/* NULL accepted */

/* ---- worker side --------------------------------------------------------- */

/* The worker's collector for @real: its name and caps, the relay's ops.
 * open() takes the pipe's read end and the privsep channel from its
 * args (relay_fd, relay_chan). */
void opd_relay_worker_ops(const struct opd_collector_ops *real, struct opd_collector_ops *out);

#endif
