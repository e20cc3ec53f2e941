/*
 * For the tests that have the daemon write a stats file: every key in it
 * must be in doc/stats.md (as `key`), so a key added to the daemon without
 * its line there fails `make check`.
 */
#ifndef TEST_STATS_DOC_H
#define TEST_STATS_DOC_H

#include <CUnit/Basic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef OPD_TEST_STATS_DOC
#error "OPD_TEST_STATS_DOC names doc/stats.md (daemon/Makefile.am)"
#endif

/* The keys of stats file @path missing from doc/stats.md, each said on
 * stderr; the count (-1: a file unreadable). */
static int stats_keys_undocumented(const char *path)
{
	FILE *doc = fopen(OPD_TEST_STATS_DOC, "r"), *f = fopen(path, "r");
	char *text = NULL, line[512], key[sizeof(line) + 2];
	size_t len = 0;
	int missing = 0, lines = 0;
	bool read = false;

	if (doc && f) {
		FILE *m = open_memstream(&text, &len);
		int c;

		while (m && (c = fgetc(doc)) != EOF)
			fputc(c, m);
		if (m)
			fclose(m);
	}
	read = text != NULL;
	while (read && fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\n")] = '\0';
		snprintf(key, sizeof(key), "`%s`", line);
		lines++;
		if (!strstr(text, key)) {
			fprintf(stderr, "\n  %s: key %s is not in doc/stats.md", path, line);
			missing++;
		}
	}
	if (doc)
		fclose(doc);
	if (f)
		fclose(f);
	free(text);
	return read && lines ? missing : -1;
}

#endif
