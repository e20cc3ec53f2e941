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

/* The note in the PT_NOTE segments of the program headers (what a loaded
 * binary has), as scan_notes() says. */
static int from_phdrs(const struct elf_view *e, const uint8_t *eh, uint8_t *out, size_t max)
{
	uint64_t phoff = e->is64 ? rd(eh + 32, 8) : rd(eh + 28, 4);
	uint64_t phentsize = e->is64 ? rd(eh + 54, 2) : rd(eh + 42, 2);
	uint64_t phnum = e->is64 ? rd(eh + 56, 2) : rd(eh + 44, 2);
	unsigned int want = e->is64 ? 56 : 32;
	uint8_t ph[56];

	if (!phnum || phentsize < want || phnum > MAX_PHDRS)
		return 0;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t at = phoff + i * phentsize, off, len;
		int n;

		if (at > e->size || want > e->size - at)
			return 0;
		if (pread(e->fd, ph, want, (off_t)at) != (ssize_t)want)
			return 0;
		if (rd(ph, 4) != 4)	/* PT_NOTE */
			continue;
		off = e->is64 ? rd(ph + 8, 8) : rd(ph + 4, 4);
		len = e->is64 ? rd(ph + 32, 8) : rd(ph + 16, 4);
		n = scan_notes(e, off, len, out, max);
		if (n)
			return n;
	}
	return 0;
}

/* The note in the SHT_NOTE sections (a separate debug file or an object
 * whose program headers say nothing), the same way. */
static int from_shdrs(const struct elf_view *e, const uint8_t *eh, uint8_t *out, size_t max)
{
	uint64_t shoff = e->is64 ? rd(eh + 40, 8) : rd(eh + 32, 4);
	uint64_t shentsize = e->is64 ? rd(eh + 58, 2) : rd(eh + 46, 2);
	uint64_t shnum = e->is64 ? rd(eh + 60, 2) : rd(eh + 48, 2);
	unsigned int want = e->is64 ? 64 : 40;
	uint8_t sh[64];

	if (!shnum || shentsize < want || shnum > MAX_SHDRS)
		return 0;
	for (uint64_t i = 0; i < shnum; i++) {
		uint64_t at = shoff + i * shentsize, off, len;
		int n;

		if (at > e->size || want > e->size - at)
			return 0;
		if (pread(e->fd, sh, want, (off_t)at) != (ssize_t)want)
			return 0;
		if (rd(sh + 4, 4) != 7)	/* SHT_NOTE */
			continue;
		off = e->is64 ? rd(sh + 24, 8) : rd(sh + 16, 4);
		len = e->is64 ? rd(sh + 32, 8) : rd(sh + 20, 4);
		n = scan_notes(e, off, len, out, max);
		if (n)
			return n;
	}
	return 0;
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
	n = from_phdrs(&e, eh, out, max);
	return n ? n : from_shdrs(&e, eh, out, max);
}

int du_elf_exec_load(int fd, struct du_elf_load *out)
{
	struct elf_view e;
	uint8_t eh[64], ph[56];
	uint64_t phoff, phentsize, phnum;
	unsigned int want;
	int n = open_view(fd, &e, eh);

	if (n <= 0)
		return n;
	phoff = e.is64 ? rd(eh + 32, 8) : rd(eh + 28, 4);
	phentsize = e.is64 ? rd(eh + 54, 2) : rd(eh + 42, 2);
	phnum = e.is64 ? rd(eh + 56, 2) : rd(eh + 44, 2);
	want = e.is64 ? 56 : 32;
	if (phentsize < want || phnum > MAX_PHDRS)
		return 0;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t at = phoff + i * phentsize;

		if (at > e.size || want > e.size - at ||
		    pread(fd, ph, want, (off_t)at) != (ssize_t)want)
			return 0;
		/* PT_LOAD with PF_X */
		if (rd(ph, 4) != 1 || !(rd(ph + (e.is64 ? 4 : 24), 4) & 1))
			continue;
		out->offset = e.is64 ? rd(ph + 8, 8) : rd(ph + 4, 4);
		out->vaddr = e.is64 ? rd(ph + 16, 8) : rd(ph + 8, 4);
		out->memsz = e.is64 ? rd(ph + 40, 8) : rd(ph + 20, 4);
		return 1;
	}
	return 0;
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
