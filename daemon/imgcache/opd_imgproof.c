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
