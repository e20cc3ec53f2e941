/*
 * KVM's TSC offset writes as they happen (doc/clock.md): the tracepoint
 * kvm:kvm_write_tsc_offset (vcpu_id, previous_tsc_offset, next_tsc_offset),
 * which KVM fires on every write of a vCPU's offset: when the guest writes
 * its TSC, and, on a host whose TSC is unstable, on every vCPU load.
 * Opened with perf_event_open on every CPU, each with its own small ring,
 * stamped with CLOCK_MONOTONIC like every other host time in domprof, and
 * drained by the caller (no wakeups).  Not thread-safe.
 */
#ifndef OPD_KVMTSC_TRACE_H
#define OPD_KVMTSC_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Where the three fields lie in the tracepoint's raw record (its format
 * file says, per kernel). */
struct opd_kvmtsc_fmt {
	uint32_t vcpu_off, prev_off, next_off;
	uint32_t vcpu_size;	/* 4 (unsigned int); the offsets are u64 */
};

/* One write of a vCPU's offset, by thread @tid of process @pid. */
struct opd_kvmtsc_write {
	uint64_t t_ns;
	uint32_t pid, tid, vcpu;
	int64_t prev, next;
};

/* Parse the tracepoint's format file text.  0, or -EINVAL when a field
 * is missing or does not fit. */
int opd_kvmtsc_fmt_parse(const char *text, struct opd_kvmtsc_fmt *f);

/*
 * Decode one ring record (header included) of a tracepoint opened with
 * PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW and sample_id_all.
 * 1: a write in *@w; 2: PERF_RECORD_LOST, the loss's time in w->t_ns;
 * 0: another record type (skipped); -EBADMSG: short or inconsistent.
 * Pure.
 */
int opd_kvmtsc_decode(const struct opd_kvmtsc_fmt *f, const uint8_t *rec, size_t len,
		      struct opd_kvmtsc_write *w);

struct opd_kvmtsc_trace;

/* Open the tracepoint on every online CPU.  @tracefs: tracefs's mount
 * point (NULL: /sys/kernel/tracing, mounted there if needed, or
 * /sys/kernel/debug/tracing).  NULL with errno set, and @why (@whylen
 * bytes) says why in words. */
struct opd_kvmtsc_trace *opd_kvmtsc_trace_open(const char *tracefs, char *why, size_t whylen);
void opd_kvmtsc_trace_close(struct opd_kvmtsc_trace *tr);	/* NULL accepted */

/* CPUs followed at most (more are left out). */
#define OPD_KVMTSC_MAX_CPUS	1024

/*
 * The parts of opening, for a process that may not open the tracepoint
 * itself (the privsep worker: its monitor opens, the worker maps).
 *
 * open_cpus: read the tracepoint's id and layout (*@f) and open it on each
 * CPU, not mapped: @fds[i] is CPU i's fd or -1 (offline), for @max CPUs.
 * Returns how many entries of @fds it covers (> 0), or -errno with @why.
 */
int opd_kvmtsc_trace_open_cpus(const char *tracefs, struct opd_kvmtsc_fmt *f, int *fds, int max,
			       char *why, size_t whylen);
/* The length every mapping of one CPU's ring has (a second mapping of the
 * same fd must have it too). */
size_t opd_kvmtsc_trace_map_len(void);
/* Map @n fds (-1: none for that CPU) with layout @f into a trace; takes
 * the fds (each @fds[i] is -1 after).  NULL with errno and @why. */
struct opd_kvmtsc_trace *opd_kvmtsc_trace_adopt(const struct opd_kvmtsc_fmt *f, int *fds, int n,
						char *why, size_t whylen);
/* What gives a process the fds: opd_kvmtsc_trace_open_cpus' contract. */
typedef int (*opd_kvmtsc_open_fn)(void *ctx, struct opd_kvmtsc_fmt *f, int *fds, int max,
				  char *why, size_t whylen);
/* Open through @open (@ctx its argument), then adopt. */
struct opd_kvmtsc_trace *opd_kvmtsc_trace_open_via(opd_kvmtsc_open_fn open, void *ctx, char *why,
						   size_t whylen);

/* CLOCK_MONOTONIC after every CPU's event was on: every write since is seen
 * (or its loss reported). */
uint64_t opd_kvmtsc_trace_since(const struct opd_kvmtsc_trace *tr);

/* Drain every ring: @write for each write of process @pid (other
 * processes' are dropped), @lost for each loss (any process).  Records
 * come per CPU, so writes of one vCPU may come out of time order.
 * Returns the number of records read. */
size_t opd_kvmtsc_trace_drain(struct opd_kvmtsc_trace *tr, pid_t pid,
			      void (*write)(void *arg, const struct opd_kvmtsc_write *w),
			      void (*lost)(void *arg, uint64_t t_ns), void *arg);

#endif
