#include "config.h"

#include <stdio.h>
#include <string.h>

#include "collect_kmod.h"
#include "opd_collector.h"
#include "collect_xen.h"

/* --collector=NAME.  A new collector is one file and one line here. */
static const struct opd_collector_ops *const collectors[] = {
	&opd_collector_perf,
	&opd_collector_file,
	&opd_collector_kmod,
#ifdef HAVE_XEN
	&opd_collector_xen,
#endif
};

const struct opd_collector_ops *opd_collector_find(const char *name)
{
	for (size_t i = 0; i < sizeof(collectors) / sizeof(collectors[0]); i++)
		if (!strcmp(collectors[i]->name, name))
			return collectors[i];
	return NULL;
}

void opd_collector_names(char *buf, size_t size)
{
	size_t off = 0;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof(collectors) / sizeof(collectors[0]) && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "|" : "", collectors[i]->name);
}

static const struct {
	unsigned int cap;
	const char *word;
} cap_words[] = {
	{ OPD_CAP_LIVE, "live" },
	{ OPD_CAP_EVENTS, "events" },
	{ OPD_CAP_EVENTS_OPT, "events-optional" },
	{ OPD_CAP_INPUT, "input" },
	{ OPD_CAP_CALLCHAIN, "callchain" },
	{ OPD_CAP_MONITOR, "monitor" },
};

void opd_collector_list(FILE *f)
{
	for (size_t i = 0; i < sizeof(collectors) / sizeof(collectors[0]); i++) {
		fputs(collectors[i]->name, f);
		for (size_t j = 0; j < sizeof(cap_words) / sizeof(cap_words[0]); j++)
			if (collectors[i]->caps & cap_words[j].cap)
				fprintf(f, " %s", cap_words[j].word);
		fputc('\n', f);
	}
}
