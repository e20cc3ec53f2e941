/*
 * The session directory as a root daemon may trust it (doc/session.md,
 * "Permissions").  A root process that writes under a directory another
 * user controls can be made to write anywhere: a planted symlink
 * (oprofiled.pid -> /etc/shadow) or a directory swapped under it.  So the
 * session directory is checked once, before anything is written, and every
 * later open below it walks the path one component at a time from "/" with
 * openat(O_NOFOLLOW): a symlink anywhere is refused (-ELOOP), never
 * followed.  The walk starts from the canonical path du_sdir_prepare()
 * returns, which has no symlinks of its own, so refusing every symlink
 * refuses nothing legitimate.
 */
#ifndef DU_SDIR_H
#define DU_SDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The group whose members may read a session (opreport as a user). */
#define DU_SDIR_GROUP "domprof"

/* Modes of what is written in a session.  Directories get 0750 and files
 * 0640, but with no domprof group the session directory itself is 0700,
 * which keeps everyone else out of the whole tree; with the group, it is
 * 02750 and the set-gid bit gives everything below the domprof group.
 * Kernel symbol tables (host or guest), the log and the pid file are their
 * writer's alone: 0600. */
#define DU_SDIR_DIR_MODE	0750
#define DU_SDIR_FILE_MODE	0640
#define DU_SDIR_SECRET_MODE	0600

/*
 * Create session directory @dir if missing (its parents 0755, itself 0700,
 * or 02750 group domprof when that group exists), then check it: the
 * directory must belong to the effective user, must not be writable by
 * group or others, and each ancestor must belong to root or to the
 * effective user and must not be writable by group or others unless it is
 * sticky (a sticky /tmp lets nobody else rename or remove our entry, so a
 * session below it is safe as long as the entries on the way are ours).
 * An existing directory is narrowed to the modes above.  The canonical
 * path (realpath) goes to @canon.  0, or -errno with a message for the
 * user in @err (EPERM: the ownership or mode check failed).
 */
int du_sdir_prepare(const char *dir, char *canon, size_t canon_size, char *err, size_t errlen);

/*
 * The privsep worker's user: @name, or with NULL DU_SDIR_WORKER.  A user of
 * its own, never one shared with other services: -EPERM for nobody,
 * -EINVAL for root, -ENOENT when there is no such user.
 */
#define DU_SDIR_WORKER "domprof"
int du_sdir_worker_user(const char *name, uid_t *uid, gid_t *gid);

/*
 * Give @dir and everything below it to @uid:@gid (what the privsep worker
 * writes: samples/current, images, domains), walking by file descriptor:
 * no link followed, no other file system entered, a directory's entries
 * changed before the directory itself, and a file with more than one name
 * (a hard link, which the tree's owner could have made to anyone's file)
 * left alone (-EMLINK).  Goes on past what it cannot change or open: 0,
 * or the first -errno.
 */
int du_sdir_chown_tree(const char *dir, uid_t uid, gid_t gid);

/* Check only (no creation, no mode change): the same rules as above. */
int du_sdir_check(const char *canon, char *err, size_t errlen);

/*
 * The privsep worker's view of the session: once a root is added, every
 * du_nf_* path is resolved below the root it lies in (absolute @path, the
 * directory open as @fd, kept open), and a path in no root is refused
 * (-EACCES).  The worker, which may not even search the session
 * directory, reaches exactly the directories it was handed.  A path that
 * is a root already gets @fd in place of its descriptor, which is closed
 * (a directory set aside and replaced).  0 or -errno.
 */
int du_nf_root_add(const char *path, int fd);

/*
 * A file a root process may write: regular (-EINVAL), one name (-EMLINK:
 * a hard link could be anyone's file) and owned by the effective user or
 * by @owner (-EPERM).  0 or -errno.
 */
int du_fd_check_own(int fd, uid_t owner);

/*
 * openat(2) of @base below @dfd, O_NOFOLLOW (-ELOOP on a symlink).  Opened
 * for writing: with O_CREAT, made fresh (O_EXCL) when missing; an existing
 * file (O_EXCL not asked) passes du_fd_check_own() with the directory's
 * owner (the caller, for AT_FDCWD) before O_TRUNC truncates it.  The fd or
 * -errno.
 */
int du_openat_own(int dfd, const char *base, int flags, mode_t mode);

/* What an error of du_openat_own() means, for a message. */
const char *du_own_strerror(int err);

/*
 * open(2) of absolute @path walking every component with O_NOFOLLOW
 * (O_NOFOLLOW and O_CLOEXEC are added to @flags), the last one as
 * du_openat_own() does.  No component may be empty, "." or ".."
 * (-EINVAL).  With @mkdirs, missing directories on the way are created
 * with DU_SDIR_DIR_MODE.  The fd or -errno (-ELOOP for a symlink,
 * -ENOTDIR where a directory was expected).
 */
int du_nf_open(const char *path, int flags, mode_t mode, bool mkdirs);

/*
 * du_nf_open(@path, @flags | O_CREAT, @mode, true) for a file whose
 * directories are likely missing below @path's first @there bytes, which
 * name a directory the caller saw there (one it made or opened a file
 * in): that one is opened at once (one openat2 below a root) and the rest
 * are made below it with no look for what is not there, then the file.
 * Where it cannot be opened so (not there after all, outside the roots,
 * a link), or @there is 0 (none known), the whole walk, which says what
 * is wrong.  A new sample file's directory cost a failed open of the
 * file, of its directory and of each missing parent before the walk.
 */
int du_nf_open_made(const char *path, size_t there, int flags, mode_t mode);

/* The directory holding @path's last component, opened the same way, and
 * that component in *@base (a pointer into @path).  The fd or -errno. */
int du_nf_open_parent(const char *path, bool mkdirs, const char **base);

/* mkdir -p of absolute @dir the same way. 0 or -errno. */
int du_nf_mkdirs(const char *dir);

/* rename(2) / unlink(2) / lstat(2) of absolute paths the same way.  0 or
 * -errno. */
int du_nf_rename(const char *from, const char *to);
int du_nf_unlink(const char *path);
int du_nf_lstat(const char *path, struct stat *sb);

/* @len bytes of @buf as the whole of @path, readers seeing the old file
 * or the new one: written to @tmp (fresh, @mode), synced, renamed.  0 or
 * -errno. */
int du_nf_write_atomic(const char *path, const char *tmp, const void *buf, size_t len,
		       mode_t mode);

/* fopen() of du_nf_open(); @mode "r", "w" (truncate) or "a".  NULL with
 * errno set. */
FILE *du_nf_fopen(const char *path, const char *mode, mode_t perm);

/*
 * A saved session's name (opcontrol --save=NAME, the report tools'
 * session:NAME), the directory SESSION/samples/NAME: letters, digits and
 * "._+-@", at most 128 bytes, not "current", not starting with '.' or '-'.
 */
#define DU_SDIR_SESSION_NAME_RULE \
	"letters, digits and ._+-@, not current, not starting with . or -"
bool du_sdir_session_name_ok(const char *name);

#endif
