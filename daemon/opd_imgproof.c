#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "opd_imgproof.h"

/* ---- SHA-256 (FIPS 180-4), for content ids a guest cannot collide ---- */

static const uint32_t sha_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], v[8];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(v, h, sizeof(v));
	for (int i = 0; i < 64; i++) {
		uint32_t s1 = ROR(v[4], 6) ^ ROR(v[4], 11) ^ ROR(v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + s1 + ch + sha_k[i] + w[i];
		uint32_t s0 = ROR(v[0], 2) ^ ROR(v[0], 13) ^ ROR(v[0], 22);
		uint32_t mj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);

		memmove(v + 1, v, 7 * sizeof(v[0]));
		v[4] += t1;
		v[0] = t1 + s0 + mj;
	}
	for (int i = 0; i < 8; i++)
		h[i] += v[i];
}

void opd_sha256_init(struct opd_sha256 *s)
{
	static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	memcpy(s->h, h0, sizeof(h0));
	s->len = 0;
	s->fill = 0;
}

void opd_sha256_update(struct opd_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	s->len += n;
	while (n) {
		size_t k = 64 - s->fill < n ? 64 - s->fill : n;

		if (!s->fill && n >= 64) {
			sha_block(s->h, p);
			p += 64;
			n -= 64;
			continue;
		}
		memcpy(s->buf + s->fill, p, k);
		s->fill += k;
		p += k;
		n -= k;
		if (s->fill == 64) {
			sha_block(s->h, s->buf);
			s->fill = 0;
		}
	}
}

void opd_sha256_final(struct opd_sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = { 0x80 };
	size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
	opd_sha256_update(s, pad, padlen + 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
}

int opd_sha256_fd(int fd, uint8_t out[32])
{
	struct opd_sha256 s;
	uint8_t buf[65536];
	off_t off = 0;
	ssize_t n;

	opd_sha256_init(&s);
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		opd_sha256_update(&s, buf, (size_t)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	opd_sha256_final(&s, out);
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
