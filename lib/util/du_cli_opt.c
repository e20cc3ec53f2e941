#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "du_cli.h"

/* @lo's long options that @name (@n bytes) abbreviates; the exact one
 * alone when there is one.  *@one: the last match. */
static size_t long_matches(const struct option *lo, const char *name, size_t n,
			   const struct option **one)
{
	size_t count = 0;

	*one = NULL;
	for (; lo && lo->name; lo++) {
		if (strncmp(lo->name, name, n))
			continue;
		*one = lo;
		if (strlen(lo->name) == n)
			return 1;
		count++;
	}
	return count;
}

void du_cli_getopt_msg(char *buf, size_t len, const char *arg, const struct option *lo)
{
	const struct option *o;
	size_t n, m;

	if (!arg || arg[0] != '-' || arg[1] != '-') {
		snprintf(buf, len, "unknown option or missing value: \"%.64s\"", arg ? arg : "");
		return;
	}
	n = strcspn(arg + 2, "=");
	m = long_matches(lo, arg + 2, n, &o);
	if (m > 1)
		snprintf(buf, len, "ambiguous option \"%.*s\"", (int)(n > 64 ? 64 : n) + 2, arg);
	else if (m == 0)
		snprintf(buf, len, "unknown option \"%.*s\"", (int)(n > 64 ? 64 : n) + 2, arg);
	else if (arg[2 + n] == '=' && o->has_arg == no_argument)
		snprintf(buf, len, "option \"--%s\" takes no value", o->name);
	else if (o->has_arg == required_argument)
		snprintf(buf, len, "option \"--%s\" needs a value", o->name);
	else
		snprintf(buf, len, "malformed option \"%.64s\"", arg);
}
