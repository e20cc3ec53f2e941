#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_spec.h"
#include "util/du_sdir.h"

struct strlist {
	char **v;
	size_t n;
	bool given;
};

struct numlist {
	uint64_t *v;
	size_t n;
	bool given;
};

struct rep_spec {
	struct strlist image, lib_image, event, domain;
	char *session;		/* session:NAME, NULL: current */
	struct numlist count, unit_mask, tgid, tid, cpu;
};

enum tag_kind { TAG_STR, TAG_NUM };

struct rep_spec *rep_spec_new(void)
{
	return calloc(1, sizeof(struct rep_spec));
}

static void strlist_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

void rep_spec_free(struct rep_spec *s)
{
	if (!s)
		return;
	strlist_free(&s->image);
	strlist_free(&s->lib_image);
	strlist_free(&s->event);
	strlist_free(&s->domain);
	free(s->session);
	free(s->count.v);
	free(s->unit_mask.v);
	free(s->tgid.v);
	free(s->tid.v);
	free(s->cpu.v);
	free(s);
}

static int strlist_push(struct strlist *l, const char *s, size_t len)
{
	char **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->v[l->n] = strndup(s, len);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

static int numlist_push(struct numlist *l, uint64_t x)
{
	uint64_t *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->v[l->n++] = x;
	return 0;
}

static int parse_num(const char *s, size_t len, uint64_t *out)
{
	char buf[32];
	char *end;

	if (len == 0 || len >= sizeof(buf) || s[0] == '-' || s[0] == '+')
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	*out = strtoull(buf, &end, 0);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

/* Split @val on ',' into @str or @num; every element must be non-empty. */
static int add_values(const char *tag, const char *val, struct strlist *str,
		      struct numlist *num, char *err, size_t errlen)
{
	const char *p = val;
	int rc;

	if (!*val) {
		snprintf(err, errlen, "empty value for \"%s:\"", tag);
		return -EINVAL;
	}
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);

		if (len == 0) {
			snprintf(err, errlen, "empty element in \"%s:%s\"", tag, val);
			return -EINVAL;
		}
		if (str) {
			rc = strlist_push(str, p, len);
			str->given = true;
		} else {
			uint64_t x;

			if (parse_num(p, len, &x)) {
				snprintf(err, errlen, "\"%.*s\" is not a number in \"%s:%s\"",
					 (int)len, p, tag, val);
				return -EINVAL;
			}
			rc = numlist_push(num, x);
			num->given = true;
		}
		if (rc) {
			snprintf(err, errlen, "out of memory");
			return rc;
		}
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

/* session:NAME: a saved session (opcontrol --save), one per report. */
static int add_session(struct rep_spec *s, const char *val, char *err, size_t errlen)
{
	if (strchr(val, ',')) {
		snprintf(err, errlen, "\"session:%s\": domprof reports one session at a time "
			 "(give one name)", val);
		return -EINVAL;
	}
	if (strcmp(val, "current") && !du_sdir_session_name_ok(val)) {
		snprintf(err, errlen, "\"session:%s\" is no session name (" DU_SDIR_SESSION_NAME_RULE
			 ")", val);
		return -EINVAL;
	}
	if (s->session && strcmp(s->session, val)) {
		snprintf(err, errlen, "two sessions given (session:%s and session:%s): one at a time",
			 s->session, val);
		return -EINVAL;
	}
	free(s->session);
	s->session = strdup(val);
	if (!s->session) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

const char *rep_spec_session(const struct rep_spec *s)
{
	return s ? s->session : NULL;
}

int rep_spec_add(struct rep_spec *s, const char *arg, char *err, size_t errlen)
{
	static const struct {
		const char *tag;
		size_t str_off;
		size_t num_off;
	} tags[] = {
		{ "image", offsetof(struct rep_spec, image), 0 },
		{ "lib-image", offsetof(struct rep_spec, lib_image), 0 },
		{ "event", offsetof(struct rep_spec, event), 0 },
		{ "domain", offsetof(struct rep_spec, domain), 0 },
		{ "count", 0, offsetof(struct rep_spec, count) },
		{ "unit-mask", 0, offsetof(struct rep_spec, unit_mask) },
		{ "tgid", 0, offsetof(struct rep_spec, tgid) },
		{ "tid", 0, offsetof(struct rep_spec, tid) },
		{ "cpu", 0, offsetof(struct rep_spec, cpu) },
	};
	const char *colon = strchr(arg, ':');
	size_t taglen;

	if (!*arg) {
		snprintf(err, errlen, "empty profile specification");
		return -EINVAL;
	}
	/* A bare word is an image name, as in OProfile. */
	if (!colon)
		return add_values("image", arg, &s->image, NULL, err, errlen);
	taglen = colon - arg;
	if (taglen == 7 && !strncmp(arg, "session", 7))
		return add_session(s, colon + 1, err, errlen);
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		char *base = (char *)s;

		if (strlen(tags[i].tag) != taglen || strncmp(tags[i].tag, arg, taglen))
			continue;
		if (!tags[i].num_off)	/* a string tag */
			return add_values(tags[i].tag, colon + 1,
					  (struct strlist *)(base + tags[i].str_off),
					  NULL, err, errlen);
		return add_values(tags[i].tag, colon + 1, NULL,
				  (struct numlist *)(base + tags[i].num_off), err, errlen);
	}
	snprintf(err, errlen, "unknown profile specification tag \"%.*s\" in \"%s\" "
		 "(known: session image lib-image event count unit-mask tgid tid cpu domain)",
		 (int)taglen, arg, arg);
	return -EINVAL;
}

int rep_spec_add_domains(struct rep_spec *s, const char *list, char *err, size_t errlen)
{
	return add_values("domain", list, &s->domain, NULL, err, errlen);
}

static bool pattern_match(const char *pat, const struct sfn_image *img)
{
	const char *path = img->name;
	const char *base;

	if (!fnmatch(pat, path, 0))
		return true;
	if (strchr(pat, '/'))
		return false;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !fnmatch(pat, base, 0);
}

static bool strlist_match_image(const struct strlist *l, const struct sfn_image *img)
{
	for (size_t i = 0; i < l->n; i++)
		if (pattern_match(l->v[i], img))
			return true;
	return false;
}

static bool strlist_has(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], s))
			return true;
	return false;
}

static bool numlist_ok(const struct numlist *l, int64_t x, bool all_allowed)
{
	if (!l->given)
		return true;
	if (x == SFN_ALL && !all_allowed)
		return false;
	for (size_t i = 0; i < l->n; i++)
		if ((uint64_t)x == l->v[i])
			return true;
	return false;
}

bool rep_spec_domain_ok(const struct rep_spec *s, const char *domain)
{
	if (!s->domain.given)
		return true;
	return strlist_has(&s->domain, domain ? domain : "host");
}

bool rep_spec_domain_dir_ok(const struct rep_spec *s, const char *comp)
{
	char esc[SFN_MAX_PATH + 1];
	size_t len = strlen(comp);

	if (!s->domain.given)
		return true;
	for (size_t i = 0; i < s->domain.n; i++) {
		const char *d = s->domain.v[i];

		/* a name that cannot be escaped: keep the walk whole */
		if (sfn_escape_component(d, strlen(d), esc, sizeof(esc)) < 0)
			return true;
		if (!strncmp(esc, comp, len) && (esc[len] == '\0' || esc[len] == '/'))
			return true;
	}
	return false;
}

bool rep_spec_match(const struct rep_spec *s, const struct sfn_name *n)
{
	if (!rep_spec_domain_ok(s, n->domain))
		return false;
	if (s->image.given && !strlist_match_image(&s->image, &n->image) &&
	    !strlist_match_image(&s->image, &n->dep))
		return false;
	if (s->lib_image.given && !strlist_match_image(&s->lib_image, &n->dep))
		return false;
	if (s->event.given && !strlist_has(&s->event, n->event))
		return false;
	if (!numlist_ok(&s->count, (int64_t)n->count, false))
		return false;
	if (!numlist_ok(&s->unit_mask, n->unit_mask, false))
		return false;
	return numlist_ok(&s->tgid, n->tgid, false) && numlist_ok(&s->tid, n->tid, false) &&
	       numlist_ok(&s->cpu, n->cpu, false);
}
