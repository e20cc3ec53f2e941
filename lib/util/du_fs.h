/* Small file-system helpers shared by the programs. */
#ifndef DU_FS_H
#define DU_FS_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Create every directory that ends at a '/' in @path after its first @from
 * bytes (the part before is known to exist), mode @mode (less the umask);
 * existing ones are fine.  @path is restored before returning.  0 or -errno.
 */
int du_mkdir_parents(char *path, size_t from, mode_t mode);

/* Create directory @dir and its missing parents (mkdir -p), mode 0755.
 * 0 or -errno. */
int du_mkdir_p(const char *dir);

/* Read at most @cap - 1 bytes of small file @path (one read: /proc files)
 * into @buf, NUL-terminated.  The byte count or -errno. */
ssize_t du_read_small(const char *path, char *buf, size_t cap);

#endif
