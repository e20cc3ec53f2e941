/*
 * What the image cache reads from a guest's uploaded file itself, rather
 * than believing the guest's word (issue 9, item 3): its GNU build-id note
 * (lib/util/du_elfid.h, bounded) and a
 * SHA-256 of its bytes (a content id another guest cannot collide with).
 */
#ifndef OPD_IMGPROOF_H
#define OPD_IMGPROOF_H

#include <stddef.h>
#include <stdint.h>

struct opd_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
};

void opd_sha256_init(struct opd_sha256 *s);
void opd_sha256_update(struct opd_sha256 *s, const void *data, size_t n);
void opd_sha256_final(struct opd_sha256 *s, uint8_t out[32]);
/* SHA-256 of the whole file @fd (read with pread from 0).  0 or -errno. */
int opd_sha256_fd(int fd, uint8_t out[32]);

#endif
