/* A minimal little-endian ELF64 file for the unit tests: a header, one
 * PT_NOTE program header and a GNU build-id note of @bid_size bytes of
 * @bid (0 bytes: no note at all).  Returns its size (at most 156). */
#ifndef TEST_ELF_H
#define TEST_ELF_H

#include <stdint.h>
#include <string.h>

#define TEST_ELF_MAX 156

static inline void test_elf_put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline size_t test_elf(uint8_t out[TEST_ELF_MAX], uint8_t bid, size_t bid_size)
{
	uint8_t *ph = out + 64, *note = out + 120;

	memset(out, 0, TEST_ELF_MAX);
	memcpy(out, "\177ELF", 4);
	out[4] = 2;			/* ELFCLASS64 */
	out[5] = 1;			/* little-endian */
	out[6] = 1;
	test_elf_put(out + 16, 3, 2);	/* ET_DYN */
	test_elf_put(out + 18, 62, 2);	/* x86-64 */
	test_elf_put(out + 32, 64, 8);	/* e_phoff */
	test_elf_put(out + 52, 64, 2);	/* e_ehsize */
	test_elf_put(out + 54, 56, 2);	/* e_phentsize */
	if (!bid_size)
		return 64;
	test_elf_put(out + 56, 1, 2);	/* e_phnum */
	test_elf_put(ph, 4, 4);		/* PT_NOTE */
	test_elf_put(ph + 8, 120, 8);	/* p_offset */
	test_elf_put(ph + 32, 16 + bid_size, 8);	/* p_filesz */
	test_elf_put(note, 4, 4);
	test_elf_put(note + 4, bid_size, 4);
	test_elf_put(note + 8, 3, 4);	/* NT_GNU_BUILD_ID */
	memcpy(note + 12, "GNU", 4);
	memset(note + 16, bid, bid_size);
	return 120 + 16 + bid_size;
}

#endif
