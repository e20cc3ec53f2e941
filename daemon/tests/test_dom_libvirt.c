/*
 * The daemon on the libvirt domain backend (doc/libvirt.md), against
 * libvirt's in-process test driver (test:///default: one running domain
 * "test") and a fake proc tree holding its QEMU: profiling follows the
 * domain's metadata live, and the info file says which.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libvirt/libvirt.h>

#include "dom_lvxml.h"
#include "dom_testproc.h"
#include "odb/odb.h"
#include "opd_daemon.h"
#include "raw/raw_stream.h"
#include "test_fixture.h"
#include "util/du_test.h"

#define TEST_URI "test:///default"
#define TEST_UUID "6695eb01-f6a4-8304-79aa-97f2502e193f"
#define PID 4242
#define GUEST_USER "{domain}/test/{anon:guest-user}/{dep}/{anon:guest-user}"

static struct tfx fx;

/* Its QEMU as libvirt starts it: no exe link, comm or stat needed. */
static void fake_qemu(void)
{
	static const char *const argv[] = { "/usr/bin/qemu-system-x86_64", "-name",
					    "guest=test,debug-threads=on", "-uuid", TEST_UUID,
					    NULL };

	tfx_qemu(&fx, PID, argv, true);
	tp_thread(fx.proc, PID, PID + 1, "CPU 0/KVM");
}

static void setup(void)
{
	struct dp_raw_event ev;

	tfx_tmpdir(&fx, "test_dom_libvirt", true);
	CU_ASSERT_FATAL(mkdir(fx.proc, 0755) == 0 && mkdir(fx.session, 0755) == 0);
	fake_qemu();
	tfx_conf(&fx);
	fx.conf.domain_backend = "libvirt";
	fx.conf.libvirt_uri = TEST_URI;
	tfx_event_clk(&ev);
	tfx_start(&fx, &ev, 1, 0);
}

/* Value of @key in SESSION/domains/test/info, or "" */
static const char *info_key(const char *key)
{
	return tfx_dom_value(&fx, "test", "info", key);
}

/* What the main loop does: poll (the backend's fd among them), then act. */
static void loop_once(void)
{
	struct pollfd pfd[8];
	size_t n;

	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	n = opd_daemon_pollfds(&fx.d, pfd, 8);
	CU_ASSERT_FATAL(n >= 1);	/* the libvirt backend's fd */
	poll(pfd, n, 100);
	opd_daemon_polled(&fx.d, pfd, n);
}

static void guest_samples(int n)
{
	CU_ASSERT(raw_put_cpu(fx.w, 0) == 0);
	CU_ASSERT(raw_put_task(fx.w, PID, PID + 1) == 0);
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_USER) == 0);
	for (int i = 0; i < n; i++)
		CU_ASSERT(raw_put_sample(fx.w, 0x401000, 0) == 0);
	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	/* batched samples reach their files */
	CU_ASSERT(opd_daemon_dump(&fx.d) == 0);
}

static int64_t guest_count(void)
{
	char path[512];
	uint64_t n;

	tp_pathf(path, sizeof(path), "%s/samples/current/" GUEST_USER
		 "/CPU_CLK_UNHALTED.100000.0.all.all.all", fx.session);
	return odb_read_count(path, 0x401000, &n) ? -1 : (int64_t)n;
}

static void set_profile(virDomainPtr dom, bool on)
{
	CU_ASSERT_EQUAL_FATAL(virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT,
						   dom_lvxml_profile_element(on), DOM_LV_NS_PREFIX,
						   DOM_LV_NS_URI, VIR_DOMAIN_AFFECT_LIVE), 0);
	for (int i = 0; i < 30 && strcmp(info_key("selected"), on ? "yes" : "no"); i++)
		loop_once();
	CU_ASSERT_STRING_EQUAL(info_key("selected"), on ? "yes" : "no");
}

static void test_metadata_toggles(void)
{
	virConnectPtr c;
	virDomainPtr dom;
	int64_t n;

	setup();
	c = virConnectOpen(TEST_URI);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	dom = virDomainLookupByName(c, "test");
	CU_ASSERT_PTR_NOT_NULL_FATAL(dom);
	/* no element: the domain is known, not profiled */
	virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, NULL, NULL, DOM_LV_NS_URI,
			     VIR_DOMAIN_AFFECT_LIVE);
	CU_ASSERT(opd_daemon_scan_domains(&fx.d) == 0);
	CU_ASSERT_STRING_EQUAL(info_key("uuid"), TEST_UUID);
	CU_ASSERT_STRING_EQUAL(info_key("pid"), "4242");
	CU_ASSERT_STRING_EQUAL(info_key("selected"), "no");
	guest_samples(2);
	CU_ASSERT_EQUAL(guest_count(), -1);
	CU_ASSERT_EQUAL(fx.d.st.samples_domain_unselected, 2);

	/* on: filed from the next sample */
	set_profile(dom, true);
	guest_samples(3);
	CU_ASSERT_EQUAL(guest_count(), 3);
	/* off: counts stay */
	set_profile(dom, false);
	guest_samples(4);
	n = guest_count();
	CU_ASSERT(n == 3);
	CU_ASSERT_EQUAL(fx.d.st.samples_domain_unselected, 6);
	CU_ASSERT_STRING_EQUAL(info_key("state"), "running");

	/* destroyed: stopped in the info file; started: running again */
	CU_ASSERT_EQUAL(virDomainDestroy(dom), 0);
	for (int i = 0; i < 30 && strcmp(info_key("state"), "stopped"); i++)
		loop_once();
	CU_ASSERT_STRING_EQUAL(info_key("state"), "stopped");
	CU_ASSERT_EQUAL(virDomainCreate(dom), 0);
	for (int i = 0; i < 30 && strcmp(info_key("state"), "running"); i++)
		loop_once();
	CU_ASSERT_STRING_EQUAL(info_key("state"), "running");

	virDomainFree(dom);
	virConnectClose(c);
	tfx_teardown(&fx);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "metadata toggles profiling", test_metadata_toggles },
	};

	return du_test_main("daemon on libvirt", tests, DU_TEST_N(tests), NULL, NULL);
}
