/*
 * Where this kernel keeps the task that runs on a CPU (TASK_LAYOUT,
 * doc/agent-protocol.md), for a host that reads the guest's memory while
 * a vCPU is paused: the per-CPU address of the pointer to the running
 * task, from /proc/kallsyms, and the offset of task_struct.tgid, from the
 * kernel's own BTF (/sys/kernel/btf/vmlinux).  Both are the running
 * kernel's word: no headers or debug files of the guest are needed.
 *
 * The BTF reader trusts nothing in the file: every record is checked
 * against its section before it is read, and a record of a kind it does
 * not know (whose size it cannot know) ends the walk as malformed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_cursor.h"
#include "util/du_ksym.h"

#define AG_BTF_PATH	"/sys/kernel/btf/vmlinux"
#define AG_KSYMS_PATH	"/proc/kallsyms"
/* vmlinux BTF is a few MB; a file past this is not one */
#define AG_BTF_MAX	(64u << 20)
/* anonymous structs looked into, modifiers and typedefs followed */
#define AG_BTF_DEPTH	8
/* x86-64 before Linux 6.15 links the per-CPU area at 0: a variable's
 * address is its offset there, far under 4 GiB */
#define AG_PERCPU_ZERO_MAX	(1ULL << 32)
/* since 6.15 a per-CPU variable's address is where the kernel image
 * links it (the GS base is the distance from there to a CPU's copy, so
 * the sum wraps): the top 2 GiB, __START_KERNEL_map */
#define AG_KERNEL_IMAGE	0xffffffff80000000ULL

/* A BTF blob's two sections, checked against the blob, and where each
 * type's record starts. */
struct btf {
	const uint8_t *types;
	size_t types_len;
	const char *strs;	/* ends with a NUL (checked) */
	size_t strs_len;
	uint32_t *at;		/* at[id]: offset of type @id's record in types */
	uint32_t nr;		/* type ids are 1..nr-1 */
};

/* Bytes that follow a btf_type of @info, by its kind; false for a kind
 * this reader does not know. */
static bool btf_extra(uint32_t info, size_t *n)
{
	size_t vlen = BTF_INFO_VLEN(info);

	switch (BTF_INFO_KIND(info)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		*n = sizeof(uint32_t);
		return true;
	case BTF_KIND_ARRAY:
		*n = sizeof(struct btf_array);
		return true;
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		*n = vlen * sizeof(struct btf_member);
		return true;
	case BTF_KIND_ENUM:
		*n = vlen * sizeof(struct btf_enum);
		return true;
	case BTF_KIND_FUNC_PROTO:
		*n = vlen * sizeof(struct btf_param);
		return true;
	case BTF_KIND_DATASEC:
		*n = vlen * sizeof(struct btf_var_secinfo);
		return true;
	case BTF_KIND_ENUM64:
		*n = vlen * sizeof(struct btf_enum64);
		return true;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		*n = 0;
		return true;
	}
	return false;
}

/* Walk every type record once, noting where each starts: after this,
 * every id below b->nr names a whole record. */
static int btf_index(struct btf *b)
{
	/* a record is at least a btf_type: this many ids, and one spare for
	 * the slot written before a cut-off record is found short */
	size_t max = b->types_len / sizeof(struct btf_type) + 2;
	struct du_cursor c;

	b->at = malloc(max * sizeof(*b->at));
	if (!b->at)
		return -ENOMEM;
	b->nr = 1;
	du_cur_init(&c, b->types, b->types_len);
	while (du_cur_left(&c)) {
		struct btf_type t;
		size_t extra;

		b->at[b->nr] = (uint32_t)(b->types_len - du_cur_left(&c));
		if (!du_cur_get(&c, &t, sizeof(t)) || !btf_extra(t.info, &extra) ||
		    !du_cur_skip(&c, extra))
			return -EBADMSG;
		b->nr++;
	}
	return 0;
}

/* Does a section of @n bytes at @off fit in @room bytes? */
static bool btf_fits(size_t room, uint32_t off, uint32_t n)
{
	return (uint64_t)off + n <= room;
}

static int btf_open(struct btf *b, const void *buf, size_t len)
{
	struct btf_header h;
	struct du_cursor c;
	size_t room;

	du_cur_init(&c, buf, len);
	if (!du_cur_get(&c, &h, sizeof(h)) || h.magic != BTF_MAGIC || h.version != BTF_VERSION ||
	    h.hdr_len < sizeof(h) || h.hdr_len > len)
		return -EBADMSG;
	/* the sections count from the end of the header, which a newer
	 * kernel may make longer than ours */
	room = len - h.hdr_len;
	if (!btf_fits(room, h.type_off, h.type_len) || !btf_fits(room, h.str_off, h.str_len))
		return -EBADMSG;
	b->types = (const uint8_t *)buf + h.hdr_len + h.type_off;
	b->types_len = h.type_len;
	b->strs = (const char *)buf + h.hdr_len + h.str_off;
	b->strs_len = h.str_len;
	/* a NUL at the end: every name offset inside is a whole string */
	if (!b->strs_len || b->strs[b->strs_len - 1])
		return -EBADMSG;
	return btf_index(b);
}

/* Type @id's head, and a cursor over what follows it; false for an id
 * that names no type (0 is void). */
static bool btf_type(const struct btf *b, uint32_t id, struct btf_type *t, struct du_cursor *rest)
{
	size_t extra;

	if (!id || id >= b->nr)
		return false;
	memcpy(t, b->types + b->at[id], sizeof(*t));
	btf_extra(t->info, &extra);	/* known: btf_index walked it */
	du_cur_init(rest, b->types + b->at[id] + sizeof(*t), extra);
	return true;
}

static bool btf_name_is(const struct btf *b, uint32_t off, const char *name)
{
	return off < b->strs_len && !strcmp(b->strs + off, name);
}

/* @id with typedefs, const, volatile, restrict and type tags taken off. */
static uint32_t btf_strip(const struct btf *b, uint32_t id)
{
	struct btf_type t;
	struct du_cursor rest;

	for (int i = 0; i < AG_BTF_DEPTH && btf_type(b, id, &t, &rest); i++) {
		switch (BTF_INFO_KIND(t.info)) {
		case BTF_KIND_TYPEDEF:
		case BTF_KIND_CONST:
		case BTF_KIND_VOLATILE:
		case BTF_KIND_RESTRICT:
		case BTF_KIND_TYPE_TAG:
			id = t.type;
			break;
		default:
			return id;
		}
	}
	return id;
}

/* The first struct named @name with members (not a forward one), or 0;
 * an anonymous struct is nobody's. */
static uint32_t btf_find_struct(const struct btf *b, const char *name)
{
	struct btf_type t;
	struct du_cursor rest;

	if (!*name)
		return 0;
	for (uint32_t id = 1; id < b->nr; id++)
		if (btf_type(b, id, &t, &rest) && BTF_INFO_KIND(t.info) == BTF_KIND_STRUCT &&
		    BTF_INFO_VLEN(t.info) && btf_name_is(b, t.name_off, name))
			return id;
	return 0;
}

/*
 * The bit offset of member @name of struct or union @id, found as C
 * finds it: among its members, and inside its anonymous struct and union
 * members (a kernel built with randomized structs wraps task_struct's
 * fields in one).  -ENOENT, or -EINVAL for a bit field.
 */
static int btf_member_bits(const struct btf *b, uint32_t id, const char *name, int depth,
			   uint64_t *bits)
{
	struct btf_type t;
	struct btf_member m;
	struct du_cursor c;
	bool kflag;

	if (depth >= AG_BTF_DEPTH || !btf_type(b, id, &t, &c))
		return -ENOENT;
	if (BTF_INFO_KIND(t.info) != BTF_KIND_STRUCT && BTF_INFO_KIND(t.info) != BTF_KIND_UNION)
		return -ENOENT;
	kflag = BTF_INFO_KFLAG(t.info);
	while (du_cur_get(&c, &m, sizeof(m))) {
		uint32_t off = kflag ? BTF_MEMBER_BIT_OFFSET(m.offset) : m.offset;
		uint64_t inner = 0;
		int err;

		if (m.name_off && btf_name_is(b, m.name_off, name)) {
			if (kflag && BTF_MEMBER_BITFIELD_SIZE(m.offset))
				return -EINVAL;
			*bits = off;
			return 0;
		}
		if (m.name_off)
			continue;
		err = btf_member_bits(b, btf_strip(b, m.type), name, depth + 1, &inner);
		if (!err)
			*bits = off + inner;
		if (err != -ENOENT)
			return err;
	}
	return -ENOENT;
}

int ag_btf_member_off(const void *btf, size_t len, const char *strct, const char *member,
		      uint32_t *off)
{
	struct btf b = { 0 };
	uint64_t bits = 0;
	uint32_t id;
	int err;

	err = btf_open(&b, btf, len);
	if (err)
		goto out;
	id = btf_find_struct(&b, strct);
	err = id ? btf_member_bits(&b, id, member, 0, &bits) : -ENOENT;
	/* a member that does not start on a byte is a bit field's */
	if (!err && bits % 8)
		err = -EINVAL;
	if (!err)
		*off = (uint32_t)(bits / 8);
out:
	free(b.at);
	return err;
}

/* All of file @path, under @cap bytes, in a new buffer; -EFBIG past it. */
static int read_whole(const char *path, size_t cap, uint8_t **out, size_t *len)
{
	uint8_t *buf = NULL, *nb;
	size_t have = 0, size = 0;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (have == size) {
			if (size == cap) {
				err = -EFBIG;
				break;
			}
			size = size ? (size > cap / 2 ? cap : size * 2) : (cap < 65536 ? cap : 65536);
			nb = realloc(buf, size);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = read(fd, buf + have, size - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n ? -errno : 0;
			break;
		}
		have += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*len = have;
	return 0;
}

/* A kernel symbol looked for in kallsyms. */
struct ksym_want {
	const char *name;
	uint64_t addr;
	bool found;
};

/* The kernel's own (not a module's) symbols @w in kallsyms file @path,
 * the first of each name; -errno when it cannot be read. */
static int ksyms_find(const char *path, struct ksym_want *w, size_t nr)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0, left = nr;

	if (!f)
		return -errno;
	while (left && getline(&line, &cap, f) > 0) {
		struct du_ksym s;

		if (du_ksym_parse(line, &s) || s.mod)
			continue;
		for (size_t i = 0; i < nr; i++) {
			if (w[i].found || s.name_len != strlen(w[i].name) ||
			    memcmp(s.name, w[i].name, s.name_len))
				continue;
			w[i].addr = s.addr;
			w[i].found = true;
			left--;
		}
	}
	free(line);
	fclose(f);
	return 0;
}

static bool percpu_plausible(uint64_t a)
{
	return (a && a < AG_PERCPU_ZERO_MAX) || a >= AG_KERNEL_IMAGE;
}

/*
 * The per-CPU address of the running task's pointer: pcpu_hot's
 * current_task member (6.2 to 6.14), else the variable current_task
 * (before 6.2, and again since 6.15).
 */
static int layout_current(const char *ksyms, const uint8_t *btf, size_t len, uint64_t *cur)
{
	struct ksym_want w[] = { { .name = "pcpu_hot" }, { .name = "current_task" } };
	uint32_t in_hot = 0;
	uint64_t base;
	int err;

	/* no kallsyms at all is a kernel that does not say, like a
	 * kallsyms without data symbols */
	if (ksyms_find(ksyms, w, sizeof(w) / sizeof(w[0])))
		return -ENXIO;
	if (w[0].found) {
		err = ag_btf_member_off(btf, len, "pcpu_hot", "current_task", &in_hot);
		if (err)
			return err == -ENOMEM || err == -EBADMSG ? err : -ESRCH;
		base = w[0].addr;
	} else if (w[1].found) {
		base = w[1].addr;
	} else {
		return -ENXIO;
	}
	/* kptr_restrict shows every address as 0 */
	if (!base)
		return -EPERM;
	if (!percpu_plausible(base + in_hot))
		return -ERANGE;
	*cur = base + in_hot;
	return 0;
}

int ag_layout_learn_at(const char *btf_path, const char *ksyms_path, struct dp_ag_task_layout *l)
{
	uint8_t *btf = NULL;
	size_t len = 0;
	uint32_t tgid = 0;
	uint64_t cur = 0;
	int err;

	err = read_whole(btf_path, AG_BTF_MAX, &btf, &len);
	if (err)
		return err;
	err = ag_btf_member_off(btf, len, "task_struct", "tgid", &tgid);
	if (err && err != -ENOMEM && err != -EBADMSG)
		err = -ESRCH;
	if (!err)
		err = layout_current(ksyms_path, btf, len, &cur);
	if (!err)
		*l = (struct dp_ag_task_layout){ .current = cur, .tgid_off = tgid };
	free(btf);
	return err;
}

int ag_layout_learn(struct dp_ag_task_layout *l)
{
#ifdef __x86_64__
	return ag_layout_learn_at(AG_BTF_PATH, AG_KSYMS_PATH, l);
#else
	(void)l;
	return -ENOTSUP;
#endif
}

const char *ag_layout_why(int err)
{
	switch (err) {
	case -ENOENT:
		return "no BTF";
	case -EFBIG:
	case -EBADMSG:
		return "BTF unreadable";
	case -ESRCH:
		return "BTF without task_struct.tgid or pcpu_hot.current_task";
	case -ENXIO:
		return "no current_task in /proc/kallsyms";
	case -EPERM:
		return "kernel addresses hidden";
	case -ERANGE:
		return "current_task not at a per-CPU address";
	case -ENOTSUP:
		return "not x86-64";
	}
	return strerror(-err);
}

int ag_layout_send(struct ag_out *o, const struct dp_ag_task_layout *l)
{
	return AG_PUT(o, ap_put_task_layout, l);
}
