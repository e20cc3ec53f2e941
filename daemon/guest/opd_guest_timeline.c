#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "opd_guest_timeline.h"

void opd_gtl_init(struct opd_gtimeline *tl, unsigned int max_cpus, size_t ring,
		  struct opd_gbudget *budget, struct opd_stats *st)
{
	tl->cpus = NULL;
	tl->max_cpus = max_cpus;
	tl->ring = ring;
	tl->budget = budget;
	tl->st = st;
}

void opd_gtl_fini(struct opd_gtimeline *tl)
{
	if (!tl->cpus)
		return;
	for (unsigned int i = 0; i < tl->max_cpus; i++)
		free(tl->cpus[i].ring);
	free(tl->cpus);
	tl->cpus = NULL;
}

static int cpu_ring(struct opd_gtimeline *tl, struct opd_gtl_cpu *c)
{
	size_t b = tl->ring * sizeof(*c->ring);

	if (c->ring)
		return 0;
	if (!opd_gbudget_take(tl->budget, b))
		return -ENOSPC;
	c->ring = malloc(b);
	if (!c->ring) {
		opd_gbudget_give(tl->budget, b);
		return -ENOMEM;
	}
	return 0;
}

int opd_gtl_add(struct opd_gtimeline *tl, uint32_t cpu, uint64_t t, uint32_t prev, uint32_t next)
{
	struct opd_gtl_cpu *c;
	int ret;

	if (cpu >= tl->max_cpus) {
		tl->st->guest_bad_values++;
		return 0;
	}
	if (!tl->cpus) {
		tl->cpus = calloc(tl->max_cpus, sizeof(*tl->cpus));
		if (!tl->cpus)
			return -ENOMEM;
	}
	c = &tl->cpus[cpu];
	ret = cpu_ring(tl, c);
	if (ret)
		return ret == -ENOSPC ? 0 : ret;
	if (c->count && t < c->ring[(c->head + c->count - 1) % tl->ring].t) {
		tl->st->guest_bad_values++;	/* out of order: keep the timeline sorted */
		return 0;
	}
	if (c->count == tl->ring) {
		c->head = (c->head + 1) % tl->ring;
		c->count--;
		tl->st->guest_switches_overwritten++;
	}
	c->ring[(c->head + c->count) % tl->ring] =
		(struct opd_gswitch){ .t = t, .prev = prev, .next = next };
	c->count++;
	tl->st->guest_switches++;
	return 1;
}

size_t opd_gtl_count(const struct opd_gtimeline *tl, int32_t vcpu)
{
	if (vcpu < 0 || (unsigned int)vcpu >= tl->max_cpus || !tl->cpus)
		return 0;
	return tl->cpus[vcpu].count;
}

const struct opd_gswitch *opd_gtl_at(const struct opd_gtimeline *tl, int32_t vcpu, long i)
{
	const struct opd_gtl_cpu *c = &tl->cpus[vcpu];

	return &c->ring[(c->head + (size_t)i) % tl->ring];
}

long opd_gtl_find(const struct opd_gtimeline *tl, int32_t vcpu, uint64_t t)
{
	size_t lo = 0, hi = tl->cpus[vcpu].count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (opd_gtl_at(tl, vcpu, (long)mid)->t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}
