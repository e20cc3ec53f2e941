/*
 * The GNU build id of an ELF file, read without trusting the file: a
 * bounded pure reader (program headers' PT_NOTE segments, else the
 * section headers' SHT_NOTE sections; counts and sizes capped, every
 * offset checked against the file's size).  The daemon's image cache and
 * identity record and the report tools all use this one reader; a root
 * report reads a build id with it, never with libbfd.
 */
#ifndef DU_ELFID_H
#define DU_ELFID_H

#include <stddef.h>
#include <stdint.h>

/* The longest build id kept anywhere (SHA-1 ids are 20 bytes). */
#define DU_BUILD_ID_MAX 64
/* Its hex form with the NUL. */
#define DU_BUILD_ID_HEX (2 * DU_BUILD_ID_MAX + 1)

/*
 * The GNU build id in @fd's own notes (a little-endian ELF32 or ELF64;
 * anything else has none) into @out, at most @max bytes.  Returns its
 * size, 0 when there is none, or -errno on a read error.
 */
int du_elf_build_id(int fd, uint8_t *out, size_t max);

/* The same as lowercase hex into @hex ("" when none).  Its size in
 * bytes, 0, or -errno. */
int du_elf_build_id_hex(int fd, char *hex, size_t size);

/* An executable PT_LOAD segment: where the file's code is. */
struct du_elf_load {
	uint64_t offset, vaddr, memsz;
};

/* The first executable PT_LOAD segment of @fd that starts inside the
 * file into @out, read the same bounded way.  1 found, 0 none (or no ELF file we read), -errno. */
int du_elf_exec_load(int fd, struct du_elf_load *out);

#endif
