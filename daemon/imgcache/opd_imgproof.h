/*
 * What the image cache reads from a guest's uploaded file itself, rather
 * than believing the guest's word (issue 9, item 3; issue 23, item 4): a
 * SHA-256 of its bytes (the cache key: a content id another guest cannot
 * collide with); its GNU build-id note (only a hint) is read by
 * lib/util/du_elfid.h, bounded.
 */
#ifndef OPD_IMGPROOF_H
#define OPD_IMGPROOF_H

#include <stddef.h>
#include <stdint.h>

#define OPD_SHA256_SIZE	32

/* SHA-256 of the whole file @fd (read with pread from 0; nettle computes
 * it, with no system call of its own).  0 or -errno. */
int opd_sha256_fd(int fd, uint8_t out[OPD_SHA256_SIZE]);

#endif
