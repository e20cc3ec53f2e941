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
#include <sys/types.h>

/* The group whose members may read a session (opreport as a user). */
#define DU_SDIR_GROUP "domprof"

/* Modes of what is written in a session.  Directories get 0750 and files
 * 0640, but with no domprof group the session directory itself is 0700,
 * which keeps everyone else out of the whole tree; with the group, it is
 * 02750 and the set-gid bit gives everything below the domprof group.
 * Kernel symbol tables (host or guest) are root's alone: 0600. */
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
 * The privsep worker's user: @name, or with NULL "domprof" when that user
 * exists, else "nobody" (never root).  0, or -ENOENT / -EINVAL (root).
 */
int du_sdir_worker_user(const char *name, uid_t *uid, gid_t *gid);

/*
 * Sessions a root daemon gave to its privsep worker, noted where only
 * root writes (DU_SDIR_GIVEN_DIR, a file per canonical path): marked
 * before the give, unmarked when the monitor gave it back.  A directory
 * some other process of the worker's user made is not marked.  0 or
 * -errno (mark); unmark ignores errors.
 */
#define DU_SDIR_GIVEN_DIR "/run/domprof/given"
int du_sdir_mark_given(const char *canon);
void du_sdir_unmark_given(const char *canon);

/*
 * A session directory that a killed daemon left to its privsep worker's
 * user @worker (a monitor that lives to see the stop gives it back): when
 * canonical @dir is owned by @worker and marked as given, give it and
 * everything below it back to the effective user, no link followed (as
 * that stop would have), and unmark it.  Only as root, and only when no
 * daemon runs for it (the caller knows).  1 when taken back (a message
 * for the log in @msg), 0 when not a given session of @worker's, or
 * -errno.
 */
int du_sdir_take_back(const char *dir, uid_t worker, char *msg, size_t msglen);

/*
 * Give @dir and everything below it to @uid:@gid (the privsep worker's
 * session, and back), walking by file descriptor: no link followed, no
 * other file system entered, a directory's entries changed before the
 * directory itself, and a file with more than one name (a hard link, which
 * the tree's owner could have made to anyone's file) left alone
 * (-EMLINK).  Goes on past what it cannot change or open: 0, or the first
 * -errno.
 */
int du_sdir_chown_tree(const char *dir, uid_t uid, gid_t gid);

/* Check only (no creation, no mode change): the same rules as above. */
int du_sdir_check(const char *canon, char *err, size_t errlen);

/*
 * open(2) of absolute @path walking every component with O_NOFOLLOW
 * (O_NOFOLLOW and O_CLOEXEC are added to @flags).  No component may be
 * empty, "." or ".." (-EINVAL).  With @mkdirs, missing directories on the
 * way are created with DU_SDIR_DIR_MODE.  The fd or -errno (-ELOOP for a
 * symlink, -ENOTDIR where a directory was expected).
 */
int du_nf_open(const char *path, int flags, mode_t mode, bool mkdirs);

/* The directory holding @path's last component, opened the same way, and
 * that component in *@base (a pointer into @path).  The fd or -errno. */
int du_nf_open_parent(const char *path, bool mkdirs, const char **base);

/* mkdir -p of absolute @dir the same way. 0 or -errno. */
int du_nf_mkdirs(const char *dir);

/* rename(2) / unlink(2) of absolute paths the same way.  0 or -errno. */
int du_nf_rename(const char *from, const char *to);
int du_nf_unlink(const char *path);

/* fopen() of du_nf_open(); @mode "r", "w" (truncate) or "a".  NULL with
 * errno set. */
FILE *du_nf_fopen(const char *path, const char *mode, mode_t perm);

#endif
