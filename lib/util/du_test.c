#include "config.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "util/du_test.h"

static int add_suite(const struct du_test_suite *ts)
{
	CU_pSuite s = CU_add_suite(ts->name, ts->init, ts->clean);

	if (!s)
		return -1;
	for (size_t i = 0; i < ts->n; i++)
		if (!CU_add_test(s, ts->tests[i].name, ts->tests[i].fn))
			return -1;
	return 0;
}

int du_test_run(const struct du_test_suite *suites, size_t n)
{
	unsigned int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (add_suite(&suites[i]) < 0)
			goto out_cleanup;
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	/*
	 * CUnit counts a suite whose init or clean failed apart from failed
	 * assertions (after a failed init its tests do not run): both fail.
	 */
	failed = CU_get_number_of_failures() + CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;

out_cleanup:
	CU_cleanup_registry();
	return 1;
}

int du_test_main(const char *suite, const struct du_test *tests, size_t n,
		 CU_InitializeFunc init, CU_CleanupFunc clean)
{
	const struct du_test_suite one = {
		.name = suite, .init = init, .clean = clean, .tests = tests, .n = n,
	};

	return du_test_run(&one, 1);
}

int du_test_count_maps(const char *s)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[8192];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = strchr(line, '/');

		n += p && strstr(p, s) != NULL;
	}
	fclose(f);
	return n;
}
