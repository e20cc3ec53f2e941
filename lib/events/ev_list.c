/*
 * The event list ophelp prints and opcontrol --list-events repeats, in
 * OProfile's layout.  Formatting onto the caller's stream, nothing else.
 */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ev.h"

void ev_spec_print(FILE *f, const struct ev_spec *s)
{
	fprintf(f, "%s:%" PRIu64 ":", s->name, s->count);
	if (s->unit_mask)
		fprintf(f, "0x%" PRIx32, s->unit_mask);
	else
		fputc('0', f);
	fprintf(f, ":%d:%d\n", s->kernel, s->user);
}

static void print_counters(FILE *f, uint32_t m)
{
	bool first = true;
	int i;

	for (i = 0; i < 32; i++) {
		if (!(m & (1u << i)))
			continue;
		fprintf(f, "%s%d", first ? "" : ",", i);
		first = false;
	}
}

void ev_table_list(FILE *f, const struct ev_table *t)
{
	const struct ev_info *e;
	struct ev_spec def;
	size_t i, j;

	fprintf(f, "domprof: available events for CPU type \"%s\"\n", ev_table_cpu_type(t));
	if (ev_default_spec(t, &def) == 0) {
		fprintf(f, "Default event: ");
		ev_spec_print(f, &def);
	}
	fprintf(f, "\nEvent specification: NAME[:COUNT[:UM[:KERNEL[:USER]]]] (opcontrol --event);\n"
	       "COUNT is the number of events between two samples%s.\n\n",
	       strcmp(ev_table_cpu_type(t), "timer") ? "" : " (for TIMER: nanoseconds of CPU time)");

	for (i = 0; (e = ev_table_get(t, i)); i++) {
		uint32_t v, um_default = 0;
		const char *desc;
		bool plain;
		struct ev_spec s = { 0 };

		fprintf(f, "%s: (counter: ", e->name);
		print_counters(f, e->counters);
		fprintf(f, ")\n\t%s (min count: %" PRIu64 ", default: %" PRIu64 ")\n",
		       e->desc, e->minimum, e->default_count);

		/* the default unit mask, as a spec without one gets it */
		snprintf(s.name, sizeof(s.name), "%s", e->name);
		s.kernel = s.user = true;
		if (ev_spec_check(t, &s, NULL, 0) == 0)
			um_default = s.unit_mask;

		/* like OProfile, say nothing of a lone "no unit mask" 0x0 */
		plain = ev_unit_mask_get(t, e, 0, &v) && v == 0 && !ev_unit_mask_get(t, e, 1, NULL);
		if (plain)
			continue;
		fprintf(f, "\tUnit masks (default 0x%" PRIx32 ")\n\t----------\n", um_default);
		for (j = 0; (desc = ev_unit_mask_get(t, e, j, &v)); j++)
			fprintf(f, "\t0x%02" PRIx32 ": %s\n", v, desc);
	}
}
