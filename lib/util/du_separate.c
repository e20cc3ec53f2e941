#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/du_separate.h"

static const struct {
	const char *word;
	unsigned int bits;
} sep_words[] = {
	{ "none", 0 },
	{ "lib", DU_SEP_LIB },
	{ "library", DU_SEP_LIB },
	{ "kernel", DU_SEP_KERNEL | DU_SEP_LIB },
	{ "thread", DU_SEP_THREAD },
	{ "cpu", DU_SEP_CPU },
	{ "all", DU_SEP_ALL },
};

int du_separate_parse(const char *list, unsigned int *bits, char *err, size_t errlen)
{
	unsigned int acc = 0;
	const char *p = list;

	if (!*list) {
		if (err)
			snprintf(err, errlen, "--separate needs a value (%s)", DU_SEP_WORDS);
		return -EINVAL;
	}
	for (;;) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; i < sizeof(sep_words) / sizeof(sep_words[0]); i++)
			if (strlen(sep_words[i].word) == n && !strncmp(p, sep_words[i].word, n))
				break;
		if (i == sizeof(sep_words) / sizeof(sep_words[0])) {
			if (err)
				snprintf(err, errlen, "bad --separate value '%.*s' (allowed: %s)",
					 (int)(n > 64 ? 64 : n), p, DU_SEP_WORDS);
			return -EINVAL;
		}
		acc |= sep_words[i].bits;
		if (!p[n])
			break;
		p += n + 1;
	}
	*bits = acc;
	return 0;
}
