/* Small I/O helpers shared by the programs. */
#ifndef DU_IO_H
#define DU_IO_H

#include <stddef.h>

/*
 * Write all @len bytes of @buf to the blocking descriptor @fd, retrying
 * short writes and EINTR.  0 or -errno (bytes before the error are written).
 */
int du_write_all(int fd, const void *buf, size_t len);

#endif
