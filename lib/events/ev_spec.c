/*
 * Event specifications (NAME:COUNT:UNITMASK:KERNEL:USER): parsed, checked
 * against a table, defaulted, and turned into a perf_event_attr.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <linux/perf_event.h>

#include "ev_int.h"

int ev_spec_parse(const char *s, struct ev_spec *out, char *err, size_t errlen)
{
	const char *f[5] = { 0 };
	size_t fl[5] = { 0 }, nf = 0;
	const char *p;
	char tmp[32];
	uint64_t v;

	if (err && errlen)
		err[0] = '\0';
	if (!s || !out)
		return ev_fail(err, errlen, "bad event spec: none given");
	memset(out, 0, sizeof(*out));
	out->kernel = out->user = true;
	for (p = s;; ) {
		const char *c = strchr(p, ':');

		if (nf == 5)
			return ev_fail(err, errlen, "bad event spec \"%s\": too many fields (NAME[:COUNT[:UM[:KERNEL[:USER]]]])", s);
		f[nf] = p;
		fl[nf] = c ? (size_t)(c - p) : strlen(p);
		nf++;
		if (!c)
			break;
		p = c + 1;
	}
	if (fl[0] == 0)
		return ev_fail(err, errlen, "bad event spec \"%s\": no event name (NAME[:COUNT[:UM[:KERNEL[:USER]]]])", s);
	if (fl[0] > EV_NAME_MAX)
		return ev_fail(err, errlen, "bad event spec \"%s\": event name longer than %zu bytes", s, EV_NAME_MAX);
	memcpy(out->name, f[0], fl[0]);
	out->name[fl[0]] = '\0';
	if (!ev_name_ok(out->name, EV_NAME_MAX))
		return ev_fail(err, errlen, "bad event spec \"%s\": event names are letters, digits and '_'", s);

	for (size_t i = 1; i < nf; i++) {
		if (fl[i] == 0)
			continue;	/* empty: the default */
		if (fl[i] >= sizeof(tmp))
			return ev_fail(err, errlen, "bad event spec \"%s\": field %zu too long", s, i + 1);
		memcpy(tmp, f[i], fl[i]);
		tmp[fl[i]] = '\0';
		switch (i) {
		case 1:
			if (strspn(tmp, "0123456789") != fl[i] || !ev_parse_num(tmp, UINT64_MAX, &v))
				return ev_fail(err, errlen, "bad event spec \"%s\": count \"%s\" is not a decimal number", s, tmp);
			out->count = v;
			break;
		case 2:
			if (!ev_parse_num(tmp, UINT32_MAX, &v))
				return ev_fail(err, errlen, "bad event spec \"%s\": unit mask \"%s\" is not a number (0x hex or decimal)",
					    s, tmp);
			out->unit_mask = (uint32_t)v;
			out->um_given = true;
			break;
		default:
			if (strcmp(tmp, "0") && strcmp(tmp, "1"))
				return ev_fail(err, errlen, "bad event spec \"%s\": %s must be 0 or 1, not \"%s\"",
					    s, i == 3 ? "KERNEL" : "USER", tmp);
			if (i == 3)
				out->kernel = tmp[0] == '1';
			else
				out->user = tmp[0] == '1';
			break;
		}
	}
	return 0;
}

/* "0x0, 0x1" into @buf, for messages. */
static void um_list(const struct ev_um *u, char *buf, size_t len)
{
	size_t i, w = 0;

	buf[0] = '\0';
	for (i = 0; i < u->n && w < len; i++) {
		int r = snprintf(buf + w, len - w, "%s0x%" PRIx32, i ? (u->type == UM_BITMASK ? "|" : ", ") : "",
				 u->v[i].value);

		if (r < 0)
			break;
		w += (size_t)r;
	}
}

int ev_spec_check(const struct ev_table *t, struct ev_spec *spec, char *err, size_t errlen)
{
	const struct ev_event *e;
	const struct ev_um *u;
	char list[256];

	if (err && errlen)
		err[0] = '\0';
	if (!t || !spec)
		return ev_fail(err, errlen, "bad event spec: none given");
	e = ev_find_event(t, spec->name);
	if (!e)
		return ev_fail(err, errlen, "unknown event \"%s\" for CPU type %s (\"ophelp\" lists the events)",
			    spec->name, t->cpu_type);
	if (spec->count && spec->count < e->info.minimum)
		return ev_fail(err, errlen, "count %" PRIu64 " for event %s is below its minimum %" PRIu64,
			    spec->count, spec->name, e->info.minimum);
	u = &t->ums[e->um];
	if (spec->um_given && !ev_um_allows(u, spec->unit_mask)) {
		um_list(u, list, sizeof(list));
		return ev_fail(err, errlen, "unit mask 0x%" PRIx32 " is not valid for event %s (%s: %s)",
			    spec->unit_mask, spec->name,
			    u->type == UM_BITMASK ? "any combination of" :
			    u->type == UM_MANDATORY ? "allowed" : "one of", list);
	}
	if (!spec->kernel && !spec->user)
		return ev_fail(err, errlen, "event %s counts nothing: KERNEL and USER are both 0", spec->name);
	if (!spec->count)
		spec->count = e->info.default_count;
	if (!spec->um_given)
		spec->unit_mask = u->def;
	return 0;
}

int ev_default_spec(const struct ev_table *t, struct ev_spec *out)
{
	const struct ev_event *e;

	if (!t || !out || t->nev == 0)
		return -EINVAL;
	e = &t->ev[t->def];
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", e->name);
	out->count = e->info.default_count;
	out->unit_mask = t->ums[e->um].def;
	out->kernel = out->user = true;
	return 0;
}

/* Events perf knows by a generic name: perf then picks the vendor encoding. */
static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} generic[] = {
	{ "CPU_CLK_UNHALTED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "UNHALTED_REFERENCE_CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "INST_RETIRED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "LLC_REFS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "LLC_MISSES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "BR_INST_RETIRED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "BR_MISS_PRED_RETIRED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "TIMER", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
};

int ev_spec_to_perf(const struct ev_table *t, const struct ev_spec *spec, struct perf_event_attr *attr)
{
	const struct ev_event *e;
	size_t i;

	if (!t || !spec || !attr)
		return -EINVAL;
	e = ev_find_event(t, spec->name);
	if (!e)
		return -EINVAL;
	attr->size = sizeof(*attr);
	attr->type = PERF_TYPE_RAW;
	attr->config = (uint64_t)spec->unit_mask << 8 | e->info.code;
	for (i = 0; i < sizeof(generic) / sizeof(generic[0]); i++) {
		if (!strcmp(generic[i].name, e->name) &&
		    (spec->unit_mask == t->ums[e->um].def || generic[i].type == PERF_TYPE_SOFTWARE)) {
			attr->type = generic[i].type;
			attr->config = generic[i].config;
			break;
		}
	}
	attr->freq = 0;
	attr->sample_period = spec->count ? spec->count : e->info.default_count;
	attr->exclude_kernel = !spec->kernel;
	attr->exclude_user = !spec->user;
	return 0;
}
