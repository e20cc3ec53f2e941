/* Unit tests of lib/events: every shipped table, specs, perf mapping. */
#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include <CUnit/CUnit.h>

#include "events/ev.h"
#include "util/du_test.h"

#ifndef EV_TEST_EVENTS_DIR
#error "EV_TEST_EVENTS_DIR: the source tree's events/ directory"
#endif

static const char *events_dir = EV_TEST_EVENTS_DIR;

/* ---- every table of the source tree ---------------------------------------- */

static char found[16][256];
static size_t nfound;

static int walk_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t dl = strlen(events_dir);
	const char *base = path + ftw->base;

	if (flag != FTW_F || strcmp(base, "events") || nfound >= 16 || (size_t)ftw->base < dl + 2)
		return 0;
	/* cpu type = the directory of this file, relative to events_dir */
	if (strncmp(path, events_dir, dl) || path[dl] != '/')
		return 0;
	snprintf(found[nfound], sizeof(found[0]), "%.*s",
		 (int)(ftw->base - 1 - (int)dl - 1), path + dl + 1);
	if (found[nfound][0])
		nfound++;
	return 0;
}

static void test_all_tables(void)
{
	bool arch = false, timer = false;
	size_t k;

	nfound = 0;
	CU_ASSERT_EQUAL_FATAL(nftw(events_dir, walk_cb, 16, FTW_PHYS), 0);
	CU_ASSERT_TRUE(nfound >= 2);
	for (k = 0; k < nfound; k++) {
		char err[512];
		struct ev_table *t = ev_table_load(events_dir, found[k], err, sizeof(err));
		const struct ev_info *e;
		struct ev_spec spec;
		size_t i;

		if (!t) {
			fprintf(stderr, "\n%s: %s\n", found[k], err);
			CU_FAIL("table does not load");
			continue;
		}
		arch |= !strcmp(found[k], "x86-64/arch");
		timer |= !strcmp(found[k], "timer");
		CU_ASSERT_STRING_EQUAL(ev_table_cpu_type(t), found[k]);
		CU_ASSERT_PTR_NOT_NULL(ev_table_get(t, 0));
		for (i = 0; (e = ev_table_get(t, i)); i++) {
			struct perf_event_attr attr;
			uint32_t v;
			bool def_in_set = false;
			size_t j;

			CU_ASSERT_PTR_NOT_NULL(e->name);
			CU_ASSERT_PTR_NOT_NULL(e->desc);
			CU_ASSERT_PTR_NOT_NULL(e->um_name);
			CU_ASSERT_TRUE(e->counters != 0);
			CU_ASSERT_TRUE(e->minimum >= 1);
			CU_ASSERT_TRUE(e->default_count >= e->minimum);
			/* the unit mask set exists and has values */
			CU_ASSERT_PTR_NOT_NULL(ev_unit_mask_get(t, e, 0, &v));
			/* the event with its defaults passes and maps to perf */
			CU_ASSERT_EQUAL_FATAL(ev_spec_parse(e->name, &spec, err, sizeof(err)), 0);
			CU_ASSERT_EQUAL(ev_spec_check(t, &spec, err, sizeof(err)), 0);
			CU_ASSERT_EQUAL(spec.count, e->default_count);
			for (j = 0; ev_unit_mask_get(t, e, j, &v); j++)
				def_in_set |= v == spec.unit_mask;
			memset(&attr, 0, sizeof(attr));
			CU_ASSERT_EQUAL(ev_spec_to_perf(t, &spec, &attr), 0);
			CU_ASSERT_EQUAL(attr.sample_period, e->default_count);
			CU_ASSERT_TRUE(attr.type == PERF_TYPE_HARDWARE ||
				       attr.type == PERF_TYPE_SOFTWARE || attr.type == PERF_TYPE_RAW);
			(void)def_in_set;
		}
		CU_ASSERT_EQUAL(ev_default_spec(t, &spec), 0);
		CU_ASSERT_EQUAL(ev_spec_check(t, &spec, err, sizeof(err)), 0);
		ev_table_free(t);
	}
	CU_ASSERT_TRUE(arch);
	CU_ASSERT_TRUE(timer);
}

/* ---- perf mapping -------------------------------------------------------------- */

struct map_case {
	const char *cpu, *spec;
	uint32_t type;
	uint64_t config, period;
	bool xk, xu;
};

static const struct map_case map_cases[] = {
	{ "x86-64/arch", "CPU_CLK_UNHALTED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 100000, 0, 0 },
	{ "x86-64/arch", "CPU_CLK_UNHALTED:6000:0:0:1", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 6000, 1, 0 },
	{ "x86-64/arch", "UNHALTED_REFERENCE_CYCLES", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 100000, 0, 0 },
	{ "x86-64/arch", "INST_RETIRED:200000::1:0", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 200000, 0, 1 },
	{ "x86-64/arch", "LLC_REFS", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 100000, 0, 0 },
	{ "x86-64/arch", "LLC_MISSES:6000:0x41", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 6000, 0, 0 },
	{ "x86-64/arch", "BR_INST_RETIRED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 100000, 0, 0 },
	{ "x86-64/arch", "BR_MISS_PRED_RETIRED:500", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 500, 0, 0 },
	{ "timer", "TIMER", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 100000, 0, 0 },
	{ "timer", "TIMER:10000:0:1:0", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 10000, 0, 1 },
	/* test tables (mktables): non-default unit masks and unknown events go raw */
	{ "t/ok", "CPU_CLK_UNHALTED:1000:0x1", PERF_TYPE_RAW, 0x13c, 1000, 0, 0 },
	{ "t/ok", "CPU_CLK_UNHALTED", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 100000, 0, 0 },
	{ "t/ok", "INS", PERF_TYPE_RAW, 0xc0, 100000, 0, 0 },
	{ "t/ok", "MEM:5000:0x6", PERF_TYPE_RAW, 0x6d0, 5000, 0, 0 },
	{ "t/ok", "MEM", PERF_TYPE_RAW, 0x1d0, 7000, 0, 0 },
};

/* ---- made-up tables: good ones for checks, bad ones for errors ------------ */

static char tmpdir[] = "/tmp/test_ev.XXXXXX";

static int write_file(const char *cpu, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, cpu);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%s/%s", tmpdir, cpu, name);
	if (!text) {
		unlink(path);
		return 0;
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static const char ok_um[] =
	"# test sets\n"
	"name:zero type:mandatory default:0x0\n"
	"\t0x0 No unit mask\n"
	"name:cyc type:exclusive default:0x0\n"
	"\t0x0 core cycles\n"
	"\t0x1 reference cycles\n"
	"\n"
	"name:mem type:bitmask default:0x1\n"
	"\t0x1 loads\n"
	"\t0x2 stores\n"
	"\t0x4 prefetches\n";
static const char ok_ev[] =
	"event:0x3c counters:0,1 um:cyc minimum:1000 name:CPU_CLK_UNHALTED : cycles\n"
	"event:0xd0 counters:2 um:mem minimum:5000 name:MEM : memory ops\n"
	"event:0xc0 counters:0 um:zero minimum:100 name:INS : instructions\n";
static const char ok_def[] =
	"default_event:MEM\n"
	"name:MEM count:7000\n";

static int init_tables(void)
{
	if (!mkdtemp(tmpdir))
		return -1;
	return write_file("t", "", NULL) ||
	       write_file("t/ok", "unit_masks", ok_um) ||
	       write_file("t/ok", "events", ok_ev) ||
	       write_file("t/ok", "defaults", ok_def);
}

static int cleanup_tables(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_perf_mapping(void)
{
	size_t i;

	for (i = 0; i < sizeof(map_cases) / sizeof(map_cases[0]); i++) {
		const struct map_case *c = &map_cases[i];
		const char *dir = strncmp(c->cpu, "t/", 2) ? events_dir : tmpdir;
		struct ev_table *t;
		struct perf_event_attr attr;
		struct ev_spec spec;
		char err[512];

		t = ev_table_load(dir, c->cpu, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		CU_ASSERT_EQUAL_FATAL(ev_spec_parse(c->spec, &spec, err, sizeof(err)), 0);
		CU_ASSERT_EQUAL_FATAL(ev_spec_check(t, &spec, err, sizeof(err)), 0);
		memset(&attr, 0, sizeof(attr));
		attr.sample_type = PERF_SAMPLE_IP;	/* left alone */
		CU_ASSERT_EQUAL(ev_spec_to_perf(t, &spec, &attr), 0);
		if (attr.type != c->type || attr.config != c->config || attr.sample_period != c->period ||
		    attr.exclude_kernel != c->xk || attr.exclude_user != c->xu)
			fprintf(stderr, "\n%s: type %u config %#llx period %llu xk %d xu %d\n", c->spec,
				attr.type, (unsigned long long)attr.config,
				(unsigned long long)attr.sample_period, attr.exclude_kernel, attr.exclude_user);
		CU_ASSERT_EQUAL(attr.type, c->type);
		CU_ASSERT_EQUAL(attr.config, c->config);
		CU_ASSERT_EQUAL(attr.sample_period, c->period);
		CU_ASSERT_EQUAL(attr.exclude_kernel, c->xk);
		CU_ASSERT_EQUAL(attr.exclude_user, c->xu);
		CU_ASSERT_EQUAL(attr.size, sizeof(attr));
		CU_ASSERT_EQUAL(attr.sample_type, PERF_SAMPLE_IP);
		ev_table_free(t);
	}
}

/* ---- spec parsing ------------------------------------------------------------------ */

struct parse_case {
	const char *s;
	const char *err;	/* NULL: parses, to the fields below */
	const char *name;
	uint64_t count;
	uint32_t um;
	bool um_given, k, u;
};

static const struct parse_case parse_cases[] = {
	{ "CPU_CLK_UNHALTED", NULL, "CPU_CLK_UNHALTED", 0, 0, false, true, true },
	{ "CPU_CLK_UNHALTED:100000", NULL, "CPU_CLK_UNHALTED", 100000, 0, false, true, true },
	{ "LLC_MISSES:6000:0x41:1:0", NULL, "LLC_MISSES", 6000, 0x41, true, true, false },
	{ "LLC_MISSES:6000:65:0:1", NULL, "LLC_MISSES", 6000, 65, true, false, true },
	{ "X::0", NULL, "X", 0, 0, true, true, true },
	{ "X::::0", NULL, "X", 0, 0, false, true, false },
	{ "X:18446744073709551615", NULL, "X", UINT64_MAX, 0, false, true, true },
	{ "X:1:0xffffffff", NULL, "X", 1, 0xffffffff, true, true, true },
	{ .s = "", .err = "bad event spec" },
	{ .s = ":100", .err = "bad event spec" },
	{ .s = "A-B", .err = "bad event spec" },
	{ .s = "A B", .err = "bad event spec" },
	{ .s = "X:1:0:1:1:1", .err = "bad event spec" },
	{ .s = "X:-1", .err = "bad event spec" },
	{ .s = "X:+1", .err = "bad event spec" },
	{ .s = "X:0x10", .err = "bad event spec" },
	{ .s = "X:1e5", .err = "bad event spec" },
	{ .s = "X:18446744073709551616", .err = "bad event spec" },
	{ .s = "X:1:zz", .err = "bad event spec" },
	{ .s = "X:1:0x", .err = "bad event spec" },
	{ .s = "X:1:0x100000000", .err = "bad event spec" },
	{ .s = "X:1:0:2", .err = "bad event spec" },
	{ .s = "X:1:0:1:yes", .err = "bad event spec" },
	{ .s = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", .err = "bad event spec" },	/* 49 */
};

static void test_spec_parse(void)
{
	size_t i;

	for (i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct ev_spec s;
		char err[512] = "";
		int r = ev_spec_parse(c->s, &s, err, sizeof(err));

		if (c->err) {
			if (r != -EINVAL || !strstr(err, c->err))
				fprintf(stderr, "\n\"%s\": %d \"%s\"\n", c->s, r, err);
			CU_ASSERT_EQUAL(r, -EINVAL);
			CU_ASSERT_PTR_NOT_NULL(strstr(err, c->err));
			continue;
		}
		if (r)
			fprintf(stderr, "\n\"%s\": %s\n", c->s, err);
		CU_ASSERT_EQUAL_FATAL(r, 0);
		CU_ASSERT_STRING_EQUAL(s.name, c->name);
		CU_ASSERT_EQUAL(s.count, c->count);
		CU_ASSERT_EQUAL(s.unit_mask, c->um);
		CU_ASSERT_EQUAL(s.um_given, c->um_given);
		CU_ASSERT_EQUAL(s.kernel, c->k);
		CU_ASSERT_EQUAL(s.user, c->u);
	}
}

/* ---- spec checking ------------------------------------------------------------------ */

struct check_case {
	const char *cpu, *s;
	const char *err;	/* NULL: passes, giving count and um */
	uint64_t count;
	uint32_t um;
};

static const struct check_case check_cases[] = {
	{ "x86-64/arch", "CPU_CLK_UNHALTED", NULL, 100000, 0 },
	{ "x86-64/arch", "CPU_CLK_UNHALTED:6000", NULL, 6000, 0 },
	{ "x86-64/arch", "LLC_MISSES", NULL, 10000, 0x41 },
	{ "x86-64/arch", "LLC_REFS:7000:0x4f", NULL, 7000, 0x4f },
	{ .cpu = "x86-64/arch", .s = "CPU_CLK_UNHALTED:5999", .err = "count 5999 for event CPU_CLK_UNHALTED is below its minimum 6000" },
	{ .cpu = "x86-64/arch", .s = "LLC_MISSES:6000:0x4f", .err = "unit mask 0x4f is not valid for event LLC_MISSES (allowed: 0x41)" },
	{ .cpu = "x86-64/arch", .s = "CPU_CLK_UNHALTED:6000:1", .err = "unit mask 0x1 is not valid" },
	{ .cpu = "x86-64/arch", .s = "TIMER", .err = "unknown event \"TIMER\" for CPU type x86-64/arch" },
	{ .cpu = "x86-64/arch", .s = "cpu_clk_unhalted", .err = "unknown event" },
	{ .cpu = "x86-64/arch", .s = "INST_RETIRED:6000:0:0:0", .err = "event INST_RETIRED counts nothing" },
	{ "timer", "TIMER", NULL, 100000, 0 },
	{ "timer", "TIMER:10000", NULL, 10000, 0 },
	{ .cpu = "timer", .s = "TIMER:9999", .err = "count 9999 for event TIMER is below its minimum 10000" },
	{ .cpu = "timer", .s = "CPU_CLK_UNHALTED", .err = "unknown event" },
	{ "t/ok", "CPU_CLK_UNHALTED:1000:1", NULL, 1000, 1 },
	{ .cpu = "t/ok", .s = "CPU_CLK_UNHALTED:1000:2", .err = "unit mask 0x2 is not valid for event CPU_CLK_UNHALTED (one of: 0x0, 0x1)" },
	{ "t/ok", "MEM", NULL, 7000, 1 },
	{ "t/ok", "MEM:0:0x7", NULL, 7000, 7 },
	{ "t/ok", "MEM:0:0", NULL, 7000, 0 },
	{ .cpu = "t/ok", .s = "MEM:0:0x9", .err = "unit mask 0x9 is not valid for event MEM (any combination of: 0x1|0x2|0x4)" },
	{ "t/ok", "INS", NULL, 100000, 0 },
};

static void test_spec_check(void)
{
	size_t i;

	for (i = 0; i < sizeof(check_cases) / sizeof(check_cases[0]); i++) {
		const struct check_case *c = &check_cases[i];
		const char *dir = strncmp(c->cpu, "t/", 2) ? events_dir : tmpdir;
		struct ev_table *t;
		struct ev_spec s;
		char err[512] = "";
		int r;

		t = ev_table_load(dir, c->cpu, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL_FATAL(t);
		CU_ASSERT_EQUAL_FATAL(ev_spec_parse(c->s, &s, err, sizeof(err)), 0);
		r = ev_spec_check(t, &s, err, sizeof(err));
		if (c->err) {
			if (r != -EINVAL || strncmp(err, c->err, strlen(c->err)))
				fprintf(stderr, "\n\"%s\": %d \"%s\"\n", c->s, r, err);
			CU_ASSERT_EQUAL(r, -EINVAL);
			CU_ASSERT_EQUAL(strncmp(err, c->err, strlen(c->err)), 0);
		} else {
			if (r)
				fprintf(stderr, "\n\"%s\": %s\n", c->s, err);
			CU_ASSERT_EQUAL(r, 0);
			CU_ASSERT_EQUAL(s.count, c->count);
			CU_ASSERT_EQUAL(s.unit_mask, c->um);
		}
		ev_table_free(t);
	}
}

static void test_default_spec(void)
{
	struct ev_table *t;
	struct ev_spec s;
	char err[512];

	t = ev_table_load(events_dir, "x86-64/arch", err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(ev_default_spec(t, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.name, "CPU_CLK_UNHALTED");
	CU_ASSERT_EQUAL(s.count, 100000);
	ev_table_free(t);

	t = ev_table_load(events_dir, "timer", err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(ev_default_spec(t, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.name, "TIMER");
	CU_ASSERT_EQUAL(s.count, 100000);
	ev_table_free(t);

	t = ev_table_load(tmpdir, "t/ok", err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(ev_default_spec(t, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.name, "MEM");
	CU_ASSERT_EQUAL(s.count, 7000);
	CU_ASSERT_EQUAL(s.unit_mask, 1);
	ev_table_free(t);
}

/* The detected type is the one perf's answer implies. */
static void test_detect(void)
{
	struct perf_event_attr a;
	struct ev_table *t;
	char err[512];
	long fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0)
		close((int)fd);
	t = ev_table_load(events_dir, NULL, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_STRING_EQUAL(ev_table_cpu_type(t), fd >= 0 ? "x86-64/arch" : "timer");
	ev_table_free(t);

	t = ev_table_load(events_dir, "no/such", err, sizeof(err));
	CU_ASSERT_PTR_NULL(t);
	CU_ASSERT_EQUAL(errno, ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "no/such/unit_masks"));
	t = ev_table_load(events_dir, "../events/timer", err, sizeof(err));
	CU_ASSERT_PTR_NULL(t);
	CU_ASSERT_EQUAL(errno, EINVAL);
}

/* ---- malformed files ----------------------------------------------------------------- */

struct bad_case {
	const char *ev, *um, *def;	/* NULL: the good one (def: none) */
	const char *err;		/* expected in the message */
};

static const struct bad_case bad_cases[] = {
	{ "event:0x3c counters:0 um:zero minimum:1 name:A\n", NULL, NULL, "/t/bad/events:1: expected \"fields : description\"" },
	{ "\n# c\nevent:0x3c counters:0 um:zero minimum:1 name:A : \n", NULL, NULL, "/t/bad/events:3: empty description" },
	{ "event:0x3c counters:0 um:zero minimum:1 : d\n", NULL, NULL, "events:1: an event needs" },
	{ "event:0x3c event:1 counters:0 um:zero minimum:1 name:A : d\n", NULL, NULL, "events:1: field \"event\" given twice" },
	{ "event:0x3c counters:0 um:zero minimum:1 name:A filter:0 : d\n", NULL, NULL, "events:1: unknown field \"filter\"" },
	{ "event:0x3c counters:0 um:zero minimum:1 name:A foo : d\n", NULL, NULL, "events:1: expected key:value" },
	{ "event:0x100 counters:0 um:zero minimum:1 name:A : d\n", NULL, NULL, "events:1: bad event code" },
	{ "event:zz counters:0 um:zero minimum:1 name:A : d\n", NULL, NULL, "events:1: bad event code" },
	{ "event:0x3c counters:32 um:zero minimum:1 name:A : d\n", NULL, NULL, "events:1: bad counters" },
	{ "event:0x3c counters:0,,1 um:zero minimum:1 name:A : d\n", NULL, NULL, "events:1: bad counters" },
	{ "event:0x3c counters:cpuid um:zero minimum:1 name:A : d\n", NULL, NULL, "events:1: bad counters" },
	{ "event:0x3c counters:0 um:zero minimum:0 name:A : d\n", NULL, NULL, "events:1: bad minimum" },
	{ "event:0x3c counters:0 um:zero minimum:-5 name:A : d\n", NULL, NULL, "events:1: bad minimum" },
	{ "event:0x3c counters:0 um:zero minimum:1 name:A-B : d\n", NULL, NULL, "events:1: bad event name" },
	{ "event:0x3c counters:0 um:nope minimum:1 name:A : d\n", NULL, NULL, "events:1: event A uses unit mask set \"nope\"" },
	{ "event:0x3c counters:0 um:zero minimum:1 name:A : d\nevent:0x3d counters:0 um:zero minimum:1 name:A : e\n",
	  NULL, NULL, "events:2: event A defined twice" },
	{ "# nothing\n", NULL, NULL, "events: no events" },
	{ NULL, "\t0x0 x\n", NULL, "unit_masks:1: unit mask value outside a set" },
	{ NULL, "name:zero type:mandatory default:0x0\n", NULL, "unit_masks:1: unit mask set zero has no values" },
	{ NULL, "name:zero type:mandatory default:0x0\n\t0x0 a\n\t0x1 b\n", NULL, "unit_masks:1: mandatory unit mask set zero must have exactly one value" },
	{ NULL, "name:zero type:exclusive default:0x2\n\t0x0 a\n\t0x1 b\n", NULL, "unit_masks:1: default 0x2 of unit mask set zero" },
	{ NULL, "name:zero type:bitmask default:0x8\n\t0x1 a\n\t0x2 b\n", NULL, "unit_masks:1: default 0x8" },
	{ NULL, "name:zero type:weird default:0x0\n\t0x0 a\n", NULL, "unit_masks:1: unknown unit mask type \"weird\"" },
	{ NULL, "name:zero type:mandatory\n\t0x0 a\n", NULL, "unit_masks:1: a unit mask set needs" },
	{ NULL, "name:zero type:mandatory default:x\n\t0x0 a\n", NULL, "unit_masks:1: bad default" },
	{ NULL, "name:zero type:mandatory default:0\n\tzz a\n", NULL, "unit_masks:2: expected \"VALUE description\"" },
	{ NULL, "name:zero type:mandatory default:0\n\t0x0\n", NULL, "unit_masks:2: expected \"VALUE description\"" },
	{ NULL, "name:zero type:exclusive default:0\n\t0x0 a\n\t0 b\n", NULL, "unit_masks:3: duplicate value" },
	{ NULL, "name:zero type:mandatory default:0\n\t0x0 a\nname:zero type:mandatory default:0\n\t0x0 a\n", NULL,
	  "unit_masks:3: unit mask set zero defined twice" },
	{ NULL, "name:zero type:mandatory default:0 extra:1\n\t0x0 a\n", NULL, "unit_masks:1: unknown field \"extra\"" },
	{ NULL, "", NULL, "unit_masks: no unit mask sets" },
	{ NULL, NULL, "default_event:NOPE\n", "defaults:1: default event NOPE is not in events" },
	{ NULL, NULL, "default_event:A\ndefault_event:A\n", "defaults:2: default_event given twice" },
	{ NULL, NULL, "name:A count:1\n", "defaults:1: bad count \"1\" for A (at least its minimum 100)" },
	{ NULL, NULL, "name:A count:100\nname:A count:200\n", "defaults:2: count of A given twice" },
	{ NULL, NULL, "name:A\n", "defaults:1: expected \"name:NAME count:N\"" },
	{ NULL, NULL, "name:B count:100\n", "defaults:1: event B is not in events" },
	{ NULL, NULL, "default_event:A name:A\n", "defaults:1: default_event: stands alone" },
	{ NULL, NULL, "colour:blue\n", "defaults:1: unknown field \"colour\"" },
};

static void test_bad_files(void)
{
	static const char good_ev[] = "event:0x3c counters:0 um:zero minimum:100 name:A : d\n";
	static const char good_um[] = "name:zero type:mandatory default:0x0\n\t0x0 No unit mask\n";
	size_t i;
	struct ev_table *t;
	char err[512];

	/* the good pieces alone load */
	CU_ASSERT_EQUAL_FATAL(write_file("t/bad", "events", good_ev), 0);
	CU_ASSERT_EQUAL_FATAL(write_file("t/bad", "unit_masks", good_um), 0);
	CU_ASSERT_EQUAL_FATAL(write_file("t/bad", "defaults", NULL), 0);
	t = ev_table_load(tmpdir, "t/bad", err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(t);
	ev_table_free(t);

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];

		err[0] = '\0';
		CU_ASSERT_EQUAL_FATAL(write_file("t/bad", "events", c->ev ? c->ev : good_ev), 0);
		CU_ASSERT_EQUAL_FATAL(write_file("t/bad", "unit_masks", c->um ? c->um : good_um), 0);
		CU_ASSERT_EQUAL_FATAL(write_file("t/bad", "defaults", c->def), 0);
		errno = 0;
		t = ev_table_load(tmpdir, "t/bad", err, sizeof(err));
		if (t || !strstr(err, c->err))
			fprintf(stderr, "\ncase %zu: want \"%s\", got \"%s\"\n", i, c->err, t ? "(loaded)" : err);
		CU_ASSERT_PTR_NULL(t);
		CU_ASSERT_EQUAL(errno, EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, c->err));
		ev_table_free(t);
	}
}

int main(int argc, char **argv)
{
	static const struct du_test tests[] = {
		{ "every events table loads", test_all_tables },
		{ "perf mapping", test_perf_mapping },
		{ "spec parse", test_spec_parse },
		{ "spec check", test_spec_check },
		{ "default spec", test_default_spec },
		{ "cpu type detection", test_detect },
		{ "malformed files", test_bad_files },
	};

	if (argc > 1)
		events_dir = argv[1];
	return du_test_main("events", tests, DU_TEST_N(tests), init_tables, cleanup_tables);
}
