/*
 * The xen collector's libxenctrl source (collect_xen_xc.c): what
 * collect_xen.c's collector needs of it.
 */
#ifndef COLLECT_XEN_XC_H
#define COLLECT_XEN_XC_H

#include <stdbool.h>
#include <stdint.h>

#include "collect_xen.h"

struct cx_xc;

/* cx_src_ops over libxenctrl; its state is a struct cx_xc */
extern const struct cx_src_ops cx_xc_ops;

/* libxenctrl opened, and Xen's foreign mappings (call chains, the task
 * layout's reads; without them, warned, neither): 0, -EACCES, -ENODEV or
 * -ENOMEM. */
int cx_xc_open(struct cx_xc **out);
bool cx_xc_has_mem(const struct cx_xc *x);

/* Xen's own counters at one moment: the wall clock, dom0's CPU time and
 * the pCPUs' idle time, to report over the run what went to dom0, to the
 * domUs and to Xen itself. */
struct cx_xen_counts {
	uint64_t wall_ns, dom0_ns, idle_ns;
	int nr_cpus;
	bool ok;
};

/* CLOCK_MONOTONIC in ns */
uint64_t cx_now(void);
void cx_xen_counts(struct cx_xc *x, struct cx_xen_counts *k);

#endif
