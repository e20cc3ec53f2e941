#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "opd_gtscline.h"

void opd_gtscline_note(struct opd_gtscline *l, const struct dp_raw_guest_tsc *g)
{
	struct opd_gtsc_read r = {
		.host_ns = g->host_ns, .window_ns = g->window_ns, .tsc = g->tsc, .khz = g->khz,
	};

	if (l->n) {
		const struct opd_gtsc_read *last = opd_gtscline_last(l);

		if (r.khz != last->khz || r.tsc < last->tsc || r.host_ns <= last->host_ns) {
			/* another rate, a TSC that went back, or reads out of
			 * order: what was measured no longer holds */
			l->restarts++;
			l->n = l->pos = 0;
		}
	}
	l->r[l->pos] = r;
	l->pos = (l->pos + 1) % OPD_GTSCLINE_READS;
	if (l->n < OPD_GTSCLINE_READS)
		l->n++;
}

static const struct opd_gtsc_read *nth(const struct opd_gtscline *l, uint32_t i)
{
	return &l->r[(l->pos + OPD_GTSCLINE_READS - l->n + i) % OPD_GTSCLINE_READS];
}

/*
 * Ticks per ns and its relative doubt: measured between the two reads at
 * least OPD_GTSCLINE_MIN_SPAN_NS apart whose windows date it best, where
 * that doubt is below the stated rate's; else the stated rate.  -ERANGE
 * when the measured rate is farther from the stated one than its doubt
 * and OPD_GTSCLINE_RATE_SANE_PPM allow.
 */
static int line_rate(const struct opd_gtscline *l, long double *rate, long double *doubt)
{
	long double stated = (long double)opd_gtscline_last(l)->khz / 1e6L, off;
	const struct opd_gtsc_read *a = NULL, *b = NULL;

	*rate = stated;
	*doubt = OPD_GTSCLINE_RATE_PPM / 1e6L;
	for (uint32_t i = 0; i < l->n; i++)
		for (uint32_t j = i + 1; j < l->n; j++) {
			const struct opd_gtsc_read *x = nth(l, i), *y = nth(l, j);
			uint64_t span = y->host_ns - x->host_ns;
			long double d = ((long double)x->window_ns + (long double)y->window_ns) /
					2.0L / (long double)span;

			if (span >= OPD_GTSCLINE_MIN_SPAN_NS && d < *doubt) {
				*doubt = d;
				a = x;
				b = y;
			}
		}
	if (!a)
		return 0;
	*rate = (long double)(b->tsc - a->tsc) / (long double)(b->host_ns - a->host_ns);
	off = *rate > stated ? *rate / stated - 1.0L : stated / *rate - 1.0L;
	return off > OPD_GTSCLINE_RATE_SANE_PPM / 1e6L + *doubt ? -ERANGE : 0;
}

int opd_gtscline_offset(const struct opd_gtscline *l, const struct dp_ag_tsc *p, int64_t *off,
			uint64_t *unc, char *why, size_t why_len)
{
	long double rate, doubt, best_u = 0, host = 0;
	bool found = false;

	if (!l->n) {
		snprintf(why, why_len, "no TSC read of the domain from the hypervisor yet");
		return -ENODATA;
	}
	if (line_rate(l, &rate, &doubt)) {
		snprintf(why, why_len, "the domain's TSC does not run at the rate the "
			 "hypervisor states (%u kHz)", opd_gtscline_last(l)->khz);
		return -ERANGE;
	}
	/* from the read that dates the pair best: its window, and the rate's
	 * doubt over the distance (either side of it) */
	for (uint32_t i = 0; i < l->n; i++) {
		const struct opd_gtsc_read *r = nth(l, i);
		long double dt = ((long double)p->tsc - (long double)r->tsc) / rate;
		long double u = (long double)r->window_ns / 2.0L + (dt < 0 ? -dt : dt) * doubt;

		if (dt > (long double)OPD_GTSCLINE_MAX_DIST_NS ||
		    dt < -(long double)OPD_GTSCLINE_MAX_DIST_NS)
			continue;
		if (!found || u < best_u) {
			found = true;
			best_u = u;
			host = (long double)r->host_ns + dt;
		}
	}
	if (!found) {
		snprintf(why, why_len, "the agent's TSC pair is far from the hypervisor's reads of "
			 "the domain's TSC");
		return -ERANGE;
	}
	/* the guest's values may be anything: an offset out of range would
	 * be undefined */
	if (!((long double)p->time_ns - host < 9.0e18L) || !((long double)p->time_ns - host > -9.0e18L)) {
		snprintf(why, why_len, "the agent's TSC pair is out of range");
		return -ERANGE;
	}
	*off = (int64_t)((long double)p->time_ns - host);
	*unc = (uint64_t)((long double)p->window_tsc / 2.0L / rate + best_u + OPD_GTSCLINE_MARGIN_NS);
	why[0] = 0;
	return 0;
}
