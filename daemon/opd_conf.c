#include "config.h"

#include <errno.h>
#include <string.h>

#include "opd_conf.h"
#include "events/ev.h"

void opd_conf_defaults(struct opd_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->session_dir = DP_DEFAULT_SESSION_DIR;
	c->collector = "perf";
	c->events_dir = ev_default_dir();
	c->separate_str = "none";
	c->max_open_files = 512;
	c->exit_linger_ns = 5ULL * 1000 * 1000 * 1000;
	c->exit_linger_max = 4096;
	c->perf_pages = 128;
}

int opd_parse_separate(const char *s, unsigned int *out)
{
	static const struct {
		const char *name;
		unsigned int bits;
	} words[] = {
		{ "none", 0 },
		{ "lib", OPD_SEP_LIB },
		{ "library", OPD_SEP_LIB },
		{ "kernel", OPD_SEP_KERNEL | OPD_SEP_LIB },
		{ "thread", OPD_SEP_THREAD },
		{ "cpu", OPD_SEP_CPU },
		{ "all", OPD_SEP_ALL },
	};
	unsigned int bits = 0;
	const char *p = s;

	if (!*s)
		return -EINVAL;
	while (*p) {
		size_t len = strcspn(p, ",");
		size_t i;

		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
			if (strlen(words[i].name) == len && !strncmp(words[i].name, p, len))
				break;
		if (i == sizeof(words) / sizeof(words[0]))
			return -EINVAL;
		bits |= words[i].bits;
		p += len;
		if (*p == ',')
			p++;
	}
	*out = bits;
	return 0;
}
