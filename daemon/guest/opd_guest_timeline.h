/*
 * The per-vCPU timeline of guest context switches of one domain: a ring
 * of the last limits.ring switches per vCPU, sorted by guest time (an out
 * of order switch is refused), allocated on a vCPU's first switch within
 * the domain's memory budget.
 */
#ifndef OPD_GUEST_TIMELINE_H
#define OPD_GUEST_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opd_guest_budget.h"
#include "opd_stats.h"

struct opd_gswitch {
	uint64_t t;		/* guest time */
	uint32_t prev, next;	/* pids */
};

struct opd_gtl_cpu {
	struct opd_gswitch *ring;
	size_t head, count;	/* oldest at head */
};

struct opd_gtimeline {
	struct opd_gtl_cpu *cpus;	/* max_cpus of them, NULL until a switch */
	unsigned int max_cpus;
	size_t ring;
	struct opd_gbudget *budget;	/* borrowed */
	struct opd_stats *st;		/* borrowed */
};

void opd_gtl_init(struct opd_gtimeline *tl, unsigned int max_cpus, size_t ring,
		  struct opd_gbudget *budget, struct opd_stats *st);
void opd_gtl_fini(struct opd_gtimeline *tl);

/* Append a switch on @cpu at guest time @t.  1 when added, 0 when
 * refused (counted: bad cpu or order guest_bad_values, memory
 * guest_bytes_capped), or -ENOMEM. */
int opd_gtl_add(struct opd_gtimeline *tl, uint32_t cpu, uint64_t t, uint32_t prev, uint32_t next);

/* Switches known on @vcpu (-1 or out of range: 0). */
size_t opd_gtl_count(const struct opd_gtimeline *tl, int32_t vcpu);

/* Index of the last switch at or before @t on @vcpu (count > 0), or -1. */
long opd_gtl_find(const struct opd_gtimeline *tl, int32_t vcpu, uint64_t t);

/* The @i-th oldest switch of @vcpu, 0 <= @i < count. */
const struct opd_gswitch *opd_gtl_at(const struct opd_gtimeline *tl, int32_t vcpu, long i);

#endif
