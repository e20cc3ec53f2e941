/*
 * Sample file names: sfn_mangle writes them, sfn_parse reads them back.
 * doc/sample-files.md is the grammar; this file follows it literally.
 *
 * The parser accepts exactly the strings sfn_mangle can produce (one
 * spelling per name), so two different files on disk can never mean the
 * same sample file, and a name found on disk that the parser accepts can
 * be re-created byte for byte from what it returned.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sfname/sfname.h"

/* Longest path component written: well below NAME_MAX (255) everywhere. */
#define SFN_COMP_MAX 200
/* Longest event name: keeps the last component below SFN_COMP_MAX. */
#define SFN_EVENT_MAX 64

static const char hexdig[] = "0123456789ABCDEF";

/* Bytes written as themselves inside a component; everything else is %XX. */
static bool is_safe(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '%' && c != '{' && c != '}' && c != '/';
}

/*
 * Output: counts the full length even once @buf is exhausted, so the
 * caller learns whether the name is too long rather than getting a
 * silently truncated one.
 */
struct sfn_out {
	char *buf;
	size_t size;
	size_t len;
	size_t comp;	/* bytes in the current physical component */
};

static void out_raw(struct sfn_out *o, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (o->len + 1 < o->size)
			o->buf[o->len] = s[i];
		o->len++;
	}
}

/* Start a new logical component (one or more physical ones). */
static void out_begin(struct sfn_out *o)
{
	if (o->len)
		out_raw(o, "/", 1);
	o->comp = 0;
}

/*
 * Append one escape unit (a safe byte or a %XX triple) to the current
 * logical component, opening a continuation component first when the
 * unit would not fit: the greedy split the parser checks for.
 */
static void out_unit(struct sfn_out *o, const char *u, size_t n)
{
	if (o->comp + n > SFN_COMP_MAX) {
		out_raw(o, "/%+", 3);
		o->comp = 2;
	}
	out_raw(o, u, n);
	o->comp += n;
}

static void out_byte(struct sfn_out *o, unsigned char c)
{
	char t[3];

	if (is_safe(c)) {
		t[0] = (char)c;
		out_unit(o, t, 1);
		return;
	}
	t[0] = '%';
	t[1] = hexdig[c >> 4];
	t[2] = hexdig[c & 15];
	out_unit(o, t, 3);
}

/* A plain component: "", "." and ".." get their reserved spellings. */
static void out_plain(struct sfn_out *o, const char *s, size_t n)
{
	size_t i;

	out_begin(o);
	if (n == 0) {
		out_unit(o, "%00", 3);
		return;
	}
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
		for (i = 0; i < n; i++)
			out_unit(o, "%2E", 3);
		return;
	}
	for (i = 0; i < n; i++)
		out_byte(o, (unsigned char)s[i]);
}

static void out_token(struct sfn_out *o, const char *tok)
{
	out_begin(o);
	out_unit(o, tok, strlen(tok));
}

static int out_image(struct sfn_out *o, const struct sfn_image *im)
{
	const char *p, *slash;
	size_t i;

	if (!im->name)
		return -EINVAL;
	switch (im->kind) {
	case SFN_ROOT:
		if (im->name[0] != '/')
			return -EINVAL;
		out_token(o, "{root}");
		/* Every '/' after the first starts a component, even an empty one. */
		p = im->name + 1;
		for (;;) {
			slash = strchr(p, '/');
			if (!slash) {
				out_plain(o, p, strlen(p));
				break;
			}
			out_plain(o, p, (size_t)(slash - p));
			p = slash + 1;
		}
		return 0;
	case SFN_KERN:
		out_token(o, "{kern}");
		out_plain(o, im->name, strlen(im->name));
		return 0;
	case SFN_ANON:
		out_begin(o);
		out_unit(o, "{anon:", 6);
		for (i = 0; im->name[i]; i++)
			out_byte(o, (unsigned char)im->name[i]);
		out_unit(o, "}", 1);
		return 0;
	}
	return -EINVAL;
}

static bool event_ok(const char *ev)
{
	size_t i;

	for (i = 0; ev[i]; i++) {
		char c = ev[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return i > 0 && i <= SFN_EVENT_MAX;
}

static size_t fmt_field(char *p, int64_t v)
{
	if (v == SFN_ALL) {
		memcpy(p, "all", 3);
		return 3;
	}
	return (size_t)sprintf(p, "%" PRId64, v);
}

static int out_finish(struct sfn_out *o)
{
	if (o->len > SFN_MAX_PATH || o->len + 1 > o->size) {
		if (o->size)
			o->buf[0] = '\0';
		return -ENAMETOOLONG;
	}
	o->buf[o->len] = '\0';
	return (int)o->len;
}

int sfn_mangle(const struct sfn_name *n, char *buf, size_t size)
{
	struct sfn_out o = { .buf = buf, .size = size };
	char last[SFN_EVENT_MAX + 100];
	size_t l;
	int err;

	if (!n || !buf || !n->event || !event_ok(n->event) ||
	    (n->vmm && !n->domain) ||
	    n->tgid < SFN_ALL || n->tid < SFN_ALL || n->cpu < SFN_ALL)
		return -EINVAL;
	if (n->domain) {
		out_token(&o, "{domain}");
		out_plain(&o, n->domain, strlen(n->domain));
		if (n->vmm)
			out_token(&o, "{vmm}");
	}
	err = out_image(&o, &n->image);
	if (err)
		return err;
	out_token(&o, "{dep}");
	err = out_image(&o, &n->dep);
	if (err)
		return err;
	if (n->cg.name) {
		out_token(&o, "{cg}");
		err = out_image(&o, &n->cg);
		if (err)
			return err;
	}

	l = (size_t)sprintf(last, "%s.%" PRIu64 ".", n->event, n->count);
	if (n->unit_mask)
		l += (size_t)sprintf(last + l, "0x%" PRIx32, n->unit_mask);
	else
		last[l++] = '0';
	last[l++] = '.';
	l += fmt_field(last + l, n->tgid);
	last[l++] = '.';
	l += fmt_field(last + l, n->tid);
	last[l++] = '.';
	l += fmt_field(last + l, n->cpu);
	/* The event component is never split: it is short by construction. */
	out_begin(&o);
	out_raw(&o, last, l);
	return out_finish(&o);
}

int sfn_mangle_image(const struct sfn_image *im, char *buf, size_t size)
{
	struct sfn_out o = { .buf = buf, .size = size };
	int err;

	if (!im || !buf)
		return -EINVAL;
	err = out_image(&o, im);
	if (err)
		return err;
	return out_finish(&o);
}

/* Through the whole-name parser: the image followed by a fixed tail, so
 * that exactly what sfn_mangle accepts as an image is accepted here. */
int sfn_parse_image(const char *s, struct sfn_image *out)
{
	static const char tail[] = "/{dep}/{anon:}/X.0.0.all.all.all";
	struct sfn_name n;
	size_t len;
	char *path;
	int err;

	memset(out, 0, sizeof(*out));
	if (!s)
		return -EINVAL;
	len = strnlen(s, SFN_MAX_PATH + 1);
	if (!len || len > SFN_MAX_PATH)
		return -EINVAL;
	path = malloc(len + sizeof(tail));
	if (!path)
		return -ENOMEM;
	memcpy(path, s, len);
	memcpy(path + len, tail, sizeof(tail));
	err = sfn_parse(path, &n);
	free(path);
	if (err)
		return err;
	if (n.domain) {
		sfn_name_release(&n);
		return -EINVAL;
	}
	*out = n.image;
	n.image.name = NULL;
	sfn_name_release(&n);
	return 0;
}

int sfn_escape_component(const char *s, size_t len, char *buf, size_t size)
{
	struct sfn_out o = { .buf = buf, .size = size };

	if (!buf || (!s && len) || (len && memchr(s, '\0', len)))
		return -EINVAL;
	out_plain(&o, s, len);
	return out_finish(&o);
}

/* ---- parsing ------------------------------------------------------------ */

/* A logical component: physical pieces joined, continuation marks removed. */
struct sfn_comp {
	const char *s;	/* points into the joined copy */
	size_t len;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Check one physical piece (without its continuation mark): only safe
 * bytes and %XX triples with uppercase hex, so no triple straddles two
 * pieces.
 */
static bool piece_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			if (n - i < 3)
				return false;
			if (hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
				return false;
			i += 2;
		} else if (!is_safe(c) && c != '{' && c != '}') {
			return false;
		}
	}
	return true;
}

/*
 * Decode the escaped bytes @s[0..n) into a new string.  Each triple must
 * stand for a byte that needed escaping, so the spelling is unique.
 * @plain: a plain component, where "%00", "%2E" and "%2E%2E" are the
 * reserved spellings of "", "." and "..".  @in_path: a component of a
 * {root} path, which cannot hold a '/' (mangle splits the path there).
 */
static int decode(const char *s, size_t n, bool plain, bool in_path, char **out)
{
	char *d;
	size_t i, k = 0;

	*out = NULL;
	if (plain && n == 3 && !memcmp(s, "%00", 3)) {
		d = strdup("");
		goto done;
	}
	if (plain && ((n == 3 && !memcmp(s, "%2E", 3)) ||
		      (n == 6 && !memcmp(s, "%2E%2E", 6)))) {
		d = strdup(n == 3 ? "." : "..");
		goto done;
	}
	if (n == 0 && plain)
		return -EINVAL;
	d = malloc(n + 1);
	if (!d)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			int hi, lo;

			if (n - i < 3)
				goto bad;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				goto bad;
			c = (unsigned char)(hi << 4 | lo);
			if (c == 0 || is_safe(c) || (in_path && c == '/'))
				goto bad;
			i += 2;
		} else if (!is_safe(c)) {
			goto bad;
		}
		d[k++] = (char)c;
	}
	d[k] = '\0';
done:
	if (!d)
		return -ENOMEM;
	*out = d;
	return 0;
bad:
	free(d);
	return -EINVAL;
}

static bool comp_is(const struct sfn_comp *c, const char *tok)
{
	return c->len == strlen(tok) && !memcmp(c->s, tok, c->len);
}

static bool comp_is_token(const struct sfn_comp *c)
{
	return c->len && c->s[0] == '{';
}

/* Canonical decimal: no sign, no leading zero, no overflow. */
static bool parse_u64(const char *s, size_t n, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
		return false;
	for (i = 0; i < n; i++) {
		unsigned d;

		if (s[i] < '0' || s[i] > '9')
			return false;
		d = (unsigned)(s[i] - '0');
		if (x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return true;
}

static bool parse_field(const char *s, size_t n, int64_t *v)
{
	uint64_t x;

	if (n == 3 && !memcmp(s, "all", 3)) {
		*v = SFN_ALL;
		return true;
	}
	if (!parse_u64(s, n, INT64_MAX, &x))
		return false;
	*v = (int64_t)x;
	return true;
}

static bool parse_um(const char *s, size_t n, uint32_t *v)
{
	uint32_t x = 0;
	size_t i;

	if (n == 1 && s[0] == '0') {
		*v = 0;
		return true;
	}
	if (n < 3 || n > 10 || s[0] != '0' || s[1] != 'x' || s[2] == '0')
		return false;
	for (i = 2; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			x = x << 4 | (uint32_t)(s[i] - '0');
		else if (s[i] >= 'a' && s[i] <= 'f')
			x = x << 4 | (uint32_t)(s[i] - 'a' + 10);
		else
			return false;
	}
	*v = x;
	return true;
}

static int parse_event(const char *s, struct sfn_name *out)
{
	const char *f[6];
	size_t fl[6];
	const char *p = s;
	int i;

	for (i = 0; i < 6; i++) {
		const char *dot = strchr(p, '.');

		f[i] = p;
		if (i < 5) {
			if (!dot)
				return -EINVAL;
			fl[i] = (size_t)(dot - p);
			p = dot + 1;
		} else {
			if (dot)
				return -EINVAL;
			fl[i] = strlen(p);
		}
	}
	if (fl[0] == 0 || fl[0] > SFN_EVENT_MAX)
		return -EINVAL;
	for (size_t k = 0; k < fl[0]; k++) {
		char c = f[0][k];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return -EINVAL;
	}
	if (!parse_u64(f[1], fl[1], UINT64_MAX, &out->count) ||
	    !parse_um(f[2], fl[2], &out->unit_mask) ||
	    !parse_field(f[3], fl[3], &out->tgid) ||
	    !parse_field(f[4], fl[4], &out->tid) ||
	    !parse_field(f[5], fl[5], &out->cpu))
		return -EINVAL;
	out->event = strndup(f[0], fl[0]);
	return out->event ? 0 : -ENOMEM;
}

/*
 * One image starting at @c[*i]; a {root} path runs up to the token @stop
 * ("{dep}" for the image, which must follow), or for the dep up to the end
 * or an optional "{cg}" (@stop NULL: the call-graph image, up to the end).
 */
static int parse_image(const struct sfn_comp *c, size_t nc, size_t *i, const char *stop,
		       bool stop_optional, struct sfn_image *im)
{
	size_t k, first, last, total;
	char *path = NULL, *part;
	int err;

	if (*i >= nc)
		return -EINVAL;
	if (comp_is(&c[*i], "{kern}")) {
		if (*i + 1 >= nc || comp_is_token(&c[*i + 1]))
			return -EINVAL;
		err = decode(c[*i + 1].s, c[*i + 1].len, true, false, &im->name);
		if (err)
			return err;
		im->kind = SFN_KERN;
		*i += 2;
		return 0;
	}
	if (c[*i].len >= 7 && !memcmp(c[*i].s, "{anon:", 6) && c[*i].s[c[*i].len - 1] == '}') {
		err = decode(c[*i].s + 6, c[*i].len - 7, false, false, &im->name);
		if (err)
			return err;
		im->kind = SFN_ANON;
		*i += 1;
		return 0;
	}
	if (!comp_is(&c[*i], "{root}"))
		return -EINVAL;
	first = *i + 1;
	for (last = first; last < nc && !comp_is_token(&c[last]); last++)
		;
	if (last == first)
		return -EINVAL;
	if (last != nc && !(stop && comp_is(&c[last], stop)))
		return -EINVAL;
	if (last == nc && stop && !stop_optional)
		return -EINVAL;
	total = 0;
	for (k = first; k < last; k++)
		total += c[k].len + 1;
	/* Decoding only shrinks, so the escaped size bounds the path. */
	path = malloc(total + 1);
	if (!path)
		return -ENOMEM;
	total = 0;
	for (k = first; k < last; k++) {
		size_t pl;

		err = decode(c[k].s, c[k].len, true, true, &part);
		if (err)
			goto out_free_path;
		pl = strlen(part);
		path[total++] = '/';
		memcpy(path + total, part, pl);
		total += pl;
		free(part);
	}
	path[total] = '\0';
	im->kind = SFN_ROOT;
	im->name = path;
	*i = last;
	return 0;

out_free_path:
	free(path);
	return err;
}

static bool is_cont(const char *s, size_t n)
{
	return n >= 2 && s[0] == '%' && s[1] == '+';
}

/*
 * Walk the physical components of @path (@plen bytes): all but the last
 * are escaped text (pieces of logical components), joined into @copy as
 * they come and listed in @comps (*@ncp of them); the last is the event,
 * parsed into @out.  0 or -EINVAL.
 */
static int split_path(const char *path, size_t plen, char *copy, struct sfn_comp *comps,
		      size_t *ncp, struct sfn_name *out)
{
	size_t nc = 0, start = 0, w = 0, prev_len = 0;

	for (;;) {
		const char *s = path + start;
		const char *slash = memchr(s, '/', plen - start);
		size_t n = slash ? (size_t)(slash - s) : plen - start;

		if (n == 0 || n > SFN_COMP_MAX ||
		    (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return -EINVAL;
		if (!slash) {
			*ncp = nc;
			return parse_event(s, out);
		}
		if (is_cont(s, n)) {
			/*
			 * A continuation: the previous piece must have been
			 * full, i.e. this piece's first unit did not fit it.
			 */
			size_t unit;

			if (nc == 0 || n == 2 || !piece_ok(s + 2, n - 2))
				return -EINVAL;
			unit = s[2] == '%' ? 3 : 1;
			if (prev_len + unit <= SFN_COMP_MAX)
				return -EINVAL;
			memcpy(copy + w, s + 2, n - 2);
			w += n - 2;
			comps[nc - 1].len += n - 2;
		} else {
			if (!piece_ok(s, n))
				return -EINVAL;
			comps[nc].s = copy + w;
			comps[nc].len = n;
			memcpy(copy + w, s, n);
			w += n;
			nc++;
		}
		prev_len = n;
		start += n + 1;
	}
}

/* The logical components @comps[0..@nc) into @out: [{domain}/NAME[/{vmm}]/]
 * IMAGE/{dep}/DEP[/{cg}/CG].  0 or -EINVAL. */
static int parse_comps(const struct sfn_comp *comps, size_t nc, struct sfn_name *out)
{
	size_t i = 0;
	int err;

	if (nc && comp_is(&comps[0], "{domain}")) {
		if (nc < 2 || comp_is_token(&comps[1]))
			return -EINVAL;
		err = decode(comps[1].s, comps[1].len, true, false, &out->domain);
		if (err)
			return err;
		i = 2;
		if (i < nc && comp_is(&comps[i], "{vmm}")) {
			out->vmm = true;
			i++;
		}
	}
	err = parse_image(comps, nc, &i, "{dep}", false, &out->image);
	if (err)
		return err;
	if (i >= nc || !comp_is(&comps[i], "{dep}"))
		return -EINVAL;
	i++;
	err = parse_image(comps, nc, &i, "{cg}", true, &out->dep);
	if (err)
		return err;
	if (i < nc && comp_is(&comps[i], "{cg}")) {
		i++;
		err = parse_image(comps, nc, &i, NULL, false, &out->cg);
		if (err)
			return err;
	}
	return i != nc ? -EINVAL : 0;
}

int sfn_parse(const char *path, struct sfn_name *out)
{
	struct sfn_comp *comps = NULL;
	char *copy = NULL;
	size_t plen, nc = 0, i;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (!path)
		return -EINVAL;
	plen = strnlen(path, SFN_MAX_PATH + 1);
	if (plen == 0 || plen > SFN_MAX_PATH)
		return -EINVAL;
	for (i = 0; i < plen; i++)
		if ((unsigned char)path[i] <= 0x20 || (unsigned char)path[i] >= 0x7f)
			return -EINVAL;

	/* Each logical component needs at least 2 bytes of path ("x/"). */
	comps = calloc(plen / 2 + 1, sizeof(*comps));
	copy = malloc(plen + 1);
	if (!comps || !copy) {
		err = -ENOMEM;
		goto out_free;
	}
	err = split_path(path, plen, copy, comps, &nc, out);
	if (!err)
		err = parse_comps(comps, nc, out);
out_free:
	if (err)
		sfn_name_release(out);
	free(copy);
	free(comps);
	return err;
}

void sfn_name_release(struct sfn_name *n)
{
	if (!n)
		return;
	free(n->domain);
	free(n->image.name);
	free(n->dep.name);
	free(n->cg.name);
	free(n->event);
	memset(n, 0, sizeof(*n));
}
