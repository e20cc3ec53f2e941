/*
 * Event tables (events/README.md gives the file formats): loaded (the
 * files are read in ev_load.c), freed and read.  The tables are small
 * (tens of events), so everything is arrays and linear search.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "ev_int.h"

int ev_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

bool ev_name_ok(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return i > 0 && i <= max;
}

bool ev_parse_num(const char *s, uint64_t max, uint64_t *v)
{
	unsigned long long x;
	char *end;
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!((s[0] >= '0' && s[0] <= '9') || (base == 16 && strchr("abcdefABCDEF", s[0]) && s[0])))
		return false;
	errno = 0;
	x = strtoull(s, &end, base);
	if (errno || *end || x > max)
		return false;
	*v = x;
	return true;
}

struct ev_event *ev_find_event(const struct ev_table *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nev; i++)
		if (!strcmp(t->ev[i].name, name))
			return &t->ev[i];
	return NULL;
}

static uint32_t um_union(const struct ev_um *u)
{
	uint32_t m = 0;
	size_t i;

	for (i = 0; i < u->n; i++)
		m |= u->v[i].value;
	return m;
}

bool ev_um_allows(const struct ev_um *u, uint32_t v)
{
	size_t i;

	if (u->type == UM_BITMASK)
		return (v & ~um_union(u)) == 0;
	for (i = 0; i < u->n; i++)
		if (u->v[i].value == v)
			return true;
	return false;
}

/*
 * A PMU is usable when perf lets this process count hardware cycles on
 * itself; otherwise (no PMU, as in most VMs) the timer is all there is.
 */
static const char *detect_cpu_type(void)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0)
		return "timer";
	close((int)fd);
	return "x86-64/arch";
}

static bool cpu_type_ok(const char *s)
{
	const char *p;

	if (!*s || *s == '/')
		return false;
	for (p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_-./", *p)))
			return false;
	/* no "." or ".." component: the type names a directory below @dir */
	for (p = s; *p; ) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p)
			p++;
	}
	return true;
}

const char *ev_default_dir(void)
{
	const char *env = getenv("DOMPROF_EVENTS_DIR");

	return env && *env ? env : DP_EVENTS_DIR;
}

struct ev_table *ev_table_load(const char *dir, const char *cpu_type, char *err, size_t errlen)
{
	struct ev_table *t;
	size_t i;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!dir) {
		ev_fail(err, errlen, "no events directory");
		errno = EINVAL;
		return NULL;
	}
	if (!cpu_type)
		cpu_type = detect_cpu_type();
	if (!cpu_type_ok(cpu_type)) {
		ev_fail(err, errlen, "bad CPU type \"%s\"", cpu_type);
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out_nomem;
	t->cpu_type = strdup(cpu_type);
	if (!t->cpu_type)
		goto out_free_table;
	ret = ev_load_unit_masks(t, dir, err, errlen);
	if (!ret)
		ret = ev_load_events(t, dir, err, errlen);
	if (!ret)
		ret = ev_load_defaults(t, dir, err, errlen);
	if (ret) {
		if (ret == -ENOMEM)
			ev_fail(err, errlen, "out of memory");
		ev_table_free(t);
		errno = -ret;
		return NULL;
	}
	/* pointers into the arrays only now that they stopped moving */
	for (i = 0; i < t->nev; i++) {
		t->ev[i].info.name = t->ev[i].name;
		t->ev[i].info.desc = t->ev[i].desc;
		t->ev[i].info.um_name = t->ums[t->ev[i].um].name;
	}
	return t;

out_free_table:
	ev_table_free(t);
out_nomem:
	ev_fail(err, errlen, "out of memory");
	errno = ENOMEM;
	return NULL;
}

void ev_table_free(struct ev_table *t)
{
	size_t i, j;

	if (!t)
		return;
	for (i = 0; i < t->nums; i++) {
		for (j = 0; j < t->ums[i].n; j++)
			free(t->ums[i].v[j].desc);
		free(t->ums[i].v);
		free(t->ums[i].name);
	}
	for (i = 0; i < t->nev; i++) {
		free(t->ev[i].name);
		free(t->ev[i].desc);
	}
	free(t->ums);
	free(t->ev);
	free(t->cpu_type);
	free(t);
}

const char *ev_table_cpu_type(const struct ev_table *t)
{
	return t->cpu_type;
}

const struct ev_info *ev_table_get(const struct ev_table *t, size_t i)
{
	return t && i < t->nev ? &t->ev[i].info : NULL;
}

/* The event an ev_info handed out by ev_table_get belongs to. */
static const struct ev_event *event_of(const struct ev_table *t, const struct ev_info *e)
{
	const struct ev_event *ev = (const struct ev_event *)e;

	if (!t || !e || ev < t->ev || ev >= t->ev + t->nev)
		return NULL;
	return ev;
}

const char *ev_unit_mask_get(const struct ev_table *t, const struct ev_info *e, size_t i, uint32_t *value)
{
	const struct ev_event *ev = event_of(t, e);
	const struct ev_um *u;

	if (!ev)
		return NULL;
	u = &t->ums[ev->um];
	if (i >= u->n)
		return NULL;
	if (value)
		*value = u->v[i].value;
	return u->v[i].desc;
}
