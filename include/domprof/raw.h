/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * domprof raw stream: the one format in which every collector (perf, kmod,
 * file) delivers samples and sideband to oprofiled.  This header is the
 * single source of the format for the kernel module, the daemon and the
 * tools; doc/raw-stream.md explains it.
 *
 * All values are little-endian.  A stream is a header (struct dp_raw_header
 * followed by nr_events struct dp_raw_event) and then a sequence of
 * records made of 8-byte words:
 *
 *   sample:  word 0 = pc (never DP_RAW_ESCAPE), word 1 = event index
 *   escape:  word 0 = DP_RAW_ESCAPE,
 *            word 1 = type (low 32 bits) | payload bytes (high 32 bits),
 *            then the payload, zero-padded to a multiple of 8 bytes.
 *
 * A sample is attributed to the context set by the escape records before it
 * (CPU, task, mode, domain), as in OProfile's event buffer.  Escape types
 * are append-only and never reused; a decoder skips a type it does not know
 * (its length says how far) and counts it.
 */
#ifndef DOMPROF_RAW_H
#define DOMPROF_RAW_H

#ifdef __KERNEL__
#include <linux/types.h>
typedef __u8 dp_u8;
typedef __u16 dp_u16;
typedef __u32 dp_u32;
typedef __u64 dp_u64;
#else
#include <stdint.h>
typedef uint8_t dp_u8;
typedef uint16_t dp_u16;
typedef uint32_t dp_u32;
typedef uint64_t dp_u64;
#endif

#define DP_RAW_MAGIC		0x4d41455254535044ULL	/* "DPSTREAM" */
#define DP_RAW_VERSION		1
#define DP_RAW_WORD		8
#define DP_RAW_ESCAPE		0xffffffffffffffffULL
#define DP_RAW_MAX_EVENTS	32
#define DP_RAW_EVENT_NAME	48
/* Largest payload a decoder accepts; anything longer is corrupt input. */
#define DP_RAW_MAX_PAYLOAD	8192
#define DP_RAW_MAX_PATH		4096

/* Header flags */
#define DP_RAW_F_TIMESTAMPS	0x1	/* DP_RAW_TIME records are present */

struct dp_raw_event {
	char name[DP_RAW_EVENT_NAME];	/* NUL-padded, e.g. "CPU_CLK_UNHALTED" */
	dp_u64 count;			/* sampling period */
	dp_u32 unit_mask;
	dp_u32 flags;			/* DP_RAW_EV_KERNEL | DP_RAW_EV_USER */
};
#define DP_RAW_EV_KERNEL	0x1
#define DP_RAW_EV_USER		0x2

struct dp_raw_header {
	dp_u64 magic;		/* DP_RAW_MAGIC */
	dp_u32 version;		/* DP_RAW_VERSION */
	dp_u32 header_size;	/* bytes, this struct plus the event table */
	dp_u32 word_size;	/* DP_RAW_WORD */
	dp_u32 nr_events;	/* <= DP_RAW_MAX_EVENTS */
	dp_u32 flags;		/* DP_RAW_F_* */
	dp_u32 collector;	/* DP_RAW_COLLECTOR_* that produced it */
	dp_u64 start_ns;	/* CLOCK_MONOTONIC at start */
	struct dp_raw_event events[];
};

enum dp_raw_collector {
	DP_RAW_COLLECTOR_PERF = 1,
	DP_RAW_COLLECTOR_KMOD = 2,
	DP_RAW_COLLECTOR_GEN = 3,	/* synthetic (benchmarks, tests) */
	DP_RAW_COLLECTOR_XEN = 4,	/* Xen's vCPU contexts from dom0 */
};

/* Record types after an escape.  Append only; never renumber. */
enum dp_raw_type {
	DP_RAW_CPU = 1,		/* struct dp_raw_cpu */
	DP_RAW_TASK = 2,	/* struct dp_raw_task */
	DP_RAW_MODE = 3,	/* struct dp_raw_mode */
	DP_RAW_DOMAIN = 4,	/* struct dp_raw_domain */
	DP_RAW_LOST = 5,	/* struct dp_raw_lost */
	DP_RAW_TIME = 6,	/* struct dp_raw_time */
	DP_RAW_MMAP = 7,	/* struct dp_raw_mmap + path */
	DP_RAW_COMM = 8,	/* struct dp_raw_comm */
	DP_RAW_FORK = 9,	/* struct dp_raw_task_ev */
	DP_RAW_EXIT = 10,	/* struct dp_raw_task_ev */
	DP_RAW_SAMPLE = 11,	/* struct dp_raw_sample: a pc equal to ESCAPE */
	DP_RAW_KMOD = 12,	/* struct dp_raw_kmod + name: kernel image range */
	DP_RAW_ASID = 13,	/* struct dp_raw_asid: guest address space */
	DP_RAW_CALLCHAIN = 14,	/* struct dp_raw_callchain + nr u64 frames */
	DP_RAW_GUEST_TSC = 15,	/* struct dp_raw_guest_tsc: a domain's TSC on the host clock */
	DP_RAW_TIME_SPREAD = 16,	/* struct dp_raw_time_spread: how exact TIME is */
	DP_RAW_GUEST_TASK = 17,	/* struct dp_raw_guest_task: the process the guest ran */
	DP_RAW_NR_TYPES
};

/* Execution mode of the samples that follow. */
enum dp_raw_mode_val {
	DP_MODE_HOST_KERNEL = 0,
	DP_MODE_HOST_USER = 1,
	DP_MODE_GUEST_KERNEL = 2,
	DP_MODE_GUEST_USER = 3,
	DP_MODE_NR
};

struct dp_raw_cpu {
	dp_u32 cpu;
	dp_u32 pad;
};

/* Host process and thread the following samples were taken in. */
struct dp_raw_task {
	dp_u32 pid;	/* tgid */
	dp_u32 tid;
};

struct dp_raw_mode {
	dp_u32 mode;	/* enum dp_raw_mode_val */
	dp_u32 pad;
};

/*
 * The following guest samples belong to a domain.  key_ns says what key
 * is (enum dp_domkey_ns): on KVM the host pid of the domain's hypervisor
 * process (QEMU), on Xen the domain id; key 0 in DP_DOMKEY_HOST_PID means
 * "the host itself".  vcpu is the vCPU index, DP_RAW_VCPU_UNKNOWN where
 * the collector could not tell (the daemon then maps the host tid to a
 * vCPU).  key_ns was a zero pad before, so old streams read as host pids.
 */
struct dp_raw_domain {
	dp_u64 key;
	dp_u32 vcpu;
	dp_u32 key_ns;	/* enum dp_domkey_ns */
};
enum dp_domkey_ns {
	DP_DOMKEY_HOST_PID = 0,
	DP_DOMKEY_XEN_DOMID = 1,
};
#define DP_RAW_VCPU_UNKNOWN	0xffffffffU

struct dp_raw_lost {
	dp_u64 count;	/* samples the collector could not deliver */
};

/* Timestamp of the records that follow, CLOCK_MONOTONIC nanoseconds. */
struct dp_raw_time {
	dp_u64 ns;
};

/* An executable mapping appeared in a host process (perf MMAP2). */
struct dp_raw_mmap {
	dp_u32 pid;
	dp_u32 tid;
	dp_u64 start;
	dp_u64 len;
	dp_u64 pgoff;	/* file offset of start */
	dp_u64 ino;
	dp_u32 maj;
	dp_u32 min;
	dp_u32 prot;
	dp_u16 path_len; /* bytes of path that follow, no NUL, <= DP_RAW_MAX_PATH */
	dp_u16 pad;
	/* char path[path_len] follows */
};

/* A task got a (new) name; DP_RAW_COMM_EXEC when it came from exec(),
 * which also drops the task's previous mappings. */
struct dp_raw_comm {
	dp_u32 pid;
	dp_u32 tid;
	dp_u32 flags;
	dp_u32 pad;
	char comm[16];	/* NUL-padded */
};
#define DP_RAW_COMM_EXEC	0x1

struct dp_raw_task_ev {
	dp_u32 pid;
	dp_u32 ppid;
	dp_u32 tid;
	dp_u32 ptid;
};

struct dp_raw_sample {
	dp_u64 pc;
	dp_u32 event;
	dp_u32 pad;
};

/* A kernel image (vmlinux or a module) occupies [start, start + size).
 * Kernel-mode pcs are absolute and are resolved against these ranges. */
struct dp_raw_kmod {
	dp_u64 start;
	dp_u64 size;
	dp_u16 name_len; /* bytes of name that follow, no NUL */
	dp_u16 pad[3];
	/* char name[name_len] follows: "vmlinux" or the module name */
};

/*
 * The guest address space of the guest samples that follow: the guest's
 * page-table root (x86: CR3 with the PCID and PTI bits masked), as the
 * hypervisor saw it at the sample.  0: not known.  Like DOMAIN it is
 * context, re-stated only when it changes.
 */
struct dp_raw_asid {
	dp_u64 asid;
};
#define DP_RAW_ASID_UNKNOWN	0

/*
 * The call chain of the very next sample record (and of no other): @nr
 * return addresses, innermost caller first; the sample's own pc is not
 * repeated.  The first @nr_kernel frames are kernel addresses of the
 * sample's side (host, or guest with DP_RAW_CC_GUEST), the rest user
 * addresses.  Payload 8 + 8 * nr bytes, 1 <= nr <= DP_RAW_CC_MAX.
 */
struct dp_raw_callchain {
	dp_u16 nr;
	dp_u16 nr_kernel;	/* <= nr */
	dp_u32 flags;		/* DP_RAW_CC_* */
	/* dp_u64 frames[nr] follow */
};
#define DP_RAW_CC_MAX		127
#define DP_RAW_CC_TRUNCATED	0x1	/* the walk stopped at an implausible frame */
#define DP_RAW_CC_GUEST		0x2	/* the frames are guest addresses */

/*
 * The samples that follow were taken within +- @ns of their TIME record
 * (a collector that reads a vCPU's state through a call that takes a
 * while: the xen collector's context read).  Context like TIME, re-stated
 * when it changes; 0, or never stated: TIME is the sample's own time.
 */
struct dp_raw_time_spread {
	dp_u64 ns;
};

/*
 * What the guest's own memory said at the look that gives the samples
 * after it: the process (@tgid, the guest's pid) running on the vCPU the
 * last DOMAIN record named, in the address space the last ASID record
 * stated (guest user mode: the vCPU was paused, and the task pointer of
 * its CPU read through the guest's page tables at the place the agent
 * named, DP_AG_TASK_LAYOUT).  A fact about that space, not context: the
 * daemon lets it decide the space's owner (doc/guest-asid.md).
 */
struct dp_raw_guest_task {
	dp_u32 tgid;
	dp_u32 flags;		/* none defined: 0 */
};

/*
 * A domain's guest TSC, read by the hypervisor's side: at host
 * CLOCK_MONOTONIC @host_ns (the middle of a read @window_ns long) the
 * guest's TSC was @tsc, and it runs at @khz kHz.  With the agent's pairs
 * of guest clock and guest TSC this relates the two clocks to
 * microseconds (doc/clock.md).  Not context: it says nothing of the
 * samples around it.
 */
struct dp_raw_guest_tsc {
	dp_u64 key;		/* the domain, as in struct dp_raw_domain */
	dp_u32 key_ns;		/* enum dp_domkey_ns */
	dp_u32 khz;		/* the guest TSC's rate, > 0 */
	dp_u64 host_ns;
	dp_u64 window_ns;
	dp_u64 tsc;
};

_Static_assert(sizeof(struct dp_raw_event) == 64, "dp_raw_event layout");
_Static_assert(sizeof(struct dp_raw_header) == 40, "dp_raw_header layout");
_Static_assert(sizeof(struct dp_raw_cpu) == 8, "dp_raw_cpu layout");
_Static_assert(sizeof(struct dp_raw_task) == 8, "dp_raw_task layout");
_Static_assert(sizeof(struct dp_raw_mode) == 8, "dp_raw_mode layout");
_Static_assert(sizeof(struct dp_raw_domain) == 16, "dp_raw_domain layout");
_Static_assert(sizeof(struct dp_raw_mmap) == 56, "dp_raw_mmap layout");
_Static_assert(sizeof(struct dp_raw_comm) == 32, "dp_raw_comm layout");
_Static_assert(sizeof(struct dp_raw_task_ev) == 16, "dp_raw_task_ev layout");
_Static_assert(sizeof(struct dp_raw_sample) == 16, "dp_raw_sample layout");
_Static_assert(sizeof(struct dp_raw_kmod) == 24, "dp_raw_kmod layout");
_Static_assert(sizeof(struct dp_raw_asid) == 8, "dp_raw_asid layout");
_Static_assert(sizeof(struct dp_raw_callchain) == 8, "dp_raw_callchain layout");
_Static_assert(sizeof(struct dp_raw_guest_tsc) == 40, "dp_raw_guest_tsc layout");
_Static_assert(sizeof(struct dp_raw_time_spread) == 8, "dp_raw_time_spread layout");
_Static_assert(sizeof(struct dp_raw_guest_task) == 8, "dp_raw_guest_task layout");
_Static_assert(8 + 8 * DP_RAW_CC_MAX <= DP_RAW_MAX_PAYLOAD, "callchain fits a payload");

#endif /* DOMPROF_RAW_H */
