#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "du_elfid.h"

/* ---- the GNU build-id note of an ELF file, read by the host ---- */

/* Limits: a real binary has a handful of program headers and notes. */
#define MAX_PHDRS	256
#define MAX_SHDRS	4096
#define MAX_NOTE_BYTES	65536

struct elf_view {
	int fd;
	bool is64;
	uint64_t size;
};

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Every note in [off, off + len) of the file: the first NT_GNU_BUILD_ID
 * "GNU" note's descriptor into @out (at most @max bytes).  Its size, 0
 * none, or -errno. */
static int scan_notes(const struct elf_view *e, uint64_t off, uint64_t len, uint8_t *out,
		      size_t max)
{
	uint8_t buf[MAX_NOTE_BYTES];
	size_t pos = 0;

	if (len > sizeof(buf))
		len = sizeof(buf);
	if (off > e->size || len > e->size - off)
		return 0;
	if (pread(e->fd, buf, len, (off_t)off) != (ssize_t)len)
		return -EIO;
	while (len - pos >= 12) {
		uint64_t namesz = rd(buf + pos, 4), descsz = rd(buf + pos + 4, 4);
		uint64_t type = rd(buf + pos + 8, 4);
		uint64_t name_al = (namesz + 3) & ~3ULL, desc_al = (descsz + 3) & ~3ULL;

		pos += 12;
		if (name_al > len - pos || desc_al > len - pos - name_al)
			return 0;
		if (type == 3 && namesz == 4 && !memcmp(buf + pos, "GNU", 4)) {
			if (!descsz || descsz > max)
				return 0;
			memcpy(out, buf + pos + name_al, descsz);
			return (int)descsz;
		}
		pos += name_al + desc_al;
	}
	return 0;
}

/*
 * Each entry of a header table: @num entries of @entsize bytes at @off,
 * the first @want (at most 64) bytes of each given to @fn, until @fn
 * returns nonzero, which is returned.  A table that is not wholly in the
 * file ends the walk with 0: offsets are checked before any sum.
 */
static int walk_table(const struct elf_view *e, uint64_t off, uint64_t entsize, uint64_t num,
		      unsigned int want, uint64_t max_num,
		      int (*fn)(const struct elf_view *e, const uint8_t *ent, void *ctx), void *ctx)
{
	uint8_t ent[64];

	if (!num || entsize < want || num > max_num || off > e->size)
		return 0;
	for (uint64_t i = 0; i < num; i++) {
		uint64_t rel = i * entsize;	/* below 2^16 * 2^16: no overflow */
		int n;

		if (rel > e->size - off || want > e->size - off - rel)
			return 0;
		if (pread(e->fd, ent, want, (off_t)(off + rel)) != (ssize_t)want)
			return 0;
		n = fn(e, ent, ctx);
		if (n)
			return n;
	}
	return 0;
}

/* The program header table of @eh: 0 or what walk_table() returns. */
static int walk_phdrs(const struct elf_view *e, const uint8_t *eh,
		      int (*fn)(const struct elf_view *e, const uint8_t *ph, void *ctx), void *ctx)
{
	return e->is64 ? walk_table(e, rd(eh + 32, 8), rd(eh + 54, 2), rd(eh + 56, 2), 56,
				    MAX_PHDRS, fn, ctx)
		       : walk_table(e, rd(eh + 28, 4), rd(eh + 42, 2), rd(eh + 44, 2), 32,
				    MAX_PHDRS, fn, ctx);
}

struct note_want {
	uint8_t *out;
	size_t max;
};

/* A PT_NOTE segment (what a loaded binary has): scan_notes() on it. */
static int note_of_phdr(const struct elf_view *e, const uint8_t *ph, void *ctx)
{
	struct note_want *w = ctx;

	if (rd(ph, 4) != 4)	/* PT_NOTE */
		return 0;
	return e->is64 ? scan_notes(e, rd(ph + 8, 8), rd(ph + 32, 8), w->out, w->max)
		       : scan_notes(e, rd(ph + 4, 4), rd(ph + 16, 4), w->out, w->max);
}

/* A SHT_NOTE section (a separate debug file, or an object whose program
 * headers say nothing): scan_notes() on it. */
static int note_of_shdr(const struct elf_view *e, const uint8_t *sh, void *ctx)
{
	struct note_want *w = ctx;

	if (rd(sh + 4, 4) != 7)	/* SHT_NOTE */
		return 0;
	return e->is64 ? scan_notes(e, rd(sh + 24, 8), rd(sh + 32, 8), w->out, w->max)
		       : scan_notes(e, rd(sh + 16, 4), rd(sh + 20, 4), w->out, w->max);
}

/* The ELF header of @fd into @eh and @e.  1 when it is one we read, 0 not,
 * -errno. */
static int open_view(int fd, struct elf_view *e, uint8_t eh[64])
{
	off_t end = lseek(fd, 0, SEEK_END);

	if (end < 0)
		return -errno;
	e->fd = fd;
	e->size = (uint64_t)end;
	if (pread(fd, eh, 64, 0) < 52 || memcmp(eh, "\177ELF", 4))
		return 0;
	if (eh[5] != 1)	/* little-endian only: what the lab and x86 guests run */
		return 0;
	e->is64 = eh[4] == 2;
	if (!e->is64 && eh[4] != 1)
		return 0;
	return !(e->is64 && e->size < 64);
}

int du_elf_build_id(int fd, uint8_t *out, size_t max)
{
	struct elf_view e;
	uint8_t eh[64];
	int n = open_view(fd, &e, eh);

	if (n <= 0)
		return n;
	struct note_want w = { out, max };

	n = walk_phdrs(&e, eh, note_of_phdr, &w);
	if (n)
		return n;
	return e.is64 ? walk_table(&e, rd(eh + 40, 8), rd(eh + 58, 2), rd(eh + 60, 2), 64,
				   MAX_SHDRS, note_of_shdr, &w)
		      : walk_table(&e, rd(eh + 32, 4), rd(eh + 46, 2), rd(eh + 48, 2), 40,
				   MAX_SHDRS, note_of_shdr, &w);
}

/* The first PT_LOAD with PF_X whose start lies in the file. */
static int exec_of_phdr(const struct elf_view *e, const uint8_t *ph, void *ctx)
{
	struct du_elf_load *out = ctx;
	uint64_t off = e->is64 ? rd(ph + 8, 8) : rd(ph + 4, 4);

	if (rd(ph, 4) != 1 || !(rd(ph + (e->is64 ? 4 : 24), 4) & 1) || off > e->size)
		return 0;
	out->offset = off;
	out->vaddr = e->is64 ? rd(ph + 16, 8) : rd(ph + 8, 4);
	out->memsz = e->is64 ? rd(ph + 40, 8) : rd(ph + 20, 4);
	return 1;
}

int du_elf_exec_load(int fd, struct du_elf_load *out)
{
	struct elf_view e;
	uint8_t eh[64];
	int n = open_view(fd, &e, eh);

	if (n <= 0)
		return n;
	return walk_phdrs(&e, eh, exec_of_phdr, out);
}

int du_elf_build_id_hex(int fd, char *hex, size_t size)
{
	static const char digits[] = "0123456789abcdef";
	uint8_t bid[DU_BUILD_ID_MAX];
	int n = du_elf_build_id(fd, bid, sizeof(bid));

	if (n <= 0 || size < 2 * (size_t)n + 1) {
		if (size)
			hex[0] = '\0';
		return n < 0 ? n : 0;
	}
	for (int i = 0; i < n; i++) {
		hex[2 * i] = digits[bid[i] >> 4];
		hex[2 * i + 1] = digits[bid[i] & 15];
	}
	hex[2 * n] = '\0';
	return n;
}
