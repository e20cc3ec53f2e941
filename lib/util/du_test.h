/*
 * The one main of the CUnit test programs: a table of suites, each a
 * table of tests, registered in order and run in verbose mode.  For
 * tests only: it is in libdutest.a, which no installed program links.
 */
#ifndef DU_TEST_H
#define DU_TEST_H

#include <stddef.h>

#include <CUnit/CUnit.h>

/* One test: its name as CUnit prints it, and its function. */
struct du_test {
	const char *name;
	CU_TestFunc fn;
};

/* One suite: its name, its init and clean (each may be NULL), its tests. */
struct du_test_suite {
	const char *name;
	CU_InitializeFunc init;
	CU_CleanupFunc clean;
	const struct du_test *tests;
	size_t n;
};

/* The number of entries of the array @a (an array, not a pointer). */
#define DU_TEST_N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Register the @n suites of @suites in order, run them (CU_BRM_VERBOSE)
 * and clean the registry up.  Returns the exit status for main(): 0 when
 * every assertion passed and every suite's init and clean succeeded, 1
 * otherwise, or when a suite or test could not be registered (nothing is
 * run then).  Owns nothing: the tables are only read during the call.
 */
int du_test_run(const struct du_test_suite *suites, size_t n);

/* du_test_run() of one suite named @suite: the @n tests of @tests. */
int du_test_main(const char *suite, const struct du_test *tests, size_t n,
		 CU_InitializeFunc init, CU_CleanupFunc clean);

/* How many of this process's mappings name a file whose path contains
 * @s (an open sample file holds one, lib/odb); -1 if they cannot be
 * read. */
int du_test_count_maps(const char *s);

#endif
