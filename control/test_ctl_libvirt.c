/*
 * Tests for opcontrol's libvirt commands (ctl_libvirt.c): the parser, and
 * the commands against libvirt's in-process test driver (test:///default,
 * one running persistent domain "test"), read back through libvirt.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>
#include <libvirt/libvirt.h>

#include "ctl.h"
#include "ctl_libvirt.h"
#include "dom_lvxml.h"
#include "util/du_test.h"

#define TEST_URI "test:///default"

static void test_wanted_and_parse(void)
{
	static const struct {
		const char *argv[6];
		bool wanted;
		int ret;
		enum ctl_lv_action action;
		const char *domain, *uri;
	} cases[] = {
		{ { "opcontrol", "--profile-domain=web" }, true, 0, CTL_LV_PROFILE, "web", NULL },
		{ { "opcontrol", "--unprofile-domain", "db" }, true, 0, CTL_LV_UNPROFILE, "db", NULL },
		{ { "opcontrol", "--add-channel=web", "--libvirt-uri=test:///default" }, true, 0,
		  CTL_LV_ADD_CHANNEL, "web", "test:///default" },
		{ { "opcontrol", "--libvirt-uri", "qemu:///session", "--remove-channel=x" }, true, 0,
		  CTL_LV_REMOVE_CHANNEL, "x", "qemu:///session" },
		{ { "opcontrol", "--session-dir=/tmp/s", "--verbose", "--profile-domain=a" }, true, 0,
		  CTL_LV_PROFILE, "a", NULL },
		{ { "opcontrol", "--profile-domain=a", "--add-channel=a" }, true, -EINVAL, CTL_LV_NONE, NULL, NULL },
		{ { "opcontrol", "--profile-domain=" }, true, -EINVAL, CTL_LV_NONE, NULL, NULL },
		{ { "opcontrol", "--profile-domain" }, true, -EINVAL, CTL_LV_NONE, NULL, NULL },
		{ { "opcontrol", "--profile-domain=a", "--start" }, true, -EINVAL, CTL_LV_NONE, NULL, NULL },
		{ { "opcontrol", "--profile-domains=a" }, false, -EINVAL, CTL_LV_NONE, NULL, NULL },
		{ { "opcontrol", "--start", "--domains=all" }, false, -EINVAL, CTL_LV_NONE, NULL, NULL },
		{ { "opcontrol", "--libvirt-uri=x" }, false, -EINVAL, CTL_LV_NONE, NULL, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctl_lv_opts o;
		char err[256] = "";
		int argc = 0;

		while (argc < 6 && cases[i].argv[argc])
			argc++;
		CU_ASSERT_EQUAL(ctl_lv_wanted(argc, (char *const *)cases[i].argv), cases[i].wanted);
		CU_ASSERT_EQUAL(ctl_lv_parse(argc, (char *const *)cases[i].argv, &o, err, sizeof(err)),
				cases[i].ret);
		if (cases[i].ret) {
			CU_ASSERT(err[0] != '\0');
			continue;
		}
		CU_ASSERT_EQUAL(o.action, cases[i].action);
		CU_ASSERT_STRING_EQUAL(o.domain, cases[i].domain);
		if (cases[i].uri) {
			CU_ASSERT_STRING_EQUAL(o.uri, cases[i].uri);
		} else {
			CU_ASSERT_PTR_NULL(o.uri);
		}
	}
}

/* Run one command line; returns the exit status, output in @buf. */
static int run(char *buf, size_t size, const char *a1, const char *a2)
{
	char *const argv[] = { "opcontrol", (char *)a1, (char *)a2, NULL };
	FILE *out = fmemopen(buf, size, "w");
	int ret;

	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	ret = ctl_main(3, argv, out, out);
	fclose(out);
	return ret;
}

static enum dom_lv_profile profile_of(virDomainPtr d, unsigned int flags)
{
	char *m = virDomainGetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, DOM_LV_NS_URI, flags);
	enum dom_lv_profile p = DOM_LV_PROFILE_ABSENT;

	if (m)
		CU_ASSERT_EQUAL(dom_lvxml_profile_parse(m, strlen(m), &p), 0);
	free(m);
	return p;
}

static void test_profile(void)
{
	char buf[1024];
	virConnectPtr c = virConnectOpen(TEST_URI);
	virDomainPtr d;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	d = virDomainLookupByName(c, "test");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(profile_of(d, VIR_DOMAIN_AFFECT_LIVE), DOM_LV_PROFILE_ABSENT);

	CU_ASSERT_EQUAL(run(buf, sizeof(buf), "--profile-domain=test", "--libvirt-uri=" TEST_URI), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "profiling on"));
	CU_ASSERT_EQUAL(profile_of(d, VIR_DOMAIN_AFFECT_LIVE), DOM_LV_PROFILE_ON);
	CU_ASSERT_EQUAL(profile_of(d, VIR_DOMAIN_AFFECT_CONFIG), DOM_LV_PROFILE_ON);

	/* by UUID, and off */
	CU_ASSERT_EQUAL(run(buf, sizeof(buf), "--unprofile-domain=6695eb01-f6a4-8304-79aa-97f2502e193f",
			    "--libvirt-uri=" TEST_URI), 0);
	CU_ASSERT_EQUAL(profile_of(d, VIR_DOMAIN_AFFECT_LIVE), DOM_LV_PROFILE_OFF);
	CU_ASSERT_EQUAL(profile_of(d, VIR_DOMAIN_AFFECT_CONFIG), DOM_LV_PROFILE_OFF);

	/* an unknown domain is an error that names it */
	CU_ASSERT_EQUAL(run(buf, sizeof(buf), "--profile-domain=nosuch", "--libvirt-uri=" TEST_URI), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "no libvirt domain 'nosuch'"));
	/* no libvirtd */
	CU_ASSERT_EQUAL(run(buf, sizeof(buf), "--profile-domain=test",
			    "--libvirt-uri=qemu+unix:///system?socket=/nonexistent"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "cannot connect to libvirt"));
	virDomainFree(d);
	virConnectClose(c);
}

static bool has_channel(virDomainPtr d, unsigned int flags)
{
	char *xml = virDomainGetXMLDesc(d, flags);
	struct dom_lvxml x;
	bool has = false;

	CU_ASSERT_PTR_NOT_NULL_FATAL(xml);
	if (!dom_lvxml_parse(xml, strlen(xml), &x)) {
		has = x.has_channel;
		dom_lvxml_release(&x);
	}
	free(xml);
	return has;
}

static void test_channel(void)
{
	char buf[2048];
	virConnectPtr c = virConnectOpen(TEST_URI);
	virDomainPtr d;
	int ret;

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	d = virDomainLookupByName(c, "test");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT(!has_channel(d, VIR_DOMAIN_XML_INACTIVE));

	/* the test driver cannot attach devices: the error says what failed
	 * (attaching for real is the lab's libvirt-domprof scenario) */
	ret = run(buf, sizeof(buf), "--add-channel=test", "--libvirt-uri=" TEST_URI);
	CU_ASSERT_EQUAL(ret, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "cannot add the agent channel to the definition of test"));
	CU_ASSERT(!has_channel(d, 0));
	CU_ASSERT_EQUAL(run(buf, sizeof(buf), "--remove-channel=test", "--libvirt-uri=" TEST_URI), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "has no agent channel"));
	virDomainFree(d);
	virConnectClose(c);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "options", test_wanted_and_parse },
		{ "profile on and off through metadata", test_profile },
		{ "agent channel added and removed", test_channel },
	};

	return du_test_main("opcontrol libvirt", tests, DU_TEST_N(tests), NULL, NULL);
}
