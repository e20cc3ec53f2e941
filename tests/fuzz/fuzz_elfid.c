/*
 * libFuzzer target for lib/util/du_elfid: the bounded build-id and
 * code-segment reader that root's report and the daemon run on files
 * they did not write.  The bytes are the whole file (a memfd).  It must
 * never crash or read out of bounds, a build id it returns fits what it
 * was given and its hex form is exactly twice as long, and an executable
 * segment it reports lies inside the file.
 */
#define _GNU_SOURCE
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "du_elfid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fd = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t id[DU_BUILD_ID_MAX];
	char hex[DU_BUILD_ID_HEX];
	struct du_elf_load ld;
	int n, h;

	if (fd < 0 && (fd = memfd_create("fuzz_elfid", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	n = du_elf_build_id(fd, id, sizeof(id));
	if (n < 0 || n > DU_BUILD_ID_MAX)
		abort();
	h = du_elf_build_id_hex(fd, hex, sizeof(hex));
	if (h != n || strlen(hex) != 2 * (size_t)n)
		abort();
	/* a small buffer takes no more than it holds */
	n = du_elf_build_id(fd, id, 4);
	if (n < 0 || n > 4)
		abort();
	n = du_elf_exec_load(fd, &ld);
	if (n < 0 || n > 1)
		abort();
	if (n == 1 && ld.offset > size)
		abort();
	return 0;
}
