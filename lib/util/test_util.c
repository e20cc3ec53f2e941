/*
 * The shared parsers of lib/util: key/value files, --separate lists, and
 * mkdir -p.  Table-driven: each row is an input and what every reader must
 * make of it.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/du_cli.h"
#include "util/du_elfid.h"
#include "util/du_fs.h"
#include "util/du_ksym.h"
#include "util/du_array.h"
#include "util/du_kv.h"
#include "util/du_sdir.h"
#include "util/du_separate.h"
#include "util/du_test.h"

/* ---- key/value files ---------------------------------------------------- */

static const char kv_text[] =
	"dumps 3\n"
	"running 1\n"
	"collector perf\n"
	"events CPU_CLK_UNHALTED:100000:0:1:1,TIMER:10000:0:1:1\n"
	"\n"
	"garbage-line with dash\n"
	"novalue\n"
	" leading 5\n"
	"UPPER 5\n"
	"samples_received 1000\r\n"
	"samples_lost notanumber\n"
	"huge 99999999999999999999999\n"
	"neg -1\n"
	"empty \n"
	"tabbed\t42\n"
	"collector file\n"
	"dumps 4\n"
	"last_no_newline 7";

static const struct {
	const char *key;
	const char *str;	/* du_kv_get; NULL: absent */
	bool is_u64;		/* du_kv_get_u64 succeeds... */
	uint64_t u64;		/* ...with this */
} kv_rows[] = {
	{ "dumps", "4", true, 4 },		/* the last line of a key wins */
	{ "collector", "file", false, 0 },	/* for strings too */
	{ "running", "1", true, 1 },
	{ "events", "CPU_CLK_UNHALTED:100000:0:1:1,TIMER:10000:0:1:1", false, 0 },
	{ "samples_received", "1000", true, 1000 },	/* CR dropped */
	{ "samples_lost", "notanumber", false, 0 },
	{ "huge", "99999999999999999999999", false, 0 },	/* over 64 bits */
	{ "neg", "-1", false, 0 },
	{ "empty", "", false, 0 },
	{ "tabbed", "42", true, 42 },
	{ "last_no_newline", "7", true, 7 },
	{ "novalue", NULL, false, 0 },		/* no separator: not an entry */
	{ "leading", NULL, false, 0 },
	{ "UPPER", NULL, false, 0 },
	{ "garbage", NULL, false, 0 },
	{ "absent", NULL, false, 0 },
};

static void test_kv_table(void)
{
	struct du_kv *kv = du_kv_parse(kv_text, sizeof(kv_text) - 1);
	const char *k, *v;

	CU_ASSERT_PTR_NOT_NULL_FATAL(kv);
	for (size_t i = 0; i < sizeof(kv_rows) / sizeof(kv_rows[0]); i++) {
		const char *s = du_kv_get(kv, kv_rows[i].key);
		uint64_t x = 12345;
		bool ok = du_kv_get_u64(kv, kv_rows[i].key, &x);

		if (kv_rows[i].str) {
			CU_ASSERT_PTR_NOT_NULL(s);
			if (s && strcmp(s, kv_rows[i].str))
				fprintf(stderr, "\nkv %s: '%s', want '%s'\n", kv_rows[i].key, s,
					kv_rows[i].str);
			CU_ASSERT(s && !strcmp(s, kv_rows[i].str));
		} else {
			CU_ASSERT_PTR_NULL(s);
		}
		CU_ASSERT_EQUAL(ok, kv_rows[i].is_u64);
		CU_ASSERT_EQUAL(x, ok ? kv_rows[i].u64 : 12345);	/* untouched on failure */
	}
	/* garbage-line, novalue, " leading", UPPER */
	CU_ASSERT_EQUAL(du_kv_garbage(kv), 4);
	CU_ASSERT_EQUAL(du_kv_count(kv), 13);
	/* every line stays listed, in file order, duplicates included */
	CU_ASSERT_TRUE(du_kv_entry(kv, 0, &k, &v));
	CU_ASSERT_STRING_EQUAL(k, "dumps");
	CU_ASSERT_STRING_EQUAL(v, "3");
	CU_ASSERT_TRUE(du_kv_entry(kv, 11, &k, &v));
	CU_ASSERT_STRING_EQUAL(k, "dumps");
	CU_ASSERT_STRING_EQUAL(v, "4");
	CU_ASSERT_FALSE(du_kv_entry(kv, du_kv_count(kv), &k, &v));
	du_kv_free(kv);
}

static void test_kv_edges(void)
{
	/* a NUL byte inside a line makes it garbage, not a shorter line */
	static const char nul[] = "dumps 1\0junk\nrunning 0\n";
	char key[80], path[] = "/tmp/test_util_kv.XXXXXX";
	struct du_kv *kv;
	int fd;

	kv = du_kv_parse(nul, sizeof(nul) - 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(kv);
	CU_ASSERT_PTR_NULL(du_kv_get(kv, "dumps"));
	CU_ASSERT_STRING_EQUAL(du_kv_get(kv, "running"), "0");
	CU_ASSERT_EQUAL(du_kv_garbage(kv), 1);
	du_kv_free(kv);

	/* keys longer than 64 bytes are not keys */
	memset(key, 'k', 65);
	strcpy(key + 65, " 1\n");
	kv = du_kv_parse(key, strlen(key));
	CU_ASSERT_PTR_NOT_NULL_FATAL(kv);
	CU_ASSERT_EQUAL(du_kv_count(kv), 0);
	CU_ASSERT_EQUAL(du_kv_garbage(kv), 1);
	du_kv_free(kv);

	kv = du_kv_parse("", 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(kv);
	CU_ASSERT_EQUAL(du_kv_count(kv), 0);
	du_kv_free(kv);

	/* NULL is an empty file to every getter */
	CU_ASSERT_PTR_NULL(du_kv_get(NULL, "dumps"));
	CU_ASSERT_EQUAL(du_kv_count(NULL), 0);
	du_kv_free(NULL);

	errno = 0;
	CU_ASSERT_PTR_NULL(du_kv_load("/nonexistent/stats"));
	CU_ASSERT_EQUAL(errno, ENOENT);

	fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, kv_text, sizeof(kv_text) - 1), (ssize_t)sizeof(kv_text) - 1);
	close(fd);
	kv = du_kv_load(path);
	CU_ASSERT_PTR_NOT_NULL(kv);
	CU_ASSERT_STRING_EQUAL(du_kv_get(kv, "collector"), "file");
	du_kv_free(kv);
	unlink(path);
}

/* ---- --separate ------------------------------------------------------------ */

static const struct {
	const char *list;
	int ret;
	unsigned int bits;
	const char *msg;	/* error: a part of the message */
} sep_rows[] = {
	{ "none", 0, 0, NULL },
	{ "lib", 0, DU_SEP_LIB, NULL },
	{ "library", 0, DU_SEP_LIB, NULL },	/* OProfile's spelling */
	{ "kernel", 0, DU_SEP_KERNEL | DU_SEP_LIB, NULL },
	{ "thread", 0, DU_SEP_THREAD, NULL },
	{ "cpu", 0, DU_SEP_CPU, NULL },
	{ "all", 0, DU_SEP_ALL, NULL },
	{ "library,thread,cpu", 0, DU_SEP_LIB | DU_SEP_THREAD | DU_SEP_CPU, NULL },
	{ "none,cpu", 0, DU_SEP_CPU, NULL },
	{ "cpu,cpu", 0, DU_SEP_CPU, NULL },
	{ "", -EINVAL, 0, "--separate needs a value" },
	{ "lib,", -EINVAL, 0, "bad --separate value ''" },
	{ ",lib", -EINVAL, 0, "bad --separate value ''" },
	{ "lib,,cpu", -EINVAL, 0, "bad --separate value ''" },
	{ "libs", -EINVAL, 0, "bad --separate value 'libs'" },
	{ "li", -EINVAL, 0, "bad --separate value 'li'" },
	{ "LIB", -EINVAL, 0, "bad --separate value 'LIB'" },
	{ "lib, cpu", -EINVAL, 0, "bad --separate value ' cpu'" },
	{ "thread,bogus", -EINVAL, 0, "allowed: none,lib,library,kernel,thread,cpu,all" },
};

static void test_separate_table(void)
{
	for (size_t i = 0; i < sizeof(sep_rows) / sizeof(sep_rows[0]); i++) {
		unsigned int bits = 0xdead;
		char err[256] = "";
		int ret = du_separate_parse(sep_rows[i].list, &bits, err, sizeof(err));

		if (ret != sep_rows[i].ret)
			fprintf(stderr, "\nseparate '%s': %d, want %d\n", sep_rows[i].list, ret,
				sep_rows[i].ret);
		CU_ASSERT_EQUAL(ret, sep_rows[i].ret);
		if (!sep_rows[i].ret) {
			CU_ASSERT_EQUAL(bits, sep_rows[i].bits);
			continue;
		}
		CU_ASSERT_EQUAL(bits, 0xdead);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, sep_rows[i].msg));
		/* no message buffer: same answer */
		CU_ASSERT_EQUAL(du_separate_parse(sep_rows[i].list, &bits, NULL, 0), sep_rows[i].ret);
	}
}

/* ---- mkdir -p ------------------------------------------------------------- */

static void test_mkdir_p(void)
{
	static const struct {
		const char *rel;	/* under a fresh directory; "" is the directory */
		int ret;
	} rows[] = {
		{ "a", 0 },
		{ "a", 0 },		/* exists: fine */
		{ "b/c/d", 0 },
		{ "b/c/d/", 0 },	/* trailing slash */
		{ "b//c2", 0 },		/* doubled slash */
		{ "file/x", -ENOTDIR },	/* a file in the way */
		{ "", 0 },
	};
	char base[] = "/tmp/test_util_mkdir.XXXXXX", path[PATH_MAX];
	struct stat st;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(base));
	snprintf(path, sizeof(path), "%s/file", base);
	CU_ASSERT_EQUAL(close(creat(path, 0644)), 0);
	{
		/* du_read_small: NUL-terminated, cut at cap - 1, -errno */
		char buf[8], big[64];
		FILE *f = fopen(path, "w");

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fputs("hello world\n", f);
		fclose(f);
		CU_ASSERT_EQUAL(du_read_small(path, big, sizeof(big)), 12);
		CU_ASSERT_STRING_EQUAL(big, "hello world\n");
		CU_ASSERT_EQUAL(du_read_small(path, buf, sizeof(buf)), 7);
		CU_ASSERT_STRING_EQUAL(buf, "hello w");
		snprintf(big, sizeof(big), "%s/none", base);
		CU_ASSERT_EQUAL(du_read_small(big, buf, sizeof(buf)), -ENOENT);
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", base, rows[i].rel);
		CU_ASSERT_EQUAL(du_mkdir_p(path), rows[i].ret);
		if (!rows[i].ret)
			CU_ASSERT(!stat(path, &st) && S_ISDIR(st.st_mode));
	}
	/* relative paths work from the current directory */
	CU_ASSERT_EQUAL_FATAL(chdir(base), 0);
	CU_ASSERT_EQUAL(du_mkdir_p("rel/x"), 0);
	CU_ASSERT(!stat("rel/x", &st) && S_ISDIR(st.st_mode));
	/* parents only: the last component is left alone */
	snprintf(path, sizeof(path), "%s/p/q/leaf", base);
	umask(022);
	CU_ASSERT_EQUAL(du_mkdir_parents(path, strlen(base), 0750), 0);
	CU_ASSERT_STRING_EQUAL(path + strlen(base), "/p/q/leaf");	/* restored */
	snprintf(path, sizeof(path), "%s/p/q", base);
	CU_ASSERT(!stat(path, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0750);
	snprintf(path, sizeof(path), "%s/p/q/leaf", base);
	CU_ASSERT_NOT_EQUAL(stat(path, &st), 0);
	memset(path, 'x', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	CU_ASSERT_EQUAL(du_mkdir_p(path), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(chdir("/"), 0);
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	CU_ASSERT_EQUAL(system(path), 0);
}

/* ---- the session directory: ownership, modes, no symlink followed ------ */

/* The worker's user is its own: never nobody, never root. */
static void test_worker_user(void)
{
	uid_t uid;
	gid_t gid;

	CU_ASSERT_EQUAL(du_sdir_worker_user("nobody", &uid, &gid), -EPERM);
	CU_ASSERT_EQUAL(du_sdir_worker_user("root", &uid, &gid), -EINVAL);
	CU_ASSERT_EQUAL(du_sdir_worker_user("no-such-user-here", &uid, &gid), -ENOENT);
	if (!du_sdir_worker_user(NULL, &uid, &gid))
		CU_ASSERT(uid != 0 && uid != 65534);
}

/* What a root process writes in a session: fresh, or one name and ours. */
static void test_open_own(void)
{
	char tmpl[] = "/tmp/test_util_own.XXXXXX", p[PATH_MAX], q[PATH_MAX], buf[16];
	struct stat st;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpl));
	snprintf(p, sizeof(p), "%s/f", tmpl);
	snprintf(q, sizeof(q), "%s/victim", tmpl);
	/* fresh: the mode asked */
	fd = du_openat_own(AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT(fd >= 0 && !fstat(fd, &st) && (st.st_mode & 07777) == 0600);
	CU_ASSERT_EQUAL(write(fd, "abc", 3), 3);
	close(fd);
	/* ours, one name: opened, truncated when asked */
	fd = du_nf_open(p, O_WRONLY | O_CREAT | O_APPEND, 0600, false);
	CU_ASSERT(fd >= 0 && !fstat(fd, &st) && st.st_size == 3);
	close(fd);
	fd = du_openat_own(AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT(fd >= 0 && !fstat(fd, &st) && st.st_size == 0);
	close(fd);
	/* a hard link to another file: refused, that file untouched */
	unlink(p);
	fd = open(q, O_WRONLY | O_CREAT, 0644);
	CU_ASSERT(fd >= 0 && write(fd, "victim", 6) == 6 && close(fd) == 0);
	CU_ASSERT_EQUAL(link(q, p), 0);
	CU_ASSERT_EQUAL(du_nf_open(p, O_RDWR | O_CREAT, 0600, false), -EMLINK);
	CU_ASSERT_EQUAL(du_openat_own(AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, 0600), -EMLINK);
	CU_ASSERT_PTR_NULL(du_nf_fopen(p, "a", 0600));
	CU_ASSERT_EQUAL(du_read_small(q, buf, sizeof(buf)), 6);
	/* a symlink: refused, not followed */
	unlink(p);
	CU_ASSERT_EQUAL(symlink(q, p), 0);
	CU_ASSERT_EQUAL(du_openat_own(AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, 0600), -ELOOP);
	CU_ASSERT_EQUAL(du_read_small(q, buf, sizeof(buf)), 6);
	/* O_EXCL asked: an existing file is not opened */
	CU_ASSERT_EQUAL(du_openat_own(AT_FDCWD, q, O_WRONLY | O_CREAT | O_EXCL, 0600), -EEXIST);
	/* a FIFO: refused without blocking */
	unlink(p);
	CU_ASSERT_EQUAL(mkfifo(p, 0600), 0);
	CU_ASSERT(du_nf_open(p, O_WRONLY | O_CREAT, 0600, false) < 0);
	/* another user's: refused (root only can set it up) */
	if (geteuid() == 0) {
		unlink(p);
		fd = open(p, O_WRONLY | O_CREAT, 0600);
		CU_ASSERT(fd >= 0 && close(fd) == 0);
		CU_ASSERT_EQUAL(chown(p, 65534, 65534), 0);
		CU_ASSERT_EQUAL(du_openat_own(AT_FDCWD, p, O_WRONLY | O_CREAT | O_TRUNC, 0600), -EPERM);
		CU_ASSERT_EQUAL(du_nf_open(p, O_WRONLY | O_APPEND, 0, false), -EPERM);
		/* ...unless the directory is that user's too (who could
		 * have replaced it anyway) */
		CU_ASSERT_EQUAL(chown(tmpl, 65534, 65534), 0);
		fd = du_nf_open(p, O_WRONLY | O_APPEND, 0, false);
		CU_ASSERT(fd >= 0);
		close(fd);
		CU_ASSERT_EQUAL(chown(tmpl, 0, 0), 0);
	}
	/* directories made from the deepest one there, no roots set (a
	 * root daemon's way): below a real one, never through a link */
	snprintf(p, sizeof(p), "%s/real", tmpl);
	CU_ASSERT_EQUAL(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/ln", tmpl);
	CU_ASSERT_EQUAL(symlink("real", p), 0);
	snprintf(p, sizeof(p), "%s/ln/x/y", tmpl);
	CU_ASSERT_EQUAL(du_nf_mkdirs(p), -ELOOP);
	snprintf(p, sizeof(p), "%s/real/x", tmpl);
	CU_ASSERT(access(p, F_OK) != 0);
	snprintf(p, sizeof(p), "%s/real/x/y/f", tmpl);
	CU_ASSERT_EQUAL(du_nf_open(p, O_RDWR | O_CREAT, 0600, false), -ENOENT);
	snprintf(p, sizeof(p), "%s/real/x/y", tmpl);
	CU_ASSERT_EQUAL(du_nf_mkdirs(p), 0);
	snprintf(p, sizeof(p), "%s/real/x/y/f", tmpl);
	fd = du_nf_open(p, O_RDWR | O_CREAT, 0600, false);
	CU_ASSERT(fd >= 0);
	close(fd);
	snprintf(p, sizeof(p), "rm -rf '%s'", tmpl);
	CU_ASSERT_EQUAL(system(p), 0);
}

/* Below a root (samples/current of @dir, set), what a writer must not
 * open is refused however the path is opened: a link on the way or at
 * the end, a file with two names, one not regular (a FIFO: no hang), one
 * of another user in a directory not theirs.  0, or a bit per failure. */
static int roots_refuse(const char *dir)
{
	char q[PATH_MAX], r[PATH_MAX];
	int bad = 0, fd;

#define RP(buf, rel) snprintf(buf, sizeof(buf), "%s/samples/current/%s", dir, rel)
	RP(q, "a/real");
	bad |= du_nf_mkdirs(q) ? 1 : 0;
	RP(q, "a/ln");
	bad |= symlink("real", q) ? 1 : 0;
	RP(q, "a/ln/f");
	bad |= du_nf_open(q, O_RDWR | O_CREAT, 0600, false) != -ELOOP ? 2 : 0;
	RP(q, "a/real/sl");
	bad |= symlink("f", q) ? 1 : 0;
	bad |= du_nf_open(q, O_RDWR | O_CREAT, 0600, false) != -ELOOP ? 4 : 0;
	RP(q, "a/real/f");
	fd = du_nf_open(q, O_RDWR | O_CREAT, 0600, false);	/* ours: opens */
	bad |= fd < 0 ? 8 : 0;
	close(fd);
	RP(r, "a/real/h");
	bad |= link(q, r) ? 1 : 0;
	bad |= du_nf_open(q, O_RDWR | O_CREAT, 0600, false) != -EMLINK ? 16 : 0;
	RP(q, "a/real/fifo");
	bad |= mkfifo(q, 0600) ? 1 : 0;
	bad |= du_nf_open(q, O_RDWR, 0, false) != -EINVAL ? 32 : 0;
	RP(q, "a/real/other");
	fd = du_nf_open(q, O_RDWR | O_CREAT, 0600, false);
	bad |= fd < 0 || fchown(fd, 65534, 65534) ? 1 : 0;
	close(fd);
	bad |= du_nf_open(q, O_RDWR, 0, false) != -EPERM ? 64 : 0;
	/* directories made below the deepest one there: never through a
	 * link on the way, even one under names still missing */
	RP(q, "a/ln/x/y");
	bad |= du_nf_mkdirs(q) != -ELOOP ? 128 : 0;
	RP(q, "a/real/x");
	bad |= access(q, F_OK) == 0 ? 128 : 0;
	RP(q, "a/real/n1/n2/f");
	bad |= du_nf_open(q, O_RDWR | O_CREAT, 0600, false) != -ENOENT ? 256 : 0;
	RP(q, "a/real/n1/n2");
	bad |= du_nf_mkdirs(q) ? 256 : 0;
	RP(q, "a/real/n1/n2/f");
	fd = du_nf_open(q, O_RDWR | O_CREAT, 0600, false);
	bad |= fd < 0 ? 256 : 0;
	close(fd);
#undef RP
	return bad;
}

/*
 * du_nf_open_made below the root "samples/current" of @tmpl (set by the
 * caller): the directories after the one said there are made, one gone
 * since takes the whole walk, and a link met on the way or at the end is
 * refused as the walk refuses it.  The checks that failed, as bits.
 */
static int made_checks(const char *tmpl)
{
	char q[PATH_MAX], link[PATH_MAX];
	size_t cur;
	int bad = 0, fd;

	cur = (size_t)snprintf(q, sizeof(q), "%s/samples/current", tmpl);
	snprintf(q + cur, sizeof(q) - cur, "/m1/m2/m3/f");
	fd = du_nf_open_made(q, cur, O_RDWR, 0600);
	bad |= fd < 0 ? 1 : 0;
	close(fd);
	/* "m1/m2" said there and it is: a sibling made below it */
	snprintf(q + cur, sizeof(q) - cur, "/m1/m2/n3/g");
	fd = du_nf_open_made(q, cur + strlen("/m1/m2"), O_RDWR, 0600);
	bad |= fd < 0 ? 2 : 0;
	close(fd);
	/* "gone" said there and it is not */
	snprintf(q + cur, sizeof(q) - cur, "/gone/x/f");
	fd = du_nf_open_made(q, cur + strlen("/gone"), O_RDWR, 0600);
	bad |= fd < 0 ? 4 : 0;
	close(fd);
	/* a link where a directory is to be made, and one at the file's name */
	snprintf(q + cur, sizeof(q) - cur, "/ln/f");
	fd = du_nf_open_made(q, cur, O_RDWR, 0600);
	bad |= fd != -ELOOP ? 8 : 0;
	if (fd >= 0)
		close(fd);
	snprintf(q + cur, sizeof(q) - cur, "/m1/lnf");
	fd = du_nf_open_made(q, cur + strlen("/m1"), O_RDWR, 0600);
	bad |= fd != -ELOOP ? 16 : 0;
	if (fd >= 0)
		close(fd);
	/* a link met where a directory to go through is there already: not
	 * followed by a mkdirat ("x" would be made outside the root) */
	snprintf(q + cur, sizeof(q) - cur, "/ln/x/f");
	fd = du_nf_open_made(q, cur, O_RDWR, 0600);
	bad |= fd != -ELOOP ? 256 : 0;
	if (fd >= 0)
		close(fd);
	snprintf(link, sizeof(link), "%s/x", tmpl);
	bad |= access(link, F_OK) == 0 ? 512 : 0;
	snprintf(link, sizeof(link), "%s/outside", tmpl);
	bad |= access(link, F_OK) == 0 ? 32 : 0;
	snprintf(link, sizeof(link), "%s/f", tmpl);
	bad |= access(link, F_OK) == 0 ? 32 : 0;
	/* outside every root */
	snprintf(q, sizeof(q), "%s/samples/other/f", tmpl);
	fd = du_nf_open_made(q, strlen(tmpl) + strlen("/samples"), O_RDWR, 0600);
	bad |= fd != -EACCES ? 64 : 0;
	if (fd >= 0)
		close(fd);
	/* said there above the root: the whole walk, which finds the root */
	cur = (size_t)snprintf(q, sizeof(q), "%s/samples/current/above/f", tmpl);
	fd = du_nf_open_made(q, strlen(tmpl) + strlen("/samples"), O_RDWR, 0600);
	bad |= fd < 0 ? 128 : 0;
	if (fd >= 0)
		close(fd);
	return bad;
}

/* Once roots are set (the privsep worker), paths resolve below them and
 * nowhere else.  In a child: the roots are the process's for good. */
static void test_roots(void)
{
	char tmpl[] = "/tmp/test_util_roots.XXXXXX", p[PATH_MAX], q[PATH_MAX];
	int status = 0;
	pid_t pid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpl));
	snprintf(p, sizeof(p), "%s/samples/current", tmpl);
	CU_ASSERT_EQUAL_FATAL(du_nf_mkdirs(p), 0);
	/* (for made_checks: links below the root, to a directory outside it
	 * and to a file) */
	snprintf(q, sizeof(q), "%s/samples/current/ln", tmpl);
	CU_ASSERT_EQUAL_FATAL(symlink(tmpl, q), 0);
	snprintf(q, sizeof(q), "%s/samples/current/m1", tmpl);
	CU_ASSERT_EQUAL_FATAL(mkdir(q, 0700), 0);
	snprintf(q, sizeof(q), "%s/samples/current/m1/lnf", tmpl);
	CU_ASSERT_EQUAL_FATAL(symlink("../../../outside", q), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		int fd = du_nf_open(p, O_RDONLY | O_DIRECTORY, 0, false), bad = 0, ret;

		if (fd < 0 || du_nf_root_add(p, fd))
			_exit(10);
		snprintf(q, sizeof(q), "%s/samples/current/a/b", tmpl);
		bad |= du_nf_mkdirs(q) ? 1 : 0;
		snprintf(q, sizeof(q), "%s/samples/current/a/b/f", tmpl);
		fd = du_nf_open(q, O_WRONLY | O_CREAT, 0600, false);
		bad |= fd < 0 ? 2 : 0;
		snprintf(q, sizeof(q), "%s/samples/current", tmpl);
		fd = du_nf_open(q, O_RDONLY | O_DIRECTORY, 0, false);
		bad |= fd < 0 ? 4 : 0;
		snprintf(q, sizeof(q), "%s/stats", tmpl);
		bad |= du_nf_open(q, O_WRONLY | O_CREAT, 0600, false) != -EACCES ? 8 : 0;
		snprintf(q, sizeof(q), "%s/samples/currentx/f", tmpl);
		bad |= du_nf_open(q, O_WRONLY | O_CREAT, 0600, false) != -EACCES ? 16 : 0;
		snprintf(q, sizeof(q), "%s/samples/f", tmpl);
		bad |= du_nf_unlink(q) != -EACCES ? 32 : 0;
		ret = roots_refuse(tmpl);
		if (ret)
			fprintf(stderr, "test_roots: refusals that failed: %#x\n", ret);
		bad |= ret ? 64 : 0;
		ret = made_checks(tmpl);
		if (ret)
			fprintf(stderr, "test_roots: du_nf_open_made checks that failed: %#x\n", ret);
		bad |= ret ? 128 : 0;
		_exit(bad);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	snprintf(q, sizeof(q), "%s/samples/current/a/b/f", tmpl);
	CU_ASSERT_EQUAL(access(q, F_OK), 0);
	snprintf(q, sizeof(q), "%s/samples/current/m1/m2/n3/g", tmpl);
	CU_ASSERT_EQUAL(access(q, F_OK), 0);
	snprintf(q, sizeof(q), "%s/samples/current/gone/x/f", tmpl);
	CU_ASSERT_EQUAL(access(q, F_OK), 0);
	snprintf(q, sizeof(q), "%s/stats", tmpl);
	CU_ASSERT(access(q, F_OK) != 0);
	snprintf(p, sizeof(p), "rm -rf '%s'", tmpl);
	CU_ASSERT_EQUAL(system(p), 0);
}

/* The one line a refused option gets, by what getopt_long saw. */
static void test_getopt_msg(void)
{
	static const struct option lo[] = {
		{ "session-dir", required_argument, NULL, 1 },
		{ "symbols", no_argument, NULL, 2 },
		{ "sort", required_argument, NULL, 3 },
		{ NULL, 0, NULL, 0 },
	};
	static const struct {
		const char *arg, *want;
	} cases[] = {
		{ "--session-dir", "option \"--session-dir\" needs a value" },
		{ "--sess", "option \"--session-dir\" needs a value" },
		{ "--symbols=1", "option \"--symbols\" takes no value" },
		{ "--s", "ambiguous option \"--s\"" },
		{ "--so", "option \"--sort\" needs a value" },
		{ "--bogus=2", "unknown option \"--bogus\"" },
		{ "-q", "unknown option or missing value: \"-q\"" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		du_cli_getopt_msg(buf, sizeof(buf), cases[i].arg, lo);
		CU_ASSERT_STRING_EQUAL(buf, cases[i].want);
	}
}

/* Saved session names: a plain word, never a path or "current". */
static void test_session_names(void)
{
	static const struct {
		const char *name;
		bool ok;
	} cases[] = {
		{ "run1", true }, { "before-fix_2.0", true }, { "a@b+c", true },
		{ "", false }, { "current", false }, { ".", false }, { "..", false },
		{ ".hidden", false }, { "-rf", false }, { "a/b", false }, { "a b", false },
		{ "*", false }, { "x\n", false }, { "reset-20260101-000000", true },
	};
	char longname[130];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CU_ASSERT_EQUAL(du_sdir_session_name_ok(cases[i].name), cases[i].ok);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CU_ASSERT_FALSE(du_sdir_session_name_ok(longname));
	longname[128] = '\0';
	CU_ASSERT_TRUE(du_sdir_session_name_ok(longname));
}

static void test_sdir(void)
{
	char tmpl[] = "/tmp/test_util_sdir.XXXXXX", base[PATH_MAX], path[PATH_MAX + 64];
	char canon[PATH_MAX], err[512], target[PATH_MAX + 64], buf[64];
	struct stat st;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpl));
	CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(tmpl, base));

	/* created 0700 (02750 with a domprof group), canonical path back */
	snprintf(path, sizeof(path), "%s/s", base);
	CU_ASSERT_EQUAL_FATAL(du_sdir_prepare(path, canon, sizeof(canon), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(canon, path);
	CU_ASSERT(!stat(path, &st) && ((st.st_mode & 07777) == 0700 || (st.st_mode & 07777) == 02750));
	/* an existing 0755 one is narrowed */
	CU_ASSERT_EQUAL(chmod(path, 0755), 0);
	CU_ASSERT_EQUAL(du_sdir_prepare(path, canon, sizeof(canon), err, sizeof(err)), 0);
	CU_ASSERT(!stat(path, &st) && !(st.st_mode & 0007));
	/* writable by others: refused, with the reason */
	CU_ASSERT_EQUAL(chmod(path, 0777), 0);
	CU_ASSERT_EQUAL(du_sdir_prepare(path, canon, sizeof(canon), err, sizeof(err)), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "writable by others"));
	CU_ASSERT_EQUAL(chmod(path, 0700), 0);
	/* a parent writable by others: refused unless sticky */
	CU_ASSERT_EQUAL(chmod(base, 0777), 0);
	CU_ASSERT_EQUAL(du_sdir_prepare(path, canon, sizeof(canon), err, sizeof(err)), -EPERM);
	CU_ASSERT_EQUAL(chmod(base, 01777), 0);
	CU_ASSERT_EQUAL(du_sdir_prepare(path, canon, sizeof(canon), err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(chmod(base, 0700), 0);
	/* a directory of another user: refused (needs root to set up) */
	if (geteuid() == 0) {
		CU_ASSERT_EQUAL(chown(path, 65534, 65534), 0);
		CU_ASSERT_EQUAL(du_sdir_prepare(path, canon, sizeof(canon), err, sizeof(err)), -EPERM);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "owned by uid 65534"));
		/* a tree given to the worker: links below it changed, not
		 * followed; a hard link to a file outside keeps its owner */
		{
			char f[PATH_MAX + 8], l[PATH_MAX + 8], out[PATH_MAX + 8], hl[PATH_MAX + 8];
			struct stat fs;

			CU_ASSERT_EQUAL(chown(path, 0, 0), 0);
			snprintf(f, sizeof(f), "%s/s/f", base);
			snprintf(l, sizeof(l), "%s/s/l", base);
			snprintf(hl, sizeof(hl), "%s/s/hl", base);
			snprintf(out, sizeof(out), "%s/outside", base);
			fd = open(f, O_WRONLY | O_CREAT, 0600);
			CU_ASSERT(fd >= 0 && close(fd) == 0);
			fd = open(out, O_WRONLY | O_CREAT, 0600);
			CU_ASSERT(fd >= 0 && close(fd) == 0);
			CU_ASSERT_EQUAL(chown(out, 65533, 65533), 0);
			CU_ASSERT_EQUAL(symlink(out, l), 0);
			CU_ASSERT_EQUAL(du_sdir_chown_tree(path, 65534, 65534), 0);
			CU_ASSERT(!stat(f, &fs) && fs.st_uid == 65534);
			CU_ASSERT(!lstat(l, &fs) && fs.st_uid == 65534);
			CU_ASSERT(!stat(out, &fs) && fs.st_uid == 65533);	/* not followed */
			CU_ASSERT_EQUAL(link(out, hl), 0);
			CU_ASSERT_EQUAL(du_sdir_chown_tree(path, 0, 0), -EMLINK);
			CU_ASSERT(!stat(out, &fs) && fs.st_uid == 65533);
			CU_ASSERT(!stat(f, &fs) && fs.st_uid == 0);
			CU_ASSERT(!stat(path, &fs) && fs.st_uid == 0);
			unlink(hl);
			unlink(f);
			unlink(l);
			unlink(out);
		}
		CU_ASSERT_EQUAL(chown(path, 0, 0), 0);
	}
	/* a symlink as the session directory is resolved first, then checked */
	snprintf(target, sizeof(target), "%s/link", base);
	CU_ASSERT_EQUAL(symlink(path, target), 0);
	CU_ASSERT_EQUAL(du_sdir_prepare(target, canon, sizeof(canon), err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(canon, path);

	/* du_nf_*: directories made on the way, files opened */
	snprintf(path, sizeof(path), "%s/s/a/b/f", base);
	fd = du_nf_open(path, O_WRONLY | O_CREAT, 0600, true);
	CU_ASSERT(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "ok", 2), 2);
	close(fd);
	/* a planted symlink as the last component: refused, target untouched */
	snprintf(target, sizeof(target), "%s/victim", base);
	fd = open(target, O_WRONLY | O_CREAT, 0600);
	CU_ASSERT_EQUAL(write(fd, "victim", 6), 6);
	close(fd);
	snprintf(path, sizeof(path), "%s/s/a/b/l", base);
	CU_ASSERT_EQUAL(symlink(target, path), 0);
	CU_ASSERT_EQUAL(du_nf_open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600, false), -ELOOP);
	CU_ASSERT_PTR_NULL(du_nf_fopen(path, "w", 0600));
	CU_ASSERT_EQUAL(errno, ELOOP);
	CU_ASSERT_EQUAL(du_read_small(target, buf, sizeof(buf)), 6);
	/* ...and a symlinked directory on the way */
	snprintf(path, sizeof(path), "%s/s/d", base);
	CU_ASSERT_EQUAL(symlink(base, path), 0);
	snprintf(path, sizeof(path), "%s/s/d/victim", base);
	CU_ASSERT_EQUAL(du_nf_open(path, O_WRONLY | O_TRUNC, 0, false), -ELOOP);
	snprintf(path, sizeof(path), "%s/s/d/new/x", base);
	CU_ASSERT_EQUAL(du_nf_open(path, O_WRONLY | O_CREAT, 0600, true), -ELOOP);
	snprintf(path, sizeof(path), "%s/s/d/z", base);
	CU_ASSERT_EQUAL(du_nf_mkdirs(path), -ELOOP);
	snprintf(path, sizeof(path), "%s/victim", base);
	CU_ASSERT_EQUAL(du_nf_unlink(path), 0);	/* no symlink on the way: fine */
	CU_ASSERT_EQUAL(du_read_small(target, buf, sizeof(buf)), -ENOENT);
	/* no "..", "." or empty component */
	snprintf(path, sizeof(path), "%s/s/a/../a/b/f", base);
	CU_ASSERT_EQUAL(du_nf_open(path, O_RDONLY, 0, false), -EINVAL);
	snprintf(path, sizeof(path), "%s/s/./a/b/f", base);
	CU_ASSERT_EQUAL(du_nf_open(path, O_RDONLY, 0, false), -EINVAL);
	snprintf(path, sizeof(path), "%s/s/a//b/f", base);
	CU_ASSERT_EQUAL(du_nf_open(path, O_RDONLY, 0, false), -EINVAL);
	snprintf(path, sizeof(path), "%s/s/a/b/..", base);
	CU_ASSERT_EQUAL(du_nf_open(path, O_RDONLY, 0, false), -EINVAL);
	CU_ASSERT_EQUAL(du_nf_open("rel/x", O_RDONLY, 0, false), -EINVAL);
	/* rename and mkdirs */
	snprintf(path, sizeof(path), "%s/s/a/b/f", base);
	snprintf(target, sizeof(target), "%s/s/a/g", base);
	CU_ASSERT_EQUAL(du_nf_rename(path, target), 0);
	CU_ASSERT_EQUAL(du_read_small(target, buf, sizeof(buf)), 2);
	snprintf(path, sizeof(path), "%s/s/m/n/", base);
	CU_ASSERT_EQUAL(du_nf_mkdirs(path), 0);
	CU_ASSERT(!stat(path, &st) && S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(du_nf_mkdirs("/"), 0);

	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	CU_ASSERT_EQUAL(system(path), 0);
}

/* An ELF64 image in @f: with @phdr a PT_LOAD (R+X, vaddr 0x401000,
 * offset 0x1000, memsz 0x234) and a PT_NOTE; the build-id note (20 bytes
 * of 0x5a, at 0x200) found through the PT_NOTE, or with @phdr false only
 * through an SHT_NOTE section header (as in a separate debug file).
 * Its size. */
static size_t make_elf(unsigned char *f, bool phdr)
{
	unsigned char *n = f + 0x200;

	memset(f, 0, 0x400);
	memcpy(f, "\177ELF\2\1\1", 7);
	f[16] = 2;
	f[18] = 62;
	f[52] = 64;
	if (phdr) {
		unsigned char *ph = f + 64;

		f[32] = 64;		/* e_phoff */
		f[54] = 56;		/* e_phentsize */
		f[56] = 2;		/* e_phnum */
		ph[0] = 1;		/* PT_LOAD */
		ph[4] = 5;		/* R+X */
		ph[9] = 0x03;		/* p_offset 0x300 */
		ph[17] = 0x10;		/* p_vaddr 0x401000 */
		ph[18] = 0x40;
		ph[40] = 0x34;		/* p_memsz 0x234 */
		ph[41] = 0x02;
		ph += 56;
		ph[0] = 4;		/* PT_NOTE */
		ph[9] = 0x02;		/* p_offset 0x200 */
		ph[32] = 36;		/* p_filesz */
	} else {
		unsigned char *sh = f + 0x300 + 64;	/* section 1 */

		f[41] = 0x03;		/* e_shoff 0x300 */
		f[58] = 64;		/* e_shentsize */
		f[60] = 2;		/* e_shnum */
		sh[4] = 7;		/* SHT_NOTE */
		sh[25] = 0x02;		/* sh_offset 0x200 */
		sh[32] = 36;		/* sh_size */
	}
	n[0] = 4;
	n[4] = 20;
	n[8] = 3;
	memcpy(n + 12, "GNU", 4);
	memset(n + 16, 0x5a, 20);
	return 0x400;
}

static int elf_fd(const unsigned char *f, size_t len)
{
	char path[] = "/tmp/test_elfid.XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	if (write(fd, f, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_elfid(void)
{
	static unsigned char f[0x400];
	char hex[DU_BUILD_ID_HEX];
	struct du_elf_load seg;
	uint8_t bid[DU_BUILD_ID_MAX];
	int fd;

	fd = elf_fd(f, make_elf(f, true));
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(du_elf_build_id_hex(fd, hex, sizeof(hex)) == 20);
	CU_ASSERT_STRING_EQUAL(hex, "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a");
	CU_ASSERT(du_elf_build_id(fd, bid, 10) == 0);	/* longer than asked: none */
	CU_ASSERT(du_elf_exec_load(fd, &seg) == 1);
	CU_ASSERT(seg.vaddr == 0x401000 && seg.offset == 0x300 && seg.memsz == 0x234);
	close(fd);
	/* a code segment said to start past the end of the file: none */
	make_elf(f, true);
	f[0x40 + 9] = 0x10;	/* p_offset 0x1000 */
	fd = elf_fd(f, 0x400);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(du_elf_exec_load(fd, &seg) == 0);
	close(fd);
	/* a debug file's note: only in its section headers */
	fd = elf_fd(f, make_elf(f, false));
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(du_elf_build_id_hex(fd, hex, sizeof(hex)) == 20);
	CU_ASSERT(du_elf_exec_load(fd, &seg) == 0);
	close(fd);
	/* a note that runs past the file, a section table past it: none */
	make_elf(f, false);
	f[0x200 + 4] = 200;
	fd = elf_fd(f, 0x400);
	CU_ASSERT(fd >= 0 && du_elf_build_id(fd, bid, sizeof(bid)) == 0);
	close(fd);
	make_elf(f, false);
	f[41] = 0x7f;
	fd = elf_fd(f, 0x400);
	CU_ASSERT(fd >= 0 && du_elf_build_id(fd, bid, sizeof(bid)) == 0);
	close(fd);
	fd = elf_fd((const unsigned char *)"#!/bin/sh\n", 10);
	CU_ASSERT(fd >= 0 && du_elf_build_id_hex(fd, hex, sizeof(hex)) == 0 && !hex[0]);
	close(fd);
}

/* The kernel's tables, one line at a time, as the daemon and the report
 * read them: a refcount of "-" (no module unloading) is a word like any. */
static void test_ksym_lines(void)
{
	static const struct {
		const char *line;
		int ret;
		const char *name;
		uint64_t size, addr;
	} mods[] = {
		{ "kvm 1392640 1 kvm_intel, Live 0xffffffffc0a00000\n", 0, "kvm", 1392640,
		  0xffffffffc0a00000ULL },
		{ "virtio_net 8192 - - Live 0xffffffffc0002f00 (E)", 0, "virtio_net", 8192,
		  0xffffffffc0002f00ULL },
		{ "hidden 4096 0 - Live 0x0000000000000000\n", 0, "hidden", 4096, 0 },
		{ "bad 12ab 0 - Live 0xffffffffc0000000\n", -EINVAL, NULL, 0, 0 },
		{ "short 4096 0 - Live\n", -EINVAL, NULL, 0, 0 },
		{ "big 4096 0 - Live 0x1ffffffffffffffff\n", -EINVAL, NULL, 0, 0 },
		{ "", -EINVAL, NULL, 0, 0 },
	};
	struct du_kmod m;
	struct du_ksym s;

	for (size_t i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
		CU_ASSERT_EQUAL(du_kmod_parse(mods[i].line, &m), mods[i].ret);
		if (mods[i].ret)
			continue;
		CU_ASSERT(m.name_len == strlen(mods[i].name) &&
			  !memcmp(m.name, mods[i].name, m.name_len));
		CU_ASSERT_EQUAL(m.size, mods[i].size);
		CU_ASSERT_EQUAL(m.addr, mods[i].addr);
	}
	CU_ASSERT_EQUAL(du_ksym_parse("ffffffff81000000 T _text\n", &s), 0);
	CU_ASSERT(s.addr == 0xffffffff81000000ULL && s.type == 'T' && s.name_len == 5 &&
		  !memcmp(s.name, "_text", 5) && !s.mod);
	CU_ASSERT_EQUAL(du_ksym_parse("ffffffffc0a01000 t vmx_exit\t[kvm_intel]\n", &s), 0);
	CU_ASSERT(s.name_len == 8 && !memcmp(s.name, "vmx_exit", 8) && s.mod_len == 9 &&
		  !memcmp(s.mod, "kvm_intel", 9));
	CU_ASSERT_EQUAL(du_ksym_parse("0000000000000000 T _text", &s), 0);
	CU_ASSERT_EQUAL(du_ksym_parse("ffffffff81000000 T\n", &s), -EINVAL);
	CU_ASSERT_EQUAL(du_ksym_parse("ffffffff81000000 TT _text\n", &s), -EINVAL);
	CU_ASSERT_EQUAL(du_ksym_parse("zz T _text\n", &s), -EINVAL);
	CU_ASSERT_EQUAL(du_ksym_parse("ffffffffc0a01000 t f\t[]\n", &s), -EINVAL);
	CU_ASSERT_EQUAL(du_ksym_parse("ffffffffc0a01000 t f\t[kvm\n", &s), -EINVAL);
}

/* DU_GROW: from @first, doubled until the need fits; nothing when it
 * already does; the elements kept. */
static void test_grow(void)
{
	uint32_t *a = NULL;
	size_t cap = 0;

	CU_ASSERT_EQUAL(DU_GROW(a, cap, 0, 4), 0);
	CU_ASSERT_PTR_NULL(a);
	CU_ASSERT_EQUAL(cap, 0);
	CU_ASSERT_EQUAL(DU_GROW(a, cap, 3, 4), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	CU_ASSERT_EQUAL(cap, 4);
	for (uint32_t i = 0; i < 4; i++)
		a[i] = i * 7;
	CU_ASSERT_EQUAL(DU_GROW(a, cap, 4, 4), 0);
	CU_ASSERT_EQUAL(cap, 4);
	CU_ASSERT_EQUAL(DU_GROW(a, cap, 17, 4), 0);
	CU_ASSERT_EQUAL(cap, 32);
	for (uint32_t i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(a[i], i * 7);
	a[31] = 1;	/* (valgrind or ASan would see a short array) */
	free(a);
}

/* A file below a directory, opened by a relative path: a link on the
 * way (to a directory or as the file) is refused, as is a way out; the
 * same with openat2 and one component at a time. */
static void test_open_beneath(void)
{
	int (*const how[])(int, const char *, int) = { du_open_beneath, du_open_beneath_walk };
	char base[] = "/tmp/test_util_beneath.XXXXXX", path[PATH_MAX];
	int dfd, fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(base));
	snprintf(path, sizeof(path), "%s/a/b/", base);
	CU_ASSERT_EQUAL_FATAL(du_mkdir_p(path), 0);
	snprintf(path, sizeof(path), "%s/a/b/f", base);
	CU_ASSERT_EQUAL(close(creat(path, 0644)), 0);
	dfd = open(base, O_RDONLY | O_DIRECTORY);
	CU_ASSERT_FATAL(dfd >= 0);
	CU_ASSERT_EQUAL(symlinkat("b", dfd, "a/l"), 0);		/* a directory's link */
	CU_ASSERT_EQUAL(symlinkat("b/f", dfd, "a/fl"), 0);	/* a file's */
	CU_ASSERT_EQUAL(mkfifoat(dfd, "a/b/p", 0600), 0);
	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		fd = how[i](dfd, "a/b/f", O_RDONLY);
		CU_ASSERT(fd >= 0);
		if (fd >= 0)
			close(fd);
		CU_ASSERT(how[i](dfd, "a/l/f", O_RDONLY) < 0);
		CU_ASSERT_EQUAL(how[i](dfd, "a/fl", O_RDONLY), -ELOOP);
		CU_ASSERT_EQUAL(how[i](dfd, "a/b/none", O_RDONLY), -ENOENT);
		CU_ASSERT_EQUAL(how[i](dfd, "a/../a/b/f", O_RDONLY), -EINVAL);
		CU_ASSERT_EQUAL(how[i](dfd, "a//b/f", O_RDONLY), -EINVAL);
		CU_ASSERT_EQUAL(how[i](dfd, "/etc/passwd", O_RDONLY), -EINVAL);
		CU_ASSERT_EQUAL(how[i](dfd, "a/./b/f", O_RDONLY), -EINVAL);
		CU_ASSERT_EQUAL(how[i](dfd, "a/b/new", O_RDWR | O_CREAT), -EINVAL);
		/* a FIFO opened without blocking */
		fd = how[i](dfd, "a/b/p", O_RDONLY | O_NONBLOCK);
		CU_ASSERT(fd >= 0);
		if (fd >= 0)
			close(fd);
	}
	/* for reading a file: a regular one only, the FIFO refused at once,
	 * the link not followed; the descriptor blocking again */
	fd = du_open_beneath_file(dfd, "a/b/f");
	CU_ASSERT(fd >= 0 && !(fcntl(fd, F_GETFL) & O_NONBLOCK));
	if (fd >= 0)
		close(fd);
	CU_ASSERT_EQUAL(du_open_beneath_file(dfd, "a/b/p"), -EINVAL);
	CU_ASSERT(du_open_beneath_file(dfd, "a/l/f") < 0);
	close(dfd);
	{
		FILE *f = du_fopen_beneath(base, "a/fl");

		CU_ASSERT_PTR_NULL(f);
		CU_ASSERT_EQUAL(errno, ELOOP);
		if (f)
			fclose(f);
	}
	snprintf(path, sizeof(path), "rm -rf %s", base);
	CU_ASSERT_EQUAL(system(path), 0);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "key/value table", test_kv_table },
		{ "key/value edges", test_kv_edges },
		{ "separate table", test_separate_table },
		{ "mkdir -p", test_mkdir_p },
		{ "session directory", test_sdir },
		{ "saved session names", test_session_names },
		{ "usage error lines", test_getopt_msg },
		{ "ELF build id and code segment", test_elfid },
		{ "worker user", test_worker_user },
		{ "files a root process writes", test_open_own },
		{ "worker roots", test_roots },
		{ "kallsyms and /proc/modules lines", test_ksym_lines },
		{ "arrays that grow", test_grow },
		{ "a file below a directory, no link followed", test_open_beneath },
	};

	return du_test_main("util", tests, DU_TEST_N(tests), NULL, NULL);
}
