/*
 * The guest samples one domain holds until its agent's sideband explains
 * them: a bounded FIFO.  When it is full the oldest sample leaves first,
 * to be resolved with what is known then (none is dropped).
 */
#ifndef OPD_GUEST_HOLD_H
#define OPD_GUEST_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A guest sample waiting for the sideband that explains it. */
struct opd_guest_sample {
	uint64_t host_ns;	/* host CLOCK_MONOTONIC of the sample */
	uint64_t pc;
	uint32_t event;
	uint32_t cpu;		/* host CPU (--separate=cpu) */
	int32_t vcpu;		/* -1 unknown */
	uint8_t mode;		/* DP_MODE_GUEST_KERNEL or DP_MODE_GUEST_USER */
	uint32_t cc;		/* its call chain held in opd_cc (opd_cc_hold), 0: none */
	uint32_t spread_us;	/* host_ns is good to +- this (DP_RAW_TIME_SPREAD) */
	uint64_t asid;		/* guest address space (DP_RAW_ASID), 0 unknown */
	bool voted;		/* its ASID vote was looked at (opd_guest_asid.c) */
	bool filed;		/* left the owner wait out of turn (opd_guest_hold.c) */
	bool expired;		/* its owner wait ran out: an elected pid may file it */
	uint32_t witness;	/* its look's DP_RAW_GUEST_TASK (a guest pid), 0 none */
};

struct opd_ghold {
	struct opd_guest_sample *q;
	size_t head, count, cap;
	size_t scanned;		/* oldest samples a caller's scan has passed */
};

/* Room for @cap samples (0: none are held).  0 or -ENOMEM. */
int opd_ghold_init(struct opd_ghold *h, size_t cap);
void opd_ghold_fini(struct opd_ghold *h);

static inline bool opd_ghold_full(const struct opd_ghold *h)
{
	return h->count == h->cap;
}

/* Append @s (the queue is not full). */
void opd_ghold_push(struct opd_ghold *h, const struct opd_guest_sample *s);

/* The oldest held sample, NULL when empty; pop removes it. */
const struct opd_guest_sample *opd_ghold_oldest(const struct opd_ghold *h);
void opd_ghold_pop(struct opd_ghold *h);
/* The @i-th oldest held sample (@i < count), to update in place. */
struct opd_guest_sample *opd_ghold_at(struct opd_ghold *h, size_t i);

#endif
