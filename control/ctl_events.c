#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "ctl.h"
#include "events/ev.h"

static void format_spec(char *buf, const struct ev_spec *s)
{
	/* decimal unit mask: the form every parser of the spec accepts */
	snprintf(buf, 96, "%s:%llu:%u:%d:%d", s->name, (unsigned long long)s->count,
		 (unsigned)s->unit_mask, s->kernel ? 1 : 0, s->user ? 1 : 0);
}

int ctl_events_resolve(const struct ctl_opts *o, char specs[][96], size_t max, size_t *n_out,
		       char *err, size_t errlen)
{
	const char *dir = o->events_dir ? o->events_dir : ev_default_dir();
	char msg[256];
	struct ev_table *t;
	struct ev_spec spec;
	int ret = 0;

	*n_out = 0;
	t = ev_table_load(dir, NULL, msg, sizeof(msg));
	if (!t) {
		ret = errno ? -errno : -EINVAL;
		snprintf(err, errlen, "cannot load the event table from %s: %s", dir, msg);
		return ret;
	}
	if (o->n_events == 0) {
		ret = ev_default_spec(t, &spec);
		if (ret) {
			snprintf(err, errlen, "no default event for cpu type %s",
				 ev_table_cpu_type(t));
			goto out_free_table;
		}
		format_spec(specs[(*n_out)++], &spec);
		goto out_free_table;
	}
	for (size_t i = 0; i < o->n_events && i < max; i++) {
		ret = ev_spec_parse(o->events[i], &spec, msg, sizeof(msg));
		if (!ret)
			ret = ev_spec_check(t, &spec, msg, sizeof(msg));
		if (ret) {
			snprintf(err, errlen, "bad event '%.64s': %s", o->events[i], msg);
			goto out_free_table;
		}
		format_spec(specs[(*n_out)++], &spec);
	}
out_free_table:
	ev_table_free(t);
	return ret;
}
