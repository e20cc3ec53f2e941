/*
 * Event tables (events/README.md gives the file formats) and event
 * specifications.  The tables are small (tens of events), so everything
 * is arrays and linear search.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "events/ev.h"

#define EV_NAME_MAX	(sizeof(((struct ev_spec *)0)->name) - 1)
#define EV_DEFAULT_COUNT 100000

enum um_type { UM_MANDATORY, UM_EXCLUSIVE, UM_BITMASK };

struct ev_um_value {
	uint32_t value;
	char *desc;
};

struct ev_um {
	char *name;
	enum um_type type;
	uint32_t def;
	struct ev_um_value *v;
	size_t n;
	unsigned line;	/* of the name: line, for errors found at its end */
};

struct ev_event {
	struct ev_info info;	/* first: ev_info pointers convert back */
	char *name;
	char *desc;
	size_t um;		/* index into ums */
	bool count_set;		/* by a defaults line */
};

struct ev_table {
	char *cpu_type;
	struct ev_um *ums;
	size_t nums;
	struct ev_event *ev;
	size_t nev;
	size_t def;		/* the default event */
};

/* Set a message in the caller's buffer; always returns -EINVAL. */
__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool name_ok(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return i > 0 && i <= max;
}

/* Whole-string unsigned number: "0x" hex or decimal. */
static bool parse_num(const char *s, uint64_t max, uint64_t *v)
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

/* ---- file reading ----------------------------------------------------------- */

struct reader {
	FILE *f;
	const char *path;
	unsigned line;
	bool nul;
	char *buf;
	size_t cap;
};

/* Next meaningful line (comments and blanks skipped, newline cut); NULL at EOF. */
static char *next_line(struct reader *r)
{
	ssize_t n;

	while ((n = getline(&r->buf, &r->cap, r->f)) >= 0) {
		char *p = r->buf;

		r->line++;
		while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			p[--n] = '\0';
		if ((size_t)n != strlen(p)) {
			r->nul = true;	/* the caller reports it with the line */
			return p;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		return r->buf;
	}
	return NULL;
}

static int open_reader(struct reader *r, const char *dir, const char *cpu_type,
		       const char *file, bool optional, char *err, size_t errlen)
{
	char *path;

	memset(r, 0, sizeof(*r));
	if (asprintf(&path, "%s/%s/%s", dir, cpu_type, file) < 0)
		return -ENOMEM;
	r->path = path;
	r->f = fopen(path, "re");
	if (!r->f) {
		int e = errno;

		if (!(optional && e == ENOENT))
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		free(path);
		r->path = NULL;
		return -e;
	}
	return 0;
}

static void close_reader(struct reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->buf);
	free((char *)r->path);
	memset(r, 0, sizeof(*r));
}

/* Split "key:value" tokens; @tok is modified in place. */
static bool split_kv(char *tok, char **key, char **val)
{
	char *c = strchr(tok, ':');

	if (!c || c == tok)
		return false;
	*c = '\0';
	*key = tok;
	*val = c + 1;
	return true;
}

/* One key of a "key:value ..." line and where its value goes. */
struct kv_field {
	const char *key;
	char **slot;
};

/*
 * Store each key:value token of @line in the slot of its key in @fields
 * (ended by a NULL key); @allowed lists the keys for the message.  Unknown
 * keys and keys given twice fail.
 */
static int split_fields(const struct reader *r, char *line, const struct kv_field *fields,
			const char *allowed, char *err, size_t errlen)
{
	char *tok, *save = NULL, *k, *v;

	for (tok = strtok_r(line, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		const struct kv_field *f;

		if (!split_kv(tok, &k, &v))
			return fail(err, errlen, "%s:%u: expected key:value, got \"%s\"", r->path, r->line, tok);
		for (f = fields; f->key && strcmp(k, f->key); f++)
			;
		if (!f->key)
			return fail(err, errlen, "%s:%u: unknown field \"%s\" (allowed: %s)",
				    r->path, r->line, k, allowed);
		if (*f->slot)
			return fail(err, errlen, "%s:%u: field \"%s\" given twice", r->path, r->line, k);
		*f->slot = v;
	}
	return 0;
}

static struct ev_um *find_um(const struct ev_table *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nums; i++)
		if (!strcmp(t->ums[i].name, name))
			return &t->ums[i];
	return NULL;
}

static struct ev_event *find_event(const struct ev_table *t, const char *name)
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

static bool um_allows(const struct ev_um *u, uint32_t v)
{
	size_t i;

	if (u->type == UM_BITMASK)
		return (v & ~um_union(u)) == 0;
	for (i = 0; i < u->n; i++)
		if (u->v[i].value == v)
			return true;
	return false;
}

/* A finished set must be usable: values present, default allowed. */
static int um_close(const struct reader *r, const struct ev_um *u, char *err, size_t errlen)
{
	if (!u)
		return 0;
	if (u->n == 0)
		return fail(err, errlen, "%s:%u: unit mask set %s has no values", r->path, u->line, u->name);
	if (u->type == UM_MANDATORY && u->n != 1)
		return fail(err, errlen, "%s:%u: mandatory unit mask set %s must have exactly one value",
			    r->path, u->line, u->name);
	if (!um_allows(u, u->def))
		return fail(err, errlen, "%s:%u: default 0x%" PRIx32 " of unit mask set %s is not one of its values",
			    r->path, u->line, u->def, u->name);
	return 0;
}

static int load_unit_masks(struct ev_table *t, const char *dir, char *err, size_t errlen)
{
	struct reader r;
	struct ev_um *cur = NULL;
	char *line;
	int ret;

	ret = open_reader(&r, dir, t->cpu_type, "unit_masks", false, err, errlen);
	if (ret)
		return ret;
	while ((line = next_line(&r))) {
		if (r.nul) {
			ret = fail(err, errlen, "%s:%u: NUL byte in line", r.path, r.line);
			goto out_close;
		}
		if (line[0] == ' ' || line[0] == '\t') {
			/* a value of the current set: "VALUE description" */
			struct ev_um_value *nv;
			char *p = line + strspn(line, " \t"), *sp;
			uint64_t v;

			if (!cur) {
				ret = fail(err, errlen, "%s:%u: unit mask value outside a set", r.path, r.line);
				goto out_close;
			}
			sp = p + strcspn(p, " \t");
			if (*sp)
				*sp++ = '\0';
			sp += strspn(sp, " \t");
			if (!parse_num(p, UINT32_MAX, &v) || !*sp) {
				ret = fail(err, errlen, "%s:%u: expected \"VALUE description\"", r.path, r.line);
				goto out_close;
			}
			for (size_t i = 0; i < cur->n; i++) {
				if (cur->v[i].value == v) {
					ret = fail(err, errlen, "%s:%u: duplicate value 0x%" PRIx64 " in set %s",
						   r.path, r.line, v, cur->name);
					goto out_close;
				}
			}
			nv = realloc(cur->v, (cur->n + 1) * sizeof(*nv));
			if (!nv) {
				ret = -ENOMEM;
				goto out_close;
			}
			cur->v = nv;
			nv[cur->n].value = (uint32_t)v;
			nv[cur->n].desc = strdup(sp);
			if (!nv[cur->n].desc) {
				ret = -ENOMEM;
				goto out_close;
			}
			cur->n++;
			continue;
		}

		/* a new set: name:NAME type:TYPE default:VALUE */
		ret = um_close(&r, cur, err, errlen);
		if (ret)
			goto out_close;
		{
			char *name = NULL, *type = NULL, *def = NULL;
			const struct kv_field fields[] = {
				{ "name", &name }, { "type", &type }, { "default", &def }, { NULL, NULL },
			};
			struct ev_um *nu;
			uint64_t dv;
			enum um_type ty;

			ret = split_fields(&r, line, fields, "name, type, default", err, errlen);
			if (ret)
				goto out_close;
			if (!name || !type || !def) {
				ret = fail(err, errlen, "%s:%u: a unit mask set needs name:, type: and default:",
					   r.path, r.line);
				goto out_close;
			}
			if (!name_ok(name, 64)) {
				ret = fail(err, errlen, "%s:%u: bad unit mask set name \"%s\"", r.path, r.line, name);
				goto out_close;
			}
			if (find_um(t, name)) {
				ret = fail(err, errlen, "%s:%u: unit mask set %s defined twice", r.path, r.line, name);
				goto out_close;
			}
			if (!strcmp(type, "mandatory"))
				ty = UM_MANDATORY;
			else if (!strcmp(type, "exclusive"))
				ty = UM_EXCLUSIVE;
			else if (!strcmp(type, "bitmask"))
				ty = UM_BITMASK;
			else {
				ret = fail(err, errlen, "%s:%u: unknown unit mask type \"%s\" (allowed: mandatory, exclusive, bitmask)",
					   r.path, r.line, type);
				goto out_close;
			}
			if (!parse_num(def, UINT32_MAX, &dv)) {
				ret = fail(err, errlen, "%s:%u: bad default \"%s\"", r.path, r.line, def);
				goto out_close;
			}
			nu = realloc(t->ums, (t->nums + 1) * sizeof(*nu));
			if (!nu) {
				ret = -ENOMEM;
				goto out_close;
			}
			t->ums = nu;
			cur = &nu[t->nums];
			memset(cur, 0, sizeof(*cur));
			cur->name = strdup(name);
			if (!cur->name) {
				ret = -ENOMEM;
				goto out_close;
			}
			t->nums++;
			cur->type = ty;
			cur->def = (uint32_t)dv;
			cur->line = r.line;
		}
	}
	if (ferror(r.f)) {
		ret = fail(err, errlen, "%s: read error", r.path);
		goto out_close;
	}
	ret = um_close(&r, cur, err, errlen);
	if (!ret && t->nums == 0)
		ret = fail(err, errlen, "%s: no unit mask sets", r.path);
out_close:
	close_reader(&r);
	return ret;
}

static int parse_counters(const char *s, uint32_t *mask)
{
	uint32_t m = 0;

	for (;;) {
		char *end;
		unsigned long c;

		if (*s < '0' || *s > '9')
			return -EINVAL;
		errno = 0;
		c = strtoul(s, &end, 10);
		if (errno || c > 31)
			return -EINVAL;
		m |= 1u << c;
		if (*end == '\0')
			break;
		if (*end != ',')
			return -EINVAL;
		s = end + 1;
	}
	*mask = m;
	return 0;
}

static int load_events(struct ev_table *t, const char *dir, char *err, size_t errlen)
{
	struct reader r;
	char *line;
	int ret;

	ret = open_reader(&r, dir, t->cpu_type, "events", false, err, errlen);
	if (ret)
		return ret;
	while ((line = next_line(&r))) {
		char *colon = strstr(line, " : ");
		char *f_event = NULL, *f_counters = NULL, *f_um = NULL, *f_min = NULL, *f_name = NULL;
		char *desc;
		const struct kv_field fields[] = {
			{ "event", &f_event }, { "counters", &f_counters }, { "um", &f_um },
			{ "minimum", &f_min }, { "name", &f_name }, { NULL, NULL },
		};
		struct ev_event *ne, *e;
		struct ev_um *um;
		uint64_t code, min;
		uint32_t counters;

		if (r.nul) {
			ret = fail(err, errlen, "%s:%u: NUL byte in line", r.path, r.line);
			goto out_close;
		}

		if (!colon) {
			ret = fail(err, errlen, "%s:%u: expected \"fields : description\"", r.path, r.line);
			goto out_close;
		}
		*colon = '\0';
		desc = colon + 3;
		desc += strspn(desc, " \t");
		if (!*desc) {
			ret = fail(err, errlen, "%s:%u: empty description", r.path, r.line);
			goto out_close;
		}
		ret = split_fields(&r, line, fields, "event, counters, um, minimum, name", err, errlen);
		if (ret)
			goto out_close;
		if (!f_event || !f_counters || !f_um || !f_min || !f_name) {
			ret = fail(err, errlen, "%s:%u: an event needs event:, counters:, um:, minimum: and name:",
				   r.path, r.line);
			goto out_close;
		}
		if (!parse_num(f_event, 0xff, &code)) {
			ret = fail(err, errlen, "%s:%u: bad event code \"%s\" (0..0xff)", r.path, r.line, f_event);
			goto out_close;
		}
		if (parse_counters(f_counters, &counters)) {
			ret = fail(err, errlen, "%s:%u: bad counters \"%s\" (comma list of 0..31)",
				   r.path, r.line, f_counters);
			goto out_close;
		}
		if (!parse_num(f_min, UINT64_MAX, &min) || min == 0) {
			ret = fail(err, errlen, "%s:%u: bad minimum \"%s\" (a count of at least 1)",
				   r.path, r.line, f_min);
			goto out_close;
		}
		if (!name_ok(f_name, EV_NAME_MAX)) {
			ret = fail(err, errlen, "%s:%u: bad event name \"%s\" ([A-Za-z0-9_], at most %zu bytes)",
				   r.path, r.line, f_name, EV_NAME_MAX);
			goto out_close;
		}
		if (find_event(t, f_name)) {
			ret = fail(err, errlen, "%s:%u: event %s defined twice", r.path, r.line, f_name);
			goto out_close;
		}
		um = find_um(t, f_um);
		if (!um) {
			ret = fail(err, errlen, "%s:%u: event %s uses unit mask set \"%s\", which unit_masks does not define",
				   r.path, r.line, f_name, f_um);
			goto out_close;
		}
		ne = realloc(t->ev, (t->nev + 1) * sizeof(*ne));
		if (!ne) {
			ret = -ENOMEM;
			goto out_close;
		}
		t->ev = ne;
		e = &ne[t->nev];
		memset(e, 0, sizeof(*e));
		e->name = strdup(f_name);
		e->desc = strdup(desc);
		if (!e->name || !e->desc) {
			free(e->name);
			free(e->desc);
			ret = -ENOMEM;
			goto out_close;
		}
		t->nev++;
		e->um = (size_t)(um - t->ums);
		e->info.code = (uint32_t)code;
		e->info.counters = counters;
		e->info.minimum = min;
		e->info.default_count = min > EV_DEFAULT_COUNT ? min : EV_DEFAULT_COUNT;
	}
	if (ferror(r.f)) {
		ret = fail(err, errlen, "%s: read error", r.path);
		goto out_close;
	}
	if (t->nev == 0)
		ret = fail(err, errlen, "%s: no events", r.path);
out_close:
	close_reader(&r);
	return ret;
}

static int load_defaults(struct ev_table *t, const char *dir, char *err, size_t errlen)
{
	struct reader r;
	char *line;
	bool have_default = false;
	int ret;

	ret = open_reader(&r, dir, t->cpu_type, "defaults", true, err, errlen);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	while ((line = next_line(&r))) {
		char *name = NULL, *count = NULL, *defev = NULL;
		const struct kv_field fields[] = {
			{ "name", &name }, { "count", &count }, { "default_event", &defev }, { NULL, NULL },
		};
		struct ev_event *e;
		uint64_t c;

		if (r.nul) {
			ret = fail(err, errlen, "%s:%u: NUL byte in line", r.path, r.line);
			goto out_close;
		}

		ret = split_fields(&r, line, fields, "default_event, name, count", err, errlen);
		if (ret)
			goto out_close;
		if (defev) {
			if (name || count) {
				ret = fail(err, errlen, "%s:%u: default_event: stands alone on its line", r.path, r.line);
				goto out_close;
			}
			if (have_default) {
				ret = fail(err, errlen, "%s:%u: default_event given twice", r.path, r.line);
				goto out_close;
			}
			e = find_event(t, defev);
			if (!e) {
				ret = fail(err, errlen, "%s:%u: default event %s is not in events", r.path, r.line, defev);
				goto out_close;
			}
			t->def = (size_t)(e - t->ev);
			have_default = true;
			continue;
		}
		if (!name || !count) {
			ret = fail(err, errlen, "%s:%u: expected \"name:NAME count:N\" or \"default_event:NAME\"",
				   r.path, r.line);
			goto out_close;
		}
		e = find_event(t, name);
		if (!e) {
			ret = fail(err, errlen, "%s:%u: event %s is not in events", r.path, r.line, name);
			goto out_close;
		}
		if (e->count_set) {
			ret = fail(err, errlen, "%s:%u: count of %s given twice", r.path, r.line, name);
			goto out_close;
		}
		if (!parse_num(count, UINT64_MAX, &c) || c < e->info.minimum) {
			ret = fail(err, errlen, "%s:%u: bad count \"%s\" for %s (at least its minimum %" PRIu64 ")",
				   r.path, r.line, count, name, e->info.minimum);
			goto out_close;
		}
		e->info.default_count = c;
		e->count_set = true;
	}
	if (ferror(r.f))
		ret = fail(err, errlen, "%s: read error", r.path);
out_close:
	close_reader(&r);
	return ret;
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
		fail(err, errlen, "no events directory");
		errno = EINVAL;
		return NULL;
	}
	if (!cpu_type)
		cpu_type = detect_cpu_type();
	if (!cpu_type_ok(cpu_type)) {
		fail(err, errlen, "bad CPU type \"%s\"", cpu_type);
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out_nomem;
	t->cpu_type = strdup(cpu_type);
	if (!t->cpu_type)
		goto out_free_table;
	ret = load_unit_masks(t, dir, err, errlen);
	if (!ret)
		ret = load_events(t, dir, err, errlen);
	if (!ret)
		ret = load_defaults(t, dir, err, errlen);
	if (ret) {
		if (ret == -ENOMEM)
			fail(err, errlen, "out of memory");
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
	fail(err, errlen, "out of memory");
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

/* ---- specifications ------------------------------------------------------- */

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
		return fail(err, errlen, "bad event spec: none given");
	memset(out, 0, sizeof(*out));
	out->kernel = out->user = true;
	for (p = s;; ) {
		const char *c = strchr(p, ':');

		if (nf == 5)
			return fail(err, errlen, "bad event spec \"%s\": too many fields (NAME[:COUNT[:UM[:KERNEL[:USER]]]])", s);
		f[nf] = p;
		fl[nf] = c ? (size_t)(c - p) : strlen(p);
		nf++;
		if (!c)
			break;
		p = c + 1;
	}
	if (fl[0] == 0)
		return fail(err, errlen, "bad event spec \"%s\": no event name (NAME[:COUNT[:UM[:KERNEL[:USER]]]])", s);
	if (fl[0] > EV_NAME_MAX)
		return fail(err, errlen, "bad event spec \"%s\": event name longer than %zu bytes", s, EV_NAME_MAX);
	memcpy(out->name, f[0], fl[0]);
	out->name[fl[0]] = '\0';
	if (!name_ok(out->name, EV_NAME_MAX))
		return fail(err, errlen, "bad event spec \"%s\": event names are letters, digits and '_'", s);

	for (size_t i = 1; i < nf; i++) {
		if (fl[i] == 0)
			continue;	/* empty: the default */
		if (fl[i] >= sizeof(tmp))
			return fail(err, errlen, "bad event spec \"%s\": field %zu too long", s, i + 1);
		memcpy(tmp, f[i], fl[i]);
		tmp[fl[i]] = '\0';
		switch (i) {
		case 1:
			if (strspn(tmp, "0123456789") != fl[i] || !parse_num(tmp, UINT64_MAX, &v))
				return fail(err, errlen, "bad event spec \"%s\": count \"%s\" is not a decimal number", s, tmp);
			out->count = v;
			break;
		case 2:
			if (!parse_num(tmp, UINT32_MAX, &v))
				return fail(err, errlen, "bad event spec \"%s\": unit mask \"%s\" is not a number (0x hex or decimal)",
					    s, tmp);
			out->unit_mask = (uint32_t)v;
			out->um_given = true;
			break;
		default:
			if (strcmp(tmp, "0") && strcmp(tmp, "1"))
				return fail(err, errlen, "bad event spec \"%s\": %s must be 0 or 1, not \"%s\"",
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
		return fail(err, errlen, "bad event spec: none given");
	e = find_event(t, spec->name);
	if (!e)
		return fail(err, errlen, "unknown event \"%s\" for CPU type %s (\"ophelp\" lists the events)",
			    spec->name, t->cpu_type);
	if (spec->count && spec->count < e->info.minimum)
		return fail(err, errlen, "count %" PRIu64 " for event %s is below its minimum %" PRIu64,
			    spec->count, spec->name, e->info.minimum);
	u = &t->ums[e->um];
	if (spec->um_given && !um_allows(u, spec->unit_mask)) {
		um_list(u, list, sizeof(list));
		return fail(err, errlen, "unit mask 0x%" PRIx32 " is not valid for event %s (%s: %s)",
			    spec->unit_mask, spec->name,
			    u->type == UM_BITMASK ? "any combination of" :
			    u->type == UM_MANDATORY ? "allowed" : "one of", list);
	}
	if (!spec->kernel && !spec->user)
		return fail(err, errlen, "event %s counts nothing: KERNEL and USER are both 0", spec->name);
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
	e = find_event(t, spec->name);
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
