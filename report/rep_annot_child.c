#include "config.h"

#include <bfd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rep_annot_child.h"
#include "rep_child.h"
#include "rep_debug.h"

/* Longer than its debuginfod bound, as for opreport's children. */
#define ANNOT_WALL_MS	60000u
#define MAX_TEXT	(128u << 20)
#define MAX_NAME	4096u
#define MAX_LINE	10000000u
#define MAX_MARKS	(4u << 20)

static bfd *open_fd(const char *name, int fd)
{
	static bool ready;
	bfd *abfd;

	if (!ready) {
		bfd_init();
		ready = true;
	}
	if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	abfd = bfd_fdopenr(name, NULL, fd);
	if (abfd && !bfd_check_format(abfd, bfd_object)) {
		bfd_close(abfd);
		return NULL;
	}
	return abfd;
}

static int put(FILE *f, const void *p, size_t n)
{
	return fwrite(p, 1, n, f) == n ? 0 : -EIO;
}

/* A string: u16 length, the bytes (NULL: length 0). */
static int put_str(FILE *o, const char *str)
{
	uint16_t len = str ? (uint16_t)strnlen(str, MAX_NAME) : 0;

	return put(o, &len, 2) | (len ? put(o, str, len) : 0);
}

/* The frames inlined at the address bfd_find_nearest_line() was last
 * asked about: u8 count, then each caller's u32 line, file and function,
 * innermost caller first. */
static int put_inlines(FILE *o, bfd *abfd)
{
	struct {
		const char *file, *func;
		unsigned int line;
	} fr[REP_ANNOT_MAX_INLINE];
	uint8_t n = 0;
	int rc;

	while (n < REP_ANNOT_MAX_INLINE &&
	       bfd_find_inliner_info(abfd, &fr[n].file, &fr[n].func, &fr[n].line))
		n++;
	rc = put(o, &n, 1);
	for (uint8_t k = 0; k < n && !rc; k++) {
		uint32_t line = fr[k].line;

		rc = put(o, &line, 4) | put_str(o, fr[k].file) | put_str(o, fr[k].func);
	}
	return rc;
}

/* A binary's line table: the bfd that holds it and its symbols. */
struct line_src {
	bfd *abfd;
	asymbol **syms;
};

static void line_src_init(struct line_src *ls, bfd *abfd)
{
	long size = bfd_get_symtab_upper_bound(abfd);

	ls->abfd = abfd;
	ls->syms = NULL;
	if (size > 0 && (ls->syms = malloc(size)) && bfd_canonicalize_symtab(abfd, ls->syms) < 0) {
		free(ls->syms);
		ls->syms = NULL;
	}
}

/* @vma's source file and line (0: none) and function. */
static unsigned int line_of(const struct line_src *ls, uint64_t vma, const char **src,
			    const char **func)
{
	asection *sec = NULL;
	unsigned int line = 0;

	*src = *func = NULL;
	for (asection *x = ls->abfd->sections; x && !sec; x = x->next)
		if ((bfd_section_flags(x) & SEC_CODE) && vma >= bfd_section_vma(x) &&
		    vma - bfd_section_vma(x) < bfd_section_size(x))
			sec = x;
	if (!sec || !bfd_find_nearest_line(ls->abfd, sec, ls->syms, vma - bfd_section_vma(sec),
					   src, func, &line) || !*src)
		return 0;
	return line;
}

/* Each address's file and line: u32 line (0: none), u16 length, the name;
 * with inlines asked, then its function's name and put_inlines(). */
static int put_lines(FILE *o, const struct line_src *ls, const struct rep_annot_req *r)
{
	int rc = 0;

	for (size_t i = 0; i < r->nvmas && !rc; i++) {
		const char *src, *func;
		unsigned int line = line_of(ls, r->vmas[i], &src, &func);
		uint16_t len = line ? (uint16_t)strnlen(src, MAX_NAME) : 0;

		rc = put(o, &line, 4) | put(o, &len, 2) | (len ? put(o, src, len) : 0);
		if (!rc && r->inlines && line)
			rc = put_str(o, func) | put_inlines(o, ls->abfd);
	}
	return rc;
}

struct rep_annot_marks {
	struct line_src ls;
	FILE *text;			/* where the disassembly goes */
	struct rep_annot_mark *v;
	size_t n, cap;
	bool failed;			/* out of memory: the marks are incomplete */
};

void rep_annot_mark(struct rep_annot_marks *mk, uint64_t vma)
{
	const char *src, *func;
	unsigned int line;
	struct rep_annot_mark *last;
	long off;

	if (!mk || mk->failed)
		return;
	line = line_of(&mk->ls, vma, &src, &func);
	last = mk->n ? &mk->v[mk->n - 1] : NULL;
	if (!line || (last && last->line == line && !strcmp(last->file, src)))
		return;
	off = ftell(mk->text);
	if (mk->n == mk->cap) {
		struct rep_annot_mark *nv = reallocarray(mk->v, mk->cap * 2 + 64, sizeof(*nv));

		if (!nv)
			off = -1;
		else
			mk->v = nv, mk->cap = mk->cap * 2 + 64;
	}
	if (off < 0) {
		mk->failed = true;
		return;
	}
	mk->v[mk->n] = (struct rep_annot_mark){ .off = (size_t)off, .line = line,
						.file = strndup(src, MAX_NAME) };
	if (!mk->v[mk->n].file) {
		mk->failed = true;
		return;
	}
	mk->n++;
}

/* The marks: u32 count, each u64 offset, u32 line and the file's name
 * (none when they are incomplete). */
static int put_marks(FILE *o, const struct rep_annot_marks *mk)
{
	uint32_t n = mk->failed ? 0 : (uint32_t)mk->n;
	int rc = put(o, &n, 4);

	for (uint32_t i = 0; i < n && !rc; i++) {
		uint64_t off = mk->v[i].off;
		uint32_t line = mk->v[i].line;

		rc = put(o, &off, 8) | put(o, &line, 4) | put_str(o, mk->v[i].file);
	}
	return rc;
}

/*
 * The child: debug info found, files opened, then seccomp, then the parse.
 * One bfd reads the binary for both the disassembly and, with no separate
 * debug file, the lines: two on duplicated descriptors would share one
 * file offset.
 */
static int annot_child(void *ctx, int out, int in)
{
	const struct rep_annot_req *r = ctx;
	struct rep_debug_found f = { .fd = -1 };
	struct rep_annot_marks mk = { 0 };
	char *text = NULL, note[256] = "";
	size_t tlen = 0;
	int bfd_fd = dup(r->fd);
	bool want_lines = false;
	uint64_t n;
	uint32_t have = 0;
	bfd *abfd = NULL, *lines = NULL;
	FILE *mem = open_memstream(&text, &tlen), *o = fdopen(out, "w");

	(void)in;
	if ((r->nvmas || r->mixed) && !rep_debug_find(r->fd, r->file, r->dopts, &f)) {
		if (f.src == REP_DEBUG_NONE)
			snprintf(note, sizeof(note), "no line table: %.200s", f.why);
		else
			want_lines = true;
	}
	if (!mem || !o || rep_child_confine())
		return 3;
	if (r->asm_fn || (want_lines && f.fd < 0))
		abfd = open_fd(r->file, bfd_fd);
	if (want_lines && !(lines = f.fd >= 0 ? open_fd(r->file, f.fd) : abfd))
		snprintf(note, sizeof(note), "cannot read its debug file");
	if (lines) {
		line_src_init(&mk.ls, lines);
		mk.text = mem;
	}
	if (r->asm_fn && abfd)
		r->asm_fn(r->ctx, abfd, mem, r->mixed && lines ? &mk : NULL);
	else if (r->asm_fn)
		fprintf(mem, "(cannot read %s: %s)\n\n", r->file, bfd_errmsg(bfd_get_error()));
	if (fflush(mem))
		return 3;
	n = tlen;
	if (put(o, &n, 8) || put(o, text, tlen))
		return 3;
	have = lines != NULL;
	n = strlen(note);
	if (put(o, &have, 4) || put(o, &n, 8) || put(o, note, n) ||
	    (lines && put_lines(o, &mk.ls, r)) || (lines && r->mixed && put_marks(o, &mk)) ||
	    fclose(o))
		return 3;
	return 0;
}

struct rd {
	const char *p;
	size_t left;
};

static bool get(struct rd *d, void *out, size_t n)
{
	if (d->left < n)
		return false;
	memcpy(out, d->p, n);
	d->p += n;
	d->left -= n;
	return true;
}

/* Untrusted text printed: control bytes but newline and tab shown as '?'. */
static char *printable(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		s[i] = ((unsigned char)p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') || p[i] == 0x7f ?
			       '?' : p[i];
	s[n] = '\0';
	return s;
}

/* A put_str() string, printable (NULL when empty). */
static int get_str(struct rd *d, char **out)
{
	uint16_t n;

	*out = NULL;
	if (!get(d, &n, 2) || n > d->left || n > MAX_NAME || memchr(d->p, 0, n))
		return -EBADMSG;
	if (n && !(*out = printable(d->p, n)))
		return -ENOMEM;
	d->p += n;
	d->left -= n;
	return 0;
}

/* Address @i's chain: its own frame (@file, @line) and what put_inlines() sent. */
static int decode_chain(struct rd *d, struct rep_annot_res *res, size_t i)
{
	struct rep_annot_frame *f;
	uint8_t n;
	int rc;

	f = calloc(REP_ANNOT_MAX_INLINE + 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	res->frames[i] = f;
	if (res->files[i] && !(f[0].file = strdup(res->files[i])))
		return -ENOMEM;
	f[0].line = res->lines[i];
	res->nframes[i] = 1;
	if ((rc = get_str(d, &f[0].func)) || !get(d, &n, 1) || n > REP_ANNOT_MAX_INLINE)
		return rc ? rc : -EBADMSG;
	for (unsigned int k = 1; k <= n; k++, res->nframes[i]++) {
		uint32_t line;

		if (!get(d, &line, 4) || (rc = get_str(d, &f[k].file)) || (rc = get_str(d, &f[k].func)))
			return rc ? rc : -EBADMSG;
		f[k].line = line > MAX_LINE ? 0 : line;
	}
	return 0;
}

/* put_marks()'s: each at a line's start in the text, in order. */
static int decode_marks(struct rd *d, struct rep_annot_res *res)
{
	uint32_t n;
	size_t prev = 0;

	if (!get(d, &n, 4) || n > MAX_MARKS || n > d->left / 14)
		return -EBADMSG;
	res->marks = calloc(n ? n : 1, sizeof(*res->marks));
	if (!res->marks)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		struct rep_annot_mark *m = &res->marks[i];
		uint64_t off;
		uint32_t line;

		if (!get(d, &off, 8) || !get(d, &line, 4))
			return -EBADMSG;
		res->nmarks++;	/* freed from here on */
		if (get_str(d, &m->file) || !m->file)
			return -EBADMSG;
		if (off < prev || off > res->len || (off && res->text[off - 1] != '\n') ||
		    !line || line > MAX_LINE)
			return -EBADMSG;
		m->off = prev = (size_t)off;
		m->line = line;
	}
	return 0;
}

static int decode(const struct rep_annot_req *r, const char *buf, size_t len,
		  struct rep_annot_res *res)
{
	struct rd d = { buf, len };
	uint64_t n;
	uint32_t have;

	if (!get(&d, &n, 8) || n > MAX_TEXT || n > d.left || !(res->text = printable(d.p, n)))
		return -EBADMSG;
	res->len = n;
	d.p += n;
	d.left -= n;
	if (!get(&d, &have, 4) || !get(&d, &n, 8) || n >= sizeof(res->note) || n > d.left)
		return -EBADMSG;
	memcpy(res->note, d.p, n);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)res->note[i] < 0x20)
			res->note[i] = '?';
	d.p += n;
	d.left -= n;
	res->have_lines = have == 1;
	if (!res->have_lines)
		return d.left ? -EBADMSG : 0;
	res->files = calloc(r->nvmas ? r->nvmas : 1, sizeof(*res->files));
	res->lines = calloc(r->nvmas ? r->nvmas : 1, sizeof(*res->lines));
	if (!res->files || !res->lines)
		return -ENOMEM;
	if (r->inlines) {
		res->frames = calloc(r->nvmas ? r->nvmas : 1, sizeof(*res->frames));
		res->nframes = calloc(r->nvmas ? r->nvmas : 1, sizeof(*res->nframes));
		if (!res->frames || !res->nframes)
			return -ENOMEM;
	}
	for (size_t i = 0; i < r->nvmas; i++) {
		uint32_t line, sent;
		uint16_t flen;
		int rc;

		if (!get(&d, &line, 4) || !get(&d, &flen, 2) || flen > d.left ||
		    (line && !flen) || memchr(d.p, 0, flen))
			return -EBADMSG;
		sent = line;	/* a chain follows any line sent, kept or not */
		if (line > MAX_LINE)
			line = 0;	/* no source file is that long */
		if (line && !(res->files[i] = printable(d.p, flen)))
			return -ENOMEM;
		res->lines[i] = line;
		d.p += flen;
		d.left -= flen;
		if (r->inlines && sent && (rc = decode_chain(&d, res, i)))
			return rc;
	}
	if (r->mixed && decode_marks(&d, res))
		return -EBADMSG;
	return d.left ? -EBADMSG : 0;
}

int rep_annot_run(const struct rep_child_cfg *cfg, const struct rep_annot_req *r,
		  struct rep_annot_res *res, char *err, size_t errlen)
{
	char *reply = NULL;
	size_t len;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = rep_child_run(cfg, r->fd, annot_child, (void *)r, ANNOT_WALL_MS, &reply, &len, err,
			   errlen);
	if (rc)
		return rc;
	rc = decode(r, reply, len, res);
	free(reply);
	if (rc) {
		rep_annot_res_free(res, r->nvmas);
		snprintf(err, errlen, "its parser sent a bad reply");
	}
	return rc;
}

void rep_annot_res_free(struct rep_annot_res *res, size_t nvmas)
{
	if (res->files)
		for (size_t i = 0; i < nvmas; i++)
			free(res->files[i]);
	for (size_t i = 0; res->frames && i < nvmas; i++) {
		for (unsigned int k = 0; res->frames[i] && k <= REP_ANNOT_MAX_INLINE; k++) {
			free(res->frames[i][k].func);
			free(res->frames[i][k].file);
		}
		free(res->frames[i]);
	}
	for (size_t i = 0; i < res->nmarks; i++)
		free(res->marks[i].file);
	free(res->marks);
	free(res->frames);
	free(res->nframes);
	free(res->files);
	free(res->lines);
	free(res->text);
	memset(res, 0, sizeof(*res));
}
