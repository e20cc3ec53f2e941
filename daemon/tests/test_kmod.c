/*
 * Unit tests of the kmod collector (collect_kmod.c) that need no kernel
 * module: the event to module-configuration mapping, and open() on a
 * missing device and on something that is not the device.  The module
 * itself is tested in the lab (tests/lab/scenarios/kmod.sh).
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect_kmod.h"
#include "opd_conf.h"
#include "util/du_test.h"

static void set_event(struct opd_conf *c, const char *name, uint64_t count)
{
	struct ev_spec *e = &c->events[c->nr_events++];

	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->count = count;
	e->kernel = e->user = true;
}

static void test_config(void)
{
	struct opd_conf c;
	struct dp_kmod_config k;

	opd_conf_defaults(&c);
	c.nr_events = 0;
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), 0);
	CU_ASSERT_EQUAL(k.abi, DP_KMOD_ABI);
	CU_ASSERT_EQUAL(k.event, DP_KMOD_EV_AUTO);
	CU_ASSERT_EQUAL(k.ring_entries, DP_KMOD_DEF_RING);
	CU_ASSERT_EQUAL(k.flags, DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER);
	CU_ASSERT_EQUAL(k.callgraph_depth, 0);
	/* --callgraph passes the depth to the module, at most its limit */
	c.callgraph_depth = 16;
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), 0);
	CU_ASSERT_EQUAL(k.callgraph_depth, 16);
	c.callgraph_depth = 1000;
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), 0);
	CU_ASSERT_EQUAL(k.callgraph_depth, DP_KMOD_MAX_CG_DEPTH);
	c.callgraph_depth = 0;

	set_event(&c, "CPU_CLK_UNHALTED", 250000);
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), 0);
	CU_ASSERT_EQUAL(k.event, DP_KMOD_EV_CYCLES);
	CU_ASSERT_EQUAL(k.period, 250000);

	c.nr_events = 0;
	set_event(&c, "TIMER", 500000);
	c.events[0].kernel = false;
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), 0);
	CU_ASSERT_EQUAL(k.event, DP_KMOD_EV_CPU_CLOCK);
	CU_ASSERT_EQUAL(k.clock_ns, 500000);
	CU_ASSERT_EQUAL(k.flags, DP_KMOD_CF_USER);

	/* what the module cannot do is refused before it is asked */
	c.events[0].user = false;
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), -EINVAL);
	c.nr_events = 0;
	set_event(&c, "TIMER", 100);
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), -EINVAL);
	c.nr_events = 0;
	set_event(&c, "LLC_MISSES", 6000);
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), -EINVAL);
	c.nr_events = 0;
	set_event(&c, "CPU_CLK_UNHALTED", 0);
	set_event(&c, "TIMER", 0);
	CU_ASSERT_EQUAL(collect_kmod_config(&c, &k), -EINVAL);
}

static int never_feed(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	(void)buf;
	(void)len;
	return -EIO;
}

static void test_open_errors(void)
{
	static const struct opd_raw_sink sink = { .feed = never_feed };
	struct opd_conf c;
	struct opd_collector_args a = { .conf = &c, .sink = &sink };
	char path[] = "/tmp/test_kmod.XXXXXX";
	void *st = (void *)1;
	int fd;

	opd_conf_defaults(&c);
	c.nr_events = 0;
	CU_ASSERT_STRING_EQUAL(opd_collector_kmod.name, "kmod");
	CU_ASSERT(opd_collector_kmod.caps & OPD_CAP_LIVE);
	/* --event, when given, reaches collect_kmod_config */
	CU_ASSERT(opd_collector_kmod.caps & OPD_CAP_EVENTS_OPT);
	CU_ASSERT(opd_collector_kmod.caps & OPD_CAP_CALLCHAIN);

	setenv("DOMPROF_KMOD_DEVICE", "/nonexistent/domprof", 1);
	CU_ASSERT_EQUAL(opd_collector_kmod.open(&a, &st), -ENOENT);
	CU_ASSERT_PTR_NULL(st);

	/* a plain file opens but is no device: configuring it fails */
	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	setenv("DOMPROF_KMOD_DEVICE", path, 1);
	st = (void *)1;
	CU_ASSERT_EQUAL(opd_collector_kmod.open(&a, &st), -ENOTTY);
	CU_ASSERT_PTR_NULL(st);
	unlink(path);
	unsetenv("DOMPROF_KMOD_DEVICE");
	opd_collector_kmod.close(NULL);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "events to module configuration", test_config },
		{ "open: no module, not the device", test_open_errors },
	};

	return du_test_main("collect_kmod", tests, DU_TEST_N(tests), NULL, NULL);
}
