/*
 * Write sample files into a session from a text description, with the
 * daemon's own writers (lib/sfname for the names, lib/odb for the files),
 * for benchmarks of the report tools on sessions no collector can make
 * here (tests/bench/report-domains.sh: many guests with agents).
 *
 *   mk-samples SESSION < DESCRIPTION
 *
 * DESCRIPTION is lines of
 *   file DOMAIN IMAGE DEP EVENT PERIOD    a new sample file (DOMAIN "-":
 *                                         the host; IMAGE, DEP absolute paths)
 *   KEY COUNT                             add COUNT at KEY (a file offset)
 * Files get --separate=lib's names (tgid, tid, cpu "all").  Adding to an
 * existing file adds to its counts, as the daemon does.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "odb/odb.h"
#include "sfname/sfname.h"
#include "util/du_fs.h"

struct totals {
	uint64_t files, keys, samples;
};

static int open_file(const char *session, char *line, struct odb **db, unsigned long lineno)
{
	char *dom = strtok(line + 5, " \t"), *img = strtok(NULL, " \t");
	char *dep = strtok(NULL, " \t"), *ev = strtok(NULL, " \t"), *per = strtok(NULL, " \t\n");
	char rel[SFN_MAX_PATH + 1], path[PATH_MAX];
	struct sfn_name n = { 0 };
	struct odb_desc d = { 0 };
	int rc;

	if (!per) {
		fprintf(stderr, "mk-samples: line %lu: want 'file DOMAIN IMAGE DEP EVENT PERIOD'\n",
			lineno);
		return -EINVAL;
	}
	n.domain = strcmp(dom, "-") ? dom : NULL;
	n.image = (struct sfn_image){ SFN_ROOT, img };
	n.dep = (struct sfn_image){ SFN_ROOT, dep };
	n.event = ev;
	n.count = strtoull(per, NULL, 10);
	n.tgid = n.tid = n.cpu = SFN_ALL;
	rc = sfn_mangle(&n, rel, sizeof(rel));
	if (rc < 0) {
		fprintf(stderr, "mk-samples: line %lu: no sample file name: %s\n", lineno,
			strerror(-rc));
		return rc;
	}
	if (snprintf(path, sizeof(path), "%s/samples/current/%s", session, rel) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	rc = du_mkdir_parents(path, strlen(session), 0750);
	if (rc)
		return rc;
	snprintf(d.event, sizeof(d.event), "%s", ev);
	d.count = n.count;
	return odb_open(db, path, ODB_RDWR, &d);
}

int main(int argc, char **argv)
{
	struct totals t = { 0 };
	struct odb *db = NULL;
	unsigned long lineno = 0;
	char line[8192];
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: mk-samples SESSION < DESCRIPTION\n");
		return 1;
	}
	while (!rc && fgets(line, sizeof(line), stdin)) {
		unsigned long long key, count;
		char *end;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!strncmp(line, "file ", 5)) {
			odb_close(db);
			db = NULL;
			rc = open_file(argv[1], line, &db, lineno);
			t.files++;
			continue;
		}
		key = strtoull(line, &end, 0);
		count = strtoull(end, &end, 0);
		if (!db || !count || (*end && *end != '\n')) {
			fprintf(stderr, "mk-samples: line %lu: want 'KEY COUNT' after a 'file' line\n",
				lineno);
			rc = -EINVAL;
			break;
		}
		rc = odb_add(db, key, count);
		t.keys++;
		t.samples += count;
	}
	odb_close(db);
	if (rc) {
		fprintf(stderr, "mk-samples: line %lu: %s\n", lineno, strerror(-rc));
		return 1;
	}
	printf("mk-samples: %" PRIu64 " files, %" PRIu64 " keys, %" PRIu64 " samples\n", t.files,
	       t.keys, t.samples);
	return 0;
}
