/* Unit tests of sample file names: exact spellings, round trips, rejects. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "sfname/sfname.h"
#include "util/du_test.h"

#define ALL SFN_ALL

struct exact_case {
	const char *domain;
	bool vmm;
	enum sfn_kind ik;
	const char *iname;
	enum sfn_kind dk;
	const char *dname;
	const char *event;
	uint64_t count;
	uint32_t um;
	int64_t tgid, tid, cpu;
	const char *want;
};

#define EV "CPU_CLK_UNHALTED.100000.0.all.all.all"

static const struct exact_case exact_cases[] = {
	/* doc/sample-files.md's first four examples, verbatim */
	{ NULL, false, SFN_ROOT, "/usr/bin/make", SFN_ROOT, "/usr/bin/make",
	  "CPU_CLK_UNHALTED", 100000, 0, ALL, ALL, ALL,
	  "{root}/usr/bin/make/{dep}/{root}/usr/bin/make/" EV },
	{ "web1", false, SFN_ROOT, "/usr/sbin/nginx", SFN_ROOT, "/usr/lib/x86_64-linux-gnu/libc.so.6",
	  "CPU_CLK_UNHALTED", 100000, 0, ALL, ALL, ALL,
	  "{domain}/web1/{root}/usr/sbin/nginx/{dep}/{root}/usr/lib/x86_64-linux-gnu/libc.so.6/" EV },
	{ "web1", false, SFN_KERN, "vmlinux", SFN_KERN, "virtio_net",
	  "CPU_CLK_UNHALTED", 100000, 0, ALL, ALL, ALL,
	  "{domain}/web1/{kern}/vmlinux/{dep}/{kern}/virtio_net/" EV },
	{ "web1", true, SFN_ROOT, "/usr/bin/qemu-system-x86_64", SFN_KERN, "kvm_amd",
	  "CPU_CLK_UNHALTED", 100000, 0, ALL, ALL, ALL,
	  "{domain}/web1/{vmm}/{root}/usr/bin/qemu-system-x86_64/{dep}/{kern}/kvm_amd/" EV },
	/* fields */
	{ NULL, false, SFN_ROOT, "/bin/ls", SFN_ROOT, "/lib/libc.so",
	  "LLC_MISSES", 6000, 0x41, 1234, 1235, 3,
	  "{root}/bin/ls/{dep}/{root}/lib/libc.so/LLC_MISSES.6000.0x41.1234.1235.3" },
	{ NULL, false, SFN_ROOT, "/x", SFN_ROOT, "/x",
	  "E", 0, 0xdeadbeef, 0, 0, 0,
	  "{root}/x/{dep}/{root}/x/E.0.0xdeadbeef.0.0.0" },
	{ NULL, false, SFN_ROOT, "/x", SFN_ROOT, "/x",
	  "e_1", UINT64_MAX, 0x1, INT64_MAX, ALL, 7,
	  "{root}/x/{dep}/{root}/x/e_1.18446744073709551615.0x1.9223372036854775807.all.7" },
	/* paths are kept exactly, never normalized */
	{ NULL, false, SFN_ROOT, "/", SFN_ROOT, "//",
	  "T", 1, 0, ALL, ALL, ALL,
	  "{root}/%00/{dep}/{root}/%00/%00/T.1.0.all.all.all" },
	{ NULL, false, SFN_ROOT, "/a/./../b/", SFN_ROOT, "/...",
	  "T", 1, 0, ALL, ALL, ALL,
	  "{root}/a/%2E/%2E%2E/b/%00/{dep}/{root}/.../T.1.0.all.all.all" },
	/* escaping of special bytes */
	{ NULL, false, SFN_ROOT, "/a b/{root}/100%/\x7f\x01\xff", SFN_KERN, "x/y",
	  "T", 1, 0, ALL, ALL, ALL,
	  "{root}/a%20b/%7Broot%7D/100%25/%7F%01%FF/{dep}/{kern}/x%2Fy/T.1.0.all.all.all" },
	{ "my vm/..", true, SFN_ANON, "[heap]", SFN_ANON, "",
	  "T", 1, 0, ALL, ALL, ALL,
	  "{domain}/my%20vm%2F../{vmm}/{anon:[heap]}/{dep}/{anon:}/T.1.0.all.all.all" },
	{ ".", false, SFN_KERN, "..", SFN_ANON, "..{}/%",
	  "T", 1, 0, ALL, ALL, ALL,
	  "{domain}/%2E/{kern}/%2E%2E/{dep}/{anon:..%7B%7D%2F%25}/T.1.0.all.all.all" },
	{ "", false, SFN_KERN, "", SFN_ROOT, "/%2E",
	  "T", 1, 0, ALL, ALL, ALL,
	  "{domain}/%00/{kern}/%00/{dep}/{root}/%252E/T.1.0.all.all.all" },
};

static void fill(struct sfn_name *n, const struct exact_case *c)
{
	memset(n, 0, sizeof(*n));
	n->domain = (char *)c->domain;
	n->vmm = c->vmm;
	n->image.kind = c->ik;
	n->image.name = (char *)c->iname;
	n->dep.kind = c->dk;
	n->dep.name = (char *)c->dname;
	n->event = (char *)c->event;
	n->count = c->count;
	n->unit_mask = c->um;
	n->tgid = c->tgid;
	n->tid = c->tid;
	n->cpu = c->cpu;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool name_eq(const struct sfn_name *a, const struct sfn_name *b)
{
	return str_eq(a->domain, b->domain) && a->vmm == b->vmm &&
	       a->image.kind == b->image.kind && str_eq(a->image.name, b->image.name) &&
	       a->dep.kind == b->dep.kind && str_eq(a->dep.name, b->dep.name) &&
	       a->cg.kind == b->cg.kind && str_eq(a->cg.name, b->cg.name) &&
	       str_eq(a->event, b->event) && a->count == b->count &&
	       a->unit_mask == b->unit_mask && a->tgid == b->tgid &&
	       a->tid == b->tid && a->cpu == b->cpu;
}

/* No empty, "." or ".." component, printable bytes only, short components. */
static bool path_safe(const char *p)
{
	const char *s = p;

	if (!*p || *p == '/')
		return false;
	for (;;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if (n == 0 || n > 200 || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
				return false;
		if (!e)
			return true;
		s = e + 1;
	}
}

static void test_exact(void)
{
	char buf[SFN_MAX_PATH + 1];
	size_t i;

	for (i = 0; i < sizeof(exact_cases) / sizeof(exact_cases[0]); i++) {
		const struct exact_case *c = &exact_cases[i];
		struct sfn_name n, back;
		int r;

		fill(&n, c);
		r = sfn_mangle(&n, buf, sizeof(buf));
		CU_ASSERT_EQUAL(r, (int)strlen(c->want));
		if (r < 0 || strcmp(buf, c->want)) {
			fprintf(stderr, "\ncase %zu: got  %s\n         want %s\n", i,
				r < 0 ? "(error)" : buf, c->want);
			CU_FAIL("mangled name differs");
			continue;
		}
		CU_ASSERT_TRUE(path_safe(buf));
		CU_ASSERT_EQUAL_FATAL(sfn_parse(c->want, &back), 0);
		CU_ASSERT_TRUE(name_eq(&n, &back));
		sfn_name_release(&back);
	}
}

static void test_split(void)
{
	char comp[1001], want[2000], buf[SFN_MAX_PATH + 1];
	struct sfn_name n = {
		.image = { SFN_KERN, comp }, .dep = { SFN_ANON, comp },
		.event = "T", .count = 1, .tgid = ALL, .tid = ALL, .cpu = ALL,
	}, back;
	int r;

	/* 250 bytes: one full piece of 200, then "%+" and the last 50 */
	memset(comp, 'a', 250);
	comp[250] = '\0';
	n.dep.kind = SFN_KERN;
	snprintf(want, sizeof(want), "{kern}/%.200s/%%+%.50s/{dep}/{kern}/%.200s/%%+%.50s/T.1.0.all.all.all",
		 comp, comp, comp, comp);
	r = sfn_mangle(&n, buf, sizeof(buf));
	CU_ASSERT_EQUAL(r, (int)strlen(want));
	CU_ASSERT_STRING_EQUAL(buf, want);

	/* an escape triple never straddles a split: 199 'a' then %01 */
	memset(comp, 'a', 199);
	comp[199] = '\x01';
	comp[200] = '\0';
	r = sfn_mangle(&n, buf, sizeof(buf));
	CU_ASSERT_TRUE(r > 0);
	snprintf(want, sizeof(want), "{kern}/%.199s/%%+%%01/{dep}", comp);
	CU_ASSERT_EQUAL(strncmp(buf, want, strlen(want)), 0);

	/* anon names split too, token included */
	memset(comp, 'b', 1000);
	comp[1000] = '\0';
	n.dep.kind = SFN_ANON;
	r = sfn_mangle(&n, buf, sizeof(buf));
	CU_ASSERT_TRUE(r > 0);
	CU_ASSERT_TRUE(path_safe(buf));
	CU_ASSERT_EQUAL_FATAL(sfn_parse(buf, &back), 0);
	CU_ASSERT_TRUE(name_eq(&n, &back));
	sfn_name_release(&back);

	/* escape_component agrees with what mangle writes */
	r = sfn_escape_component("a/b", 3, buf, sizeof(buf));
	CU_ASSERT_EQUAL(r, 5);
	CU_ASSERT_STRING_EQUAL(buf, "a%2Fb");
	CU_ASSERT_EQUAL(sfn_escape_component("", 0, buf, sizeof(buf)), 3);
	CU_ASSERT_STRING_EQUAL(buf, "%00");
	CU_ASSERT_EQUAL(sfn_escape_component("a\0b", 3, buf, sizeof(buf)), -EINVAL);
	CU_ASSERT_EQUAL(sfn_escape_component("abc", 3, buf, 3), -ENAMETOOLONG);
}

/* {cg} files (OProfile's call-graph arcs): the callee's image after the dep. */
static void test_cg(void)
{
	static const struct {
		enum sfn_kind dk, ck;
		const char *dname, *cname, *want;
	} cases[] = {
		{ SFN_ROOT, SFN_ROOT, "/bin/ls", "/bin/ls",
		  "{root}/bin/ls/{dep}/{root}/bin/ls/{cg}/{root}/bin/ls/" EV },
		{ SFN_ROOT, SFN_ROOT, "/bin/ls", "/lib/libc.so.6",
		  "{root}/bin/ls/{dep}/{root}/bin/ls/{cg}/{root}/lib/libc.so.6/" EV },
		{ SFN_KERN, SFN_KERN, "vmlinux", "kvm",
		  "{root}/bin/ls/{dep}/{kern}/vmlinux/{cg}/{kern}/kvm/" EV },
		{ SFN_ANON, SFN_ROOT, "{cg}", "/{cg}",
		  "{root}/bin/ls/{dep}/{anon:%7Bcg%7D}/{cg}/{root}/%7Bcg%7D/" EV },
	};
	static const char *const bad[] = {
		"{root}/bin/ls/{dep}/{root}/bin/ls/{cg}/" EV,
		"{root}/bin/ls/{dep}/{root}/bin/ls/{cg}/{root}/a/{cg}/{root}/b/" EV,
		"{root}/bin/ls/{cg}/{root}/bin/ls/{dep}/{root}/a/" EV,
		"{root}/bin/ls/{dep}/{kern}/x/{cg}/{dep}/{kern}/y/" EV,
	};
	char buf[SFN_MAX_PATH + 1];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sfn_name n = {
			.image = { SFN_ROOT, "/bin/ls" },
			.dep = { cases[i].dk, (char *)cases[i].dname },
			.cg = { cases[i].ck, (char *)cases[i].cname },
			.event = "CPU_CLK_UNHALTED", .count = 100000,
			.tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL,
		}, back;

		CU_ASSERT_FATAL(sfn_mangle(&n, buf, sizeof(buf)) > 0);
		CU_ASSERT_STRING_EQUAL(buf, cases[i].want);
		CU_ASSERT_FATAL(sfn_parse(buf, &back) == 0);
		CU_ASSERT(name_eq(&n, &back));
		sfn_name_release(&back);
		/* an image alone, as the stacks file lists them */
		struct sfn_image im;

		CU_ASSERT_FATAL(sfn_mangle_image(&n.cg, buf, sizeof(buf)) > 0);
		CU_ASSERT_FATAL(sfn_parse_image(buf, &im) == 0);
		CU_ASSERT(im.kind == n.cg.kind && !strcmp(im.name, n.cg.name));
		free(im.name);
	}
	{
		struct sfn_image im;

		CU_ASSERT(sfn_parse_image("{root}/a/{dep}/{root}/b", &im) == -EINVAL);
		CU_ASSERT(sfn_parse_image("{domain}/x/{root}/a", &im) == -EINVAL);
		CU_ASSERT(sfn_parse_image("", &im) == -EINVAL);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sfn_name back;

		CU_ASSERT(sfn_parse(bad[i], &back) == -EINVAL);
	}
}

static void test_mangle_errors(void)
{
	char buf[SFN_MAX_PATH + 1], big[5000];
	struct sfn_name n, base = {
		.image = { SFN_ROOT, "/a" }, .dep = { SFN_ROOT, "/b" },
		.event = "T", .count = 1, .tgid = ALL, .tid = ALL, .cpu = ALL,
	};

	n = base;
	CU_ASSERT_TRUE(sfn_mangle(&n, buf, sizeof(buf)) > 0);
	n = base; n.image.name = "a";
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.dep.name = "";
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.dep.name = NULL;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.dep.kind = (enum sfn_kind)7;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.vmm = true;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.event = "";
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.event = "A.B";
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.event = "A-B";
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.event = NULL;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.tgid = -2;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);
	n = base; n.cpu = INT64_MIN;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -EINVAL);

	/* too long for the buffer, and too long for SFN_MAX_PATH */
	n = base;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, 10), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, 0), -ENAMETOOLONG);
	big[0] = '/';
	memset(big + 1, 'x', sizeof(big) - 2);
	big[sizeof(big) - 1] = '\0';
	n.image.name = big;
	CU_ASSERT_EQUAL(sfn_mangle(&n, buf, sizeof(buf)), -ENAMETOOLONG);
	{
		static char huge[SFN_MAX_PATH * 2];

		CU_ASSERT_EQUAL(sfn_mangle(&n, huge, sizeof(huge)), -ENAMETOOLONG);
	}
}

/* ---- randomized round trips -------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible across runs and platforms */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Random bytes 1..255, biased towards the ones that matter to the parser. */
static void rnd_str(char *s, size_t n)
{
	static const char special[] = "/.%{}+ :";

	for (size_t i = 0; i < n; i++) {
		switch (rnd() % 4) {
		case 0:
			s[i] = special[rnd() % (sizeof(special) - 1)];
			break;
		case 1:
			s[i] = (char)('a' + rnd() % 26);
			break;
		default:
			s[i] = (char)(1 + rnd() % 255);
			break;
		}
	}
	s[n] = '\0';
}

static size_t rnd_len(void)
{
	/* mostly short, sometimes past the split size, rarely a few KiB */
	switch (rnd() % 8) {
	case 0:
		return rnd() % 4;
	case 1:
		return rnd() % 4096;
	case 2:
	case 3:
		return rnd() % 600;
	default:
		return rnd() % 60;
	}
}

static void rnd_image(struct sfn_image *im, char *s)
{
	im->kind = (enum sfn_kind)(rnd() % 3);
	if (im->kind == SFN_ROOT) {
		s[0] = '/';
		rnd_str(s + 1, rnd_len());
	} else {
		rnd_str(s, rnd_len());
	}
	im->name = s;
}

static int64_t rnd_field(void)
{
	switch (rnd() % 3) {
	case 0:
		return ALL;
	case 1:
		return (int64_t)(rnd() % 100000);
	default:
		return (int64_t)(rnd() >> 1);
	}
}

static void test_random_roundtrip(void)
{
	static char dom[5000], img[5000], dep[5000], ev[70], buf[SFN_MAX_PATH + 1];
	static const char evchars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
	unsigned long ok = 0, toolong = 0, bad = 0;
	int i;

	for (i = 0; i < 150000; i++) {
		struct sfn_name n = { 0 }, back;
		size_t el = 1 + rnd() % 64;
		int r;

		if (rnd() % 2) {
			rnd_str(dom, rnd_len());
			n.domain = dom;
			n.vmm = rnd() % 2;
		}
		rnd_image(&n.image, img);
		rnd_image(&n.dep, dep);
		for (size_t k = 0; k < el; k++)
			ev[k] = evchars[rnd() % (sizeof(evchars) - 1)];
		ev[el] = '\0';
		n.event = ev;
		n.count = rnd() % 3 ? rnd() % 1000000 : rnd();
		n.unit_mask = rnd() % 2 ? 0 : (uint32_t)rnd();
		n.tgid = rnd_field();
		n.tid = rnd_field();
		n.cpu = rnd_field();

		r = sfn_mangle(&n, buf, sizeof(buf));
		if (r == -ENAMETOOLONG) {
			toolong++;
			continue;
		}
		if (r < 0 || (size_t)r != strlen(buf) || !path_safe(buf)) {
			bad++;
			continue;
		}
		if (sfn_parse(buf, &back) != 0) {
			bad++;
			continue;
		}
		if (!name_eq(&n, &back))
			bad++;
		else
			ok++;
		sfn_name_release(&back);
	}
	CU_ASSERT_EQUAL(bad, 0);
	/* the generator must mostly produce names that fit */
	CU_ASSERT_TRUE(ok >= 100000);
	CU_ASSERT_TRUE(toolong > 0);
}

/* ---- malformed names ----------------------------------------------------- */

static const char *const bad_names[] = {
	"",
	"/",
	EV,
	"{root}/a/" EV,
	"{dep}/{root}/a/" EV,
	"{root}/a/{dep}/" EV,
	"{root}/{dep}/{root}/a/" EV,
	"{root}/a/{dep}/{root}/a",
	"{root}/a/{dep}/{root}/a/",
	"/{root}/a/{dep}/{root}/a/" EV,
	"{root}/a//{dep}/{root}/a/" EV,
	"{root}/./{dep}/{root}/a/" EV,
	"{root}/../{dep}/{root}/a/" EV,
	"{root}/a/{dep}/{root}/../" EV,
	"{root}/a b/{dep}/{root}/a/" EV,
	"{root}/a\x7f/{dep}/{root}/a/" EV,
	"{root}/a\xc3\xa9/{dep}/{root}/a/" EV,
	"{root}/a%/{dep}/{root}/a/" EV,
	"{root}/a%4/{dep}/{root}/a/" EV,
	"{root}/a%41/{dep}/{root}/a/" EV,	/* 'A' needs no escape */
	"{root}/a%7b/{dep}/{root}/a/" EV,	/* lowercase hex */
	"{root}/a%2Fb/{dep}/{root}/a/" EV,	/* a path component holds no slash */
	"{root}/a%00/{dep}/{root}/a/" EV,	/* %00 only as a whole component */
	"{root}/%00%00/{dep}/{root}/a/" EV,
	"{root}/%2E%2E%2E/{dep}/{root}/a/" EV,
	"{root}/a%2E/{dep}/{root}/a/" EV,
	"{root}/%2E./{dep}/{root}/a/" EV,
	"{root}/a{/{dep}/{root}/a/" EV,
	"{root}/}/{dep}/{root}/a/" EV,
	"{root}/%+a/{dep}/{root}/a/" EV,	/* continuation of a short token */
	"{root}/a/%+b/{dep}/{root}/a/" EV,	/* continuation of a short piece */
	"%+a/{root}/a/{dep}/{root}/a/" EV,
	"{root}/a/%+/{dep}/{root}/a/" EV,
	"{kern}/{dep}/{root}/a/" EV,
	"{kern}/a/b/{dep}/{root}/a/" EV,
	"{kern}/{root}/{dep}/{root}/a/" EV,
	"{anon:a/{dep}/{root}/a/" EV,
	"{anon:a}b/{dep}/{root}/a/" EV,
	"{anon:%00}/{dep}/{root}/a/" EV,
	"{anon:%2E}/{dep}/{root}/a/" EV,
	"{anon:{}/{dep}/{root}/a/" EV,
	"{anon}/{dep}/{root}/a/" EV,
	"{ANON:a}/{dep}/{root}/a/" EV,
	"{boot}/a/{dep}/{root}/a/" EV,
	"{domain}/{root}/a/{dep}/{root}/a/" EV,
	"{domain}/{vmm}/{root}/a/{dep}/{root}/a/" EV,
	"{domain}/d/{vmm}/{vmm}/{root}/a/{dep}/{root}/a/" EV,
	"{vmm}/{root}/a/{dep}/{root}/a/" EV,
	"{domain}/d/{domain}/d/{root}/a/{dep}/{root}/a/" EV,
	"{root}/a/{dep}/{root}/a/{dep}/{root}/a/" EV,
	"{root}/a/{dep}/{kern}/a/b/" EV,
	"{root}/a/{dep}/{kern}/a/{anon:x}/" EV,
	/* event component */
	"{root}/a/{dep}/{root}/a/CPU_CLK_UNHALTED.100000.0.all.all",
	"{root}/a/{dep}/{root}/a/CPU_CLK_UNHALTED.100000.0.all.all.all.all",
	"{root}/a/{dep}/{root}/a/.100000.0.all.all.all",
	"{root}/a/{dep}/{root}/a/CPU-CLK.100000.0.all.all.all",
	"{root}/a/{dep}/{root}/a/C.0100000.0.all.all.all",
	"{root}/a/{dep}/{root}/a/C.-1.0.all.all.all",
	"{root}/a/{dep}/{root}/a/C.+1.0.all.all.all",
	"{root}/a/{dep}/{root}/a/C..0.all.all.all",
	"{root}/a/{dep}/{root}/a/C.18446744073709551616.0.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.00.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0x0.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0x041.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0x4F.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.41.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0x100000000.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0X41.all.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0.ALL.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0.-1.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0.01.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0.9223372036854775808.all.all",
	"{root}/a/{dep}/{root}/a/C.1.0.all.all.",
	"{root}/a/{dep}/{root}/a/C.1.0.all.all.all/",
	"{root}/a/{dep}/{root}/a/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.1.0.all.all.all",
};

static void test_reject(void)
{
	size_t i;

	for (i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		struct sfn_name n;
		int r = sfn_parse(bad_names[i], &n);

		if (r != -EINVAL)
			fprintf(stderr, "\naccepted: %s\n", bad_names[i]);
		CU_ASSERT_EQUAL(r, -EINVAL);
		CU_ASSERT_PTR_NULL(n.event);
		CU_ASSERT_PTR_NULL(n.image.name);
	}
	CU_ASSERT_EQUAL(sfn_parse(NULL, &(struct sfn_name){ 0 }), -EINVAL);
}

/* A piece longer than 200, a wrong split, and a path past SFN_MAX_PATH. */
static void test_reject_lengths(void)
{
	static char p[SFN_MAX_PATH + 300];
	struct sfn_name n;
	size_t l;

	l = (size_t)sprintf(p, "{kern}/");
	memset(p + l, 'a', 201);
	l += 201;
	strcpy(p + l, "/{dep}/{kern}/a/T.1.0.all.all.all");
	CU_ASSERT_EQUAL(sfn_parse(p, &n), -EINVAL);

	/* 199 + 1 split as 199 / %+a: the first piece had room for 'a' */
	l = (size_t)sprintf(p, "{kern}/");
	memset(p + l, 'a', 199);
	l += 199;
	strcpy(p + l, "/%+a/{dep}/{kern}/a/T.1.0.all.all.all");
	CU_ASSERT_EQUAL(sfn_parse(p, &n), -EINVAL);
	/* the same bytes split at 200 are fine */
	l = (size_t)sprintf(p, "{kern}/");
	memset(p + l, 'a', 200);
	l += 200;
	strcpy(p + l, "/%+a/{dep}/{kern}/a/T.1.0.all.all.all");
	CU_ASSERT_EQUAL_FATAL(sfn_parse(p, &n), 0);
	CU_ASSERT_EQUAL(strlen(n.image.name), 201);
	sfn_name_release(&n);
	/* 198 + %01 does not fit 200: split before the triple is right */
	l = (size_t)sprintf(p, "{kern}/");
	memset(p + l, 'a', 198);
	l += 198;
	strcpy(p + l, "/%+%01/{dep}/{kern}/a/T.1.0.all.all.all");
	CU_ASSERT_EQUAL_FATAL(sfn_parse(p, &n), 0);
	sfn_name_release(&n);
	/* ...but 197 + %01 would have fit */
	l = (size_t)sprintf(p, "{kern}/");
	memset(p + l, 'a', 197);
	l += 197;
	strcpy(p + l, "/%+%01/{dep}/{kern}/a/T.1.0.all.all.all");
	CU_ASSERT_EQUAL(sfn_parse(p, &n), -EINVAL);

	/* longer than SFN_MAX_PATH, even if otherwise well formed */
	l = (size_t)sprintf(p, "{root}");
	while (l < SFN_MAX_PATH)
		l += (size_t)sprintf(p + l, "/abcdefgh");
	strcpy(p + l, "/{dep}/{kern}/a/T.1.0.all.all.all");
	CU_ASSERT_EQUAL(sfn_parse(p, &n), -EINVAL);
}

/*
 * Mutations of valid names: whatever the parser accepts must be exactly
 * what mangle writes for the result (one spelling per name).
 */
static void test_mutations(void)
{
	char buf[SFN_MAX_PATH + 1], mut[SFN_MAX_PATH + 1];
	static const char alpha[] = "/%{}.+0Aa2E:x";
	unsigned long accepted = 0, diff = 0;
	size_t i;
	int k;

	for (i = 0; i < sizeof(exact_cases) / sizeof(exact_cases[0]); i++) {
		for (k = 0; k < 3000; k++) {
			struct sfn_name n;
			size_t len = strlen(exact_cases[i].want), pos;

			strcpy(mut, exact_cases[i].want);
			pos = rnd() % len;
			switch (rnd() % 3) {
			case 0:	/* replace */
				mut[pos] = alpha[rnd() % (sizeof(alpha) - 1)];
				break;
			case 1:	/* delete */
				memmove(mut + pos, mut + pos + 1, len - pos);
				break;
			default:	/* insert */
				memmove(mut + pos + 1, mut + pos, len - pos + 1);
				mut[pos] = alpha[rnd() % (sizeof(alpha) - 1)];
				break;
			}
			if (sfn_parse(mut, &n) != 0)
				continue;
			accepted++;
			if (sfn_mangle(&n, buf, sizeof(buf)) < 0 || strcmp(buf, mut)) {
				fprintf(stderr, "\nnot canonical: %s\n", mut);
				diff++;
			}
			sfn_name_release(&n);
		}
	}
	CU_ASSERT_EQUAL(diff, 0);
	CU_ASSERT_TRUE(accepted > 0);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "exact names", test_exact },
		{ "long components split", test_split },
		{ "mangle errors", test_mangle_errors },
		{ "{cg} call-graph names", test_cg },
		{ "random round trips", test_random_roundtrip },
		{ "malformed names rejected", test_reject },
		{ "length rules", test_reject_lengths },
		{ "mutations stay canonical", test_mutations },
	};

	return du_test_main("sfname", tests, DU_TEST_N(tests), NULL, NULL);
}
