#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "opd_imgproof.h"

/* ---- SHA-256 of a whole file (nettle), for content ids ---- */

int opd_sha256_fd(int fd, uint8_t out[OPD_SHA256_SIZE])
{
	struct sha256_ctx s;
	uint8_t buf[65536];
	off_t off = 0;
	ssize_t n;

	sha256_init(&s);
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		sha256_update(&s, (size_t)n, buf);
		off += n;
	}
	if (n < 0)
		return -errno;
	sha256_digest(&s, OPD_SHA256_SIZE, out);
	return 0;
}

/* ---- the GNU build-id note of an ELF file, read by the host ---- */

/* Limits: a real binary has a handful of program headers and notes. */
#define MAX_PHDRS	256
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

int opd_elf_build_id(int fd, uint8_t *out, size_t max)
{
	uint8_t eh[64], ph[56];
	struct elf_view e = { .fd = fd };
	uint64_t phoff, phentsize, phnum;
	off_t end = lseek(fd, 0, SEEK_END);

	if (end < 0)
		return -errno;
	e.size = (uint64_t)end;
	if (pread(fd, eh, sizeof(eh), 0) < 52 || memcmp(eh, "\177ELF", 4))
		return 0;
	if (eh[5] != 1)	/* little-endian only: what the lab and x86 guests run */
		return 0;
	e.is64 = eh[4] == 2;
	if (!e.is64 && eh[4] != 1)
		return 0;
	phoff = e.is64 ? rd(eh + 32, 8) : rd(eh + 28, 4);
	phentsize = e.is64 ? rd(eh + 54, 2) : rd(eh + 42, 2);
	phnum = e.is64 ? rd(eh + 56, 2) : rd(eh + 44, 2);
	if (phentsize < (e.is64 ? 56u : 32u) || phnum > MAX_PHDRS)
		return 0;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t at = phoff + i * phentsize, off, len;
		int n;

		if (at > e.size || at + sizeof(ph) < at)
			return 0;
		if (pread(fd, ph, e.is64 ? 56 : 32, (off_t)at) != (e.is64 ? 56 : 32))
			return 0;
		if (rd(ph, 4) != 4)	/* PT_NOTE */
			continue;
		off = e.is64 ? rd(ph + 8, 8) : rd(ph + 4, 4);
		len = e.is64 ? rd(ph + 32, 8) : rd(ph + 16, 4);
		n = scan_notes(&e, off, len, out, max);
		if (n)
			return n;
	}
	return 0;
}
