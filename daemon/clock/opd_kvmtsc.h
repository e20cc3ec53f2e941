/*
 * Exact guest clock correlation for KVM guests (doc/clock.md): the guest's
 * CLOCK_MONOTONIC related to the host's through the TSC.  The agent pairs
 * a guest clock reading with the guest TSC (TSC frames); KVM derives the
 * guest TSC from the host's with a per-vCPU offset and scaling ratio,
 * which it shows in debugfs (SYS/kernel/debug/kvm/PID-FD/vcpuN/); the
 * daemon pairs its own clock with the host TSC.  Together they give the
 * guest-minus-host clock offset to microseconds, against the millisecond
 * of a ping/pong over the channel.
 *
 * Where a link is missing (no debugfs, not x86, no entry for the QEMU pid)
 * the correlation stays ping/pong, and opd_kvmtsc_why() says why.
 * Not thread-safe; one per domain.
 */
#ifndef OPD_KVMTSC_H
#define OPD_KVMTSC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "domprof/agent.h"
#include "opd_kvmtsc_trace.h"

/* The environment switch that forces ping/pong (lab comparisons). */
#define OPD_KVMTSC_ENV	"DOMPROF_CLOCK"

struct opd_kvmtsc;

/* For the domain whose QEMU (KVM) process is @pid (0: none known).
 * @debugfs: the debugfs mount point (NULL: /sys/kernel/debug, mounted
 * there if it is not).  @pingpong: never exact.  NULL with errno set. */
struct opd_kvmtsc *opd_kvmtsc_new(pid_t pid, const char *debugfs, bool pingpong);
/* The same where this process may not open the tracepoint (the privsep
 * worker): @open_fn gives its fds (opd_kvmtsc_trace.h). */
struct opd_kvmtsc *opd_kvmtsc_new_via(pid_t pid, bool pingpong, opd_kvmtsc_open_fn open_fn,
				      void *open_ctx);
void opd_kvmtsc_free(struct opd_kvmtsc *k);	/* NULL accepted */

/* Is DEBUGFS/kvm there (@debugfs NULL: /sys/kernel/debug)?  debugfs is
 * mounted at the default place first if it is not (the daemon is root). */
bool opd_kvmtsc_have_kvm_dir(const char *debugfs);

/*
 * The guest-minus-host offset (ns) that the guest pair @t implies, and
 * its uncertainty (ns).  0, or -errno when the exact path is not there
 * (opd_kvmtsc_why() says why; -EAGAIN: not yet, try with a later pair;
 * -ESTALE: KVM's offset for the pair's vCPU moved since the previous read,
 * so the offset the pair was taken under is not known).
 */
int opd_kvmtsc_offset(struct opd_kvmtsc *k, const struct dp_ag_tsc *t, int64_t *off,
		      uint64_t *unc);

/*
 * KVM's offset writes (opd_kvmtsc_trace): opened with the domain when the
 * tracepoint can be, then drained by opd_kvmtsc_poll() (each daemon round)
 * and before each pair.  With them, a pair is converted under the offset
 * that was in force when it was read, so the correlation stays exact
 * while KVM moves the offset (doc/clock.md); without them, the offset is
 * read from debugfs per pair and a move makes the pair not exact.
 */
void opd_kvmtsc_poll(struct opd_kvmtsc *k);
/* What the tracepoint feeds, open for tests: follow writes from host time
 * @since_ns on (nothing before it is known), a write of @vcpu's offset
 * at @t_ns from @prev to @next, writes lost before @t_ns. */
void opd_kvmtsc_follow(struct opd_kvmtsc *k, uint64_t since_ns);
void opd_kvmtsc_note_write(struct opd_kvmtsc *k, uint64_t t_ns, uint32_t vcpu, int64_t prev,
			   int64_t next);
void opd_kvmtsc_note_lost(struct opd_kvmtsc *k, uint64_t t_ns);

/* Why the correlation is not exact ("" when it is, or nothing failed). */
const char *opd_kvmtsc_why(const struct opd_kvmtsc *k);
/* Times KVM's TSC offset of a vCPU was seen to move (between reads, or
 * writes followed). */
uint64_t opd_kvmtsc_offset_changes(const struct opd_kvmtsc *k);

/*
 * The guest TSC value that host TSC @host_tsc becomes under KVM's offset
 * and scaling (ratio with @frac_bits fraction bits), and back.  Pure.
 */
uint64_t opd_kvmtsc_guest_tsc(uint64_t host_tsc, int64_t offset, uint64_t ratio,
			      unsigned int frac_bits);
uint64_t opd_kvmtsc_host_tsc(uint64_t guest_tsc, int64_t offset, uint64_t ratio,
			     unsigned int frac_bits);

#endif
