/*
 * Unit test for the pprof export: a hand-made profile is packed, decoded
 * again with protobuf-c and checked field by field (sample types, values,
 * labels, mappings, functions, the string table).
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.pb-c.h"
#include "rep_addr.h"
#include "rep_collect.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_pprof.h"
#include "util/du_log.h"
#include "util/du_test.h"

typedef Domprof__Pprof__Profile Profile;

static const char *str(const Profile *p, int64_t i)
{
	return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : "<bad index>";
}

/* The label @key of sample @s: its string, or its number printed. */
static const char *label(const Profile *p, const Domprof__Pprof__Sample *s, const char *key)
{
	static char num[32];

	for (size_t i = 0; i < s->n_label; i++) {
		if (strcmp(str(p, s->label[i]->key), key))
			continue;
		if (s->label[i]->str)
			return str(p, s->label[i]->str);
		snprintf(num, sizeof(num), "%lld", (long long)s->label[i]->num);
		return num;
	}
	return NULL;
}

static const char *leaf_function(const Profile *p, const Domprof__Pprof__Sample *s)
{
	const Domprof__Pprof__Location *l = p->location[s->location_id[0] - 1];

	return str(p, p->function[l->line[0]->function_id - 1]->name);
}

static const char *leaf_mapping(const Profile *p, const Domprof__Pprof__Sample *s)
{
	const Domprof__Pprof__Location *l = p->location[s->location_id[0] - 1];

	return str(p, p->mapping[l->mapping_id - 1]->filename);
}

static void test_pack(void)
{
	struct rep_class cls[] = { { .event = (char *)"CYCLES", .count = 100 },
				   { .event = (char *)"TIMER", .count = 1000 } };
	struct rep_group g[] = {
		{ .app = { SFN_ROOT, (char *)"/nonexistent/ratio" },
		  .dep = { SFN_ROOT, (char *)"/nonexistent/ratio" },
		  .tgid = 42, .tid = 43, .cpu = 1, .counts = 0 },
		{ .domain = (char *)"web1", .vmm = true,
		  .app = { SFN_ROOT, (char *)"/usr/bin/qemu" }, .dep = { SFN_KERN, (char *)"vmlinux" },
		  .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL, .counts = 2 },
		{ .domain = (char *)"web1", .app = { SFN_ROOT, (char *)"/bin/bash" },
		  .dep = { SFN_KERN, (char *)"vmlinux" }, .tgid = SFN_ALL, .tid = SFN_ALL,
		  .cpu = 3, .counts = 4 },
	};
	uint64_t arena[] = { 0, 0, 0, 0, 0, 0, 5, 6, 7, 0, 9, 10 };
	struct rep_symrow rows[] = {
		{ .group = 0, .sym = -1, .counts = 6 }, { .group = 1, .sym = -1, .counts = 8 },
		{ .group = 2, .sym = -1, .counts = 10 },
	};
	uint64_t totals[] = { 21, 16 };
	struct rep_profile rp = {
		.classes = cls, .nclasses = 2, .groups = g, .ngroups = 3, .rows = rows, .nrows = 3,
		.totals = totals, .arena = arena,
	};
	struct rep_opts o = { .session_dir = "/nonexistent" };
	struct rep_images *images = rep_images_new(&o);
	uint8_t *buf = NULL;
	size_t len = 0;
	Profile *p;

	CU_ASSERT_FATAL(images != NULL);
	CU_ASSERT_FATAL(rep_pprof_pack(&o, images, &rp, &buf, &len) == 0);
	p = domprof__pprof__profile__unpack(NULL, len, buf);
	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT_STRING_EQUAL(p->string_table[0], "");
	CU_ASSERT_FATAL(p->n_sample_type == 4);
	CU_ASSERT_STRING_EQUAL(str(p, p->sample_type[0]->type), "samples_CYCLES");
	CU_ASSERT_STRING_EQUAL(str(p, p->sample_type[0]->unit), "count");
	CU_ASSERT_STRING_EQUAL(str(p, p->sample_type[1]->type), "CYCLES");
	CU_ASSERT_STRING_EQUAL(str(p, p->sample_type[1]->unit), "events");
	CU_ASSERT_STRING_EQUAL(str(p, p->sample_type[3]->type), "TIMER");
	CU_ASSERT_STRING_EQUAL(str(p, p->period_type->type), "CYCLES");
	CU_ASSERT(p->period == 100);
	CU_ASSERT_FATAL(p->n_sample == 3);

	/* host row: separated by thread and cpu */
	CU_ASSERT(p->sample[0]->n_value == 4);
	CU_ASSERT(p->sample[0]->value[0] == 5 && p->sample[0]->value[1] == 500);
	CU_ASSERT(p->sample[0]->value[2] == 6 && p->sample[0]->value[3] == 6000);
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[0], "domain"), "host");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[0], "vmm"), "false");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[0], "comm"), "ratio");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[0], "pid"), "42");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[0], "tid"), "43");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[0], "cpu"), "1");
	CU_ASSERT_STRING_EQUAL(leaf_function(p, p->sample[0]), "(no symbols)");
	CU_ASSERT_STRING_EQUAL(leaf_mapping(p, p->sample[0]), "/nonexistent/ratio");

	/* vmm work for web1: no pid label when not separated */
	CU_ASSERT(p->sample[1]->value[2] == 0 && p->sample[1]->value[0] == 7);
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[1], "domain"), "web1");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[1], "vmm"), "true");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[1], "comm"), "{vmm}");
	CU_ASSERT(label(p, p->sample[1], "pid") == NULL);
	CU_ASSERT_STRING_EQUAL(leaf_mapping(p, p->sample[1]), "[kernel] vmlinux");

	/* the guest's own kernel work */
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[2], "comm"), "bash");
	CU_ASSERT_STRING_EQUAL(label(p, p->sample[2], "cpu"), "3");
	CU_ASSERT_STRING_EQUAL(leaf_mapping(p, p->sample[2]), "[guest kernel] vmlinux");
	CU_ASSERT(p->n_mapping == 3);

	domprof__pprof__profile__free_unpacked(p, NULL);
	free(buf);
	rep_images_free(images);
}

static void quiet_log(enum du_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* The samples by address behind the per-address locations: counts per
 * (group, symbol, key) and class, a row's entries chained. */
static void test_addrs(void)
{
	struct rep_class cls[2] = { { (char *)"A", 1, 0 }, { (char *)"B", 1, 0 } };
	struct rep_profile rp = { .classes = cls, .nclasses = 2 };
	struct rep_addrs *k = rep_addrs_new();
	struct rep_addr *e;
	int seen = 0;

	CU_ASSERT_FATAL(k != NULL);
	CU_ASSERT(rep_addrs_sink(k, &rp, 0, 0, NULL, 3, 0x10, 5) == 0);
	CU_ASSERT(rep_addrs_sink(k, &rp, 0, 1, NULL, 3, 0x10, 2) == 0);
	CU_ASSERT(rep_addrs_sink(k, &rp, 0, 0, NULL, 3, 0x14, 7) == 0);
	CU_ASSERT(rep_addrs_sink(k, &rp, 1, 0, NULL, 3, 0x10, 1) == 0);	/* another group */
	e = rep_addrs_find(k, 0, 3, 0x10);
	CU_ASSERT_FATAL(e != NULL);
	CU_ASSERT(e->c[0] == 5 && e->c[1] == 2 && e->key == 0x10);
	CU_ASSERT(rep_addrs_find(k, 0, 4, 0x10) == NULL);
	for (long i = rep_addrs_first(k, 0, 3); i >= 0; i = rep_addrs_at(k, i)->next) {
		e = rep_addrs_at(k, i);
		CU_ASSERT(e->group == 0 && e->sym == 3);
		seen++;
	}
	CU_ASSERT(seen == 2);
	CU_ASSERT(rep_addrs_first(k, 2, 3) == -1);
	rep_addrs_free(k);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "pack and decode", test_pack },
		{ "samples by address", test_addrs },
	};

	du_log_set(quiet_log);
	return du_test_main("pprof", tests, DU_TEST_N(tests), NULL, NULL);
}
