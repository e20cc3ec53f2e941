/*
 * The collector interface: where raw stream bytes come from (perf's
 * struct perf_tool turned around: one ops table per source).
 *
 * The daemon owns the loop (poll, signals, agent channels, dumps) and the
 * --record file; a collector only opens its source, names the fds it
 * wants polled, and hands the bytes it reads to a struct opd_raw_sink.
 * A collector that reads the live system synthesizes the present at
 * start through opd_snapshot.h.
 *
 * Adding a collector is one file (daemon/collect/collect_NAME.c defining
 * opd_collector_NAME) and one entry in the table of opd_collector.c.
 *
 * The loop, as the daemon runs it:
 *
 *     open -> start -> { service; poll(pollfds + agents); read } -> stop -> close
 *
 * A collector whose pollfds() gives none (a file) is read on every turn
 * without waiting.  read() returns OPD_COLLECT_EOF when its input is
 * exhausted; stop() is called either way.
 */
#ifndef OPD_COLLECTOR_H
#define OPD_COLLECTOR_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "domprof/agent.h"
#include "events/ev.h"
#include "opd_conf.h"

/*
 * What a collector needs and gives (caps).  Each bit is read where it
 * changes what the daemon or opcontrol does; --list-collectors prints them
 * (opd_collector_list) and opcontrol decides from that list, not from names.
 */
#define OPD_CAP_LIVE		0x01	/* reads the running system: /proc lookups,
					 * domain tracking and agents make sense;
					 * opcontrol can start it */
#define OPD_CAP_EVENTS		0x02	/* programs the --event list (else the
					 * stream's header names the events) */
#define OPD_CAP_EVENTS_OPT	0x04	/* programs the --event list when one is
					 * given, else its own default (kmod) */
#define OPD_CAP_INPUT		0x08	/* reads --input=FILE (required) */
#define OPD_CAP_CALLCHAIN	0x10	/* DP_RAW_CALLCHAIN records when
					 * conf->callgraph_depth > 0 (else
					 * --callgraph is refused) */
#define OPD_CAP_MONITOR		0x20	/* every read needs root: under privsep
					 * the monitor runs it and relays its
					 * stream to the worker (opd_relay.h) */

/* read(): the input is exhausted (a replay reached its end). */
#define OPD_COLLECT_EOF 1

/*
 * Where a collector delivers raw stream bytes.  The daemon implements it:
 * it tees the bytes it accepts to --record, in order, and decodes them.
 * Both return 0 or -errno (-EBADMSG: corrupt stream, already logged).
 */
struct opd_raw_sink {
	void *ctx;
	/* Bytes in any chunking; a partial record is carried over (copied). */
	int (*feed)(void *ctx, const void *buf, size_t len);
	/*
	 * Zero-copy, for a collector holding its input in memory: decode the
	 * whole records at the start of @buf and say in *@used how many bytes
	 * they took (the rest is a record cut by the window; pass it again,
	 * extended).  Must not be mixed with feed() in one stream.
	 */
	int (*decode)(void *ctx, const void *buf, size_t len, size_t *used);
};

/* What open() is given; all borrowed for the collector's lifetime. */
struct opd_collector_args {
	const struct opd_conf *conf;	/* session dir, input, perf sizes, events */
	const struct ev_table *events;	/* loaded events (OPD_CAP_EVENTS), else NULL */
	const struct opd_raw_sink *sink;
	/* the relay (opd_relay.h) only: the pipe's read end and the privsep
	 * channel (a struct opd_ps_chan) */
	int relay_fd;
	void *relay_chan;
	/*
	 * Part of another collector's stream (the xen collector samples dom0
	 * through the perf collector so): no stream header, no TIME records
	 * (the host collector's clock rules), and the context (CPU, task,
	 * mode) re-stated at each read, since the other collector's records
	 * come between; the idle task is not sampled (a sample is CPU time
	 * used, as the other's are).  Only the perf collector honours it.
	 */
	bool embedded;
};

struct opd_collector_ops {
	const char *name;	/* --collector=NAME: "perf", "file", "kmod", "xen" */
	unsigned int caps;	/* OPD_CAP_* */
	/*
	 * Open the source, nothing enabled or read yet.  0 with *@state set,
	 * or -errno with the reason logged (-ENOENT/-ENODEV: this collector
	 * cannot run on this host).
	 */
	int (*open)(const struct opd_collector_args *a, void **state);
	/* Fill up to @max pollfds (fd, events) to wait on; the count. */
	size_t (*pollfds)(void *state, struct pollfd *pfd, size_t max);
	/* Write the stream header and the present (opd_snapshot), then
	 * enable collection.  0 or -errno (logged). */
	int (*start)(void *state);
	/*
	 * Deliver what is ready to the sink.  @pfd/@n are the collector's
	 * own pollfds as poll() returned them (n = 0 when it has none).
	 * 0, OPD_COLLECT_EOF, or -errno (logged).
	 */
	int (*read)(void *state, const struct pollfd *pfd, size_t n);
	/* Disable collection and deliver what is still buffered.  0 or -errno. */
	int (*stop)(void *state);
	void (*close)(void *state);	/* NULL state accepted */
	/*
	 * Optional: where the guest kernel of the domain keyed @key (in
	 * @key_ns, enum dp_domkey_ns) keeps its running task, as its agent
	 * said (DP_AG_TASK_LAYOUT; guest numbers, unchecked): a collector
	 * that reads guest memory at its looks then states which process
	 * ran (DP_RAW_GUEST_TASK).  Called between start and stop.
	 */
	void (*task_layout)(void *state, uint32_t key_ns, uint64_t key,
			    const struct dp_ag_task_layout *l);
};

extern const struct opd_collector_ops opd_collector_perf;
extern const struct opd_collector_ops opd_collector_file;

/* The collector called @name, NULL if none. */
const struct opd_collector_ops *opd_collector_find(const char *name);

/* The collector names, '|'-separated, into @buf (NUL-terminated, cut to
 * @size), for usage and messages. */
void opd_collector_names(char *buf, size_t size);

/*
 * oprofiled --list-collectors: one line a collector of the table, its name
 * then the words of its caps, space-separated ("perf live events
 * callchain"): live, events, events-optional, input, callchain, monitor.
 * opcontrol reads it (control/ctl_collectors.c).
 */
void opd_collector_list(FILE *f);

#endif
