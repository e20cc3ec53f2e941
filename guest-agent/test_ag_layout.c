/*
 * CUnit tests of ag_layout.c: the BTF reader on a made-up blob (a record
 * of every kind it knows, so that a wrong record size loses the structs
 * after it), cut and broken blobs, and this machine's own BTF; then the
 * layout learnt from made-up BTF and kallsyms files as kernels before
 * 6.2, 6.2 to 6.14 and since 6.15 lay it out, and sent as a frame.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <linux/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_test.h"

/* ---- a BTF blob made up here ---------------------------------------------- */

struct mk {
	uint8_t types[1024];
	size_t tlen;
	char strs[512];
	size_t slen;
};

static uint32_t mk_str(struct mk *m, const char *s)
{
	uint32_t off = (uint32_t)m->slen;

	if (!*s)
		return 0;
	CU_ASSERT_FATAL(m->slen + strlen(s) + 1 <= sizeof(m->strs));
	memcpy(m->strs + m->slen, s, strlen(s) + 1);
	m->slen += strlen(s) + 1;
	return off;
}

static void mk_put(struct mk *m, const void *p, size_t n)
{
	CU_ASSERT_FATAL(m->tlen + n <= sizeof(m->types));
	memcpy(m->types + m->tlen, p, n);
	m->tlen += n;
}

static void mk_type(struct mk *m, const char *name, uint32_t kind, bool kflag, uint16_t vlen,
		    uint32_t size_or_type)
{
	struct btf_type t = { .name_off = mk_str(m, name),
			      .info = kind << 24 | (uint32_t)kflag << 31 | vlen,
			      .size = size_or_type };

	mk_put(m, &t, sizeof(t));
}

static void mk_u32(struct mk *m, uint32_t v)
{
	mk_put(m, &v, sizeof(v));
}

static void mk_member(struct mk *m, const char *name, uint32_t type, uint32_t off)
{
	struct btf_member bm = { .name_off = mk_str(m, name), .type = type, .offset = off };

	mk_put(m, &bm, sizeof(bm));
}

/* One of each kind the reader must step over, ids 2..11 (1 is int). */
static void mk_other_kinds(struct mk *m)
{
	struct btf_array a = { .type = 1, .index_type = 1, .nelems = 4 };

	mk_type(m, "", BTF_KIND_ARRAY, false, 0, 0);			/* 2 */
	mk_put(m, &a, sizeof(a));
	mk_type(m, "color", BTF_KIND_ENUM, false, 2, 4);		/* 3 */
	mk_u32(m, mk_str(m, "RED"));
	mk_u32(m, 0);
	mk_u32(m, mk_str(m, "BLUE"));
	mk_u32(m, 1);
	mk_type(m, "", BTF_KIND_FUNC_PROTO, false, 1, 1);		/* 4 */
	mk_u32(m, mk_str(m, "x"));
	mk_u32(m, 1);
	mk_type(m, "f", BTF_KIND_FUNC, false, 0, 4);			/* 5 */
	mk_type(m, "v", BTF_KIND_VAR, false, 0, 1);			/* 6 */
	mk_u32(m, BTF_VAR_GLOBAL_ALLOCATED);
	mk_type(m, ".data..percpu", BTF_KIND_DATASEC, false, 1, 4);	/* 7 */
	mk_u32(m, 6);		/* type */
	mk_u32(m, 0);		/* offset */
	mk_u32(m, 4);		/* size */
	mk_type(m, "tag", BTF_KIND_DECL_TAG, false, 0, 5);		/* 8 */
	mk_u32(m, (uint32_t)-1);
	mk_type(m, "big", BTF_KIND_ENUM64, false, 1, 8);		/* 9 */
	mk_u32(m, mk_str(m, "HUGE"));
	mk_u32(m, 1);
	mk_u32(m, 2);
	mk_type(m, "task_struct", BTF_KIND_FWD, false, 0, 0);		/* 10 */
	mk_type(m, "double", BTF_KIND_FLOAT, false, 0, 8);		/* 11 */
}

/*
 * int (1), the other kinds (2..11), then task_struct (12: pid at bit 0,
 * tgid at bit 32, kind_flag set), a pointer to it (13), pcpu_hot (14:
 * current_task at bit 64, left out when !@hot), a struct whose tgid is in
 * an anonymous const struct (15..17: at byte 8 + 4), one whose member is a
 * bit field (18).
 */
static size_t mk_blob(uint8_t *out, size_t cap, bool hot)
{
	struct mk m = { .slen = 1 };
	struct btf_header h = { .magic = BTF_MAGIC, .version = BTF_VERSION,
				.hdr_len = sizeof(h) };

	mk_type(&m, "int", BTF_KIND_INT, false, 0, 4);			/* 1 */
	mk_u32(&m, BTF_INT_SIGNED << 24 | 32);
	mk_other_kinds(&m);
	mk_type(&m, "task_struct", BTF_KIND_STRUCT, true, 2, 8);	/* 12 */
	mk_member(&m, "pid", 1, 0);
	mk_member(&m, "tgid", 1, 32);
	mk_type(&m, "", BTF_KIND_PTR, false, 0, 12);			/* 13 */
	mk_type(&m, hot ? "pcpu_hot" : "pcpu_cold", BTF_KIND_STRUCT, false, 2, 16);	/* 14 */
	mk_member(&m, "preempt_count", 1, 0);
	mk_member(&m, "current_task", 13, 64);
	mk_type(&m, "rand_task", BTF_KIND_STRUCT, false, 2, 16);	/* 15 */
	mk_member(&m, "state", 1, 0);
	mk_member(&m, "", 16, 64);
	mk_type(&m, "", BTF_KIND_CONST, false, 0, 17);			/* 16 */
	mk_type(&m, "", BTF_KIND_STRUCT, false, 2, 8);			/* 17 */
	mk_member(&m, "pid", 1, 0);
	mk_member(&m, "tgid", 1, 32);
	mk_type(&m, "bits", BTF_KIND_STRUCT, true, 1, 4);		/* 18 */
	mk_member(&m, "flag", 1, 1u << 24 | 8);
	h.type_len = (uint32_t)m.tlen;
	h.str_off = (uint32_t)m.tlen;
	h.str_len = (uint32_t)m.slen;
	CU_ASSERT_FATAL(sizeof(h) + m.tlen + m.slen <= cap);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), m.types, m.tlen);
	memcpy(out + sizeof(h) + m.tlen, m.strs, m.slen);
	return sizeof(h) + m.tlen + m.slen;
}

static void test_btf_members(void)
{
	uint8_t b[2048];
	size_t n = mk_blob(b, sizeof(b), true);
	uint32_t off = 99;

	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "task_struct", "tgid", &off), 0);
	CU_ASSERT_EQUAL(off, 4);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "task_struct", "pid", &off), 0);
	CU_ASSERT_EQUAL(off, 0);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "pcpu_hot", "current_task", &off), 0);
	CU_ASSERT_EQUAL(off, 8);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "rand_task", "tgid", &off), 0);
	CU_ASSERT_EQUAL(off, 12);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "bits", "flag", &off), -EINVAL);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "task_struct", "comm", &off), -ENOENT);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "mm_struct", "pgd", &off), -ENOENT);
	/* a union, an enum or a forward declaration of the name is no struct */
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "color", "RED", &off), -ENOENT);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "", "tgid", &off), -ENOENT);
}

/* Every cut of the blob fails cleanly, each on a copy of just its bytes
 * (a sanitizer sees a read past it). */
static void test_btf_truncated(void)
{
	uint8_t b[2048];
	size_t n = mk_blob(b, sizeof(b), true);
	uint32_t off;

	for (size_t k = 0; k < n; k++) {
		uint8_t *cut = malloc(k ? k : 1);

		memcpy(cut, b, k);
		CU_ASSERT_EQUAL(ag_btf_member_off(cut, k, "task_struct", "tgid", &off), -EBADMSG);
		free(cut);
	}
}

/* Patch a u32 at @at of a fresh blob and look for task_struct.tgid. */
static int with_u32(size_t at, uint32_t v)
{
	uint8_t b[2048];
	size_t n = mk_blob(b, sizeof(b), true);
	uint32_t off;

	memcpy(b + at, &v, sizeof(v));
	return ag_btf_member_off(b, n, "task_struct", "tgid", &off);
}

/* Where task_struct's record starts in a blob: the one struct with its
 * kind_flag and two members. */
static size_t task_struct_at(const uint8_t *b, size_t n)
{
	uint32_t info = (uint32_t)BTF_KIND_STRUCT << 24 | 1u << 31 | 2, v;

	for (size_t at = sizeof(struct btf_header); at + 8 <= n; at += 4) {
		memcpy(&v, b + at + 4, sizeof(v));
		if (v == info)
			return at;
	}
	CU_FAIL_FATAL("no task_struct in the blob");
	return 0;
}

static void test_btf_broken(void)
{
	uint8_t b[2048];
	size_t n = mk_blob(b, sizeof(b), true);
	size_t hdr = sizeof(struct btf_header), ts = task_struct_at(b, n);
	/* the record after int (a btf_type and its 4 bytes): the array */
	size_t array = hdr + sizeof(struct btf_type) + 4;
	uint32_t off;

	CU_ASSERT_EQUAL(with_u32(0, 0x0001eb9f), 0);			/* as made */
	CU_ASSERT_EQUAL(with_u32(0, 0x0002eb9f), -EBADMSG);		/* version 2 */
	CU_ASSERT_EQUAL(with_u32(0, 0x00019feb), -EBADMSG);		/* other endianness */
	CU_ASSERT_EQUAL(with_u32(4, 8), -EBADMSG);			/* hdr_len short */
	CU_ASSERT_EQUAL(with_u32(4, 0xffffffff), -EBADMSG);		/* hdr_len past the end */
	CU_ASSERT_EQUAL(with_u32(8, 0xfffffff0), -EBADMSG);		/* type_off wraps */
	CU_ASSERT_EQUAL(with_u32(12, 0xffffffff), -EBADMSG);		/* type_len */
	CU_ASSERT_EQUAL(with_u32(16, 0xffffffff), -EBADMSG);		/* str_off */
	CU_ASSERT_EQUAL(with_u32(20, 0), -EBADMSG);			/* no strings */
	CU_ASSERT_EQUAL(with_u32(hdr + 4, 31u << 24), -EBADMSG);	/* a kind not known */
	/* an array turned struct of 65535 members, past the section */
	CU_ASSERT_EQUAL(with_u32(array + 4, (uint32_t)BTF_KIND_STRUCT << 24 | 0xffff), -EBADMSG);
	/* names past the strings match nothing and read nothing */
	CU_ASSERT_EQUAL(with_u32(ts, 0x7fffffff), -ENOENT);
	CU_ASSERT_EQUAL(with_u32(ts + sizeof(struct btf_type) + sizeof(struct btf_member),
				 0xfffffff0), -ENOENT);
	/* strings not ending with a NUL */
	b[n - 1] = 'x';
	CU_ASSERT_EQUAL(ag_btf_member_off(b, n, "task_struct", "tgid", &off), -EBADMSG);
	CU_ASSERT_EQUAL(ag_btf_member_off(b, 0, "task_struct", "tgid", &off), -EBADMSG);
}

/* Random bytes changed, many times: an answer every time, no crash. */
static void test_btf_mangled(void)
{
	uint8_t b[2048], c[2048];
	size_t n = mk_blob(b, sizeof(b), true);
	unsigned int seed = 1;
	uint32_t off;

	for (int i = 0; i < 20000; i++) {
		int r;

		memcpy(c, b, n);
		for (int k = 0; k < 1 + i % 4; k++)
			c[rand_r(&seed) % n] = (uint8_t)rand_r(&seed);
		r = ag_btf_member_off(c, n, "task_struct", "tgid", &off);
		CU_ASSERT(r == 0 || r == -EBADMSG || r == -ENOENT || r == -EINVAL);
	}
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n;

	*len = 0;
	if (!f)
		return NULL;
	do {
		if (*len == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			CU_ASSERT_FATAL(buf != NULL);
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
	} while (n);
	fclose(f);
	return buf;
}

/* This machine's kernel: tgid found, right after pid as in every kernel. */
static void test_btf_this_kernel(void)
{
	size_t len;
	uint8_t *btf = slurp("/sys/kernel/btf/vmlinux", &len);
	uint32_t tgid = 0, pid = 0;

	if (!btf) {
		fprintf(stderr, "no /sys/kernel/btf/vmlinux: skipped ");
		return;
	}
	CU_ASSERT_EQUAL(ag_btf_member_off(btf, len, "task_struct", "tgid", &tgid), 0);
	CU_ASSERT_EQUAL(ag_btf_member_off(btf, len, "task_struct", "pid", &pid), 0);
	CU_ASSERT(tgid > 0 && tgid < 16384);
	CU_ASSERT_EQUAL(tgid, pid + 4);
	fprintf(stderr, "task_struct.tgid at %u ", tgid);
	free(btf);
}

/* ---- the layout from files ------------------------------------------------ */

static char btf_path[] = "/tmp/test_ag_layout.btf.XXXXXX";
static char ksyms_path[] = "/tmp/test_ag_layout.ksyms.XXXXXX";

static void put_file(char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(fwrite(p, 1, n, f) == n);
	fclose(f);
}

static int learn(bool hot, const char *ksyms, struct dp_ag_task_layout *l)
{
	uint8_t b[2048];

	put_file(btf_path, b, mk_blob(b, sizeof(b), hot));
	put_file(ksyms_path, ksyms, strlen(ksyms));
	memset(l, 0xaa, sizeof(*l));
	return ag_layout_learn_at(btf_path, ksyms_path, l);
}

static const struct {
	const char *what;
	bool hot;		/* the BTF has pcpu_hot */
	const char *ksyms;
	int err;
	uint64_t current;
} layout_cases[] = {
	{ "6.1: current_task", true,
	  "0000000000000000 A fixed_percpu_data\n000000000001fdc0 A current_task\n"
	  "ffffffff81000000 T _text\nffffffff81001000 T __ksymtab_current_task\n", 0, 0x1fdc0 },
	{ "6.2 to 6.14: pcpu_hot + 8", true,
	  "ffffffffc0000000 d pcpu_hot\t[evil]\n0000000000032840 D pcpu_hot\n"
	  "0000000000032840 D const_pcpu_hot\n", 0, 0x32848 },
	{ "6.15: an address in the kernel image", true,
	  "ffffffff83015018 D current_task\n", 0, 0xffffffff83015018ULL },
	{ "a module's current_task", true, "0000000000001000 d current_task\t[evil]\n", -ENXIO, 0 },
	{ "no data symbols", true, "ffffffff81000000 T _text\n", -ENXIO, 0 },
	{ "empty kallsyms", true, "", -ENXIO, 0 },
	{ "hidden", true, "0000000000000000 D current_task\n", -EPERM, 0 },
	{ "not per-CPU", true, "0000100000000000 D current_task\n", -ERANGE, 0 },
	{ "pcpu_hot not in BTF", false, "0000000000032840 D pcpu_hot\n", -ESRCH, 0 },
};

static void test_layout_learn(void)
{
	struct dp_ag_task_layout l;
	int fd;

	fd = mkstemp(btf_path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	fd = mkstemp(ksyms_path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	for (size_t i = 0; i < DU_TEST_N(layout_cases); i++) {
		int err = learn(layout_cases[i].hot, layout_cases[i].ksyms, &l);

		CU_ASSERT_EQUAL(err, layout_cases[i].err);
		if (err != layout_cases[i].err)
			fprintf(stderr, "\n  %s: %d, not %d", layout_cases[i].what, err,
				layout_cases[i].err);
		if (err || layout_cases[i].err)
			continue;
		CU_ASSERT_EQUAL(l.current, layout_cases[i].current);
		CU_ASSERT_EQUAL(l.tgid_off, 4);
		CU_ASSERT_EQUAL(l.flags, 0);
	}
	/* a bad blob; then no kallsyms, then no BTF */
	put_file(btf_path, "\x9f\xeb", 2);
	CU_ASSERT_EQUAL(ag_layout_learn_at(btf_path, ksyms_path, &l), -EBADMSG);
	CU_ASSERT_EQUAL(learn(true, "", &l), -ENXIO);
	unlink(ksyms_path);
	CU_ASSERT_EQUAL(ag_layout_learn_at(btf_path, ksyms_path, &l), -ENXIO);
	unlink(btf_path);
	CU_ASSERT_EQUAL(ag_layout_learn_at(btf_path, ksyms_path, &l), -ENOENT);
	CU_ASSERT_STRING_EQUAL(ag_layout_why(-ENOENT), "no BTF");
}

/* This machine: learnt, or a reason; printed either way. */
static void test_layout_this_kernel(void)
{
	struct dp_ag_task_layout l;
	int err = ag_layout_learn(&l);

	if (err) {
		fprintf(stderr, "this kernel does not tell (%s) ", ag_layout_why(err));
		CU_ASSERT(err == -ENOENT || err == -ENXIO || err == -EPERM || err == -ESRCH ||
			  err == -EACCES || err == -ENOTSUP);
		return;
	}
	fprintf(stderr, "current %#llx tgid_off %u ", (unsigned long long)l.current, l.tgid_off);
	CU_ASSERT(l.tgid_off > 0 && l.tgid_off < 16384);
	CU_ASSERT(l.current < (1ULL << 32) || l.current >= 0xffffffff80000000ULL);
}

static int on_layout(void *ctx, const struct dp_ag_task_layout *l)
{
	memcpy(ctx, l, sizeof(*l));
	return 0;
}

static void test_layout_send(void)
{
	static const struct ap_ops ops = { .task_layout = on_layout };
	struct dp_ag_task_layout l = { .current = 0x1fdc0, .tgid_off = 2404 }, got = { 0 };
	struct ap_stats st = { 0 };
	struct ag_out o;
	size_t used;

	CU_ASSERT_FATAL(ag_out_init(&o, 4096) == 0);
	CU_ASSERT_EQUAL(ag_layout_send(&o, &l), 0);
	CU_ASSERT_EQUAL(o.len, sizeof(struct dp_ag_frame) + sizeof(l));
	CU_ASSERT_EQUAL(ap_decode(&ops, &got, o.buf, o.len, &used, &st), 0);
	CU_ASSERT_EQUAL(st.by_type[DP_AG_TASK_LAYOUT], 1);
	CU_ASSERT_EQUAL(memcmp(&got, &l, sizeof(l)), 0);
	ag_out_free(&o);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "BTF members found", test_btf_members },
		{ "BTF cut at every byte", test_btf_truncated },
		{ "BTF broken fields", test_btf_broken },
		{ "BTF mangled", test_btf_mangled },
		{ "BTF of this kernel", test_btf_this_kernel },
		{ "layout learnt from files", test_layout_learn },
		{ "layout of this kernel", test_layout_this_kernel },
		{ "layout sent", test_layout_send },
	};

	return du_test_main("ag_layout", tests, DU_TEST_N(tests), NULL, NULL);
}
