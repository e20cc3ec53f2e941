/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * domprof kernel module control interface: the ioctls of /dev/domprof,
 * shared by the module (host-kmod/) and the daemon (daemon/collect/collect_kmod.c).
 * host-kmod/README.md describes the device; doc/raw-stream.md the stream
 * that read() returns.
 *
 * Fixed-width fields only, and every struct has a checked size, so that a
 * 64-bit daemon and module always agree on the layout.
 */
#ifndef DOMPROF_KMOD_H
#define DOMPROF_KMOD_H

#ifdef __KERNEL__
#include <linux/ioctl.h>
#include <linux/types.h>
#else
#include <stdint.h>
#include <sys/ioctl.h>
#endif

#include "domprof/raw.h"

#define DP_KMOD_DEVICE		"/dev/domprof"
#define DP_KMOD_NAME		"domprof"	/* module and device name */
#define DP_KMOD_ABI		1		/* bumped on any change below */
/* One line per possible CPU: "cpu N samples S lost L guest G counting 0|1" */
#define DP_KMOD_SYSFS_STATS	"/sys/class/misc/domprof/stats"
/* One line per possible CPU: "cpu N chains C frames F truncated T ..." */
#define DP_KMOD_SYSFS_CC_STATS	"/sys/class/misc/domprof/callchain"

/* Which counter each CPU samples with. */
enum dp_kmod_event {
	DP_KMOD_EV_AUTO = 0,		/* cycles if the CPU has a PMU, else clock */
	DP_KMOD_EV_CYCLES = 1,		/* hardware cycles (NMI on x86) */
	DP_KMOD_EV_CPU_CLOCK = 2,	/* software cpu-clock (hrtimer) */
};

/* Defaults and limits of the configuration. */
#define DP_KMOD_DEF_PERIOD	1000000ULL	/* cycles */
#define DP_KMOD_DEF_CLOCK_NS	1000000ULL	/* 1 kHz */
#define DP_KMOD_MIN_PERIOD	10000ULL
#define DP_KMOD_MIN_CLOCK_NS	10000ULL	/* perf's hrtimer floor */
#define DP_KMOD_DEF_RING	16384
#define DP_KMOD_MIN_RING	64
#define DP_KMOD_MAX_RING	(1U << 20)

/* dp_kmod_config.flags */
#define DP_KMOD_CF_KERNEL	0x1	/* sample kernel mode */
#define DP_KMOD_CF_USER		0x2	/* sample user mode */

struct dp_kmod_config {
	dp_u32 abi;		/* DP_KMOD_ABI, checked by the module */
	dp_u32 event;		/* enum dp_kmod_event */
	dp_u64 period;		/* cycles between samples (CYCLES) */
	dp_u64 clock_ns;	/* nanoseconds between samples (CPU_CLOCK) */
	dp_u32 ring_entries;	/* samples per CPU: power of two, 64 .. 1M */
	dp_u32 flags;		/* DP_KMOD_CF_* */
	/* filled by GET_CONFIG: the event in use once enabled, or AUTO */
	dp_u32 active_event;
	/*
	 * Guest call chains: the deepest frame-pointer walk per guest sample
	 * (0 = off, at most DP_KMOD_MAX_CG_DEPTH), emitted as DP_RAW_CALLCHAIN
	 * records.  This was padding before: a daemon that zeroes it keeps
	 * call chains off, so the ABI number stays.
	 */
	dp_u32 callgraph_depth;
};
#define DP_KMOD_MAX_CG_DEPTH	127

/* Counters of one CPU (DP_KMOD_IOC_CPU_STATS: set cpu, get the rest). */
struct dp_kmod_cpu_stats {
	dp_u32 cpu;		/* in */
	dp_u32 flags;		/* DP_KMOD_CS_* */
	dp_u64 samples;		/* taken into the ring since enable */
	dp_u64 lost;		/* dropped because the ring was full */
	dp_u64 guest;		/* of the samples, taken in a KVM guest */
};
#define DP_KMOD_CS_POSSIBLE	0x1	/* the CPU exists */
#define DP_KMOD_CS_COUNTING	0x2	/* it has a live counter now */

/*
 * Call-chain counters of one CPU since enable (DP_KMOD_IOC_CC_STATS: set
 * cpu, get the rest).  Every guest sample taken with callgraph_depth > 0
 * ends in exactly one of: a chain, empty (no frame at all), no_walk (the
 * guest's page-table root or registers are not known at the sample), nmi
 * (the walk is skipped in NMI context) or no_room (the ring was full).
 */
struct dp_kmod_cc_stats {
	dp_u32 cpu;		/* in */
	dp_u32 pad;
	dp_u64 chains;		/* DP_RAW_CALLCHAIN records written */
	dp_u64 frames;		/* frames in them */
	dp_u64 truncated;	/* chains (or empty walks) cut at a bad frame */
	dp_u64 depth_limited;	/* walks that reached callgraph_depth */
	dp_u64 empty;		/* walks that found no frame */
	dp_u64 no_walk;		/* guest state unknown: no walk tried */
	dp_u64 nmi;		/* guest samples in NMI: no walk tried */
};

#define DP_KMOD_IOC_MAGIC	0xd9
/* Set the configuration; -EBUSY while enabled, -EINVAL if out of range. */
#define DP_KMOD_IOC_SET_CONFIG	_IOW(DP_KMOD_IOC_MAGIC, 1, struct dp_kmod_config)
#define DP_KMOD_IOC_GET_CONFIG	_IOR(DP_KMOD_IOC_MAGIC, 2, struct dp_kmod_config)
/* Start counters on every online CPU; read() then begins a new stream. */
#define DP_KMOD_IOC_ENABLE	_IO(DP_KMOD_IOC_MAGIC, 3)
/*
 * Stop and release the counters; what is buffered stays readable.  The
 * reader's close (its last descriptor) does the same: what it left
 * buffered is dropped at the next ENABLE, which a new reader makes
 * before it reads.
 */
#define DP_KMOD_IOC_DISABLE	_IO(DP_KMOD_IOC_MAGIC, 4)
#define DP_KMOD_IOC_CPU_STATS	_IOWR(DP_KMOD_IOC_MAGIC, 5, struct dp_kmod_cpu_stats)
/* Call-chain counters of one CPU; -ENOTTY from a module without them. */
#define DP_KMOD_IOC_CC_STATS	_IOWR(DP_KMOD_IOC_MAGIC, 6, struct dp_kmod_cc_stats)

_Static_assert(sizeof(struct dp_kmod_config) == 40, "dp_kmod_config layout");
_Static_assert(sizeof(struct dp_kmod_cpu_stats) == 32, "dp_kmod_cpu_stats layout");
_Static_assert(sizeof(struct dp_kmod_cc_stats) == 64, "dp_kmod_cc_stats layout");

#endif /* DOMPROF_KMOD_H */
