/*
 * Reading an events directory (events/README.md): the unit_masks, events
 * and defaults files of one CPU type into a table, every line checked,
 * every error a message naming the file and line.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ev_int.h"

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
			return ev_fail(err, errlen, "%s:%u: expected key:value, got \"%s\"", r->path, r->line, tok);
		for (f = fields; f->key && strcmp(k, f->key); f++)
			;
		if (!f->key)
			return ev_fail(err, errlen, "%s:%u: unknown field \"%s\" (allowed: %s)",
				    r->path, r->line, k, allowed);
		if (*f->slot)
			return ev_fail(err, errlen, "%s:%u: field \"%s\" given twice", r->path, r->line, k);
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

/* A finished set must be usable: values present, default allowed. */
static int um_close(const struct reader *r, const struct ev_um *u, char *err, size_t errlen)
{
	if (!u)
		return 0;
	if (u->n == 0)
		return ev_fail(err, errlen, "%s:%u: unit mask set %s has no values", r->path, u->line, u->name);
	if (u->type == UM_MANDATORY && u->n != 1)
		return ev_fail(err, errlen, "%s:%u: mandatory unit mask set %s must have exactly one value",
			    r->path, u->line, u->name);
	if (!ev_um_allows(u, u->def))
		return ev_fail(err, errlen, "%s:%u: default 0x%" PRIx32 " of unit mask set %s is not one of its values",
			    r->path, u->line, u->def, u->name);
	return 0;
}

/* A value of set @cur from @line, "  VALUE description". */
static int um_add_value(const struct reader *r, struct ev_um *cur, char *line, char *err,
			size_t errlen)
{
	struct ev_um_value *nv;
	char *p = line + strspn(line, " \t"), *sp;
	uint64_t v;

	if (!cur)
		return ev_fail(err, errlen, "%s:%u: unit mask value outside a set", r->path, r->line);
	sp = p + strcspn(p, " \t");
	if (*sp)
		*sp++ = '\0';
	sp += strspn(sp, " \t");
	if (!ev_parse_num(p, UINT32_MAX, &v) || !*sp)
		return ev_fail(err, errlen, "%s:%u: expected \"VALUE description\"", r->path, r->line);
	for (size_t i = 0; i < cur->n; i++) {
		if (cur->v[i].value == v)
			return ev_fail(err, errlen, "%s:%u: duplicate value 0x%" PRIx64 " in set %s",
				       r->path, r->line, v, cur->name);
	}
	nv = realloc(cur->v, (cur->n + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	cur->v = nv;
	nv[cur->n].value = (uint32_t)v;
	nv[cur->n].desc = strdup(sp);
	if (!nv[cur->n].desc)
		return -ENOMEM;
	cur->n++;
	return 0;
}

/* A new set of @t from @line, "name:NAME type:TYPE default:VALUE"; *@cur
 * is where its values go. */
static int um_add_set(struct ev_table *t, const struct reader *r, char *line, struct ev_um **cur,
		      char *err, size_t errlen)
{
	char *name = NULL, *type = NULL, *def = NULL;
	const struct kv_field fields[] = {
		{ "name", &name }, { "type", &type }, { "default", &def }, { NULL, NULL },
	};
	struct ev_um *nu, *u;
	uint64_t dv;
	enum um_type ty;
	int ret;

	ret = split_fields(r, line, fields, "name, type, default", err, errlen);
	if (ret)
		return ret;
	if (!name || !type || !def)
		return ev_fail(err, errlen, "%s:%u: a unit mask set needs name:, type: and default:",
			       r->path, r->line);
	if (!ev_name_ok(name, 64))
		return ev_fail(err, errlen, "%s:%u: bad unit mask set name \"%s\"", r->path, r->line, name);
	if (find_um(t, name))
		return ev_fail(err, errlen, "%s:%u: unit mask set %s defined twice", r->path, r->line, name);
	if (!strcmp(type, "mandatory"))
		ty = UM_MANDATORY;
	else if (!strcmp(type, "exclusive"))
		ty = UM_EXCLUSIVE;
	else if (!strcmp(type, "bitmask"))
		ty = UM_BITMASK;
	else
		return ev_fail(err, errlen, "%s:%u: unknown unit mask type \"%s\" (allowed: mandatory, exclusive, bitmask)",
			       r->path, r->line, type);
	if (!ev_parse_num(def, UINT32_MAX, &dv))
		return ev_fail(err, errlen, "%s:%u: bad default \"%s\"", r->path, r->line, def);
	nu = realloc(t->ums, (t->nums + 1) * sizeof(*nu));
	if (!nu)
		return -ENOMEM;
	t->ums = nu;
	u = *cur = &nu[t->nums];
	memset(u, 0, sizeof(*u));
	u->name = strdup(name);
	if (!u->name)
		return -ENOMEM;
	t->nums++;
	u->type = ty;
	u->def = (uint32_t)dv;
	u->line = r->line;
	return 0;
}

int ev_load_unit_masks(struct ev_table *t, const char *dir, char *err, size_t errlen)
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
			ret = ev_fail(err, errlen, "%s:%u: NUL byte in line", r.path, r.line);
			goto out_close;
		}
		if (line[0] == ' ' || line[0] == '\t') {
			/* a value of the current set: "VALUE description" */
			ret = um_add_value(&r, cur, line, err, errlen);
		} else {
			/* a new set: name:NAME type:TYPE default:VALUE */
			ret = um_close(&r, cur, err, errlen);
			if (!ret)
				ret = um_add_set(t, &r, line, &cur, err, errlen);
		}
		if (ret)
			goto out_close;
	}
	if (ferror(r.f)) {
		ret = ev_fail(err, errlen, "%s: read error", r.path);
		goto out_close;
	}
	ret = um_close(&r, cur, err, errlen);
	if (!ret && t->nums == 0)
		ret = ev_fail(err, errlen, "%s: no unit mask sets", r.path);
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

/* The parts of an events line, "FIELDS : description". */
struct ev_line {
	char *event, *counters, *um, *min, *name;
	char *desc;
};

/* @line cut into @l (zeroed by the caller): every field present, a
 * description. */
static int event_split(const struct reader *r, char *line, struct ev_line *l, char *err,
		       size_t errlen)
{
	char *colon = strstr(line, " : ");
	const struct kv_field fields[] = {
		{ "event", &l->event }, { "counters", &l->counters }, { "um", &l->um },
		{ "minimum", &l->min }, { "name", &l->name }, { NULL, NULL },
	};
	int ret;

	if (!colon)
		return ev_fail(err, errlen, "%s:%u: expected \"fields : description\"", r->path, r->line);
	*colon = '\0';
	l->desc = colon + 3;
	l->desc += strspn(l->desc, " \t");
	if (!*l->desc)
		return ev_fail(err, errlen, "%s:%u: empty description", r->path, r->line);
	ret = split_fields(r, line, fields, "event, counters, um, minimum, name", err, errlen);
	if (ret)
		return ret;
	if (!l->event || !l->counters || !l->um || !l->min || !l->name)
		return ev_fail(err, errlen, "%s:%u: an event needs event:, counters:, um:, minimum: and name:",
			       r->path, r->line);
	return 0;
}

/* The event of line @l, checked, appended to @t. */
static int event_add(struct ev_table *t, const struct reader *r, const struct ev_line *l,
		     char *err, size_t errlen)
{
	struct ev_event *ne, *e;
	struct ev_um *um;
	uint64_t code, min;
	uint32_t counters;

	if (!ev_parse_num(l->event, 0xff, &code))
		return ev_fail(err, errlen, "%s:%u: bad event code \"%s\" (0..0xff)", r->path, r->line, l->event);
	if (parse_counters(l->counters, &counters))
		return ev_fail(err, errlen, "%s:%u: bad counters \"%s\" (comma list of 0..31)",
			       r->path, r->line, l->counters);
	if (!ev_parse_num(l->min, UINT64_MAX, &min) || min == 0)
		return ev_fail(err, errlen, "%s:%u: bad minimum \"%s\" (a count of at least 1)",
			       r->path, r->line, l->min);
	if (!ev_name_ok(l->name, EV_NAME_MAX))
		return ev_fail(err, errlen, "%s:%u: bad event name \"%s\" ([A-Za-z0-9_], at most %zu bytes)",
			       r->path, r->line, l->name, EV_NAME_MAX);
	if (ev_find_event(t, l->name))
		return ev_fail(err, errlen, "%s:%u: event %s defined twice", r->path, r->line, l->name);
	um = find_um(t, l->um);
	if (!um)
		return ev_fail(err, errlen, "%s:%u: event %s uses unit mask set \"%s\", which unit_masks does not define",
			       r->path, r->line, l->name, l->um);
	ne = realloc(t->ev, (t->nev + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	t->ev = ne;
	e = &ne[t->nev];
	memset(e, 0, sizeof(*e));
	e->name = strdup(l->name);
	e->desc = strdup(l->desc);
	if (!e->name || !e->desc) {
		free(e->name);
		free(e->desc);
		return -ENOMEM;
	}
	t->nev++;
	e->um = (size_t)(um - t->ums);
	e->info.code = (uint32_t)code;
	e->info.counters = counters;
	e->info.minimum = min;
	e->info.default_count = min > EV_DEFAULT_COUNT ? min : EV_DEFAULT_COUNT;
	return 0;
}

int ev_load_events(struct ev_table *t, const char *dir, char *err, size_t errlen)
{
	struct reader r;
	char *line;
	int ret;

	ret = open_reader(&r, dir, t->cpu_type, "events", false, err, errlen);
	if (ret)
		return ret;
	while ((line = next_line(&r))) {
		struct ev_line l = { 0 };

		if (r.nul) {
			ret = ev_fail(err, errlen, "%s:%u: NUL byte in line", r.path, r.line);
			goto out_close;
		}
		ret = event_split(&r, line, &l, err, errlen);
		if (!ret)
			ret = event_add(t, &r, &l, err, errlen);
		if (ret)
			goto out_close;
	}
	if (ferror(r.f)) {
		ret = ev_fail(err, errlen, "%s: read error", r.path);
		goto out_close;
	}
	if (t->nev == 0)
		ret = ev_fail(err, errlen, "%s: no events", r.path);
out_close:
	close_reader(&r);
	return ret;
}

int ev_load_defaults(struct ev_table *t, const char *dir, char *err, size_t errlen)
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
			ret = ev_fail(err, errlen, "%s:%u: NUL byte in line", r.path, r.line);
			goto out_close;
		}

		ret = split_fields(&r, line, fields, "default_event, name, count", err, errlen);
		if (ret)
			goto out_close;
		if (defev) {
			if (name || count) {
				ret = ev_fail(err, errlen, "%s:%u: default_event: stands alone on its line", r.path, r.line);
				goto out_close;
			}
			if (have_default) {
				ret = ev_fail(err, errlen, "%s:%u: default_event given twice", r.path, r.line);
				goto out_close;
			}
			e = ev_find_event(t, defev);
			if (!e) {
				ret = ev_fail(err, errlen, "%s:%u: default event %s is not in events", r.path, r.line, defev);
				goto out_close;
			}
			t->def = (size_t)(e - t->ev);
			have_default = true;
			continue;
		}
		if (!name || !count) {
			ret = ev_fail(err, errlen, "%s:%u: expected \"name:NAME count:N\" or \"default_event:NAME\"",
				   r.path, r.line);
			goto out_close;
		}
		e = ev_find_event(t, name);
		if (!e) {
			ret = ev_fail(err, errlen, "%s:%u: event %s is not in events", r.path, r.line, name);
			goto out_close;
		}
		if (e->count_set) {
			ret = ev_fail(err, errlen, "%s:%u: count of %s given twice", r.path, r.line, name);
			goto out_close;
		}
		if (!ev_parse_num(count, UINT64_MAX, &c) || c < e->info.minimum) {
			ret = ev_fail(err, errlen, "%s:%u: bad count \"%s\" for %s (at least its minimum %" PRIu64 ")",
				   r.path, r.line, count, name, e->info.minimum);
			goto out_close;
		}
		e->info.default_count = c;
		e->count_set = true;
	}
	if (ferror(r.f))
		ret = ev_fail(err, errlen, "%s: read error", r.path);
out_close:
	close_reader(&r);
	return ret;
}
