#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "opd_gtscline.h"

static void start_over(struct opd_gtscline *l, const struct opd_gtsc_read *r)
{
	l->first = l->last = *r;
	l->n = 1;
}

void opd_gtscline_note(struct opd_gtscline *l, const struct dp_raw_guest_tsc *g)
{
	struct opd_gtsc_read r = {
		.host_ns = g->host_ns, .window_ns = g->window_ns, .tsc = g->tsc, .khz = g->khz,
	};

	if (!l->n) {
		start_over(l, &r);
		return;
	}
	if (r.khz != l->last.khz || r.tsc < l->last.tsc || r.host_ns <= l->last.host_ns) {
		/* another rate, a TSC that went back, or reads out of order:
		 * what was measured no longer holds */
		l->restarts++;
		start_over(l, &r);
		return;
	}
	if (r.host_ns - l->first.host_ns > OPD_GTSCLINE_MAX_SPAN_NS)
		l->first = l->last;
	l->last = r;
	l->n++;
}

/* Ticks per ns and its relative doubt: measured between the line's two
 * reads when they are far enough apart, else the stated rate. */
static int line_rate(const struct opd_gtscline *l, long double *rate, long double *doubt)
{
	long double stated = (long double)l->last.khz / 1e6L;
	uint64_t span = l->last.host_ns - l->first.host_ns;

	*rate = stated;
	*doubt = OPD_GTSCLINE_RATE_PPM / 1e6L;
	if (l->n < 2 || span < OPD_GTSCLINE_MIN_SPAN_NS)
		return 0;
	*rate = (long double)(l->last.tsc - l->first.tsc) / (long double)span;
	*doubt = ((long double)l->first.window_ns + (long double)l->last.window_ns) / 2.0L /
		 (long double)span;
	if (*rate / stated - 1.0L > OPD_GTSCLINE_RATE_SANE_PPM / 1e6L ||
	    stated / *rate - 1.0L > OPD_GTSCLINE_RATE_SANE_PPM / 1e6L)
		return -ERANGE;
	return 0;
}

int opd_gtscline_offset(const struct opd_gtscline *l, const struct dp_ag_tsc *p, int64_t *off,
			uint64_t *unc, char *why, size_t why_len)
{
	long double rate, doubt, dt, host, u;

	if (!l->n) {
		snprintf(why, why_len, "no TSC read of the domain from the hypervisor yet");
		return -ENODATA;
	}
	if (line_rate(l, &rate, &doubt)) {
		snprintf(why, why_len, "the domain's TSC does not run at the rate the "
			 "hypervisor states (%u kHz)", l->last.khz);
		return -ERANGE;
	}
	/* the pair's TSC, from the last read, in host ns (either side of it) */
	dt = ((long double)p->tsc - (long double)l->last.tsc) / rate;
	if (dt > (long double)OPD_GTSCLINE_MAX_DIST_NS || dt < -(long double)OPD_GTSCLINE_MAX_DIST_NS) {
		snprintf(why, why_len, "the agent's TSC pair is far from the hypervisor's read of "
			 "the domain's TSC");
		return -ERANGE;
	}
	host = (long double)l->last.host_ns + dt;
	u = (long double)p->window_tsc / 2.0L / rate + (long double)l->last.window_ns / 2.0L +
	    (dt < 0 ? -dt : dt) * doubt + OPD_GTSCLINE_MARGIN_NS;
	/* the guest's values may be anything: an offset out of range would
	 * be undefined */
	if (!((long double)p->time_ns - host < 9.0e18L) || !((long double)p->time_ns - host > -9.0e18L)) {
		snprintf(why, why_len, "the agent's TSC pair is out of range");
		return -ERANGE;
	}
	*off = (int64_t)((long double)p->time_ns - host);
	*unc = (uint64_t)u;
	why[0] = 0;
	return 0;
}
