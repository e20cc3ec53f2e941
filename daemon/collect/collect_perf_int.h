/*
 * The perf collector's state, shared by its files only (nothing else
 * includes this file; the collector is opd_collector_perf, opd_collector.h):
 *   collect_perf.c       the counters opened and configured, each round's
 *                        records merged by time and written as raw records
 *   collect_perf_ring.c  one CPU's ring read and its records parsed
 */
#ifndef COLLECT_PERF_INT_H
#define COLLECT_PERF_INT_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd_conf.h"
#include "raw/raw_stream.h"

/* One record read from a ring, parsed, waiting for the cross-CPU merge. */
struct prec {
	uint64_t time;
	uint32_t type;
	uint16_t misc;
	uint32_t cpu;
	uint32_t pid, tid;
	uint64_t ip;
	uint32_t event;
	uint32_t flags;
	uint64_t lost;
	struct dp_raw_mmap m;
	struct dp_raw_task_ev t;
	char comm[16];
	size_t path_off;	/* into the CPU's arena */
	/* call chain (--callgraph): frames in the CPU's ccbuf */
	size_t cc_off;
	uint16_t cc_nr, cc_nk;
};

struct pcpu {
	int cpu;
	int fd;			/* the fd that owns the ring */
	void *base;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size;		/* data area bytes, a power of 2 */
	struct prec *recs;
	size_t nr, cap, pos;
	char *arena;
	size_t arena_len, arena_cap;
	uint64_t *ccbuf;	/* call chain frames of this round's samples */
	size_t cc_len, cc_cap;
};

struct id_ev {
	uint64_t id;
	uint32_t event;
};

/* The collector's state (its opd_collector_ops state). */
struct collect_perf {
	const struct opd_conf *conf;
	struct raw_writer *w;
	struct pcpu *cpus;
	int nr_cpus;
	int *fds;		/* every counter fd */
	int nr_fds;
	struct id_ev *ids;	/* sorted by id once open (a sample's event) */
	int nr_ids;
	size_t mmap_len;
	/* part of another collector's stream (opd_collector_args.embedded) */
	bool embedded;
	/* what the stream's context says right now */
	bool have_cpu, have_task, have_mode, have_time;
	uint32_t cur_cpu, cur_pid, cur_tid, cur_mode;
	uint64_t cur_time;
	/* PERF_RECORD_THROTTLE: the kernel stopped an event for the rest of
	 * a tick, its sampling interrupts taking too long
	 * (kernel.perf_cpu_time_max_percent): samples not taken, not lost */
	uint64_t throttles;
	uint8_t tmp[65536];	/* a record wrapping the ring's end */
};

/*
 * Parse the records @pc's ring holds into pc->recs (their paths into its
 * arena, their call chains into its ccbuf), after those already there, and
 * give the ring back their space.  0 or -ENOMEM; the record that failed
 * stays in the ring.
 */
int cp_read_ring(struct collect_perf *p, struct pcpu *pc);

#endif
