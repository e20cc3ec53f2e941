#include "config.h"

#include <bfd.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rep_sym.h"

struct rep_sect {
	uint64_t filepos;
	uint64_t size;
	uint64_t vma;
};

struct rep_bin {
	struct rep_sym *syms;
	size_t nsyms;
	char **names;		/* each name allocated once; freed with the bin */
	struct rep_sect *sects;	/* sorted by filepos; none: keys are base offsets */
	size_t nsects;
	uint64_t base;
};

/* A candidate symbol before deduplication. */
struct cand {
	uint64_t start;
	uint64_t limit;		/* end of its section */
	int rank;		/* higher wins among symbols at one address */
	const char *name;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return y->rank - x->rank;
	/* Among aliases, the public name: malloc, not __libc_malloc. */
	if (strspn(x->name, "_") != strspn(y->name, "_"))
		return (int)strspn(x->name, "_") - (int)strspn(y->name, "_");
	if (strlen(x->name) != strlen(y->name))
		return strlen(x->name) < strlen(y->name) ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct rep_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static int cmp_sect(const void *a, const void *b)
{
	const struct rep_sect *x = a, *y = b;

	if (x->filepos != y->filepos)
		return x->filepos < y->filepos ? -1 : 1;
	return 0;
}

void rep_bin_free(struct rep_bin *b)
{
	if (!b)
		return;
	if (b->names)
		for (size_t i = 0; i < b->nsyms; i++)
			free(b->names[i]);
	free(b->names);
	free(b->syms);
	free(b->sects);
	free(b);
}

size_t rep_bin_nr_syms(const struct rep_bin *b)
{
	return b->nsyms;
}

const struct rep_sym *rep_bin_sym(const struct rep_bin *b, size_t i)
{
	return i < b->nsyms ? &b->syms[i] : NULL;
}

bool rep_bin_key_to_vma(const struct rep_bin *b, uint64_t key, uint64_t *vma)
{
	size_t lo = 0, hi = b->nsects;

	if (!b->sects) {
		*vma = b->base + key;
		return true;
	}
	/* Last section starting at or before key. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->sects[mid].filepos <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Sections may nest in file offsets (rare); look back a little. */
	for (size_t i = lo; i-- > 0 && lo - i <= 4;) {
		const struct rep_sect *s = &b->sects[i];

		if (key - s->filepos < s->size) {
			*vma = s->vma + (key - s->filepos);
			return true;
		}
	}
	return false;
}

long rep_bin_find_vma(const struct rep_bin *b, uint64_t vma)
{
	size_t lo = 0, hi = b->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->syms[mid].start <= vma)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || vma >= b->syms[lo - 1].end)
		return -1;
	return (long)(lo - 1);
}

long rep_bin_lookup_key(const struct rep_bin *b, uint64_t key)
{
	uint64_t vma;

	if (!rep_bin_key_to_vma(b, key, &vma))
		return -1;
	return rep_bin_find_vma(b, vma);
}

/* Fill the ends that are 0 with the next greater start (or start + 1). */
static void fill_ends(struct rep_sym *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t j = i + 1;

		if (s[i].end > s[i].start)
			continue;
		while (j < n && s[j].start == s[i].start)
			j++;
		s[i].end = j < n ? s[j].start : s[i].start + 1;
	}
}

struct rep_bin *rep_bin_from_syms(const struct rep_sym *syms, size_t n, uint64_t base)
{
	struct rep_bin *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->base = base;
	b->syms = calloc(n ? n : 1, sizeof(*b->syms));
	b->names = calloc(n ? n : 1, sizeof(*b->names));
	if (!b->syms || !b->names)
		goto out_free;
	for (size_t i = 0; i < n; i++) {
		b->syms[i] = syms[i];
		b->names[i] = strdup(syms[i].name);
		if (!b->names[i])
			goto out_free;
		b->syms[i].name = b->names[i];
		b->nsyms = i + 1;
	}
	/* Sort names along with symbols: rebuild names[] after sorting. */
	qsort(b->syms, n, sizeof(*b->syms), cmp_sym);
	for (size_t i = 0; i < n; i++)
		b->names[i] = (char *)b->syms[i].name;
	fill_ends(b->syms, n);
	return b;
out_free:
	rep_bin_free(b);
	errno = ENOMEM;
	return NULL;
}

static bool wanted(bfd *abfd, const asymbol *sym)
{
	const asection *sec = sym->section;
	flagword f = sym->flags;

	if (!sec || bfd_is_und_section(sec) || bfd_is_com_section(sec) || bfd_is_abs_section(sec))
		return false;
	if (f & (BSF_DEBUGGING | BSF_SECTION_SYM | BSF_FILE | BSF_WARNING | BSF_INDIRECT))
		return false;
	if (!(f & (BSF_LOCAL | BSF_GLOBAL | BSF_WEAK | BSF_GNU_UNIQUE)))
		return false;
	if (!sym->name || !sym->name[0] || sym->name[0] == '$' ||
	    !strncmp(sym->name, ".L", 2))
		return false;
	(void)abfd;
	return (f & BSF_FUNCTION) || (sec->flags & SEC_CODE);
}

static int rank_of(const asymbol *sym)
{
	int r = 0;

	if (sym->flags & BSF_FUNCTION)
		r += 4;
	if (sym->flags & BSF_GLOBAL)
		r += 2;
	if (sym->flags & BSF_WEAK)
		r += 1;
	return r;
}

static int load_sections(bfd *abfd, struct rep_bin *b)
{
	size_t n = 0;
	asection *s;

	for (s = abfd->sections; s; s = s->next)
		n++;
	b->sects = calloc(n ? n : 1, sizeof(*b->sects));
	if (!b->sects)
		return -ENOMEM;
	for (s = abfd->sections; s; s = s->next) {
		flagword f = bfd_section_flags(s);

		if (!(f & SEC_LOAD) || !(f & SEC_HAS_CONTENTS) || !bfd_section_size(s))
			continue;
		b->sects[b->nsects].filepos = (uint64_t)s->filepos;
		b->sects[b->nsects].size = bfd_section_size(s);
		b->sects[b->nsects].vma = bfd_section_vma(s);
		b->nsects++;
	}
	qsort(b->sects, b->nsects, sizeof(*b->sects), cmp_sect);
	return 0;
}

/* Read one symbol table (static or dynamic) of @abfd; *@out malloc'd. */
static long read_symtab(bfd *abfd, bool dynamic, asymbol ***out)
{
	long size = dynamic ? bfd_get_dynamic_symtab_upper_bound(abfd) :
			      bfd_get_symtab_upper_bound(abfd);
	long n;

	*out = NULL;
	if (size <= 0)
		return 0;
	*out = malloc(size);
	if (!*out)
		return -ENOMEM;
	n = dynamic ? bfd_canonicalize_dynamic_symtab(abfd, *out) :
		      bfd_canonicalize_symtab(abfd, *out);
	return n < 0 ? 0 : n;
}

static int build_syms(bfd *abfd, struct rep_bin *b, asymbol **tab, long n, enum rep_demangle dm)
{
	struct cand *c = calloc(n ? n : 1, sizeof(*c));
	size_t nc = 0;
	int rc = -ENOMEM;

	if (!c)
		return -ENOMEM;
	for (long i = 0; i < n; i++) {
		const asymbol *sym = tab[i];
		const asection *sec;

		if (!wanted(abfd, sym))
			continue;
		sec = sym->section;
		c[nc].start = bfd_asymbol_value(sym);
		c[nc].limit = bfd_section_vma(sec) + bfd_section_size(sec);
		c[nc].rank = rank_of(sym);
		c[nc].name = sym->name;
		nc++;
	}
	qsort(c, nc, sizeof(*c), cmp_cand);
	b->syms = calloc(nc ? nc : 1, sizeof(*b->syms));
	b->names = calloc(nc ? nc : 1, sizeof(*b->names));
	if (!b->syms || !b->names)
		goto out_free_cand;
	for (size_t i = 0; i < nc; i++) {
		size_t j = i + 1;
		const char *at;
		char *dem, *plain;

		/* Best-ranked symbol at an address is first; skip the others. */
		if (i && c[i].start == c[i - 1].start)
			continue;
		while (j < nc && c[j].start == c[i].start)
			j++;
		/* libbfd names a versioned symbol "memcpy@@GLIBC_2.14"; perf
		 * and gdb say "memcpy" */
		at = strchr(c[i].name, '@');
		plain = at && at != c[i].name ? strndup(c[i].name, (size_t)(at - c[i].name)) :
						 strdup(c[i].name);
		if (!plain)
			goto out_free_cand;
		dem = dm == REP_DEMANGLE_NONE ? NULL :
			bfd_demangle(abfd, plain, 3 /* DMGL_PARAMS | DMGL_ANSI */);
		if (dem)
			free(plain);
		if (dem && dm == REP_DEMANGLE_SMART)
			rep_demangle_smart(dem);
		b->names[b->nsyms] = dem ? dem : plain;
		b->syms[b->nsyms].start = c[i].start;
		b->syms[b->nsyms].end = j < nc && c[j].start < c[i].limit ? c[j].start : c[i].limit;
		b->syms[b->nsyms].name = b->names[b->nsyms];
		b->nsyms++;
	}
	rc = 0;
out_free_cand:
	free(c);
	return rc;
}

static struct rep_bin *open_elf(const char *path, int fd, int dbg_fd, bool with_dyn,
				enum rep_demangle dm, char *err, size_t errlen);

struct rep_bin *rep_bin_open_elf(const char *path, char *err, size_t errlen)
{
	return open_elf(path, -1, -1, false, REP_DEMANGLE_NORMAL, err, errlen);
}

struct rep_bin *rep_bin_open_split(const char *name, int fd, int dbg_fd, bool with_dyn,
				   enum rep_demangle dm, char *err, size_t errlen)
{
	return open_elf(name, fd, dbg_fd, with_dyn, dm, err, errlen);
}

/* Replace every @from in @s by @to (not longer), in place. */
static void replace_all(char *s, const char *from, const char *to)
{
	size_t nf = strlen(from), nt = strlen(to);
	char *p;

	while ((p = strstr(s, from))) {
		memcpy(p, to, nt);
		memmove(p + nt, p + nf, strlen(p + nf) + 1);
		s = p + nt;
	}
}

/* Drop every ", @arg<...> " default argument, brackets matched. */
static void drop_default_arg(char *s, const char *arg)
{
	char *p;

	while ((p = strstr(s, arg))) {
		char *q = p + strlen(arg);
		int depth = 1;

		for (; *q && depth; q++)
			depth += *q == '<' ? 1 : *q == '>' ? -1 : 0;
		if (depth)
			return;
		if (*q == ' ' && q[1] == '>')
			q++;
		memmove(p, q, strlen(q) + 1);
		s = p;
	}
}

void rep_demangle_smart(char *s)
{
	replace_all(s, "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
		    "std::string");
	replace_all(s, "std::basic_string<wchar_t, std::char_traits<wchar_t>, "
		    "std::allocator<wchar_t> >", "std::wstring");
	replace_all(s, "std::__cxx11::", "std::");
	drop_default_arg(s, ", std::allocator<");
	drop_default_arg(s, ", std::less<");
}

static bfd *open_bfd(const char *path, int fd, int *rc, char *err, size_t errlen)
{
	static bool bfd_ready;
	bfd *abfd;

	if (!bfd_ready) {
		bfd_init();
		bfd_ready = true;
	}
	/* libbfd takes a new fd to be at its start: a memfd just written is not */
	if (fd >= 0 && lseek(fd, 0, SEEK_SET) < 0) {
		*rc = -errno;
		snprintf(err, errlen, "%s", strerror(errno));
		close(fd);
		return NULL;
	}
	abfd = fd >= 0 ? bfd_fdopenr(path, NULL, fd) : bfd_openr(path, NULL);
	if (!abfd) {
		*rc = bfd_get_error() == bfd_error_system_call && errno ? -errno : -ENOENT;
		snprintf(err, errlen, "%s", bfd_errmsg(bfd_get_error()));
		return NULL;
	}
	if (!bfd_check_format(abfd, bfd_object)) {
		*rc = -ENOEXEC;
		snprintf(err, errlen, "not an object file: %s", bfd_errmsg(bfd_get_error()));
		bfd_close(abfd);
		return NULL;
	}
	return abfd;
}

/* Two symbol tables as one: @a's @na entries then @b's; *@out malloc'd. */
static long join_tabs(asymbol **a, long na, asymbol **b, long nb, asymbol ***out)
{
	*out = malloc(((size_t)na + (size_t)nb + 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	if (na)
		memcpy(*out, a, (size_t)na * sizeof(*a));
	if (nb)
		memcpy(*out + na, b, (size_t)nb * sizeof(*b));
	return na + nb;
}

/*
 * The symbols of @abfd (sections and keys) named from @dbg when given: its
 * static table, joined with @abfd's dynamic one when @with_dyn
 * (MiniDebugInfo holds only what the dynamic table lacks).  Without @dbg,
 * @abfd's static table, else its dynamic one.
 */
static int read_all_syms(bfd *abfd, bfd *dbg, bool with_dyn, enum rep_demangle dm,
			 struct rep_bin *b)
{
	asymbol **tab = NULL, **dyn = NULL, **all = NULL;
	long n, nd = 0;
	int rc = -ENOMEM;

	n = read_symtab(dbg ? dbg : abfd, false, &tab);
	if (n >= 0 && (with_dyn || (!dbg && n == 0)))
		nd = read_symtab(abfd, true, &dyn);
	if (n < 0 || nd < 0)
		goto out;
	n = join_tabs(tab, n, dyn, nd, &all);
	if (n >= 0)
		rc = build_syms(abfd, b, all, n, dm);
out:
	free(all);
	free(tab);
	free(dyn);
	return rc;
}

static struct rep_bin *open_elf(const char *path, int fd, int dbg_fd, bool with_dyn,
				enum rep_demangle dm, char *err, size_t errlen)
{
	struct rep_bin *b = NULL;
	bfd *abfd, *dbg = NULL;
	int rc = -ENOMEM;

	abfd = open_bfd(path, fd, &rc, err, errlen);
	if (!abfd) {
		if (dbg_fd >= 0)
			close(dbg_fd);
		goto out;
	}
	if (dbg_fd >= 0) {
		dbg = open_bfd(path, dbg_fd, &rc, err, errlen);
		if (!dbg)
			goto out_close;
	}
	b = calloc(1, sizeof(*b));
	/* offsets to vmas by the image's own sections; names from the best table */
	if (!b || load_sections(abfd, b) || read_all_syms(abfd, dbg, with_dyn, dm, b))
		goto out_oom;
	if (dbg)
		bfd_close(dbg);
	bfd_close(abfd);
	return b;
out_oom:
	snprintf(err, errlen, "out of memory");
	rep_bin_free(b);
	rc = -ENOMEM;
out_close:
	if (dbg)
		bfd_close(dbg);
	bfd_close(abfd);
out:
	errno = -rc;
	return NULL;
}

/*
 * The wire form of a rep_bin, from a parser child to its parent
 * (rep_image.c): u64 base, u64 nsects, nsects x {filepos, size, vma},
 * u64 nsyms, nsyms x {start, end, u32 len, len name bytes}, native byte
 * order (the same program on both ends).  The reader trusts nothing of it.
 */
#define REP_WIRE_MAX_SYMS	(4u << 20)
#define REP_WIRE_MAX_SECTS	65536u
#define REP_WIRE_MAX_NAME	4096u

static int put(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -EIO;
}

int rep_bin_write(const struct rep_bin *b, int fd)
{
	uint64_t ns = b->sects ? b->nsects : 0, ny = b->nsyms;
	FILE *f = fdopen(fd, "w");
	int rc = 0;

	if (!f)
		return -errno;
	rc |= put(f, &b->base, 8) | put(f, &ns, 8);
	for (size_t i = 0; i < ns; i++)
		rc |= put(f, &b->sects[i].filepos, 8) | put(f, &b->sects[i].size, 8) |
		      put(f, &b->sects[i].vma, 8);
	rc |= put(f, &ny, 8);
	for (size_t i = 0; i < ny && !rc; i++) {
		size_t n = strlen(b->syms[i].name);
		uint32_t len = n > REP_WIRE_MAX_NAME ? REP_WIRE_MAX_NAME : (uint32_t)n;

		rc |= put(f, &b->syms[i].start, 8) | put(f, &b->syms[i].end, 8) | put(f, &len, 4) |
		      put(f, b->syms[i].name, len);
	}
	if (fclose(f) && !rc)
		rc = -EIO;
	return rc;
}

struct rd {
	const unsigned char *p;
	size_t left;
};

static bool get(struct rd *r, void *out, size_t n)
{
	if (r->left < n)
		return false;
	memcpy(out, r->p, n);
	r->p += n;
	r->left -= n;
	return true;
}

struct rep_bin *rep_bin_read(const void *buf, size_t len)
{
	struct rd r = { buf, len };
	struct rep_bin *b = calloc(1, sizeof(*b));
	uint64_t ns, ny;

	if (!b)
		return NULL;
	if (!get(&r, &b->base, 8) || !get(&r, &ns, 8) || ns > REP_WIRE_MAX_SECTS ||
	    ns * 24 > r.left)
		goto bad;
	if (ns) {
		b->sects = calloc(ns, sizeof(*b->sects));
		if (!b->sects)
			goto oom;
		for (size_t i = 0; i < ns; i++)
			if (!get(&r, &b->sects[i].filepos, 8) || !get(&r, &b->sects[i].size, 8) ||
			    !get(&r, &b->sects[i].vma, 8))
				goto bad;
		b->nsects = ns;
		qsort(b->sects, ns, sizeof(*b->sects), cmp_sect);
	}
	if (!get(&r, &ny, 8) || ny > REP_WIRE_MAX_SYMS || ny * 20 > r.left)
		goto bad;
	b->syms = calloc(ny ? ny : 1, sizeof(*b->syms));
	b->names = calloc(ny ? ny : 1, sizeof(*b->names));
	if (!b->syms || !b->names)
		goto oom;
	for (size_t i = 0; i < ny; i++) {
		struct rep_sym *s = &b->syms[i];
		uint32_t n;

		if (!get(&r, &s->start, 8) || !get(&r, &s->end, 8) || !get(&r, &n, 4) ||
		    n > REP_WIRE_MAX_NAME || n > r.left || memchr(r.p, 0, n))
			goto bad;
		b->names[i] = strndup((const char *)r.p, n);
		if (!b->names[i])
			goto oom;
		r.p += n;
		r.left -= n;
		s->name = b->names[i];
		b->nsyms = i + 1;
	}
	if (r.left)
		goto bad;
	/* sorted here, whatever order the child claimed */
	qsort(b->syms, b->nsyms, sizeof(*b->syms), cmp_sym);
	for (size_t i = 0; i < b->nsyms; i++)
		b->names[i] = (char *)b->syms[i].name;
	return b;
bad:
	rep_bin_free(b);
	errno = EBADMSG;
	return NULL;
oom:
	rep_bin_free(b);
	errno = ENOMEM;
	return NULL;
}
