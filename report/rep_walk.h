/*
 * The walk of a sample directory (doc/sample-files.md), by descriptor:
 * each directory opened from its parent's (O_NOFOLLOW), its entries read
 * in bulk, their types taken from the directory, so that a directory
 * costs an open, two getdents64 and a close and an entry no stat.  A
 * summary of 1,000 domains walks 80,000 directories.  No link, to a
 * directory or a file, is followed.
 */
#ifndef REP_WALK_H
#define REP_WALK_H

#include <stdbool.h>

struct rep_walk_ops {
	/* Walk directory @name, an entry of @parent at @level (1: an entry
	 * of the sample directory)? */
	bool (*dir_ok)(void *ctx, unsigned int level, const char *parent, const char *name);
	/* Regular file @path (@rel: below the sample directory, no leading
	 * '/'), entry @name at @level of the directory open as @dirfd (for
	 * the call only).  0, or -errno to end the walk. */
	int (*file)(void *ctx, const char *path, const char *rel, unsigned int level,
		    int dirfd, const char *name);
};

/* Walk @dir.  What cannot be read is said (du_warn) and passed over; a
 * missing @dir holds nothing.  0, or the first -errno of @ops->file or of
 * memory. */
int rep_walk(const char *dir, const struct rep_walk_ops *ops, void *ctx);

#endif
