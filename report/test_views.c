/*
 * Unit tests for the views on librep: the flame graph's frame tree and
 * SVG, the frames built from a profile (domains, {vmm}, guest kernel and
 * user), the shared command line, labels, and build ids.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <bfd.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "odb/odb.h"
#include "rep_annotate.h"
#include "rep_collect.h"
#include "rep_flame.h"
#include "rep_opts.h"
#include "rep_spec.h"
#include "rep_view.h"
#include "util/du_log.h"
#include "util/du_test.h"

static char *svg_of(struct rep_flame *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(m != NULL);
	CU_ASSERT(rep_flame_write_svg(f, m, "t<&>", REP_FLAME_ICICLE) == 0);
	fclose(m);
	return buf;
}

/* The frame line of @name in @svg, or NULL. */
static const char *frame(const char *svg, const char *name)
{
	char key[256];

	snprintf(key, sizeof(key), "data-name=\"%s\"", name);
	return strstr(svg, key);
}

static long attr(const char *svg, const char *name, const char *a)
{
	const char *f = frame(svg, name), *line, *p;
	char key[64];

	if (!f)
		return -1;
	for (line = f; line > svg && line[-1] != '\n'; line--)
		;
	snprintf(key, sizeof(key), "%s=\"", a);
	p = strstr(line, key);
	if (!p || p > f)
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

static void test_flame_tree(void)
{
	static const enum rep_frame_kind k[] = { REP_FRAME_HOST, REP_FRAME_HOST, REP_FRAME_HOST };
	const char *a[] = { "host", "app", "small" };
	const char *b[] = { "host", "app", "big<&>" };
	const char *c[] = { "host", "other" };
	struct rep_flame *f = rep_flame_new();
	char *svg;

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(rep_flame_add(f, a, k, 3, 10) == 0);
	CU_ASSERT(rep_flame_add(f, b, k, 3, 30) == 0);
	CU_ASSERT(rep_flame_add(f, b, k, 3, 5) == 0);
	CU_ASSERT(rep_flame_add(f, c, k, 2, 7) == 0);
	svg = svg_of(f);
	CU_ASSERT_FATAL(svg != NULL);
	CU_ASSERT(attr(svg, "all", "data-n") == 52);
	CU_ASSERT(attr(svg, "host", "data-n") == 52);
	CU_ASSERT(attr(svg, "app", "data-n") == 45);
	CU_ASSERT(attr(svg, "other", "data-n") == 7);
	/* Largest child first (leftmost), escaped names. */
	CU_ASSERT(attr(svg, "big&lt;&amp;&gt;", "data-n") == 35);
	CU_ASSERT(attr(svg, "big&lt;&amp;&gt;", "data-x") == 0);
	CU_ASSERT(attr(svg, "small", "data-x") == 35);
	CU_ASSERT(attr(svg, "other", "data-x") == 45);
	CU_ASSERT(attr(svg, "small", "data-d") == 3);
	/* Pre-order: a parent before its children. */
	CU_ASSERT(frame(svg, "app") < frame(svg, "small"));
	CU_ASSERT(strstr(svg, "<title>small (10 samples, 19.23%)</title>") != NULL);
	CU_ASSERT(strstr(svg, "t&lt;&amp;&gt;") != NULL);
	CU_ASSERT(strstr(svg, "<script") != NULL);
	free(svg);
	rep_flame_free(f);
	rep_flame_free(NULL);
}

static char *svg_flags(struct rep_flame *f, unsigned int flags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	CU_ASSERT_FATAL(m != NULL);
	CU_ASSERT(rep_flame_write_svg(f, m, "t", flags) == 0);
	fclose(m);
	return buf;
}

/* The y of the rect of frame @name in @svg, or -1. */
static long rect_y(const char *svg, const char *name)
{
	const char *f = frame(svg, name), *r = f ? strstr(f, "<rect x=") : NULL, *y;

	y = r ? strstr(r, " y=\"") : NULL;
	return y ? strtol(y + 4, NULL, 10) : -1;
}

/*
 * The default view is flamegraph.pl's: a recorded stack main -> mid ->
 * leaf stands on its binary with main lowest and leaf on top, the root at
 * the bottom of the picture; --icicle turns the picture over.
 */
static void test_flame_callers_first(void)
{
	static const enum rep_frame_kind k[6] = { REP_FRAME_HOST, REP_FRAME_HOST, REP_FRAME_HOST,
						  REP_FRAME_HOST, REP_FRAME_HOST, REP_FRAME_HOST };
	/* as rep_flame_add_stacks builds it: 10 samples of leaf, 6 of them
	 * with the stack leaf <- mid <- main */
	const char *flat[] = { "host", "app", "bin", "leaf" };
	const char *stack[] = { "host", "app", "bin", "leaf", "mid", "main" };
	struct rep_flame *rev = rep_flame_new(), *fg = NULL;
	char *svg, *ice;

	CU_ASSERT_FATAL(rev != NULL);
	CU_ASSERT(rep_flame_add(rev, flat, k, 4, 4) == 0);
	CU_ASSERT(rep_flame_add(rev, stack, k, 6, 6) == 0);
	CU_ASSERT_FATAL(rep_flame_callers_first(rev, &fg) == 0);
	svg = svg_flags(fg, 0);
	CU_ASSERT_FATAL(svg != NULL);
	CU_ASSERT(attr(svg, "all", "data-n") == 10);
	CU_ASSERT(attr(svg, "bin", "data-n") == 10);
	CU_ASSERT(attr(svg, "main", "data-n") == 6);
	CU_ASSERT(attr(svg, "main", "data-d") == 4);
	CU_ASSERT(attr(svg, "mid", "data-d") == 5);
	/* leaf twice: on top of the stack, and right on bin for the rest */
	CU_ASSERT(attr(svg, "leaf", "data-n") == 6 || attr(svg, "leaf", "data-n") == 4);
	CU_ASSERT(strstr(svg, "data-d=\"6\" data-name=\"leaf\"") != NULL);
	CU_ASSERT(strstr(svg, "data-d=\"4\" data-name=\"leaf\"") != NULL);
	CU_ASSERT(strstr(svg, "data-d=\"4\" data-name=\"mid\"") == NULL);
	/* the root lowest, callers above it, the leaf above its callers */
	CU_ASSERT(rect_y(svg, "all") > rect_y(svg, "host"));
	CU_ASSERT(rect_y(svg, "main") > rect_y(svg, "mid"));
	ice = svg_flags(fg, REP_FLAME_ICICLE);
	CU_ASSERT_FATAL(ice != NULL);
	CU_ASSERT(rect_y(ice, "all") < rect_y(ice, "host"));
	CU_ASSERT(rect_y(ice, "main") < rect_y(ice, "mid"));
	free(svg);
	free(ice);
	rep_flame_free(fg);
	rep_flame_free(rev);
}

/* A hand-made profile: host work, a guest's vmm work, guest kernel and user. */
static void test_flame_profile(void)
{
	struct rep_class cls = { .event = (char *)"TIMER", .count = 1000 };
	struct rep_group g[] = {
		{ .app = { SFN_ROOT, (char *)"/usr/bin/ratio" }, .dep = { SFN_ROOT, (char *)"/usr/bin/ratio" },
		  .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL, .counts = 0 },
		{ .domain = (char *)"web1", .vmm = true,
		  .app = { SFN_ROOT, (char *)"/usr/bin/qemu" }, .dep = { SFN_KERN, (char *)"vmlinux" },
		  .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL, .counts = 1 },
		{ .domain = (char *)"web1", .app = { SFN_ROOT, (char *)"/bin/bash" },
		  .dep = { SFN_KERN, (char *)"vmlinux" }, .tgid = 42, .tid = SFN_ALL, .cpu = SFN_ALL,
		  .counts = 2 },
		{ .domain = (char *)"web1", .app = { SFN_ROOT, (char *)"/bin/bash" },
		  .dep = { SFN_ROOT, (char *)"/bin/bash" }, .tgid = 42, .tid = SFN_ALL, .cpu = SFN_ALL,
		  .counts = 3 },
	};
	uint64_t arena[] = { 0, 0, 0, 0, 11, 22, 33, 44 };
	struct rep_symrow rows[] = {
		{ .group = 0, .sym = -1, .counts = 4 }, { .group = 1, .sym = -1, .counts = 5 },
		{ .group = 2, .sym = -1, .counts = 6 }, { .group = 3, .sym = -1, .counts = 7 },
	};
	uint64_t totals[] = { 110 };
	struct rep_profile p = {
		.classes = &cls, .nclasses = 1, .groups = g, .ngroups = 4, .rows = rows, .nrows = 4,
		.totals = totals, .arena = arena,
	};
	struct rep_flame *f = rep_flame_new();
	char *svg;

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT(rep_flame_from_profile(f, &p, 0) == 0);
	svg = svg_of(f);
	CU_ASSERT_FATAL(svg != NULL);
	CU_ASSERT(attr(svg, "host", "data-n") == 11);
	CU_ASSERT(attr(svg, "web1", "data-n") == 99);
	CU_ASSERT(attr(svg, "{vmm}", "data-n") == 22);
	CU_ASSERT(attr(svg, "bash (tgid:42)", "data-n") == 77);
	CU_ASSERT(strstr(svg, "class=\"f k-vmm\" data-n=\"22\"") != NULL);
	CU_ASSERT(strstr(svg, "class=\"f k-gkern\" data-n=\"33\"") != NULL);
	CU_ASSERT(strstr(svg, "class=\"f k-guser\" data-n=\"44\"") != NULL);
	CU_ASSERT(strstr(svg, "class=\"f k-domain\" data-n=\"99\"") != NULL);
	CU_ASSERT(strstr(svg, "class=\"f k-host\" data-n=\"11\"") != NULL);
	free(svg);
	rep_flame_free(f);
}

struct extra_seen {
	const char *out;
	int ends;
};

static int extra_cb(void *ctx, int c, const char *arg, char *err, size_t errlen)
{
	struct extra_seen *s = ctx;

	if (c == 'o') {
		s->out = arg;
		return 0;
	}
	if (c == 0) {
		s->ends++;
		if (s->out)
			return 0;
		snprintf(err, errlen, "need -o");
		return -EINVAL;
	}
	return -EINVAL;
}

static void no_usage(FILE *f)
{
	(void)f;
}

static void test_parse(void)
{
	static const struct option extra[] = {
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	char *good[] = { "x", "--session-dir=/s", "-o", "f.svg", "--domain=web1", "-p", "/a,/b",
			 "--root=/r", "event:TIMER", NULL };
	char *bad[] = { "x", "--session-dir=/s", NULL };
	char *unknown[] = { "x", "--nope", NULL };
	struct extra_seen s = { 0 };
	struct rep_opts o;
	FILE *saved = stderr;

	CU_ASSERT(rep_view_parse("x", &o, 9, good, extra, "o:", extra_cb, &s, no_usage) == 0);
	CU_ASSERT_STRING_EQUAL(o.session_dir, "/s");
	CU_ASSERT_STRING_EQUAL(s.out, "f.svg");
	CU_ASSERT(s.ends == 1);
	CU_ASSERT(o.symbols);
	CU_ASSERT(o.nimage_path == 2);
	CU_ASSERT_STRING_EQUAL(o.root, "/r");
	CU_ASSERT(rep_spec_domain_ok(o.spec, "web1"));
	CU_ASSERT(!rep_spec_domain_ok(o.spec, NULL));
	rep_opts_release(&o);

	stderr = fopen("/dev/null", "w");
	s = (struct extra_seen){ 0 };
	CU_ASSERT(rep_view_parse("x", &o, 2, bad, extra, "o:", extra_cb, &s, no_usage) == -EINVAL);
	rep_opts_release(&o);
	CU_ASSERT(rep_view_parse("x", &o, 2, unknown, extra, "o:", extra_cb, &s, no_usage) == -EINVAL);
	rep_opts_release(&o);
	fclose(stderr);
	stderr = saved;
}

static void test_labels(void)
{
	struct rep_group g = { .app = { SFN_ROOT, (char *)"/usr/bin/qemu" },
			       .tgid = 7, .tid = SFN_ALL, .cpu = 2 };
	struct sfn_image anon = { SFN_ANON, (char *)"guest-kernel" };
	struct sfn_image kern = { SFN_KERN, (char *)"ext4" };
	char *s;

	s = rep_view_app_label(&g);
	CU_ASSERT_STRING_EQUAL(s, "qemu (tgid:7 cpu:2)");
	free(s);
	s = rep_view_image_label(&anon);
	CU_ASSERT_STRING_EQUAL(s, "{anon:guest-kernel}");
	free(s);
	s = rep_view_image_label(&kern);
	CU_ASSERT_STRING_EQUAL(s, "ext4");
	free(s);
	CU_ASSERT(rep_view_is_guest_kernel(&anon));
	CU_ASSERT(rep_view_is_guest_kernel(&kern));
	CU_ASSERT(!rep_view_is_guest_kernel(&g.app));
}

static void test_progress_quiet(void)
{
	struct rep_progress pr;

	/* Not a terminal under make check: nothing is printed, nothing breaks. */
	rep_progress_begin(&pr, "x", 10);
	CU_ASSERT(!pr.tty || isatty(STDERR_FILENO));
	for (size_t i = 0; i < 10; i++)
		rep_progress_step(&pr, i);
	rep_progress_end(&pr);
}

/* The file offset of function @fn's first instruction in ELF file @path. */
static uint64_t func_key(const char *path, const char *fn)
{
	asymbol **tab;
	uint64_t key = 0;
	long n;
	bfd *abfd;

	bfd_init();
	abfd = bfd_openr(path, NULL);
	CU_ASSERT_FATAL(abfd && bfd_check_format(abfd, bfd_object));
	tab = malloc(bfd_get_symtab_upper_bound(abfd));
	n = bfd_canonicalize_symtab(abfd, tab);
	for (long i = 0; i < n; i++) {
		asection *sec = tab[i]->section;

		if (strcmp(tab[i]->name, fn) || !sec)
			continue;
		key = (uint64_t)sec->filepos + (bfd_asymbol_value(tab[i]) - bfd_section_vma(sec));
	}
	free(tab);
	bfd_close(abfd);
	CU_ASSERT(key != 0);
	return key;
}

/* Run opannotate with @argv, its standard output into a malloc'd string. */
static char *annotate(int argc, char **argv, int *status)
{
	char path[] = "/tmp/test_views_out.XXXXXX", *text = NULL;
	int fd = mkstemp(path), saved;
	FILE *f;
	long len;

	CU_ASSERT_FATAL(fd >= 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(fd, STDOUT_FILENO);
	*status = rep_annotate_main(argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	if (fread(text, 1, (size_t)len, f) != (size_t)len)
		text[0] = '\0';
	fclose(f);
	unlink(path);
	return text;
}

/*
 * A guest's sources (below --source-dir, @dir/src): interleaved with its
 * disassembly in mixed mode, and written below --output-dir apart from the
 * host's, under domain:web1; without --source-dir nothing is written.
 */
static void annotate_guest_tree(const char *dir, char *sd)
{
	char sdir[1200], odir[1200], copy[2400], *text;
	char *mixed[] = { "opannotate", "-a", "-s", sd, "--domain=web1", sdir, NULL };
	char *tree[] = { "opannotate", odir, sd, "--domain=web1", sdir, NULL };
	int status;
	FILE *f;

	snprintf(sdir, sizeof(sdir), "--source-dir=%s/src", dir);
	text = annotate(6, mixed, &status);
	CU_ASSERT(status == 0);
	/* guest_spin's first instruction under its source line, with its text */
	CU_ASSERT(strstr(text, ":   g.c:2  __attribute__((noinline)) void guest_spin") != NULL);
	free(text);

	snprintf(odir, sizeof(odir), "--output-dir=%s/out", dir);
	text = annotate(5, tree, &status);
	CU_ASSERT(status == 0);
	free(text);
	snprintf(copy, sizeof(copy), "%s/out/domain:web1%s/g.c", dir, dir);
	f = fopen(copy, "r");
	CU_ASSERT(f != NULL);
	if (f) {
		char line[512];
		bool hot = false, total = false;

		while (fgets(line, sizeof(line), f)) {
			hot |= strstr(line, "        77 100.000  * __attribute__") == line;
			total |= strstr(line, " * Total samples for file : ") == line;
		}
		fclose(f);
		CU_ASSERT(hot && total);
	}
	snprintf(odir, sizeof(odir), "--output-dir=%s/out2", dir);
	text = annotate(4, tree, &status);
	CU_ASSERT(status == 0);
	CU_ASSERT(strstr(text, "0 file(s) written") != NULL);
	free(text);
}

/*
 * A guest binary found only through the session's image cache: opannotate
 * disassembles it and puts the samples on the sampled instruction.
 */
static void test_annotate_guest(void)
{
	char dir[] = "/tmp/test_views.XXXXXX", cmd[10000], p[8192], rel[SFN_MAX_PATH + 1];
	char sd[1100], *text;
	struct sfn_name n = { .domain = (char *)"web1", .image = { SFN_ROOT, (char *)"/usr/bin/gprog" },
			      .dep = { SFN_ROOT, (char *)"/usr/bin/gprog" }, .event = (char *)"TIMER",
			      .count = 1000, .tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL };
	struct odb_desc d = { .count = 1000 };
	char *argv[] = { "opannotate", "--assembly", sd, "--domain=web1", NULL };
	uint64_t key;
	struct odb *db;
	int status;
	FILE *f;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(p, sizeof(p), "%s/g.c", dir);
	f = fopen(p, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs("volatile int s;\n"
	      "__attribute__((noinline)) void guest_spin(int n) { for (int i = 0; i < n; i++) s += i; }\n"
	      "int main(void) { guest_spin(3); return 0; }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/session/images/7 %s/session/domains/web1 && "
		 "%s -g -O1 -o %s/session/images/7/gprog %s && "
		 "printf 'images/7/gprog\\t/usr/bin/gprog\\n' >%s/session/domains/web1/images",
		 dir, dir, REP_TEST_CC, dir, p, dir);
	CU_ASSERT_FATAL(system(cmd) == 0);
	snprintf(p, sizeof(p), "%s/session/images/7/gprog", dir);
	key = func_key(p, "guest_spin");
	CU_ASSERT_FATAL(sfn_mangle(&n, rel, sizeof(rel)) > 0);
	snprintf(p, sizeof(p), "%s/session/samples/current/%s", dir, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	CU_ASSERT_FATAL(system(cmd) == 0);
	snprintf(d.event, sizeof(d.event), "TIMER");
	CU_ASSERT_FATAL(odb_open(&db, p, ODB_RDWR, &d) == 0);
	CU_ASSERT(odb_add(db, key, 77) == 0);
	odb_close(db);

	snprintf(sd, sizeof(sd), "--session-dir=%s/session", dir);
	text = annotate(4, argv, &status);
	CU_ASSERT(status == 0);
	CU_ASSERT(strstr(text, "image /usr/bin/gprog (domain web1)") != NULL);
	CU_ASSERT(strstr(text, "/session/images/7/gprog") != NULL);
	CU_ASSERT(strstr(text, "<guest_spin>: /* total */") != NULL);
	/* The sample is on guest_spin's first instruction, marked hot. */
	{
		const char *hot = strstr(text, "        77 100.000  *");

		CU_ASSERT(hot != NULL && hot > strstr(text, "<guest_spin>"));
	}
	free(text);

	/* Its DWARF names a host file (g.c, here): never opened as given; below
	 * --source-dir only, and not through a link out of it. */
	{
		char *src[] = { "opannotate", "--source", sd, "--domain=web1", NULL, NULL };
		char sdir[1200];

		text = annotate(4, src, &status);
		CU_ASSERT(status == 0);
		CU_ASSERT(strstr(text, "looked for under --source-dir only") != NULL);
		CU_ASSERT(strstr(text, "for (int i = 0") == NULL);
		free(text);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/src%s %s/bad%s && cp %s/g.c %s/src%s/ && "
			 "ln -s %s/g.c %s/bad%s/g.c", dir, dir, dir, dir, dir, dir, dir, dir, dir, dir);
		CU_ASSERT_FATAL(system(cmd) == 0);
		snprintf(sdir, sizeof(sdir), "--source-dir=%s/src", dir);
		src[4] = sdir;
		text = annotate(5, src, &status);
		CU_ASSERT(status == 0);
		CU_ASSERT(strstr(text, "for (int i = 0") != NULL);
		free(text);
		snprintf(sdir, sizeof(sdir), "--source-dir=%s/bad", dir);
		text = annotate(5, src, &status);
		CU_ASSERT(status == 0);
		CU_ASSERT(strstr(text, "for (int i = 0") == NULL);
		free(text);
	}
	annotate_guest_tree(dir, sd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CU_ASSERT(system(cmd) == 0);
}

static void quiet_log(enum du_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "flame: tree, layout, SVG", test_flame_tree },
		{ "flame: frames of a profile", test_flame_profile },
		{ "command line", test_parse },
		{ "labels", test_labels },
		{ "flame graph: callers first, root at the bottom", test_flame_callers_first },
		{ "progress off a terminal", test_progress_quiet },
		{ "opannotate: a guest binary from the image cache", test_annotate_guest },
	};

	du_log_set(quiet_log);
	return du_test_main("views", tests, DU_TEST_N(tests), NULL, NULL);
}
