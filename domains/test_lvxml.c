/*
 * Tests for the libvirt backend's XML part (dom_lvxml.c): domain XML
 * fixtures in testdata/ as libvirtd writes them (live and inactive), and
 * hostile or foreign documents.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "dom_lvxml.h"
#include "util/du_test.h"

#ifndef TESTDATA_DIR
#define TESTDATA_DIR "testdata"
#endif

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	char *buf;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", TESTDATA_DIR, name);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
	CU_ASSERT_FATAL(fread(buf, 1, (size_t)n, f) == (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void test_live(void)
{
	struct dom_lvxml x;
	size_t len;
	char *xml = slurp("lv-live.xml", &len);

	CU_ASSERT_EQUAL_FATAL(dom_lvxml_parse(xml, len, &x), 0);
	CU_ASSERT_STRING_EQUAL(x.name, "web");
	CU_ASSERT_STRING_EQUAL(x.uuid, "6b1b1d6e-0000-4000-8000-000000000011");
	CU_ASSERT_EQUAL(x.profile, DOM_LV_PROFILE_ON);
	CU_ASSERT(x.has_channel);
	/* the second channel: the first is QEMU's guest agent */
	CU_ASSERT_STRING_EQUAL(x.agent_path,
			       "/var/lib/libvirt/qemu/channel/target/domain-3-web/org.domprof.agent.0");
	CU_ASSERT_PTR_NOT_NULL_FATAL(x.channel_xml);
	CU_ASSERT(strstr(x.channel_xml, "<channel type=\"unix\">") == x.channel_xml);
	CU_ASSERT_PTR_NOT_NULL(strstr(x.channel_xml, "name=\"org.domprof.agent.0\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(x.channel_xml, "port=\"2\""));
	CU_ASSERT_PTR_NULL(strstr(x.channel_xml, "guest_agent"));
	dom_lvxml_release(&x);
	dom_lvxml_release(&x);	/* twice is fine */
	free(xml);
}

static void test_inactive(void)
{
	struct dom_lvxml x;
	size_t len;
	char *xml = slurp("lv-inactive.xml", &len);

	CU_ASSERT_EQUAL_FATAL(dom_lvxml_parse(xml, len, &x), 0);
	CU_ASSERT_STRING_EQUAL(x.name, "db & cache");
	CU_ASSERT_EQUAL(x.profile, DOM_LV_PROFILE_OFF);
	/* defined without a path: libvirt makes one when the domain starts */
	CU_ASSERT(x.has_channel);
	CU_ASSERT_PTR_NULL(x.agent_path);
	CU_ASSERT_PTR_NOT_NULL(x.channel_xml);
	dom_lvxml_release(&x);
	free(xml);
}

static void test_foreign(void)
{
	struct dom_lvxml x;
	size_t len;
	char *xml = slurp("lv-plain.xml", &len);

	/* the external entity is neither read nor substituted */
	CU_ASSERT_EQUAL_FATAL(dom_lvxml_parse(xml, len, &x), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(x.name);
	CU_ASSERT_PTR_NULL(strstr(x.name, "root:"));
	CU_ASSERT_STRING_EQUAL(x.uuid, "");
	/* other namespace, no namespace: not ours */
	CU_ASSERT_EQUAL(x.profile, DOM_LV_PROFILE_ABSENT);
	/* pty channel, guestfwd target: not the agent channel */
	CU_ASSERT(!x.has_channel);
	CU_ASSERT_PTR_NULL(x.agent_path);
	CU_ASSERT_PTR_NULL(x.channel_xml);
	dom_lvxml_release(&x);
	free(xml);
}

static void test_bad_docs(void)
{
	static const char *const bad[] = {
		"", "<", "<domain>", "<domain></dom>", "<notdomain/>", "plain text",
		"<domain><name>x</name></domain><domain/>",
	};
	struct dom_lvxml x;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(dom_lvxml_parse(bad[i], strlen(bad[i]), &x), -EINVAL);
		CU_ASSERT_PTR_NULL(x.name);
	}
	CU_ASSERT_EQUAL(dom_lvxml_parse(NULL, 0, &x), -EINVAL);
	/* a bound on the length, not the NUL, ends the document */
	CU_ASSERT_EQUAL(dom_lvxml_parse("<domain/>garbage", 9, &x), 0);
	dom_lvxml_release(&x);
}

static void test_profile_element(void)
{
	static const struct {
		const char *xml;
		int ret;
		enum dom_lv_profile p;
	} cases[] = {
		{ "<profile xmlns='" DOM_LV_NS_URI "' enabled='yes'/>", 0, DOM_LV_PROFILE_ON },
		{ "<domprof:profile xmlns:domprof='" DOM_LV_NS_URI "' enabled='yes'/>", 0,
		  DOM_LV_PROFILE_ON },
		{ "<profile xmlns='" DOM_LV_NS_URI "' enabled='no'/>", 0, DOM_LV_PROFILE_OFF },
		{ "<profile xmlns='" DOM_LV_NS_URI "' enabled='YES'/>", 0, DOM_LV_PROFILE_OFF },
		{ "<profile xmlns='" DOM_LV_NS_URI "'/>", 0, DOM_LV_PROFILE_OFF },
		/* what virDomainGetMetadata returns */
		{ "<profile enabled=\"yes\"/>", 0, DOM_LV_PROFILE_ON },
		{ "<x:profile xmlns:x='urn:other' enabled='yes'/>", -EINVAL, DOM_LV_PROFILE_ABSENT },
		{ "<profile xmlns='https://domprof.org/xmlns/libvirt/10' enabled='yes'/>", -EINVAL,
		  DOM_LV_PROFILE_ABSENT },
		{ "<other xmlns='" DOM_LV_NS_URI "' enabled='yes'/>", -EINVAL,
		  DOM_LV_PROFILE_ABSENT },
		{ "<profile xmlns='" DOM_LV_NS_URI "' enabled='yes'>", -EINVAL,
		  DOM_LV_PROFILE_ABSENT },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum dom_lv_profile p = DOM_LV_PROFILE_ABSENT;

		CU_ASSERT_EQUAL(dom_lvxml_profile_parse(cases[i].xml, strlen(cases[i].xml), &p),
				cases[i].ret);
		CU_ASSERT_EQUAL(p, cases[i].p);
	}
}

/* What opcontrol writes reads back as what it meant, once libvirt puts it
 * in our namespace; and the channel it adds is the agent channel. */
static void test_round_trip(void)
{
	char buf[512];
	enum dom_lv_profile p;
	struct dom_lvxml x;

	for (int on = 0; on < 2; on++) {
		const char *e = dom_lvxml_profile_element(on);

		/* libvirt stores <profile .../> as <domprof:profile xmlns:domprof=URI .../> */
		snprintf(buf, sizeof(buf), "<%s:" DOM_LV_PROFILE_ELEM " xmlns:%s='%s'%s",
			 DOM_LV_NS_PREFIX, DOM_LV_NS_PREFIX, DOM_LV_NS_URI,
			 e + strlen("<" DOM_LV_PROFILE_ELEM));
		CU_ASSERT_EQUAL_FATAL(dom_lvxml_profile_parse(buf, strlen(buf), &p), 0);
		CU_ASSERT_EQUAL(p, on ? DOM_LV_PROFILE_ON : DOM_LV_PROFILE_OFF);
	}
	snprintf(buf, sizeof(buf), "<domain><devices>%s</devices></domain>", DOM_LV_CHANNEL_XML);
	CU_ASSERT_EQUAL_FATAL(dom_lvxml_parse(buf, strlen(buf), &x), 0);
	CU_ASSERT(x.has_channel);
	CU_ASSERT_PTR_NULL(x.agent_path);
	dom_lvxml_release(&x);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "live domain xml", test_live },
		{ "inactive domain xml", test_inactive },
		{ "foreign and hostile xml", test_foreign },
		{ "not a domain", test_bad_docs },
		{ "metadata element", test_profile_element },
		{ "what opcontrol writes", test_round_trip },
	};

	return du_test_main("libvirt xml", tests, DU_TEST_N(tests), NULL, NULL);
}
