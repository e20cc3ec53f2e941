#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "du_ksym.h"

static bool blank(char c)
{
	return c == ' ' || c == '\t';
}

/* The word at *@p (after blanks): its start and length, *@p past it. */
static const char *word(const char **p, size_t *len)
{
	const char *s = *p + strspn(*p, " \t");

	*len = strcspn(s, " \t\r\n");
	*p = s + *len;
	return s;
}

/* A number of @base (16: an optional 0x) that is all of the word at *@p. */
static int number(const char **p, int base, uint64_t *v)
{
	size_t len;
	const char *s = word(p, &len);
	uint64_t n = 0;

	if (base == 16 && len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	if (!len || len > (base == 16 ? 16u : 19u))
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = (unsigned int)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned int)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned int)(c - 'A' + 10);
		else
			return -EINVAL;
		n = n * (uint64_t)base + d;
	}
	*v = n;
	return 0;
}

int du_ksym_parse(const char *line, struct du_ksym *s)
{
	const char *p = line;

	memset(s, 0, sizeof(*s));
	if (number(&p, 16, &s->addr) || !blank(*p))
		return -EINVAL;
	p += strspn(p, " \t");
	if (!*p || !blank(p[1]))
		return -EINVAL;
	s->type = *p++;
	s->name = word(&p, &s->name_len);
	if (!s->name_len)
		return -EINVAL;
	p += strspn(p, " \t");
	if (*p == '[') {
		const char *end = strchr(p + 1, ']');

		if (!end || end == p + 1)
			return -EINVAL;
		s->mod = p + 1;
		s->mod_len = (size_t)(end - s->mod);
	}
	return 0;
}

int du_kmod_parse(const char *line, struct du_kmod *m)
{
	const char *p = line;
	size_t len;

	memset(m, 0, sizeof(*m));
	m->name = word(&p, &m->name_len);
	if (!m->name_len || number(&p, 10, &m->size))
		return -EINVAL;
	for (int i = 0; i < 3; i++) {	/* refcount, deps, state */
		word(&p, &len);
		if (!len)
			return -EINVAL;
	}
	return number(&p, 16, &m->addr);
}
