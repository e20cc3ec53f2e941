#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dom_cmdline.h"
#include "util/du_hex.h"

/* One argument: a span of the cmdline buffer, never NUL-terminated. */
struct arg {
	const char *p;
	size_t len;
};

/* Walks the arguments of a NUL-separated argv buffer. */
struct argv_iter {
	const char *p;
	const char *end;
	bool truncated;
};

static bool argv_next(struct argv_iter *it, struct arg *a)
{
	const char *nul;

	if (it->p >= it->end)
		return false;
	nul = memchr(it->p, '\0', (size_t)(it->end - it->p));
	if (!nul) {
		/* An unterminated tail of a truncated read is only a prefix
		 * of the real argument: acting on it could misread a value. */
		if (it->truncated)
			return false;
		nul = it->end;
	}
	a->p = it->p;
	a->len = (size_t)(nul - it->p);
	it->p = nul < it->end ? nul + 1 : it->end;
	return true;
}

/* QEMU accepts both -opt and --opt. */
static bool arg_is_opt(const struct arg *a, const char *opt)
{
	struct arg b = *a;

	if (b.len >= 2 && b.p[0] == '-' && b.p[1] == '-') {
		b.p++;
		b.len--;
	}
	return b.len >= 1 && b.p[0] == '-' && b.len - 1 == strlen(opt) &&
	       memcmp(b.p + 1, opt, b.len - 1) == 0;
}

static char *span_dup(const char *p, size_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		return NULL;
	memcpy(s, p, len);
	s[len] = '\0';
	return s;
}

/* ---- QEMU keyval / QemuOpts: "implied,key=val,key=va,,l" -------------- */

/*
 * Find @key in a keyval string and return its value unescaped (",," is a
 * literal comma), allocated; the first element without '=' is the value of
 * @implied (may be NULL).  The last occurrence wins, as in QEMU.
 * Returns 1 with *@out set, 0 if absent, -ENOMEM.
 */
static int kv_get(const char *s, size_t len, const char *implied,
		  const char *key, char **out)
{
	const char *end = s + len;
	const char *p = s;
	char *val = NULL;
	char *buf;
	bool first = true;
	int ret = 0;

	*out = NULL;
	/* Unescaped values are never longer than the input. */
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	while (p < end) {
		size_t n = 0;
		const char *eq = NULL;
		const char *k, *v;
		size_t klen;

		/* Unescape one element into buf, remembering where '=' was. */
		while (p < end) {
			if (*p == ',') {
				if (p + 1 < end && p[1] == ',') {
					buf[n++] = ',';
					p += 2;
					continue;
				}
				p++;
				break;
			}
			if (*p == '=' && !eq)
				eq = buf + n;
			buf[n++] = *p++;
		}
		buf[n] = '\0';
		if (!eq) {
			if (!first || !implied)
				goto next;
			k = implied;
			klen = strlen(implied);
			v = buf;
		} else {
			k = buf;
			klen = (size_t)(eq - buf);
			v = eq + 1;
		}
		if (klen == strlen(key) && memcmp(k, key, klen) == 0) {
			char *nv = span_dup(v, strlen(v));

			if (!nv) {
				ret = -ENOMEM;
				goto out_free;
			}
			free(val);
			val = nv;
		}
next:
		first = false;
	}
	if (val) {
		*out = val;
		val = NULL;
		ret = 1;
	}
out_free:
	free(val);
	free(buf);
	return ret;
}

/* ---- minimal JSON, for libvirt's -device {"driver":...} --------------- */

struct jcur {
	const char *p;
	const char *end;
	bool bad;
};

static void j_ws(struct jcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
				 *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static bool j_eat(struct jcur *c, char ch)
{
	j_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

static bool j_hex4(struct jcur *c, unsigned int *v)
{
	unsigned int x = 0;
	int i;

	if (c->end - c->p < 4)
		return false;
	for (i = 0; i < 4; i++) {
		int h = du_hexval(c->p[i]);

		if (h < 0)
			return false;
		x = x << 4 | (unsigned int)h;
	}
	c->p += 4;
	*v = x;
	return true;
}

static size_t utf8_put(char *o, unsigned int cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Read a JSON string into @o (capacity >= the remaining input + 1, since
 * no escape expands: "\uXXXX" is 6 bytes for at most 3, a surrogate pair
 * 12 for 4).  \u0000 is refused, as the result is a C string.
 */
static bool j_string(struct jcur *c, char *o, size_t *olen)
{
	size_t n = 0;

	if (!j_eat(c, '"'))
		return false;
	while (c->p < c->end) {
		char ch = *c->p++;
		unsigned int cp, lo;

		if (ch == '"') {
			o[n] = '\0';
			*olen = n;
			return true;
		}
		if ((unsigned char)ch < 0x20)
			return false;
		if (ch != '\\') {
			o[n++] = ch;
			continue;
		}
		if (c->p >= c->end)
			return false;
		ch = *c->p++;
		switch (ch) {
		case '"': case '\\': case '/':
			o[n++] = ch;
			break;
		case 'b': o[n++] = '\b'; break;
		case 'f': o[n++] = '\f'; break;
		case 'n': o[n++] = '\n'; break;
		case 'r': o[n++] = '\r'; break;
		case 't': o[n++] = '\t'; break;
		case 'u':
			if (!j_hex4(c, &cp) || cp == 0)
				return false;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (c->end - c->p < 6 || c->p[0] != '\\' ||
				    c->p[1] != 'u')
					return false;
				c->p += 2;
				if (!j_hex4(c, &lo) || lo < 0xdc00 || lo >= 0xe000)
					return false;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				return false;
			}
			n += utf8_put(o + n, cp);
			break;
		default:
			return false;
		}
	}
	return false;
}

/* Skip a scalar (number, true, false, null): its bytes up to a delimiter. */
static bool j_skip_scalar(struct jcur *c)
{
	const char *start;

	j_ws(c);
	start = c->p;
	while (c->p < c->end && *c->p != ',' && *c->p != '}' && *c->p != ']' &&
	       *c->p != ' ' && *c->p != '\t' && *c->p != '\n' && *c->p != '\r')
		c->p++;
	return c->p > start;
}

#define J_DEPTH_MAX 16

static bool j_skip_value(struct jcur *c, char *scratch, int depth);

static bool j_skip_container(struct jcur *c, char *scratch, int depth,
			     char close, bool keyed)
{
	size_t n;

	if (depth > J_DEPTH_MAX)
		return false;
	if (j_eat(c, close))
		return true;
	do {
		if (keyed && (!j_string(c, scratch, &n) || !j_eat(c, ':')))
			return false;
		if (!j_skip_value(c, scratch, depth + 1))
			return false;
	} while (j_eat(c, ','));
	return j_eat(c, close);
}

static bool j_skip_value(struct jcur *c, char *scratch, int depth)
{
	size_t n;

	j_ws(c);
	if (c->p >= c->end)
		return false;
	if (*c->p == '"')
		return j_string(c, scratch, &n);
	if (*c->p == '{') {
		c->p++;
		return j_skip_container(c, scratch, depth, '}', true);
	}
	if (*c->p == '[') {
		c->p++;
		return j_skip_container(c, scratch, depth, ']', false);
	}
	return j_skip_scalar(c);
}

/*
 * Find top-level string member @key of a JSON object; returns 1 with the
 * allocated value in *@out, 0 when absent, not a string, or the text is
 * not a well-formed object; -ENOMEM.
 */
static int json_get_string(const char *s, size_t len, const char *key,
			   char **out)
{
	struct jcur c = { s, s + len, false };
	char *kbuf, *vbuf;
	char *val = NULL;
	int ret = 0;
	size_t n;

	*out = NULL;
	kbuf = malloc(len + 1);
	vbuf = malloc(len + 1);
	if (!kbuf || !vbuf) {
		ret = -ENOMEM;
		goto out_free;
	}
	if (!j_eat(&c, '{'))
		goto out_free;
	if (j_eat(&c, '}'))
		goto out_check;
	do {
		size_t klen;

		if (!j_string(&c, kbuf, &klen) || !j_eat(&c, ':'))
			goto out_bad;
		j_ws(&c);
		if (klen == strlen(key) && memcmp(kbuf, key, klen) == 0 &&
		    c.p < c.end && *c.p == '"') {
			if (!j_string(&c, vbuf, &n))
				goto out_bad;
			free(val);
			val = span_dup(vbuf, n);
			if (!val) {
				ret = -ENOMEM;
				goto out_free;
			}
		} else if (!j_skip_value(&c, vbuf, 1)) {
			goto out_bad;
		}
	} while (j_eat(&c, ','));
	if (!j_eat(&c, '}'))
		goto out_bad;
out_check:
	j_ws(&c);
	if (c.p != c.end)
		goto out_bad;
	if (val) {
		*out = val;
		val = NULL;
		ret = 1;
	}
	goto out_free;
out_bad:
	ret = 0;
out_free:
	free(val);
	free(vbuf);
	free(kbuf);
	return ret;
}

static bool arg_is_json(const struct arg *a)
{
	size_t i = 0;

	while (i < a->len && (a->p[i] == ' ' || a->p[i] == '\t'))
		i++;
	return i < a->len && a->p[i] == '{';
}

/* Get @key of a -device value, in either syntax QEMU accepts. */
static int device_get(const struct arg *a, const char *key, char **out)
{
	if (arg_is_json(a))
		return json_get_string(a->p, a->len, key, out);
	return kv_get(a->p, a->len, "driver", key, out);
}

/* ---- the pieces of a command line ------------------------------------ */

bool dom_uuid_parse(const char *s, size_t len, char out[DOM_UUID_STRLEN + 1])
{
	size_t i;

	out[0] = '\0';
	if (len != DOM_UUID_STRLEN)
		return false;
	for (i = 0; i < len; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : du_hexval(s[i]) < 0)
			return false;
	}
	for (i = 0; i < len; i++)
		out[i] = (s[i] >= 'A' && s[i] <= 'F') ? (char)(s[i] - 'A' + 'a') : s[i];
	out[len] = '\0';
	return true;
}

static bool is_qemu_base(const char *b, size_t n)
{
	static const char sys[] = "qemu-system-";
	static const char kvm[] = "qemu-kvm";

	if (n > sizeof(sys) - 1 && memcmp(b, sys, sizeof(sys) - 1) == 0)
		return true;
	return n == sizeof(kvm) - 1 && memcmp(b, kvm, n) == 0;
}

bool dom_is_qemu_path(const char *path, size_t len)
{
	static const char deleted[] = " (deleted)";
	const char *base;
	size_t dl = sizeof(deleted) - 1;

	if (len >= dl && memcmp(path + len - dl, deleted, dl) == 0)
		len -= dl;
	base = path;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	return is_qemu_base(base, (size_t)(path + len - base));
}

bool dom_is_qemu_comm(const char *comm, size_t len)
{
	if (len && comm[len - 1] == '\n')
		len--;
	return is_qemu_base(comm, len);
}

bool dom_parse_vcpu_comm(const char *comm, size_t len, unsigned int *vcpu)
{
	static const char pre[] = "CPU ";
	static const char post[] = "/KVM";
	unsigned int v = 0;
	size_t i, digits = 0;

	if (len && comm[len - 1] == '\n')
		len--;
	if (len < sizeof(pre) - 1 + 1 + sizeof(post) - 1 ||
	    memcmp(comm, pre, sizeof(pre) - 1) != 0 ||
	    memcmp(comm + len - (sizeof(post) - 1), post, sizeof(post) - 1) != 0)
		return false;
	for (i = sizeof(pre) - 1; i < len - (sizeof(post) - 1); i++) {
		if (comm[i] < '0' || comm[i] > '9')
			return false;
		if (digits++ && v == 0)
			return false;	/* leading zero */
		v = v * 10 + (unsigned int)(comm[i] - '0');
		if (v >= DOM_VCPU_MAX)
			return false;
	}
	*vcpu = v;
	return true;
}

/* Parse a decimal fd= value; -1 unless it is a small non-negative int. */
static int parse_fd(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > 1 << 20)
			return -1;
	}
	return (int)v;
}

/* The id of the chardev behind a virtserialport named DOM_AGENT_PORT, or
 * NULL; the first such port wins. */
static int find_agent_chardev(const char *buf, size_t len, bool truncated,
			      char **id)
{
	struct argv_iter it = { buf, buf + len, truncated };
	struct arg a;
	int ret = 0;

	*id = NULL;
	while (argv_next(&it, &a)) {
		char *drv = NULL, *name = NULL, *chr = NULL;

		if (!arg_is_opt(&a, "device") || !argv_next(&it, &a))
			continue;
		if (device_get(&a, "driver", &drv) < 0 ||
		    device_get(&a, "name", &name) < 0 ||
		    device_get(&a, "chardev", &chr) < 0)
			ret = -ENOMEM;
		else if (drv && name && chr && strcmp(drv, "virtserialport") == 0 &&
			 strcmp(name, DOM_AGENT_PORT) == 0 && *chr) {
			*id = chr;
			chr = NULL;
		}
		free(drv);
		free(name);
		free(chr);
		if (ret || *id)
			break;
	}
	return ret;
}

static int find_chardev(const char *buf, size_t len, bool truncated,
			const char *id, struct dom_cmdline *out)
{
	struct argv_iter it = { buf, buf + len, truncated };
	struct arg a;
	int ret = 0;

	while (argv_next(&it, &a)) {
		char *backend = NULL, *cid = NULL, *path = NULL, *fd = NULL;

		if (!arg_is_opt(&a, "chardev") || !argv_next(&it, &a))
			continue;
		if (kv_get(a.p, a.len, "backend", "backend", &backend) < 0 ||
		    kv_get(a.p, a.len, NULL, "id", &cid) < 0 ||
		    kv_get(a.p, a.len, NULL, "path", &path) < 0 ||
		    kv_get(a.p, a.len, NULL, "fd", &fd) < 0) {
			ret = -ENOMEM;
		} else if (backend && cid && strcmp(backend, "socket") == 0 &&
			   strcmp(cid, id) == 0) {
			/* Chardev ids are unique in QEMU; the last one parsed
			 * is kept, consistently with duplicate options. */
			free(out->agent_path);
			out->agent_path = NULL;
			out->agent_fd = -1;
			if (path && *path) {
				out->agent_path = path;
				path = NULL;
			} else if (fd) {
				out->agent_fd = parse_fd(fd);
			}
		}
		free(backend);
		free(cid);
		free(path);
		free(fd);
		if (ret)
			break;
	}
	return ret;
}

int dom_cmdline_parse(const char *buf, size_t len, bool truncated,
		      struct dom_cmdline *out)
{
	struct argv_iter it = { buf, buf + len, truncated };
	struct arg a;
	char *chr_id = NULL;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->agent_fd = -1;
	while (argv_next(&it, &a)) {
		if (arg_is_opt(&a, "name")) {
			char *g = NULL;

			if (!argv_next(&it, &a))
				break;
			ret = kv_get(a.p, a.len, "guest", "guest", &g);
			if (ret < 0)
				goto out_release;
			ret = 0;
			if (g && (!*g || strlen(g) > DOM_NAME_MAX)) {
				free(g);
				g = NULL;
			}
			/* A later -name without a usable guest= leaves the
			 * earlier name, as QEMU merges -name options. */
			if (g) {
				free(out->name);
				out->name = g;
			}
		} else if (arg_is_opt(&a, "uuid")) {
			if (!argv_next(&it, &a))
				break;
			dom_uuid_parse(a.p, a.len, out->uuid);
		}
	}
	ret = find_agent_chardev(buf, len, truncated, &chr_id);
	if (ret)
		goto out_release;
	if (chr_id) {
		ret = find_chardev(buf, len, truncated, chr_id, out);
		free(chr_id);
		if (ret)
			goto out_release;
	}
	return 0;
out_release:
	dom_cmdline_release(out);
	return ret;
}

void dom_cmdline_release(struct dom_cmdline *c)
{
	free(c->name);
	c->name = NULL;
	free(c->agent_path);
	c->agent_path = NULL;
	c->agent_fd = -1;
	c->uuid[0] = '\0';
}
