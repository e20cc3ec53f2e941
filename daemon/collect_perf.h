/*
 * The perf collector: perf_event_open system-wide, one ring buffer per
 * online CPU, records merged across CPUs by time each poll round and
 * translated into raw stream records written (through a raw_writer) into
 * the daemon, and into the --record file if any.
 */
#ifndef COLLECT_PERF_H
#define COLLECT_PERF_H

#include <stddef.h>

#include "events/ev.h"
#include "opd_daemon.h"

struct collect_perf;

/*
 * Open the counters (disabled) and their ring buffers, copy
 * /proc/kallsyms and /proc/modules into the session.  @t and @d are
 * borrowed.  NULL with errno set and a message in @err.
 */
struct collect_perf *collect_perf_open(struct opd_daemon *d, const struct ev_table *t,
				       char *err, size_t errlen);

/*
 * Write the stream header, synthesize the present (processes, mappings,
 * kernel and modules), enable the counters and collect until
 * opd_daemon_service() asks to stop; then disable, drain and flush.
 * 0 or -errno.
 */
int collect_perf_run(struct collect_perf *p);

void collect_perf_close(struct collect_perf *p);	/* NULL accepted */

#endif
