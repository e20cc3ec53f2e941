/*
 * Unit tests for librep: profile specifications, ELF symbolization of
 * binaries built here with the configured compiler (non-PIE, PIE, shared,
 * stripped), kallsyms, and aggregation over a small session written with
 * lib/odb.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odb/odb.h"
#include "rep_collect.h"
#include "rep_image.h"
#include "rep_kernel.h"
#include "rep_main.h"
#include "rep_opts.h"
#include "rep_info.h"
#include "rep_output.h"
#include "rep_spec.h"
#include "rep_stacks.h"
#include "rep_sym.h"
#include "sfname/sfname.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_test.h"

static char tmpdir[] = "/tmp/test_rep.XXXXXX";
static bool built;

static const char *const funcs[] = { "rt_alpha", "rt_beta", "rt_gamma" };

static const char test_src[] =
	"volatile int sink;\n"
	"__attribute__((noinline)) int rt_alpha(int x)\n"
	"{ for (int i = 0; i < x; i++) sink += i * 3; return sink; }\n"
	"__attribute__((noinline)) int rt_beta(int x)\n"
	"{ for (int i = 0; i < x; i++) sink ^= i << 2; return sink + 1; }\n"
	"__attribute__((noinline)) int rt_gamma(int x)\n"
	"{ for (int i = 0; i < x; i++) sink -= i * 7; return sink - 2; }\n"
	"int main(int argc, char **argv)\n"
	"{ (void)argv; return rt_alpha(argc) + rt_beta(argc) + rt_gamma(argc); }\n";

static void quiet_log(enum du_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

static char *tpath(const char *name)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

static int run(const char *cmd)
{
	int rc = system(cmd);

	if (rc)
		fprintf(stderr, "test_rep: command failed (%d): %s\n", rc, cmd);
	return rc;
}

static int build_binaries(void)
{
	char cmd[2048];
	FILE *f = fopen(tpath("t.c"), "w");

	if (!f)
		return -1;
	fputs(test_src, f);
	fclose(f);
#define CC REP_TEST_CC " -O1 -fno-inline "
	snprintf(cmd, sizeof(cmd),
		 "cd %s && " CC "-fno-pie -no-pie -o t_nopie t.c && "
		 CC "-fPIE -pie -o t_pie t.c && "
		 CC "-fPIC -shared -o t_shared.so t.c && "
		 CC "-fPIE -pie -rdynamic -s -o t_stripped t.c", tmpdir);
#undef CC
	return run(cmd);
}

/* Where the loader puts @name: its file offset and size, read with libelf. */
static int elf_func_offset(const char *path, const char *name, uint64_t *off, uint64_t *size)
{
	int fd = open(path, O_RDONLY), rc = -1;
	Elf_Scn *scn = NULL;
	uint64_t vaddr = 0;
	bool found = false;
	size_t nph;
	Elf *e;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		goto out_close;
	/* .symtab when present, else .dynsym (stripped). */
	static const unsigned wants[] = { SHT_SYMTAB, SHT_DYNSYM };

	for (size_t w = 0; w < 2 && !found; w++) {
		scn = NULL;
		while (!found && (scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != wants[w])
				continue;
			d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;
				const char *n;

				if (!gelf_getsym(d, (int)i, &s))
					continue;
				n = elf_strptr(e, sh.sh_link, s.st_name);
				if (n && !strcmp(n, name) && GELF_ST_TYPE(s.st_info) == STT_FUNC) {
					vaddr = s.st_value;
					*size = s.st_size;
					found = true;
					break;
				}
			}
		}
	}
	if (!found || elf_getphdrnum(e, &nph))
		goto out_end;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = ph.p_offset + (vaddr - ph.p_vaddr);
			rc = 0;
			break;
		}
	}
out_end:
	elf_end(e);
out_close:
	close(fd);
	return rc;
}

/* ---- specs ---------------------------------------------------------------- */

static struct sfn_name mkname(const char *domain, bool vmm, enum sfn_kind ik, const char *image,
			      enum sfn_kind dk, const char *dep, const char *event, uint64_t count,
			      uint32_t um, int64_t tgid, int64_t tid, int64_t cpu)
{
	struct sfn_name n = {
		.domain = (char *)domain, .vmm = vmm,
		.image = { ik, (char *)image }, .dep = { dk, (char *)dep },
		.event = (char *)event, .count = count, .unit_mask = um,
		.tgid = tgid, .tid = tid, .cpu = cpu,
	};
	return n;
}

static bool spec_matches(const char *const *args, const struct sfn_name *n)
{
	struct rep_spec *s = rep_spec_new();
	char err[256];
	bool m;

	for (; *args; args++)
		CU_ASSERT_EQUAL_FATAL(rep_spec_add(s, *args, err, sizeof(err)), 0);
	m = rep_spec_match(s, n);
	rep_spec_free(s);
	return m;
}

static void test_spec_good(void)
{
	struct sfn_name bash = mkname(NULL, false, SFN_ROOT, "/bin/bash", SFN_ROOT,
				      "/lib/x86_64-linux-gnu/libc.so.6", "CPU_CLK_UNHALTED",
				      100000, 0, 12, 13, 1);
	struct sfn_name guest = mkname("web1", false, SFN_KERN, "vmlinux", SFN_KERN, "virtio_net",
				       "TIMER", 5000, 3, SFN_ALL, SFN_ALL, SFN_ALL);
	const char *none[] = { NULL };
	const char *a1[] = { "image:/bin/bash", NULL };
	const char *a2[] = { "image:bash", NULL };
	const char *a3[] = { "image:ba*", NULL };
	const char *a4[] = { "bash", NULL };
	const char *a5[] = { "image:libc.so.6", NULL };		/* the dep counts too */
	const char *a6[] = { "lib-image:libc*", NULL };
	const char *a7[] = { "lib-image:bash", NULL };
	const char *a8[] = { "image:/bin/ba", NULL };
	const char *a9[] = { "event:TIMER,CPU_CLK_UNHALTED", "count:100000", "unit-mask:0x0", NULL };
	const char *a10[] = { "tgid:12", "tid:1,13", "cpu:1", NULL };
	const char *a11[] = { "tid:14", NULL };
	const char *a12[] = { "domain:host", NULL };
	const char *a13[] = { "domain:web1", NULL };
	const char *a14[] = { "domain:web1,host", "image:vmlinux", NULL };
	const char *a15[] = { "cpu:0", NULL };			/* "all" never matches a cpu */
	const char *a16[] = { "unit-mask:3", "event:TIMER", NULL };

	CU_ASSERT_TRUE(spec_matches(none, &bash));
	CU_ASSERT_TRUE(spec_matches(a1, &bash));
	CU_ASSERT_TRUE(spec_matches(a2, &bash));
	CU_ASSERT_TRUE(spec_matches(a3, &bash));
	CU_ASSERT_TRUE(spec_matches(a4, &bash));
	CU_ASSERT_TRUE(spec_matches(a5, &bash));
	CU_ASSERT_TRUE(spec_matches(a6, &bash));
	CU_ASSERT_FALSE(spec_matches(a7, &bash));
	CU_ASSERT_FALSE(spec_matches(a8, &bash));
	CU_ASSERT_TRUE(spec_matches(a9, &bash));
	CU_ASSERT_TRUE(spec_matches(a10, &bash));
	CU_ASSERT_FALSE(spec_matches(a11, &bash));
	CU_ASSERT_TRUE(spec_matches(a12, &bash));
	CU_ASSERT_FALSE(spec_matches(a13, &bash));
	CU_ASSERT_TRUE(spec_matches(a13, &guest));
	CU_ASSERT_FALSE(spec_matches(a12, &guest));
	CU_ASSERT_TRUE(spec_matches(a14, &guest));
	CU_ASSERT_FALSE(spec_matches(a15, &guest));
	CU_ASSERT_TRUE(spec_matches(a16, &guest));
	CU_ASSERT_FALSE(spec_matches(a16, &bash));
}

/* The walk skips the trees of domains --domain leaves out: which
 * {domain}/COMP directories may hold a selected domain's files. */
static void test_spec_domain_dirs(void)
{
	struct rep_spec *s = rep_spec_new();
	char err[256], longname[301], esc[SFN_MAX_PATH + 1], *cut;

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_TRUE(rep_spec_domain_dir_ok(s, "anything"));	/* no --domain */
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CU_ASSERT(rep_spec_add(s, "domain:web1,a{b},host", err, sizeof(err)) == 0);
	CU_ASSERT(rep_spec_add_domains(s, longname, err, sizeof(err)) == 0);
	CU_ASSERT_TRUE(rep_spec_domain_dir_ok(s, "web1"));
	CU_ASSERT_FALSE(rep_spec_domain_dir_ok(s, "web2"));
	CU_ASSERT_FALSE(rep_spec_domain_dir_ok(s, "web"));
	CU_ASSERT_FALSE(rep_spec_domain_dir_ok(s, "web10"));
	CU_ASSERT_FALSE(rep_spec_domain_dir_ok(s, "a{b}"));	/* escaped on disk */
	CU_ASSERT(sfn_escape_component("a{b}", 4, esc, sizeof(esc)) > 0);
	CU_ASSERT_TRUE(rep_spec_domain_dir_ok(s, esc));
	/* a long name is several levels: its first is the directory */
	CU_ASSERT(sfn_escape_component(longname, strlen(longname), esc, sizeof(esc)) > 0);
	cut = strchr(esc, '/');
	CU_ASSERT_PTR_NOT_NULL_FATAL(cut);
	*cut = '\0';
	CU_ASSERT_TRUE(rep_spec_domain_dir_ok(s, esc));
	esc[10] = '\0';
	CU_ASSERT_FALSE(rep_spec_domain_dir_ok(s, esc));
	rep_spec_free(s);
}

static void test_spec_bad(void)
{
	static const char *const bad[] = {
		"", "foo:bar", "image:", "count:abc", "tid:1,,2", "cpu:-1", "tgid:", "count:1x",
		"unit-mask:", "domain:", "event:A,", ":x", "session:", "session:a,b", "session:../x",
		"session:.x", "session:a/b",
	};
	struct rep_spec *s = rep_spec_new();
	char err[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CU_ASSERT_EQUAL(rep_spec_add(s, bad[i], err, sizeof(err)), -EINVAL);
		CU_ASSERT(err[0] != '\0');
	}
	rep_spec_free(s);
}

static void test_opts(void)
{
	char *good[] = { "opreport", "--session-dir=/x", "-l", "--merge=lib,tid",
			 "--threshold=1.5", "--sort=image,sample", "-p", "/a,/b", "--root=/r",
			 "--domain=web1", "image:bash", NULL };
	char *bad1[] = { "opreport", "--merge=bogus", NULL };
	char *bad2[] = { "opreport", "--nope", NULL };
	char *bad3[] = { "opreport", "nope:x", NULL };
	char *bad4[] = { "opreport", "--threshold=abc", NULL };
	char *help[] = { "opreport", "--help", NULL };
	FILE *null = fopen("/dev/null", "w");
	struct rep_opts o;

	CU_ASSERT_EQUAL(rep_opts_parse(&o, 11, good, null, null), 0);
	CU_ASSERT_STRING_EQUAL(o.session_dir, "/x");
	CU_ASSERT_TRUE(o.symbols);
	CU_ASSERT_EQUAL(o.merge, REP_MERGE_LIB | REP_MERGE_TID);
	CU_ASSERT_DOUBLE_EQUAL(o.threshold, 1.5, 1e-9);
	CU_ASSERT_EQUAL(o.nsort, 2);
	CU_ASSERT_EQUAL(o.sort[0], REP_SORT_IMAGE);
	CU_ASSERT_EQUAL(o.nimage_path, 2);
	CU_ASSERT_STRING_EQUAL(o.root, "/r");
	rep_opts_release(&o);
	CU_ASSERT_EQUAL(rep_opts_parse(&o, 2, bad1, null, null), -EINVAL);
	rep_opts_release(&o);
	CU_ASSERT_EQUAL(rep_opts_parse(&o, 2, bad2, null, null), -EINVAL);
	rep_opts_release(&o);
	CU_ASSERT_EQUAL(rep_opts_parse(&o, 2, bad3, null, null), -EINVAL);
	rep_opts_release(&o);
	CU_ASSERT_EQUAL(rep_opts_parse(&o, 2, bad4, null, null), -EINVAL);
	rep_opts_release(&o);
	CU_ASSERT_EQUAL(rep_opts_parse(&o, 2, help, null, null), 1);
	rep_opts_release(&o);
	fclose(null);
}

static void test_pct(void)
{
	char b[16];

	rep_format_pct(b, sizeof(b), 100.0);
	CU_ASSERT_STRING_EQUAL(b, "100.000");
	rep_format_pct(b, sizeof(b), 75.83141);
	CU_ASSERT_STRING_EQUAL(b, "75.8314");
	rep_format_pct(b, sizeof(b), 0.0);
	CU_ASSERT_STRING_EQUAL(b, "0.0000");
}

/* ---- ELF symbols ---------------------------------------------------------- */

static void check_binary(const char *name)
{
	char err[256];
	struct rep_bin *b;

	CU_ASSERT_TRUE_FATAL(built);
	b = rep_bin_open_elf(tpath(name), err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		uint64_t off = 0, size = 0;
		uint64_t probes[3];
		long s;

		CU_ASSERT_EQUAL_FATAL(elf_func_offset(tpath(name), funcs[i], &off, &size), 0);
		CU_ASSERT_FATAL(size > 0);
		probes[0] = off;
		probes[1] = off + size / 2;
		probes[2] = off + size - 1;
		for (int k = 0; k < 3; k++) {
			s = rep_bin_lookup_key(b, probes[k]);
			CU_ASSERT_FATAL(s >= 0);
			CU_ASSERT_STRING_EQUAL(rep_bin_sym(b, (size_t)s)->name, funcs[i]);
		}
		/* The byte before a function is never that function. */
		s = rep_bin_lookup_key(b, off - 1);
		CU_ASSERT(s < 0 || strcmp(rep_bin_sym(b, (size_t)s)->name, funcs[i]));
	}
	/* The ELF header is in no section: no symbol. */
	CU_ASSERT_EQUAL(rep_bin_lookup_key(b, 0), -1);
	rep_bin_free(b);
}

static void test_sym_nopie(void)
{
	check_binary("t_nopie");
}

static void test_sym_pie(void)
{
	check_binary("t_pie");
}

static void test_sym_shared(void)
{
	check_binary("t_shared.so");
}

static void test_sym_stripped(void)
{
	check_binary("t_stripped");
}

static void test_sym_missing(void)
{
	char err[256] = "";

	CU_ASSERT_PTR_NULL(rep_bin_open_elf(tpath("no_such_binary"), err, sizeof(err)));
	CU_ASSERT(err[0] != '\0');
	CU_ASSERT_PTR_NULL(rep_bin_open_elf(tpath("t.c"), err, sizeof(err)));
}

/* ---- kallsyms ------------------------------------------------------------- */

static const char kallsyms_txt[] =
	"ffffffff81000000 T _text\n"
	"ffffffff81000100 T start_kernel\n"
	"ffffffff81000200 t helper\n"
	"ffffffff81000300 D some_data\n"
	"ffffffff81000400 T other\n"
	"0000000000000000 A fixed_percpu_data\n"
	"garbage line\n"
	"ffffffffc0001000 t mod_fn1\t[kvm]\n"
	"ffffffffc0001100 T mod_fn2\t[kvm]\n"
	"ffffffffc0002000 d mod_data\t[kvm]\n"
	"ffffffffc0003000 t vfn\t[virtio_net]\n";

static const char *ksym_at(struct rep_kernel *k, const char *img, uint64_t key)
{
	const struct rep_bin *b = rep_kernel_image(k, img);
	long s;

	if (!b)
		return "(no image)";
	s = rep_bin_lookup_key(b, key);
	return s < 0 ? "(none)" : rep_bin_sym(b, (size_t)s)->name;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

static void test_kallsyms(void)
{
	struct rep_kernel *k;
	char err[256];

	write_file(tpath("kallsyms"), kallsyms_txt);
	/* a kernel without module unloading says "-" for every refcount */
	write_file(tpath("modules"), "kvm 16384 1 - Live 0xffffffffc0001000\n"
				     "virtio_net 8192 - - Live 0xffffffffc0002f00 (E)\n");
	k = rep_kernel_load(tpath("kallsyms"), tpath("modules"), err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "vmlinux", 0x150), "start_kernel");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "vmlinux", 0x100), "start_kernel");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "vmlinux", 0x2ff), "helper");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "vmlinux", 0x350), "(none)");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "vmlinux", 0x400), "other");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "vmlinux", 0x10), "_text");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "kvm", 0x50), "mod_fn1");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "kvm", 0x150), "mod_fn2");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "kvm", 0x1000), "(none)");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "virtio_net", 0x100), "vfn");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "virtio_net", 0x10), "(none)");
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "nosuchmod", 0), "(no image)");
	rep_kernel_free(k);

	/* Without /proc/modules, a module's base is its lowest symbol. */
	k = rep_kernel_load(tpath("kallsyms"), tpath("no_modules"), err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL_FATAL(k);
	CU_ASSERT_STRING_EQUAL(ksym_at(k, "kvm", 0x150), "mod_fn2");
	rep_kernel_free(k);

	write_file(tpath("kallsyms0"), "0000000000000000 T _text\n0000000000000000 t foo\n");
	errno = 0;
	CU_ASSERT_PTR_NULL(rep_kernel_load(tpath("kallsyms0"), NULL, err, sizeof(err)));
	CU_ASSERT_EQUAL(errno, ENODATA);
	CU_ASSERT_PTR_NULL(rep_kernel_load(tpath("no_kallsyms"), NULL, err, sizeof(err)));
}

/* ---- aggregation over a fake session ------------------------------------------ */

/* The directories leading to @path (not @path itself). */
static void mkdirs(const char *path)
{
	char buf[8192];

	snprintf(buf, sizeof(buf), "%s", path);
	CU_ASSERT_EQUAL_FATAL(du_mkdir_parents(buf, 0, 0755), 0);
}

struct kv {
	uint64_t key, count;
};

static void write_sample(const char *session, const struct sfn_name *n, const struct kv *kv,
			 size_t nkv)
{
	char rel[SFN_MAX_PATH + 1], path[8192];
	struct odb_desc d = { .count = n->count, .unit_mask = n->unit_mask };
	struct odb *db;

	CU_ASSERT_FATAL(sfn_mangle(n, rel, sizeof(rel)) > 0);
	snprintf(path, sizeof(path), "%s/samples/current/%s", session, rel);
	mkdirs(path);
	snprintf(d.event, sizeof(d.event), "%s", n->event);
	CU_ASSERT_EQUAL_FATAL(odb_open(&db, path, ODB_RDWR, &d), 0);
	for (size_t i = 0; i < nkv; i++)
		CU_ASSERT_EQUAL(odb_add(db, kv[i].key, kv[i].count), 0);
	odb_close(db);
}

static uint64_t func_off(const char *bin, const char *fn)
{
	uint64_t off = 0, size = 0;

	CU_ASSERT_EQUAL(elf_func_offset(tpath(bin), fn, &off, &size), 0);
	return off + size / 2;
}

static uint64_t sym_count(const struct rep_profile *p, const char *sym)
{
	uint64_t total = 0;

	for (size_t i = 0; i < p->nrows; i++) {
		const struct rep_symrow *r = &p->rows[i];
		const char *name = r->sym >= 0 ? rep_bin_sym(r->bin, (size_t)r->sym)->name :
						 "(no symbols)";

		if (!strcmp(name, sym))
			total += rep_counts(p, r->counts)[0];
	}
	return total;
}

/* Symbol rows point into the image cache: it lives until the next call. */
static struct rep_images *last_images;
static struct rep_opts last_opts;

/* Release what the last collect() kept alive. */
static void collect_end(void)
{
	rep_images_free(last_images);
	last_images = NULL;
	rep_opts_release(&last_opts);
}

static int collect(const char *session, const char *const *args, struct rep_profile **p,
		   char **text)
{
	char *argv[16] = { "opreport" };
	char sd[600];
	int argc = 1, rc;
	struct rep_opts *op = &last_opts;
	size_t len;
	FILE *f;

	snprintf(sd, sizeof(sd), "--session-dir=%s", session);
	argv[argc++] = sd;
	for (; *args; args++)
		argv[argc++] = (char *)*args;
	collect_end();
	rc = rep_opts_parse(op, argc, argv, stderr, stderr);
	if (rc)
		return rc;
	last_images = rep_images_new(op);
	rc = rep_collect(op, last_images, p);
	if (!rc && text) {
		struct rep_info in = { .collector = (char *)"file" };

		f = open_memstream(text, &len);
		rep_output(f, op, *p, &in);
		fclose(f);
	}
	return rc;
}

/* session:NAME reports SESSION/samples/NAME (what opcontrol --save made),
 * the same figures as when they were current; a missing one is an error. */
static void test_session_tag(const char *session)
{
	const char *none[] = { NULL }, *saved[] = { "session:run1", NULL };
	const char *cur[] = { "session:current", NULL }, *nope[] = { "session:nope", NULL };
	const char *two[] = { "session:run1", "session:run2", NULL };
	char from[700], to[700];
	struct rep_profile *p = NULL;
	uint64_t total;

	CU_ASSERT_EQUAL_FATAL(collect(session, none, &p, NULL), 0);
	total = p->totals[0];
	rep_profile_free(p);
	CU_ASSERT_EQUAL_FATAL(collect(session, cur, &p, NULL), 0);
	CU_ASSERT_EQUAL(p->totals[0], total);
	rep_profile_free(p);
	snprintf(from, sizeof(from), "%s/samples/current", session);
	snprintf(to, sizeof(to), "%s/samples/run1", session);
	CU_ASSERT_EQUAL_FATAL(rename(from, to), 0);
	p = NULL;
	CU_ASSERT_EQUAL(collect(session, saved, &p, NULL), 0);
	CU_ASSERT_FATAL(p != NULL);
	CU_ASSERT(total > 0);
	CU_ASSERT_EQUAL(p->totals[0], total);
	rep_profile_free(p);
	p = NULL;
	CU_ASSERT_EQUAL(collect(session, none, &p, NULL), -ENOENT);
	CU_ASSERT_EQUAL(collect(session, nope, &p, NULL), -ENOENT);
	CU_ASSERT_EQUAL(collect(session, two, &p, NULL), -EINVAL);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_EQUAL(rename(to, from), 0);
}

/* The walk of the sample directory follows no link (a tree linked in
 * from elsewhere, or a sample file linked to, is not read) and leaves
 * the daemon's {stacks} and {images} alone, wherever their names would
 * parse; with --domain, the other domains' directories are not entered. */
static void test_walk(void)
{
	char session[600], other[600], from[8192], to[8192];
	struct rep_profile *p = NULL;
	const char *none[] = { NULL };
	const char *web[] = { "--domain=web1", NULL };
	struct sfn_name app = mkname(NULL, false, SFN_ROOT, "/bin/a", SFN_ROOT, "/bin/a",
				     "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name gu = mkname("web1", false, SFN_ROOT, "/usr/sbin/nginx", SFN_ROOT,
				    "/usr/sbin/nginx", "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name gu2 = mkname("web2", false, SFN_ROOT, "/usr/sbin/nginx", SFN_ROOT,
				     "/usr/sbin/nginx", "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name b = mkname(NULL, false, SFN_ROOT, "/bin/b", SFN_ROOT, "/bin/b",
				   "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct kv five[] = { { 0x10, 5 } }, seven[] = { { 0x20, 7 } }, many[] = { { 0x30, 100 } };
	const char *file = "TIMER.10000.0.all.all.all";

	snprintf(session, sizeof(session), "%s/walk", tmpdir);
	snprintf(other, sizeof(other), "%s/walk-other", tmpdir);
	write_sample(session, &app, five, 1);
	write_sample(session, &gu, seven, 1);
	write_sample(session, &gu2, seven, 1);
	write_sample(other, &b, many, 1);
	/* a tree elsewhere linked in: {root}/usr/b/... would be image /usr/b */
	snprintf(from, sizeof(from), "%s/samples/current/{root}/bin", other);
	snprintf(to, sizeof(to), "%s/samples/current/{root}/usr", session);
	CU_ASSERT_EQUAL_FATAL(symlink(from, to), 0);
	/* a sample file linked to, under a name that parses */
	snprintf(from, sizeof(from), "%s/samples/current/{root}/bin/b/{dep}/{root}/bin/b/%s", other,
		 file);
	snprintf(to, sizeof(to), "%s/samples/current/{root}/bin/a/{dep}/{root}/bin/c", session);
	CU_ASSERT_EQUAL_FATAL(mkdir(to, 0755), 0);
	snprintf(to + strlen(to), sizeof(to) - strlen(to), "/%s", file);
	CU_ASSERT_EQUAL_FATAL(symlink(from, to), 0);
	/* the daemon's stacks: a tree whose names do not parse, not walked */
	snprintf(other, sizeof(other), "%s/walk-stacks", tmpdir);
	write_sample(other, &b, many, 1);
	snprintf(from, sizeof(from), "%s/samples/current/{root}", other);
	snprintf(to, sizeof(to), "%s/samples/current/{stacks}", session);
	CU_ASSERT_EQUAL_FATAL(mkdir(to, 0755), 0);
	snprintf(to + strlen(to), sizeof(to) - strlen(to), "/{root}");
	CU_ASSERT_EQUAL_FATAL(rename(from, to), 0);

	CU_ASSERT_EQUAL_FATAL(collect(session, none, &p, NULL), 0);
	CU_ASSERT_EQUAL(p->nfiles, 3);
	CU_ASSERT_EQUAL(p->nbad, 0);
	CU_ASSERT_EQUAL(p->totals[0], 5 + 7 + 7);
	rep_profile_free(p);
	p = NULL;
	CU_ASSERT_EQUAL_FATAL(collect(session, web, &p, NULL), 0);
	CU_ASSERT_EQUAL(p->nfiles, 1);
	CU_ASSERT_EQUAL(p->totals[0], 7);
	rep_profile_free(p);
	collect_end();
}

/* The two sample files' directories, swapped by the key sink at the
 * first key it is handed (the first file read then, the other not yet)
 * for links to directories elsewhere with the same file name in them. */
struct swap_ctx {
	char leaf[2][8192], decoy[2][8192];
	bool done;
};

static int swap_key(void *ctx, const struct rep_profile *p, size_t group, size_t cls,
		    const struct rep_bin *bin, long sym, uint64_t key, uint64_t count)
{
	struct swap_ctx *s = ctx;
	char moved[8300];

	(void)p, (void)group, (void)cls, (void)bin, (void)sym, (void)key, (void)count;
	for (int i = 0; i < 2 && !s->done; i++) {
		snprintf(moved, sizeof(moved), "%s.moved", s->leaf[i]);
		CU_ASSERT_EQUAL(rename(s->leaf[i], moved), 0);
		CU_ASSERT_EQUAL(symlink(s->decoy[i], s->leaf[i]), 0);
	}
	s->done = true;
	return 0;
}

/* A directory of the tree swapped for a link between the walk and a
 * file's read (the daemon's worker, which writes the tree, could): the
 * read follows no link on the way, so the file is passed over, not read
 * from where the link points. */
static void test_walk_swap(void)
{
	char session[600], decoys[600], sd[700], *argv[] = { "opreport", NULL, "-l", NULL };
	struct rep_key_sink sink;
	struct swap_ctx s = { .done = false };
	struct rep_profile *p = NULL;
	struct rep_opts o;
	struct rep_images *im;
	struct kv seven[] = { { 0x20, 7 } }, many[] = { { 0x30, 1000 } };
	const char *img[2] = { "/bin/one", "/bin/two" };

	snprintf(session, sizeof(session), "%s/swap", tmpdir);
	snprintf(decoys, sizeof(decoys), "%s/swap-decoys", tmpdir);
	for (int i = 0; i < 2; i++) {
		struct sfn_name n = mkname(NULL, false, SFN_ROOT, img[i], SFN_ROOT, img[i], "TIMER",
					   10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
		char rel[SFN_MAX_PATH + 1];

		write_sample(session, &n, seven, 1);
		write_sample(decoys, &n, many, 1);
		CU_ASSERT_FATAL(sfn_mangle(&n, rel, sizeof(rel)) > 0);
		*strrchr(rel, '/') = '\0';
		snprintf(s.leaf[i], sizeof(s.leaf[i]), "%s/samples/current/%s", session, rel);
		snprintf(s.decoy[i], sizeof(s.decoy[i]), "%s/samples/current/%s", decoys, rel);
	}
	snprintf(sd, sizeof(sd), "--session-dir=%s", session);	/* (o borrows it) */
	argv[1] = sd;
	CU_ASSERT_EQUAL_FATAL(rep_opts_parse(&o, 3, argv, stderr, stderr), 0);
	im = rep_images_new(&o);
	sink = (struct rep_key_sink){ .key = swap_key, .ctx = &s };
	CU_ASSERT_EQUAL_FATAL(rep_collect_keys(&o, im, &sink, &p), 0);
	CU_ASSERT_TRUE(s.done);
	CU_ASSERT_EQUAL(p->nfiles, 1);
	CU_ASSERT_EQUAL(p->nbad, 1);
	CU_ASSERT_EQUAL(p->totals[0], 7);	/* 1007 had the link been followed */
	rep_profile_free(p);
	rep_images_free(im);
	rep_opts_release(&o);
}

static int sum_stack(void *ctx, const struct rep_stack *st)
{
	*(uint64_t *)ctx += st->count;
	return 0;
}

/* The daemon's {stacks}: a file linked in from elsewhere is not read, a
 * FIFO in a file's place is passed over without waiting on it, and a
 * {stacks} that is a link is not read at all. */
static void test_stacks_links(void)
{
	static const char leaf[] = "{root}/bin/a/{dep}/{root}/bin/a/TIMER.10000.0.all.all.all";
	char session[600], sd[700], path[900], out[900], *argv[] = { "opreport", sd, NULL };
	struct rep_opts o;
	uint64_t sum = 0;
	size_t bad = 0;

	snprintf(session, sizeof(session), "%s/stacks", tmpdir);
	snprintf(path, sizeof(path), "%s/samples/current/{stacks}/", session);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/samples/current/{stacks}/s1", session);
	snprintf(out, sizeof(out), "domprof-stacks 1\nstack 5 %s 0x10\n", leaf);
	write_file(path, out);
	snprintf(path, sizeof(path), "%s/stacks-elsewhere", tmpdir);
	snprintf(out, sizeof(out), "domprof-stacks 1\nstack 1000 %s 0x10\n", leaf);
	write_file(path, out);
	snprintf(out, sizeof(out), "%s/samples/current/{stacks}/s2", session);
	CU_ASSERT_EQUAL_FATAL(symlink(path, out), 0);
	snprintf(path, sizeof(path), "%s/samples/current/{stacks}/s3", session);
	CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
	snprintf(sd, sizeof(sd), "--session-dir=%s", session);
	CU_ASSERT_EQUAL_FATAL(rep_opts_parse(&o, 2, argv, stderr, stderr), 0);
	alarm(30);	/* (a read that waits on the FIFO ends the test) */
	CU_ASSERT_EQUAL(rep_stacks_foreach(&o, sum_stack, &sum, &bad), 0);
	alarm(0);
	CU_ASSERT_EQUAL(sum, 5);
	/* {stacks} itself a link to a directory holding the 1000 */
	snprintf(path, sizeof(path), "%s/samples/current/{stacks}", session);
	snprintf(out, sizeof(out), "%s/samples/current/{stacks}.real", session);
	CU_ASSERT_EQUAL_FATAL(rename(path, out), 0);
	snprintf(out, sizeof(out), "%s/stacks-dir/", tmpdir);
	mkdirs(out);
	snprintf(out, sizeof(out), "%s/stacks-dir/s1", tmpdir);
	{
		char text[200];

		snprintf(text, sizeof(text), "domprof-stacks 1\nstack 1000 %s 0x10\n", leaf);
		write_file(out, text);
	}
	snprintf(out, sizeof(out), "%s/stacks-dir", tmpdir);
	CU_ASSERT_EQUAL_FATAL(symlink(out, path), 0);
	sum = 0;
	CU_ASSERT_EQUAL(rep_stacks_foreach(&o, sum_stack, &sum, &bad), 0);
	CU_ASSERT_EQUAL(sum, 0);
	rep_opts_release(&o);
}

static void test_aggregate(void)
{
	char session[600], bin[600], so[600], path[8192], corrupt[8192];
	struct rep_profile *p = NULL;
	char *text = NULL;
	const char *sym_args[] = { "-l", NULL };
	const char *dom_args[] = { "-l", "--domain=web1", NULL };
	const char *img_args[] = { NULL };
	const char *merge_args[] = { "--merge=lib", NULL };
	const char *nomatch_args[] = { "image:nothing_like_this", NULL };
	FILE *f;

	CU_ASSERT_TRUE_FATAL(built);
	snprintf(session, sizeof(session), "%s/session", tmpdir);
	snprintf(bin, sizeof(bin), "%s", tpath("t_nopie"));
	snprintf(so, sizeof(so), "%s", tpath("t_shared.so"));
	write_file(tpath("kallsyms"), kallsyms_txt);
	mkdirs(tpath("session/kallsyms"));
	write_file(tpath("session/kallsyms"), kallsyms_txt);
	write_file(tpath("session/modules"), "kvm 16384 1 - Live 0xffffffffc0001000\n");
	{
		struct sfn_name app = mkname(NULL, false, SFN_ROOT, bin, SFN_ROOT, bin, "TIMER",
					     10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
		struct sfn_name lib = mkname(NULL, false, SFN_ROOT, bin, SFN_ROOT, so, "TIMER",
					     10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
		struct sfn_name kern = mkname(NULL, false, SFN_KERN, "vmlinux", SFN_KERN, "vmlinux",
					      "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
		struct sfn_name gk = mkname("web1", false, SFN_KERN, "vmlinux", SFN_KERN, "vmlinux",
					    "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
		struct sfn_name gu = mkname("web1", false, SFN_ROOT, "/usr/sbin/nginx", SFN_ROOT,
					    "/usr/sbin/nginx", "TIMER", 10000, 0, SFN_ALL,
					    SFN_ALL, SFN_ALL);
		struct sfn_name vmm = mkname("web1", true, SFN_ROOT, "/usr/bin/qemu-system-x86_64",
					     SFN_KERN, "kvm", "TIMER", 10000, 0, SFN_ALL,
					     SFN_ALL, SFN_ALL);
		struct sfn_name bad = mkname(NULL, false, SFN_ROOT, "/bin/corrupt", SFN_ROOT,
					     "/bin/corrupt", "TIMER", 10000, 0, SFN_ALL,
					     SFN_ALL, SFN_ALL);
		struct kv kapp[] = { { func_off("t_nopie", "rt_alpha"), 10 },
				     { func_off("t_nopie", "rt_alpha") + 1, 5 },
				     { func_off("t_nopie", "rt_beta"), 20 } };
		struct kv klib[] = { { func_off("t_shared.so", "rt_gamma"), 7 } };
		struct kv kkern[] = { { 0x150, 4 }, { 0x350, 1 } };
		struct kv kgk[] = { { 0x10, 3 } };
		struct kv kgu[] = { { 0x1000, 6 } };
		struct kv kvmm[] = { { 0x150, 2 } };
		char rel[SFN_MAX_PATH + 1];

		write_sample(session, &app, kapp, 3);
		write_sample(session, &lib, klib, 1);
		write_sample(session, &kern, kkern, 2);
		write_sample(session, &gk, kgk, 1);
		write_sample(session, &gu, kgu, 1);
		write_sample(session, &vmm, kvmm, 1);
		/* A file with a good name and nothing in it yet (the daemon is
		 * making it: skipped), and one with a bad name. */
		CU_ASSERT_FATAL(sfn_mangle(&bad, rel, sizeof(rel)) > 0);
		snprintf(corrupt, sizeof(corrupt), "%s/samples/current/%s", session, rel);
		mkdirs(corrupt);
		write_file(corrupt, "");
		snprintf(path, sizeof(path), "%s/samples/current/junk", session);
		write_file(path, "x");
	}

	CU_ASSERT_EQUAL_FATAL(collect(session, sym_args, &p, &text), 0);
	CU_ASSERT_EQUAL(p->nclasses, 1);
	CU_ASSERT_EQUAL(p->nfiles, 6);
	CU_ASSERT_EQUAL(p->nbad, 1);	/* junk; the empty file is no error */
	CU_ASSERT_EQUAL(p->totals[0], 10 + 5 + 20 + 7 + 4 + 1 + 3 + 6 + 2);
	CU_ASSERT_TRUE(p->has_domain);
	CU_ASSERT_TRUE(p->separate_lib);
	CU_ASSERT_EQUAL(sym_count(p, "rt_alpha"), 15);
	CU_ASSERT_EQUAL(sym_count(p, "rt_beta"), 20);
	CU_ASSERT_EQUAL(sym_count(p, "rt_gamma"), 7);
	CU_ASSERT_EQUAL(sym_count(p, "start_kernel"), 4);
	CU_ASSERT_EQUAL(sym_count(p, "mod_fn2"), 2);	/* vmm: host kvm module */
	/* kernel data gap 1, guest kernel 3, guest binary missing 6 */
	CU_ASSERT_EQUAL(sym_count(p, "(no symbols)"), 1 + 3 + 6);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "DOMAIN SUMMARY"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "Counted TIMER events with a unit mask of 0x00 count 10000"));
	/* host 47 of 58; web1 11: guest kernel 3, guest user 6, vmm 2 */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "host                           47  81.0345              0              0              0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "web1                           11  18.9655              3              6              2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "rt_beta"));
	/* The top symbol row comes first. */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "20       34.4828  host"));
	/* -l reads each file's keys in its turn, by path */
	CU_ASSERT_EQUAL(p->npreread, 0);
	rep_profile_free(p);
	free(text);
	text = NULL;

	CU_ASSERT_EQUAL_FATAL(collect(session, dom_args, &p, &text), 0);
	CU_ASSERT_EQUAL(p->totals[0], 11);
	CU_ASSERT_PTR_NULL(strstr(text, "host "));
	rep_profile_free(p);
	free(text);
	text = NULL;

	/* Image listing: the app with its libraries under it. */
	CU_ASSERT_EQUAL_FATAL(collect(session, img_args, &p, &text), 0);
	CU_ASSERT_EQUAL(p->nrows, 0);
	/* totals alone: each file counted during the walk, from its
	 * directory (the empty one passed over, the junk not a sample file name) */
	CU_ASSERT_EQUAL(p->nfiles, 6);
	CU_ASSERT_EQUAL(p->npreread, 6);
	CU_ASSERT_EQUAL(p->nbad, 1);
	CU_ASSERT_EQUAL(p->totals[0], 58);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "       42 72.4138 host             t_nopie\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\t       35 83.3333 t_nopie\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\t        7 16.6667 t_shared.so\n"));
	rep_profile_free(p);
	free(text);
	text = NULL;

	/* --merge=lib: the library is a row of its own. */
	CU_ASSERT_EQUAL_FATAL(collect(session, merge_args, &p, &text), 0);
	CU_ASSERT_FALSE(p->separate_lib);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "        7 12.0690 host             t_shared.so\n"));
	CU_ASSERT_PTR_NULL(strstr(text, "\t"));
	rep_profile_free(p);
	free(text);
	text = NULL;

	/* A guest's own kallsyms symbolizes its kernel samples. */
	mkdirs(tpath("session/domains/web1/kallsyms"));
	write_file(tpath("session/domains/web1/kallsyms"), kallsyms_txt);
	CU_ASSERT_EQUAL_FATAL(collect(session, dom_args, &p, NULL), 0);
	CU_ASSERT_EQUAL(sym_count(p, "_text"), 3);
	CU_ASSERT_EQUAL(sym_count(p, "mod_fn2"), 2);
	rep_profile_free(p);

	CU_ASSERT_EQUAL(collect(session, nomatch_args, &p, NULL), -ENODATA);
	CU_ASSERT_EQUAL(collect(tpath("no_session"), img_args, &p, NULL), -ENOENT);
	mkdirs(tpath("empty/samples/current/x"));
	CU_ASSERT_EQUAL(collect(tpath("empty"), img_args, &p, NULL), -ENODATA);

	/* A corrupt file ends the command (issue 23: a good header over a
	 * garbage body was reported as 18,255,380,680,800,945,783 samples,
	 * exit 0): garbage, and a good file's body overwritten. */
	write_file(corrupt, "this is not a sample file at all, not even close......");
	p = NULL;
	CU_ASSERT_EQUAL(collect(session, img_args, &p, NULL), -EBADMSG);
	CU_ASSERT_PTR_NULL(p);
	{
		struct sfn_name n = mkname(NULL, false, SFN_ROOT, "/bin/corrupt", SFN_ROOT,
					   "/bin/corrupt", "TIMER", 10000, 0, SFN_ALL, SFN_ALL,
					   SFN_ALL);
		struct kv kv[40];
		int fd;

		for (size_t i = 0; i < 40; i++)
			kv[i] = (struct kv){ 0x1000 + i, 1 };
		unlink(corrupt);
		write_sample(session, &n, kv, 40);
		CU_ASSERT_EQUAL(collect(session, img_args, &p, NULL), 0);
		CU_ASSERT_EQUAL(p->totals[0], 58 + 40);
		rep_profile_free(p);
		p = NULL;
		fd = open(corrupt, O_WRONLY);
		CU_ASSERT_FATAL(fd >= 0);
		memset(path, 0xe7, 40 * 24);
		CU_ASSERT(pwrite(fd, path, 40 * 24, 256) == 40 * 24);
		close(fd);
		CU_ASSERT_EQUAL(collect(session, img_args, &p, NULL), -EBADMSG);
		CU_ASSERT_PTR_NULL(p);
	}
	unlink(corrupt);
	test_session_tag(session);
	(void)f;
	collect_end();
}

static void test_classes(void)
{
	char session[600];
	struct rep_profile *p = NULL;
	char *text = NULL;
	const char *none[] = { NULL };
	const char *merge_um[] = { "--merge=unitmask", NULL };
	const char *only_cycles[] = { "event:CYCLES", NULL };
	struct sfn_name a = mkname(NULL, false, SFN_ROOT, "/bin/a", SFN_ROOT, "/bin/a", "TIMER",
				   10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name b = mkname(NULL, false, SFN_ROOT, "/bin/a", SFN_ROOT, "/bin/a", "CYCLES",
				   100000, 1, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name c = mkname(NULL, false, SFN_ROOT, "/bin/b", SFN_ROOT, "/bin/b", "CYCLES",
				   100000, 2, SFN_ALL, SFN_ALL, SFN_ALL);
	struct kv k1[] = { { 1, 1ULL << 40 }, { 2, 1 } };	/* counts are 64-bit */
	struct kv k2[] = { { 1, 30 } };
	struct kv k3[] = { { 9, 10 } };

	snprintf(session, sizeof(session), "%s/session2", tmpdir);
	write_sample(session, &a, k1, 2);
	write_sample(session, &b, k2, 1);
	write_sample(session, &c, k3, 1);

	CU_ASSERT_EQUAL_FATAL(collect(session, none, &p, &text), 0);
	CU_ASSERT_EQUAL(p->nclasses, 3);	/* CYCLES um 1, CYCLES um 2, TIMER */
	CU_ASSERT_STRING_EQUAL(p->classes[0].event, "CYCLES");
	CU_ASSERT_EQUAL(p->classes[1].unit_mask, 2);
	CU_ASSERT_EQUAL(p->totals[2], (1ULL << 40) + 1);
	CU_ASSERT_FALSE(p->has_domain);
	CU_ASSERT_PTR_NULL(strstr(text, "DOMAIN SUMMARY"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "with a unit mask of 0x02 count 100000"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "1099511627777 100.000 a\n"));
	rep_profile_free(p);
	free(text);
	text = NULL;

	CU_ASSERT_EQUAL_FATAL(collect(session, merge_um, &p, &text), 0);
	CU_ASSERT_EQUAL(p->nclasses, 2);
	CU_ASSERT_EQUAL(p->totals[0], 40);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "       30 75.0000 1099511627777 100.000 a\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "       10 25.0000         0  0.0000 b\n"));
	rep_profile_free(p);
	free(text);
	text = NULL;

	CU_ASSERT_EQUAL_FATAL(collect(session, only_cycles, &p, NULL), 0);
	CU_ASSERT_EQUAL(p->nclasses, 2);
	CU_ASSERT_EQUAL(p->ngroups, 2);
	rep_profile_free(p);
	collect_end();
}

/*
 * The daemon files a domain's guest samples, until the agent exists, in
 * {anon:guest-kernel} and {anon:guest-user}: the summary must split them,
 * its rows must add up to the total, and --domain / domain: must select.
 */
static void test_domain_summary_anon(void)
{
	char session[600];
	struct rep_profile *p = NULL;
	char *text = NULL;
	const char *none[] = { NULL };
	const char *host_only[] = { "--domain=host", NULL };
	const char *spec_db[] = { "domain:db", NULL };
	const char *two[] = { "--domain=web,db", NULL };
	struct sfn_name gk = mkname("web", false, SFN_ANON, "guest-kernel", SFN_ANON, "guest-kernel",
				    "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name gu = mkname("web", false, SFN_ANON, "guest-user", SFN_ANON, "guest-user",
				    "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name vmm = mkname("web", true, SFN_KERN, "vmlinux", SFN_KERN, "vmlinux",
				     "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name dbu = mkname("db", false, SFN_ANON, "guest-user", SFN_ANON, "guest-user",
				     "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name host = mkname(NULL, false, SFN_ANON, "unknown", SFN_ANON, "unknown",
				      "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct kv kgk[] = { { 0xffffffff81000010ULL, 30 }, { 0xffffffff81000020ULL, 10 } };
	struct kv kgu[] = { { 0x401000, 20 } };
	struct kv kvmm[] = { { 0x10, 5 } };
	struct kv kdb[] = { { 0x401000, 4 } };
	struct kv khost[] = { { 0x1, 11 } };

	snprintf(session, sizeof(session), "%s/dsession", tmpdir);
	write_sample(session, &gk, kgk, 2);
	write_sample(session, &gu, kgu, 1);
	write_sample(session, &vmm, kvmm, 1);
	write_sample(session, &dbu, kdb, 1);
	write_sample(session, &host, khost, 1);

	CU_ASSERT_EQUAL_FATAL(collect(session, none, &p, &text), 0);
	CU_ASSERT_EQUAL(p->totals[0], 40 + 20 + 5 + 4 + 11);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "host                           11  13.7500              0              0              0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "web                            65  81.2500             40             20              5"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "db                              4   5.0000              0              4              0"));
	rep_profile_free(p);
	free(text);
	text = NULL;

	CU_ASSERT_EQUAL_FATAL(collect(session, host_only, &p, &text), 0);
	CU_ASSERT_EQUAL(p->totals[0], 11);
	CU_ASSERT_PTR_NULL(strstr(text, "web "));
	rep_profile_free(p);
	free(text);
	text = NULL;

	CU_ASSERT_EQUAL_FATAL(collect(session, spec_db, &p, NULL), 0);
	CU_ASSERT_EQUAL(p->totals[0], 4);
	rep_profile_free(p);

	CU_ASSERT_EQUAL_FATAL(collect(session, two, &p, NULL), 0);
	CU_ASSERT_EQUAL(p->totals[0], 69);
	rep_profile_free(p);
	collect_end();
}

/* ---- -o, -w, --version ------------------------------------------------------------ */

/*
 * Column at which @word starts in the first line of @text holding
 * @line_has (a leading '\n' in @line_has anchors it at a line start).
 */
static long col_of(const char *text, const char *line_has, const char *word)
{
	const char *hit = strstr(text, line_has), *bol, *w;

	if (!hit)
		return -1;
	if (*line_has == '\n')
		hit++;
	for (bol = hit; bol > text && bol[-1] != '\n'; bol--)
		;
	w = strstr(bol, word);
	if (!w || memchr(bol, '\n', (size_t)(w - bol)))
		return -2;
	return (long)(w - bol);
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);

	if (f && buf)
		buf[fread(buf, 1, (1 << 16) - 1, f)] = '\0';
	if (f)
		fclose(f);
	return buf;
}

/* -D smart: the standard library's long spellings shortened. */
static void test_demangle_smart(void)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "f(std::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)",
		  "f(std::string const&)" },
		{ "std::vector<int, std::allocator<int> >::push_back(int const&)",
		  "std::vector<int>::push_back(int const&)" },
		{ "g(std::map<int, std::vector<int, std::allocator<int> >, std::less<int>, "
		  "std::allocator<std::pair<int const, std::vector<int, std::allocator<int> > > > >&)",
		  "g(std::map<int, std::vector<int>>&)" },
		{ "std::__cxx11::list<long, std::allocator<long> >::clear()",
		  "std::list<long>::clear()" },
		{ "plain_c_function", "plain_c_function" },
		{ "h(std::allocator<", "h(std::allocator<" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[512];

		snprintf(buf, sizeof(buf), "%s", cases[i].in);
		rep_demangle_smart(buf);
		CU_ASSERT_STRING_EQUAL(buf, cases[i].out);
	}
}

static void test_output_options(void)
{
#define LONG_DOM "a-domain-name-longer-than-twenty"
#define LONG_BIN "an-application-binary-whose-name-is-over-forty-bytes"
	char session[600], sd[700], out[600];
	struct sfn_name n = mkname(LONG_DOM, false, SFN_ROOT, "/opt/" LONG_BIN, SFN_ROOT,
				   "/opt/" LONG_BIN, "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name h = mkname(NULL, false, SFN_ROOT, "/bin/sh", SFN_ROOT, "/bin/sh", "TIMER",
				   10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct kv k[] = { { 0x10, 9 } }, kh[] = { { 0x10, 1 } };
	const char *narrow[] = { "-l", NULL }, *wide[] = { "-l", "--wide", NULL };
	const char *addr[] = { "-l", "-w", NULL };
	const char *dom_wide[] = { "--wide", NULL };
	char *version[] = { "opreport", "--version", NULL };
	char *vtext = NULL, *text = NULL;
	struct rep_profile *p = NULL;
	struct rep_opts o;
	size_t vlen;
	FILE *vf;

	snprintf(session, sizeof(session), "%s/wsession", tmpdir);
	write_sample(session, &n, k, 1);
	write_sample(session, &h, kh, 1);

	/* --version: "opreport (PACKAGE) VERSION", exit 0 */
	vf = open_memstream(&vtext, &vlen);
	CU_ASSERT_EQUAL(rep_opts_parse(&o, 2, version, vf, stderr), 1);
	rep_opts_release(&o);
	fclose(vf);
	CU_ASSERT_STRING_EQUAL(vtext, "opreport (" PACKAGE_NAME ") " PACKAGE_VERSION "\n");
	free(vtext);

	/* -w is OProfile's --show-address: a vma column first */
	CU_ASSERT_EQUAL_FATAL(collect(session, addr, &p, &text), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\nvma "));
	rep_profile_free(p);
	free(text);
	/* without --wide the image column stops at 40 and a longer name pushes
	 * the symbol out of its column; with --wide it lines up with its header */
	CU_ASSERT_EQUAL_FATAL(collect(session, narrow, &p, &text), 0);
	CU_ASSERT_NOT_EQUAL(col_of(text, "symbol name", "symbol name"),
			    col_of(text, LONG_BIN, "(no symbols)"));
	rep_profile_free(p);
	free(text);
	CU_ASSERT_EQUAL_FATAL(collect(session, wide, &p, &text), 0);
	CU_ASSERT(col_of(text, "symbol name", "symbol name") > 40);
	CU_ASSERT_EQUAL(col_of(text, "symbol name", "symbol name"),
			col_of(text, LONG_BIN, "(no symbols)"));
	CU_ASSERT_EQUAL(col_of(text, "symbol name", "image name"),
			col_of(text, LONG_BIN, LONG_BIN));
	CU_ASSERT_EQUAL(col_of(text, "symbol name", "image name"),
			col_of(text, "10.0000  host", "sh "));
	rep_profile_free(p);
	free(text);
	/* the domain columns grow too: summary and image listing */
	CU_ASSERT_EQUAL_FATAL(collect(session, dom_wide, &p, &text), 0);
	/* right-aligned numbers: the last digit under the header's last letter */
	CU_ASSERT_EQUAL(col_of(text, "guest-kernel", "samples") + 6, col_of(text, "\nhost ", "1 "));
	CU_ASSERT_EQUAL(col_of(text, "guest-kernel", "samples") + 6,
			col_of(text, "\n" LONG_DOM, "9 "));
	CU_ASSERT_EQUAL(col_of(text, "\n        1 ", "sh"), col_of(text, "\n        9 ", LONG_BIN));
	rep_profile_free(p);
	free(text);
	text = NULL;

	/* -o FILE: the report goes there, nothing is created when it cannot be */
	snprintf(sd, sizeof(sd), "--session-dir=%s", session);
	snprintf(out, sizeof(out), "%s/report.txt", tmpdir);
	{
		char *argv[] = { "opreport", sd, "-o", out, NULL };
		char *bad[] = { "opreport", sd, "--output-file", tpath("no/such/dir/r.txt"), NULL };
		char *nomatch[] = { "opreport", sd, "-o", out, "image:nothing-matches", NULL };
		FILE *saved = stdout;

		CU_ASSERT_EQUAL(rep_main(4, argv), 0);
		text = read_all(out);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, "DOMAIN SUMMARY"));
		CU_ASSERT_PTR_NOT_NULL(strstr(text, LONG_BIN));
		free(text);
		CU_ASSERT_EQUAL(rep_main(4, bad), 1);
		/* a failed collection leaves the earlier report alone */
		CU_ASSERT_EQUAL(rep_main(5, nomatch), 1);
		text = read_all(out);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, "DOMAIN SUMMARY"));
		free(text);
		CU_ASSERT_PTR_EQUAL(stdout, saved);
	}
	collect_end();
#undef LONG_DOM
#undef LONG_BIN
}

/* ---- --json ---------------------------------------------------------------------------- */

/*
 * The JSON report must parse (python3's json module, strict) and say what
 * the schema in opreport(1) promises.  Names with a quote, a control byte
 * and a byte that is not UTF-8 check the escaping.
 */
static const char json_check_py[] =
	"import json, sys\n"
	"d = json.load(open(sys.argv[1], encoding='utf-8'), strict=True)\n"
	"sym = sys.argv[2] == 'symbols'\n"
	"assert d['schema'] == 'domprof-opreport/1', d['schema']\n"
	"assert d['collector'] == 'file'\n"
	"assert d['listing'] == sys.argv[2]\n"
	"assert d['events'] == [{'event': 'TIMER', 'count': 10000, 'unit_mask': 0, 'total': 59}], d['events']\n"
	"doms = {x['domain']: x for x in d['domains']}\n"
	"assert list(doms) == [None, 'web'], list(doms)\n"
	"assert doms[None] == {'domain': None, 'samples': [14], 'guest_kernel': [0], 'guest_user': [0], 'vmm': [0]}\n"
	"assert doms['web'] == {'domain': 'web', 'samples': [45], 'guest_kernel': [40], 'guest_user': [0], 'vmm': [5]}\n"
	"rows = d['rows']\n"
	"assert sum(r['samples'][0] for r in rows) == 59\n"
	"assert [r['samples'][0] for r in rows] == sorted((r['samples'][0] for r in rows), reverse=True)\n"
	"keys = ['domain', 'vmm', 'app', 'image', 'tgid', 'tid', 'cpu', 'unverified'] + (['symbol', 'vma'] if sym else []) + ['samples']\n"
	"assert d['warnings'] == [] and not any(r['unverified'] for r in rows)\n"
	"assert all(list(r) == keys for r in rows), [list(r) for r in rows]\n"
	"odd = [r for r in rows if r['tgid'] is not None]\n"
	"assert len(odd) == 1, odd\n"
	"assert odd[0]['app'] == {'kind': 'root', 'name': '/bin/we\"ird\\x01\\xff'}, odd[0]['app']\n"
	"assert odd[0]['domain'] is None and odd[0]['vmm'] is False\n"
	"assert (odd[0]['tgid'], odd[0]['tid'], odd[0]['cpu']) == (12, 13, None)\n"
	"assert odd[0]['samples'] == [7]\n"
	"u = [r for r in rows if r['app']['name'].startswith('/bin/caf')][0]\n"
	"assert u['app']['name'] == '/bin/caf\\u00e9', u['app']\n"
	"v = [r for r in rows if r['vmm']]\n"
	"assert len(v) == 1 and v[0]['domain'] == 'web' and v[0]['image'] == {'kind': 'kern', 'name': 'vmlinux'}\n"
	"g = [r for r in rows if r['image']['kind'] == 'anon']\n"
	"assert g[0]['image']['name'] == 'guest-kernel' and g[0]['samples'] == [40]\n"
	"if sym:\n"
	"    assert all(r['symbol'] is None and r['vma'] is None for r in rows)\n"
	"print('json ok', len(rows), 'rows')\n";

static void test_json(void)
{
	char session[600], cmd[2048];
	struct sfn_name gk = mkname("web", false, SFN_ANON, "guest-kernel", SFN_ANON, "guest-kernel",
				    "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name vmm = mkname("web", true, SFN_KERN, "vmlinux", SFN_KERN, "vmlinux",
				     "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct sfn_name odd = mkname(NULL, false, SFN_ROOT, "/bin/we\"ird\x01\xff", SFN_ROOT,
				     "/bin/we\"ird\x01\xff", "TIMER", 10000, 0, 12, 13, SFN_ALL);
	struct sfn_name utf = mkname(NULL, false, SFN_ROOT, "/bin/caf\xc3\xa9", SFN_ROOT,
				     "/bin/caf\xc3\xa9", "TIMER", 10000, 0, SFN_ALL, SFN_ALL, SFN_ALL);
	struct kv kgk[] = { { 0x10, 30 }, { 0x20, 10 } }, kvmm[] = { { 0x10, 5 } };
	struct kv kodd[] = { { 0x10, 7 } }, kutf[] = { { 0x10, 7 } };
	const char *images[] = { "--json", NULL }, *symbols[] = { "--json", "-l", NULL };
	const char *const *args[] = { images, symbols };
	const char *listing[] = { "images", "symbols" };
	struct rep_profile *p = NULL;
	char *text = NULL;

	snprintf(session, sizeof(session), "%s/jsession", tmpdir);
	write_sample(session, &gk, kgk, 2);
	write_sample(session, &vmm, kvmm, 1);
	write_sample(session, &odd, kodd, 1);
	write_sample(session, &utf, kutf, 1);
	write_file(tpath("json_check.py"), json_check_py);
	for (size_t i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL_FATAL(collect(session, args[i], &p, &text), 0);
		write_file(tpath("report.json"), text);
		snprintf(cmd, sizeof(cmd), "python3 %s %s %s", tpath("json_check.py"),
			 tpath("report.json"), listing[i]);
		CU_ASSERT_EQUAL(run(cmd), 0);
		rep_profile_free(p);
		free(text);
		text = NULL;
	}
	collect_end();
}

/* The table a parser child sends back: read exactly, nothing trusted. */
static void test_bin_wire(void)
{
	static const struct rep_sym in[] = {
		{ 0x300, 0x340, "c" }, { 0x100, 0x180, "a" }, { 0x200, 0, "b" },
	};
	struct rep_bin *b = rep_bin_from_syms(in, 3, 0x1000), *r;
	char path[] = "/tmp/test_rep_wire.XXXXXX", buf[4096];
	int fd = mkstemp(path);
	ssize_t n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_FATAL(fd >= 0);
	unlink(path);
	CU_ASSERT_EQUAL(rep_bin_write(b, dup(fd)), 0);
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	CU_ASSERT_FATAL(n > 0);
	r = rep_bin_read(buf, (size_t)n);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_EQUAL(rep_bin_nr_syms(r), 3);
	CU_ASSERT_STRING_EQUAL(rep_bin_sym(r, 0)->name, "a");
	CU_ASSERT_EQUAL(rep_bin_find_vma(r, 0x210), 1);
	rep_bin_free(r);
	/* every shorter prefix, and a trailing byte, are refused */
	for (ssize_t i = 0; i < n; i++) {
		r = rep_bin_read(buf, (size_t)i);
		CU_ASSERT_PTR_NULL(r);
		rep_bin_free(r);
	}
	CU_ASSERT_PTR_NULL(rep_bin_read(buf, (size_t)n + 1));
	/* a symbol count no buffer could hold */
	memset(buf + 16, 0xff, 8);
	CU_ASSERT_PTR_NULL(rep_bin_read(buf, (size_t)n));
	CU_ASSERT_EQUAL(errno, EBADMSG);
	rep_bin_free(b);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "spec parsing and matching", test_spec_good },
		{ "bad specs", test_spec_bad },
		{ "--domain: the domain directories walked", test_spec_domain_dirs },
		{ "options", test_opts },
		{ "percent format", test_pct },
		{ "symbols: non-PIE", test_sym_nopie },
		{ "symbols: PIE", test_sym_pie },
		{ "symbols: shared library", test_sym_shared },
		{ "symbols: stripped (dynamic symbols)", test_sym_stripped },
		{ "symbols: missing or not ELF", test_sym_missing },
		{ "kallsyms and modules", test_kallsyms },
		{ "aggregation over a session", test_aggregate },
		{ "the sample directory's walk follows no link", test_walk },
		{ "no link followed to a file after the walk", test_walk_swap },
		{ "the call stacks' files: no link followed, no FIFO waited on", test_stacks_links },
		{ "event classes, unit mask merge, 64-bit counts", test_classes },
		{ "domain summary with anonymous guest buckets", test_domain_summary_anon },
		{ "-o, --wide, -w, --version", test_output_options },
		{ "-D smart", test_demangle_smart },
		{ "--json parses and holds the profile", test_json },
		{ "symbol table from a parser child", test_bin_wire },
	};
	int rc;
	char cmd[600];

	if (!mkdtemp(tmpdir))
		return 1;
	built = build_binaries() == 0;
	du_log_set(getenv("REP_TEST_VERBOSE") ? NULL : quiet_log);
	rc = du_test_main("rep", tests, DU_TEST_N(tests), NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (!rc && !getenv("REP_TEST_KEEP"))
		(void)!system(cmd);
	else
		fprintf(stderr, "test_rep: files kept in %s\n", tmpdir);
	return rc;
}
