/*
 * Count what a session's sample files hold, for the benchmark's check that
 * no sample was lost (tests/bench/run-bench.sh: the samples replayed must
 * be the samples in the files).
 *
 *   sum-samples SESSION
 *
 * Prints "files N samples S" over every flat sample file below
 * SESSION/samples/current: the {cg} files (arcs, doc/sample-files.md) and
 * the {stacks} and {images} records beside them are not samples.  A file
 * that does not open as a sample file is an error (exit 1).
 */
#define _XOPEN_SOURCE 700
#include "config.h"

#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "odb/odb.h"

static uint64_t nr_files, nr_samples;
static int failed;

static int visit(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	char why[256];
	struct odb *db;
	int rc;

	(void)sb;
	(void)ftw;
	if (type != FTW_F || strstr(path, "/{cg}/") || strstr(path, "/{stacks}/") ||
	    strstr(path, "/{images}"))
		return 0;
	rc = odb_open_read(&db, path, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "sum-samples: %s: %s\n", path, *why ? why : strerror(-rc));
		failed = 1;
		return 0;
	}
	nr_files++;
	nr_samples += odb_total(db);
	odb_close(db);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];

	if (argc != 2) {
		fprintf(stderr, "usage: sum-samples SESSION\n");
		return 1;
	}
	if (snprintf(dir, sizeof(dir), "%s/samples/current", argv[1]) >= (int)sizeof(dir) ||
	    nftw(dir, visit, 64, FTW_PHYS) != 0) {
		fprintf(stderr, "sum-samples: cannot walk %s\n", dir);
		return 1;
	}
	printf("files %" PRIu64 " samples %" PRIu64 "\n", nr_files, nr_samples);
	return failed;
}
