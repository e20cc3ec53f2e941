/* Small file-system helpers shared by the programs. */
#ifndef DU_FS_H
#define DU_FS_H

#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
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

/* Remove @dir and everything below it, depth first, no symbolic link
 * followed (a link is removed, not what it names): rm -rf.  0, or -1 with
 * errno set where a removal failed (the walk stops there). */
int du_rm_tree(const char *dir);

/* Read at most @cap - 1 bytes of small file @path (one read: /proc files)
 * into @buf, NUL-terminated.  The byte count or -errno. */
ssize_t du_read_small(const char *path, char *buf, size_t cap);

/*
 * @rel, a relative path, below directory @dfd, opened (not created: no
 * O_CREAT) with @flags, O_NOFOLLOW and O_CLOEXEC added: no symbolic link
 * followed on the way, and no way out of @dfd.  One openat2 where the
 * kernel has it, else one openat per component; no component may be
 * empty, "." or ".." (-EINVAL).  For a tree someone else writes: a
 * directory of it swapped for a link between a look and an open takes
 * the open nowhere else.  The fd, or -errno (-ELOOP or -ENOTDIR for a
 * link on the way, -EXDEV for a way out).
 */
int du_open_beneath(int dfd, const char *rel, int flags);
/* The same one component at a time, always (what du_open_beneath does
 * without openat2; tests call it). */
int du_open_beneath_walk(int dfd, const char *rel, int flags);

/* du_open_beneath's one openat2, @rel not checked, @mode for O_CREAT:
 * -ENOSYS where the kernel (before 5.6) or a sandbox has none, after
 * which it is not tried again (the caller then walks). */
int du_openat2_beneath(int dfd, const char *rel, int flags, mode_t mode);

/*
 * A file of a tree another user writes, for reading: @rel below directory
 * @dfd by du_open_beneath, without waiting on a FIFO, and only a regular
 * file (else EINVAL).  The fd (blocking cleared), or -errno.
 */
int du_open_beneath_file(int dfd, const char *rel);
/* The same below directory @dir (opened as given), as a stream ("r");
 * NULL with errno set. */
FILE *du_fopen_beneath(const char *dir, const char *rel);

/*
 * A directory's entries read in bulk (getdents64: a call per @size bytes
 * of entries, and one that says the end) from @fd, open on the directory,
 * into @buf of @size bytes; "." and ".." are left out.  Its type is the
 * directory's word for it (DT_UNKNOWN where the file system says none).
 */
struct du_dents {
	int fd;
	char *buf;
	size_t size;
	ssize_t n, off;		/* bytes in @buf, the next entry's offset */
};

/* The next entry, or NULL at the end (errno 0) or on an error (errno). */
const struct dirent64 *du_dents_next(struct du_dents *d);

#endif
