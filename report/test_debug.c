/*
 * rep_debug: where an image's debug info is found, in which order, and
 * which candidates are refused.  Builds small programs with the compiler
 * and splits their debug info with objcopy, as distributions do.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rep_child.h"
#include "rep_debug.h"
#include "rep_sym.h"
#include "util/du_test.h"

#define ID_A "0123456789abcdef0123456789abcdef01234567"
#define ID_B "fedcba9876543210fedcba9876543210fedcba98"

static char dir[64];

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* prog (build-id ID_A, a static function), prog.debug, stripped copies. */
static int setup(void)
{
	FILE *f;
	char p[128];

	snprintf(dir, sizeof(dir), "/tmp/test_debug.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(p, sizeof(p), "%s/t.c", dir);
	f = fopen(p, "w");
	if (!f)
		return 1;
	fputs("static int __attribute__((noinline)) hidden_fn(int x) { return x * 3; }\n"
	      "int main(int argc, char **argv) { (void)argv; return hidden_fn(argc); }\n", f);
	fclose(f);
	return sh("cd %s && %s -g -O1 -o prog t.c -Wl,--build-id=0x" ID_A " && "
		  "%s -g -O1 -o other t.c -Wl,--build-id=0x" ID_B " && "
		  "objcopy --only-keep-debug prog prog.debug && "
		  "objcopy --only-keep-debug other other.debug && "
		  "strip -s -o bare prog", dir, REP_TEST_CC, REP_TEST_CC) ? 1 : 0;
}

static int teardown(void)
{
	return sh("rm -rf %s", dir) ? 1 : 0;
}

/* The lookup for @img (in dir) with the debug dir dir/@dbgdir. */
static int find(const char *img, const char *dbgdir, struct rep_debug_found *f)
{
	struct rep_debug_opts o = { 0 };
	char p[256], d[256];
	int fd, rc;

	snprintf(p, sizeof(p), "%s/%s", dir, img);
	snprintf(d, sizeof(d), "%s/%s", dir, dbgdir);
	o.debug_dir = d;
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	rc = rep_debug_find(fd, p, &o, f);
	close(fd);
	return rc;
}

static void done(struct rep_debug_found *f)
{
	if (f->fd >= 0)
		close(f->fd);
}

/* True when the table read from @img with @f's debug file names hidden_fn. */
static bool names_hidden(const char *img, struct rep_debug_found *f)
{
	char p[256], err[256];
	struct rep_bin *b;
	bool found = false;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, img);
	fd = open(p, O_RDONLY);
	b = rep_bin_open_split(p, fd, f->fd, f->src == REP_DEBUG_MINI, REP_DEMANGLE_NORMAL, err, sizeof(err));
	f->fd = -1;
	if (!b)
		fprintf(stderr, "test_debug: %s: %s\n", img, err);
	for (size_t i = 0; b && i < rep_bin_nr_syms(b); i++)
		found |= !strcmp(rep_bin_sym(b, i)->name, "hidden_fn");
	rep_bin_free(b);
	return found;
}

static void test_build_id(void)
{
	char id[128], p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/bare", dir);
	fd = open(p, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(rep_debug_build_id(fd, id, sizeof(id)), 0);
	CU_ASSERT_STRING_EQUAL(id, ID_A);
	/* too small a buffer: no id rather than a cut one */
	CU_ASSERT_EQUAL(rep_debug_build_id(fd, id, 8), 0);
	CU_ASSERT_STRING_EQUAL(id, "");
	close(fd);
	snprintf(p, sizeof(p), "%s/t.c", dir);
	fd = open(p, O_RDONLY);
	CU_ASSERT(rep_debug_build_id(fd, id, sizeof(id)) < 0);
	close(fd);
}

static void test_self_and_none(void)
{
	struct rep_debug_found f;

	CU_ASSERT_EQUAL(find("prog", "nodbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_SELF);
	CU_ASSERT_STRING_EQUAL(f.build_id, ID_A);
	CU_ASSERT_EQUAL(find("bare", "nodbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_NONE);
	CU_ASSERT_EQUAL(f.fd, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(f.why, "not in "));
	CU_ASSERT_PTR_NOT_NULL(strstr(f.why, "no .gnu_debuglink"));
	CU_ASSERT(!names_hidden("bare", &f));
}

/* The build-id directory is asked before the debug link. */
static void test_order(void)
{
	struct rep_debug_found f;

	CU_ASSERT_FATAL(sh("cd %s && mkdir -p dbg/.build-id/01 d1 && "
			   "cp prog.debug dbg/.build-id/01/23456789abcdef0123456789abcdef01234567.debug && "
			   "cp prog.debug d1/prog.debug && "
			   "objcopy --add-gnu-debuglink=prog.debug bare d1/linked", dir) == 0);
	CU_ASSERT_EQUAL(find("d1/linked", "dbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_BUILD_ID);
	CU_ASSERT_PTR_NOT_NULL(strstr(f.path, "/.build-id/01/"));
	CU_ASSERT(names_hidden("d1/linked", &f));
	CU_ASSERT_EQUAL(find("d1/linked", "nodbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_LINK);
	CU_ASSERT_EQUAL(f.refused, 0);
	CU_ASSERT(names_hidden("d1/linked", &f));
	/* .debug/ beside the image, and the debug dir's copy of its directory */
	CU_ASSERT_FATAL(sh("cd %s && mkdir -p d2/.debug dbg2%s/d3 d3 && cp prog.debug d2/.debug/ && "
			   "cp d1/linked d2/ && cp d1/linked d3/ && cp prog.debug dbg2%s/d3/",
			   dir, dir, dir) == 0);
	CU_ASSERT_EQUAL(find("d2/linked", "nodbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_LINK);
	CU_ASSERT_PTR_NOT_NULL(strstr(f.path, "/d2/.debug/prog.debug"));
	done(&f);
	CU_ASSERT_EQUAL(find("d3/linked", "dbg2", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_LINK);
	done(&f);
}

static void test_crc_refused(void)
{
	struct rep_debug_found f;

	/* the right build-id, but not the bytes the link was made for */
	CU_ASSERT_FATAL(sh("cd %s && mkdir -p c1 && cp d1/linked c1/ && cp prog.debug c1/ && "
			   "printf x >>c1/prog.debug", dir) == 0);
	CU_ASSERT_EQUAL(find("c1/linked", "nodbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_NONE);
	CU_ASSERT_EQUAL(f.refused, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(f.why, "CRC does not match"));
	CU_ASSERT(!names_hidden("c1/linked", &f));
}

static void test_build_id_refused(void)
{
	struct rep_debug_found f;

	/* another program's debug file: under the image's build-id path, and
	 * linked with its own (right) CRC */
	CU_ASSERT_FATAL(sh("cd %s && mkdir -p b1 dbg3/.build-id/01 && "
			   "cp other.debug dbg3/.build-id/01/23456789abcdef0123456789abcdef01234567.debug && "
			   "cp other.debug b1/prog.debug && "
			   "objcopy --add-gnu-debuglink=b1/prog.debug bare b1/linked", dir) == 0);
	CU_ASSERT_EQUAL(find("b1/linked", "dbg3", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_NONE);
	CU_ASSERT_EQUAL(f.refused, 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(f.why, "build-id " ID_B " does not match"));
	CU_ASSERT(!names_hidden("b1/linked", &f));
}

/* MiniDebugInfo as Fedora makes it: the static functions' symbols, xz'd. */
static void test_mini(void)
{
	struct rep_debug_found f;

	if (sh("command -v xz >/dev/null")) {
		CU_PASS("no xz: skipped");
		return;
	}
	CU_ASSERT_FATAL(sh("cd %s && mkdir -p m1 && objcopy -S --remove-section .gdb_index "
			   "--remove-section .comment --keep-symbol=hidden_fn prog.debug m1/mini && "
			   "xz -f m1/mini && objcopy --add-section .gnu_debugdata=m1/mini.xz bare m1/prog",
			   dir) == 0);
	CU_ASSERT_EQUAL(find("m1/prog", "nodbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_MINI);
	CU_ASSERT(names_hidden("m1/prog", &f));
	/* garbage in the section: refused, not parsed as a table */
	CU_ASSERT_FATAL(sh("cd %s && head -c 300 /dev/urandom >m1/junk && "
			   "objcopy --add-section .gnu_debugdata=m1/junk bare m1/bad", dir) == 0);
	CU_ASSERT_EQUAL(find("m1/bad", "nodbg", &f), 0);
	CU_ASSERT_EQUAL(f.src, REP_DEBUG_NONE);
	CU_ASSERT_EQUAL(f.refused, 1);
}

/* A child under the parser children's filter, doing @what: its status. */
static int confined(int what)
{
	int status = -1;
	pid_t c = fork();

	if (c == 0) {
		if (rep_child_confine())
			_exit(2);
		if (what == 1)	/* a file a parser names itself: refused */
			_exit(open("/etc/hostname", O_RDONLY) == -1 && errno == EACCES ? 0 : 3);
		if (what == 2)
			socket(AF_UNIX, SOCK_STREAM, 0);	/* outside the list: killed */
		_exit(0);
	}
	if (c > 0)
		waitpid(c, &status, 0);
	return status;
}

/* After confinement an open is refused with EACCES (libbfd following a
 * dwz alternate file carries on without it); what is outside the list
 * still kills. */
static void test_confine(void)
{
	int st = confined(1);

	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = confined(2);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "build-id of an image", test_build_id },
		{ "own symbol table, nothing found", test_self_and_none },
		{ "order: build-id dir, debug link (3 places)", test_order },
		{ "debug link with a wrong CRC refused", test_crc_refused },
		{ "debug file with a wrong build-id refused", test_build_id_refused },
		{ "MiniDebugInfo", test_mini },
		{ "parser children: opens refused, the rest killed", test_confine },
	};

	return du_test_main("debug info", tests, DU_TEST_N(tests), setup, teardown);
}
