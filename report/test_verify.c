/* rep_verify: the image identity record, the identity of a file, the choice
 * among candidates (report/rep_verify.h). */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rep_image.h"
#include "rep_opts.h"
#include "rep_verify.h"
#include "sfname/sfname.h"
#include "util/du_test.h"

static char dir[] = "/tmp/test_verify.XXXXXX";

/* A minimal little-endian ELF64 file at @dir/@name whose one PT_NOTE holds
 * a GNU build id of the 20 bytes @fill (0: no note at all).  Its path. */
static char *make_elf(const char *name, int fill)
{
	static char path[256];
	unsigned char f[256] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
	size_t len = 64 + 56;
	FILE *out;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f[16] = 2;			/* ET_EXEC */
	f[18] = 62;			/* x86-64 */
	f[20] = 1;
	f[32] = 64;			/* e_phoff */
	f[52] = 64;			/* e_ehsize */
	f[54] = 56;			/* e_phentsize */
	f[56] = fill ? 1 : 0;		/* e_phnum */
	if (fill) {
		unsigned char *ph = f + 64, *n = f + 120;

		ph[0] = 4;		/* PT_NOTE */
		ph[8] = 120;		/* p_offset */
		ph[32] = 16 + 20;	/* p_filesz */
		n[0] = 4;		/* namesz */
		n[4] = 20;		/* descsz */
		n[8] = 3;		/* NT_GNU_BUILD_ID */
		memcpy(n + 12, "GNU", 4);
		memset(n + 16, fill, 20);
		len = 120 + 36;
	}
	out = fopen(path, "w");
	CU_ASSERT_FATAL(out && fwrite(f, 1, len, out) == len);
	fclose(out);
	return path;
}

static struct rep_idrec *parse_str(const char *text, char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct rep_idrec *r;

	CU_ASSERT_FATAL(f != NULL);
	r = rep_idrec_parse(f, err, errlen);
	fclose(f);
	return r;
}

static void test_record_parse(void)
{
	const char *text = "domprof-images 1\n"
			   "image\t/usr/bin/a\\x20b\tabcd\t100\t5.000000001\n"
			   "later-type\twhatever\n"
			   "image\t/usr/bin/a\\x20b\tabcd\t100\t5.000000001\n"	/* again: kept once */
			   "image\t/usr/bin/a\\x20b\t-\t200\t6.000000000\n"
			   "image\t/bin/c\t?\t7\t0.000000000\n";
	const struct rep_ident *ids;
	struct rep_idrec *r;
	char err[128];

	r = parse_str(text, err, sizeof(err));
	CU_ASSERT_FATAL(r != NULL);
	CU_ASSERT(rep_idrec_find(r, "/usr/bin/a b", &ids) == 2);
	CU_ASSERT_STRING_EQUAL(ids[0].build_id, "abcd");
	CU_ASSERT(ids[0].size == 100 && ids[0].mtime_ns == 5000000001LL);
	CU_ASSERT_STRING_EQUAL(ids[1].build_id, "-");
	CU_ASSERT(rep_idrec_find(r, "/bin/c", &ids) == 1 && !strcmp(ids[0].build_id, "?"));
	CU_ASSERT(rep_idrec_find(r, "/bin/none", &ids) == 0);
	rep_idrec_free(r);
}

static void test_record_malformed(void)
{
	static const struct {
		const char *text, *why;
	} bad[] = {
		{ "", "line 0: empty" },
		{ "domprof-images 2\n", "line 1: not a domprof-images 1 record" },
		{ "domprof-images 1\nimage\t/a\tab\t1\t1.000000000", "line 2: truncated line" },
		{ "domprof-images 1\nimage\t/a\tab\t1\n", "line 2: not 4 fields" },
		{ "domprof-images 1\nimage\t/a\tab\t1\t1.0\textra\n", "line 2: not 4 fields" },
		{ "domprof-images 1\nimage\ta\tab\t1\t1.000000000\n", "line 2: bad path" },
		{ "domprof-images 1\nimage\t/a\\x00\tab\t1\t1.000000000\n", "line 2: bad path" },
		{ "domprof-images 1\nimage\t/a\\xZZ\tab\t1\t1.000000000\n", "line 2: bad path" },
		{ "domprof-images 1\nimage\t/a\tabc\t1\t1.000000000\n", "line 2: bad build id" },
		{ "domprof-images 1\nimage\t/a\tAB\t1\t1.000000000\n", "line 2: bad build id" },
		{ "domprof-images 1\nimage\t/a\tab\t-1\t1.000000000\n", "line 2: bad size" },
		{ "domprof-images 1\nimage\t/a\tab\t99999999999999999999\t1.000000000\n",
		  "line 2: bad size" },
		{ "domprof-images 1\nimage\t/a\tab\t1\t1.5\n", "line 2: bad mtime" },
		{ "domprof-images 1\nimage\t/a\tab\t1\t1\n", "line 2: bad mtime" },
		{ "domprof-images 1\nimage\t/a\tab\t1\t99999999999.000000000\n", "line 2: bad mtime" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[128] = "";
		struct rep_idrec *r = parse_str(bad[i].text, err, sizeof(err));

		CU_ASSERT(r == NULL && errno == EBADMSG);
		if (strncmp(err, bad[i].why, strlen(bad[i].why)))
			fprintf(stderr, "case %zu: \"%s\", wanted \"%s\"\n", i, err, bad[i].why);
		CU_ASSERT(!strncmp(err, bad[i].why, strlen(bad[i].why)));
		rep_idrec_free(r);
	}
}

static void test_ident_and_paths(void)
{
	struct rep_ident now, rec = { .build_id = "-", .size = 0, .mtime_ns = 0 };
	char *p = make_elf("id", 0xab), *q;

	CU_ASSERT_FATAL(rep_ident_of_file(p, &now) == 0);
	CU_ASSERT_STRING_EQUAL(now.build_id, "abababababababababababababababababababab");
	CU_ASSERT(now.size == 156);
	CU_ASSERT(rep_ident_of_file("/dev/null", &now) < 0);	/* no regular file */
	p = make_elf("none", 0);
	CU_ASSERT_FATAL(rep_ident_of_file(p, &now) == 0);
	CU_ASSERT_STRING_EQUAL(now.build_id, "-");
	/* no build id recorded: size and mtime decide */
	rec.size = now.size;
	rec.mtime_ns = now.mtime_ns;
	CU_ASSERT(rep_ident_match(&rec, &now));
	rec.mtime_ns++;
	CU_ASSERT(!rep_ident_match(&rec, &now));
	/* one recorded: only it decides */
	snprintf(rec.build_id, sizeof(rec.build_id), "ab");
	rec.mtime_ns = now.mtime_ns;
	CU_ASSERT(!rep_ident_match(&rec, &now));
	q = rep_verify_bid_path("/s/archive", "abcdef", ".debug");
	CU_ASSERT_STRING_EQUAL(q, "/s/archive/.build-id/ab/cdef.debug");
	free(q);
	CU_ASSERT(rep_verify_bid_path("/s", "-", NULL) == NULL);
	CU_ASSERT(rep_verify_bid_path("/s", "../../x", NULL) == NULL);
}

static char *fetch_target;

static char *fetch_hook(void *ctx, const char *hex)
{
	(*(int *)ctx)++;
	(void)hex;
	return fetch_target ? strdup(fetch_target) : NULL;
}

static void test_pick(void)
{
	char a[256], b[256], missing[256];
	struct rep_ident ida, idb;
	struct rep_vpick pk;
	int calls = 0;

	snprintf(a, sizeof(a), "%s", make_elf("a", 0x11));
	snprintf(b, sizeof(b), "%s", make_elf("b", 0x22));
	snprintf(missing, sizeof(missing), "%s/missing", dir);
	CU_ASSERT_FATAL(!rep_ident_of_file(a, &ida) && !rep_ident_of_file(b, &idb));
	{
		char *cands[] = { missing, NULL, b, a };

		/* the matching copy wins over an earlier candidate */
		CU_ASSERT(rep_verify_pick("/p", &ida, 1, cands, 4, NULL, NULL, &pk) == 0);
		CU_ASSERT(pk.state == REP_V_VERIFIED && !strcmp(pk.file, a));
		free(pk.file);
		/* nothing matches: the first that exists, warned about by name */
		CU_ASSERT(rep_verify_pick("/p", &ida, 1, cands, 3, NULL, NULL, &pk) == 0);
		CU_ASSERT(pk.state == REP_V_UNVERIFIED && !strcmp(pk.file, b));
		CU_ASSERT(strstr(pk.why, "/p changed since profiling (build-id 1111") != NULL);
		CU_ASSERT(strstr(pk.why, "now 2222") != NULL);
		free(pk.file);
		/* nothing recorded: as found, unchecked */
		CU_ASSERT(rep_verify_pick("/p", NULL, 0, cands, 4, NULL, NULL, &pk) == 0);
		CU_ASSERT(pk.state == REP_V_UNCHECKED && !strcmp(pk.file, b));
		free(pk.file);
		/* the path had two binaries during the run */
		struct rep_ident two[2] = { ida, idb };

		CU_ASSERT(rep_verify_pick("/p", two, 2, cands, 4, NULL, NULL, &pk) == 0);
		CU_ASSERT(pk.state == REP_V_MIXED && !strcmp(pk.file, b));
		CU_ASSERT(strstr(pk.why, "changed while it was profiled") != NULL);
		free(pk.file);
		/* the fetch hook: tried only when no candidate matched, checked too */
		fetch_target = a;
		CU_ASSERT(rep_verify_pick("/p", &ida, 1, cands, 3, fetch_hook, &calls, &pk) == 0);
		CU_ASSERT(calls == 1 && pk.state == REP_V_VERIFIED && !strcmp(pk.file, a));
		free(pk.file);
		fetch_target = b;	/* a wrong file from the hook is not taken */
		CU_ASSERT(rep_verify_pick("/p", &ida, 1, cands, 3, fetch_hook, &calls, &pk) == 0);
		CU_ASSERT(pk.state == REP_V_UNVERIFIED);
		free(pk.file);
		/* no candidate at all */
		CU_ASSERT(rep_verify_pick("/p", &ida, 1, cands, 2, NULL, NULL, &pk) == 0);
		CU_ASSERT(pk.file == NULL);
	}
}

static void test_guest_map(void)
{
	char map[256];
	const struct rep_ident *ids;
	struct rep_idrec *r = rep_idrec_new();
	FILE *f;

	snprintf(map, sizeof(map), "%s/map", dir);
	f = fopen(map, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("images/babcd/libc.so.6\t/lib/libc.so.6\n"
	      "images/h0123/libc.so.6\t/lib/libc.so.6\n"	/* content id: no build id */
	      "images/bXY/x\t/lib/libc.so.6\n"			/* not hex: ignored */
	      "images/bef01/prog\t/usr/bin/a\\x20b\n", f);
	fclose(f);
	CU_ASSERT(rep_idrec_add_guest(r, dir, "map", "/lib/libc.so.6", "k1") == 0);
	CU_ASSERT(rep_idrec_find(r, "k1", &ids) == 1 && !strcmp(ids[0].build_id, "abcd"));
	CU_ASSERT(rep_idrec_add_guest(r, dir, "map", "/usr/bin/a b", "k2") == 0);
	CU_ASSERT(rep_idrec_find(r, "k2", &ids) == 1 && !strcmp(ids[0].build_id, "ef01"));
	CU_ASSERT(rep_idrec_add_guest(r, dir, "nonexistent", "/x", "k3") == -ENOENT);
	/* the map is the worker's: a FIFO in its place is refused, not
	 * waited on, and a link to a map is not followed */
	snprintf(map, sizeof(map), "%s/fifo", dir);
	CU_ASSERT_FATAL(mkfifo(map, 0600) == 0);
	alarm(30);
	CU_ASSERT(rep_idrec_add_guest(r, dir, "fifo", "/x", "k4") == -EINVAL);
	CU_ASSERT(rep_idrec_load(dir, "fifo", map, sizeof(map)) == NULL && errno == EINVAL);
	alarm(0);
	snprintf(map, sizeof(map), "%s/map-link", dir);
	CU_ASSERT_FATAL(symlink("map", map) == 0);
	CU_ASSERT(rep_idrec_add_guest(r, dir, "map-link", "/lib/libc.so.6", "k5") == -ELOOP);
	rep_idrec_free(r);
}

static void put(const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(text, f);
	fclose(f);
}

static void mkdirs(const char *rel)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", dir, rel);
	CU_ASSERT_FATAL(system(cmd) == 0);
}

/* rep_images_locate() and the marks, in a session laid out by hand: host
 * images from the record (a copy by build id beats -p; a -p file that is
 * not the profiled one is used but unverified), a guest image by its image
 * cache id (a -p file with another build id is not taken). */
static void test_locate(void)
{
	char session[300], pdir[300], rec[1024], *f, *want;
	char *ipath[1] = { pdir };
	struct rep_opts o = { .session_dir = session, .image_path = ipath, .nimage_path = 1 };
	struct sfn_image other = { SFN_ROOT, (char *)"/h/other" };
	struct sfn_image prog = { SFN_ROOT, (char *)"/h/prog" };
	struct sfn_image g = { SFN_ROOT, (char *)"/usr/bin/g" };
	struct rep_images *c;
	char *const *notes;
	size_t n;

	snprintf(session, sizeof(session), "%s/s", dir);
	snprintf(pdir, sizeof(pdir), "%s/p", dir);
	mkdirs("s/samples/current");
	mkdirs("s/archive/.build-id/11");
	mkdirs("s/images/b5555555555555555555555555555555555555555");
	mkdirs("s/domains/web");
	mkdirs("p");
	snprintf(rec, sizeof(rec), "domprof-images 1\n"
		 "image\t/h/prog\t%s\t156\t1.000000000\n"
		 "image\t/h/other\t%s\t156\t1.000000000\n",
		 "1111111111111111111111111111111111111111", "3333333333333333333333333333333333333333");
	put("s/samples/current/{images}", rec);
	make_elf("s/archive/.build-id/11/11111111111111111111111111111111111111", 0x11);
	make_elf("p/prog", 0x22);
	make_elf("p/other", 0x44);
	make_elf("s/images/b5555555555555555555555555555555555555555/g", 0x55);
	make_elf("p/g", 0x66);
	put("s/domains/web/images",
	    "images/b5555555555555555555555555555555555555555/g\t/usr/bin/g\n");
	c = rep_images_new(&o);
	CU_ASSERT_FATAL(c != NULL);

	f = rep_images_locate(c, NULL, false, "/h/prog");
	CU_ASSERT(f && strstr(f, "/s/archive/.build-id/11/") != NULL);
	free(f);
	CU_ASSERT(!rep_images_unverified(c, NULL, false, &prog));

	CU_ASSERT(rep_images_unverified(c, NULL, false, &other));
	f = rep_images_locate(c, NULL, false, "/h/other");
	CU_ASSERT(f && strstr(f, "/p/other") != NULL);
	free(f);
	notes = rep_vstore_notes(rep_images_vstore(c), &n);
	CU_ASSERT_FATAL(n == 1);	/* once, however often it is looked up */
	CU_ASSERT(strstr(notes[0], "/h/other changed since profiling (build-id 3333") != NULL);

	f = rep_images_locate(c, "web", false, "/usr/bin/g");
	want = strstr(f ? f : "", "/s/images/b5555555555555555555555555555555555555555/g");
	CU_ASSERT(want != NULL);
	free(f);
	CU_ASSERT(!rep_images_unverified(c, "web", false, &g));
	/* the same path as host work names the host's file: not recorded */
	f = rep_images_locate(c, NULL, false, "/usr/bin/g");
	CU_ASSERT(f && strstr(f, "/p/g") != NULL);
	free(f);
	rep_images_free(c);
}

/* A guest image's copy in the image cache, images/h<SHA-256>/NAME, is
 * parsed once for every domain that maps that entry (the daemon's hash
 * proves the bytes equal); another entry with the same build-id, mapped
 * by a third domain, gets its own parse (the build-id is a claim). */
static void test_shared_by_content(void)
{
	static const char *ha = "h1111111111111111111111111111111111111111111111111111111111111111";
	static const char *hb = "h2222222222222222222222222222222222222222222222222222222222222222";
	char session[300], p[600], cmd[4096];
	struct rep_opts o = { .session_dir = session };
	struct sfn_image g = { SFN_ROOT, (char *)"/usr/bin/true" };
	const struct rep_bin *a, *b, *other;
	struct rep_images *c;

	snprintf(session, sizeof(session), "%s/sc", dir);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/images/%s %s/images/%s %s/domains/a %s/domains/b %s/domains/c && "
		 "cp /bin/true %s/images/%s/true && cp /bin/true %s/images/%s/true",
		 session, ha, session, hb, session, session, session, session, ha, session, hb);
	CU_ASSERT_FATAL(system(cmd) == 0);
	snprintf(p, sizeof(p), "images/%s/true\t/usr/bin/true\n", ha);
	put("sc/domains/a/images", p);
	put("sc/domains/b/images", p);
	snprintf(p, sizeof(p), "images/%s/true\t/usr/bin/true\n", hb);
	put("sc/domains/c/images", p);
	c = rep_images_new(&o);
	CU_ASSERT_FATAL(c != NULL);
	a = rep_images_get(c, "a", false, &g);
	b = rep_images_get(c, "b", false, &g);
	other = rep_images_get(c, "c", false, &g);
	CU_ASSERT(a != NULL);
	CU_ASSERT(a == b);
	CU_ASSERT(other != NULL && other != a);
	rep_images_free(c);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "record parsed", test_record_parse },
		{ "malformed records refused with the line", test_record_malformed },
		{ "a file's identity; build-id paths", test_ident_and_paths },
		{ "the choice among candidates", test_pick },
		{ "guest build ids from the image cache map", test_guest_map },
		{ "rep_images_locate by recorded identity", test_locate },
		{ "one parse per image cache entry, across domains", test_shared_by_content },
	};
	int rc;

	if (!mkdtemp(dir))
		return 1;
	rc = du_test_main("verify", tests, DU_TEST_N(tests), NULL, NULL);
	if (!rc) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			return 1;
	}
	return rc;
}
