/*
 * The session directory's checks and preparation and the worker's user
 * (util/du_sdir.h); the walks below it are in du_nf.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <limits.h>
#include <stdint.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/du_fs.h"
#include "util/du_io.h"
#include "util/du_sdir.h"

int du_sdir_worker_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name ? name : DU_SDIR_WORKER);

	if (!pw)
		return -ENOENT;
	if (pw->pw_uid == 0)
		return -EINVAL;
	/* shared with every service that drops to it: a compromised worker
	 * could then signal or trace them, and they it */
	if (!strcmp(pw->pw_name, "nobody") || pw->pw_uid == 65534)
		return -EPERM;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* Deepest directory the walk below follows. */
#define CHOWN_MAX_DEPTH 32

static void note_err(int *err, int e)
{
	if (!*err)
		*err = e;
}

/* One entry of directory @dfd that is not a directory, through an O_PATH
 * descriptor of the inode itself (no link followed, no device opened):
 * left alone if it has other names, which a user who owns the directory
 * could have linked in from anywhere. */
static void chown_entry(int dfd, const char *name, uid_t uid, gid_t gid, int *err)
{
	struct stat sb;
	int fd;

	/* already theirs (a session handed over before): nothing to do */
	if (!fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) && sb.st_uid == uid &&
	    sb.st_gid == gid)
		return;
	fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		note_err(err, errno);
		return;
	}
	if (fstat(fd, &sb))
		note_err(err, errno);
	else if (!S_ISDIR(sb.st_mode) && sb.st_nlink > 1)
		note_err(err, EMLINK);
	else if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH))
		note_err(err, errno);
	close(fd);
}

/* The walk's state: where it hands the tree, and one buffer of directory
 * entries per depth, made once (a DIR per directory is a malloc and a
 * free each, and the free of its 32 KiB gave the heap back to the kernel
 * every time: a TLB flush per directory, 17% of a replay's CPU with 2,000
 * sample files in place). */
struct chown_walk {
	dev_t dev;
	uid_t uid;
	gid_t gid;
	int err;
	char *buf[CHOWN_MAX_DEPTH + 1];
};

#define CHOWN_BUF 8192

static void chown_dir(struct chown_walk *w, int dfd, unsigned int depth);

/* Entry @name (of type @type, DT_UNKNOWN if the file system does not say)
 * of directory @dfd at @depth. */
static void chown_one(struct chown_walk *w, int dfd, const char *name, unsigned char type,
		      unsigned int depth)
{
	struct stat sb;
	int sub;

	if (type != DT_DIR && type != DT_UNKNOWN) {
		chown_entry(dfd, name, w->uid, w->gid, &w->err);
		return;
	}
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		chown_entry(dfd, name, w->uid, w->gid, &w->err);
		return;
	}
	if (fstat(sub, &sb) || sb.st_dev != w->dev) {
		close(sub);	/* another file system: not entered */
		return;
	}
	if (depth < CHOWN_MAX_DEPTH)
		chown_dir(w, sub, depth + 1);
	else
		note_err(&w->err, ELOOP);
	if ((sb.st_uid != w->uid || sb.st_gid != w->gid) && fchown(sub, w->uid, w->gid))
		note_err(&w->err, errno);
	close(sub);
}

/* Everything below directory @dfd, each directory's entries before the
 * directory itself: a directory stays its old owner's while its entries
 * change hands, so the new owner cannot swap one for a link meanwhile.
 * Directories are opened O_NOFOLLOW, on the walk's device only.  Reads
 * @dfd's entries (its offset moves). */
static void chown_dir(struct chown_walk *w, int dfd, unsigned int depth)
{
	struct du_dents d = { .fd = dfd, .buf = w->buf[depth], .size = CHOWN_BUF };
	const struct dirent64 *de;

	if (!d.buf && !(d.buf = w->buf[depth] = malloc(CHOWN_BUF))) {
		note_err(&w->err, ENOMEM);
		return;
	}
	while ((de = du_dents_next(&d)))
		chown_one(w, dfd, de->d_name, de->d_type, depth);
	if (errno)
		note_err(&w->err, errno);
}

int du_sdir_chown_tree(const char *dir, uid_t uid, gid_t gid)
{
	struct chown_walk w = { .uid = uid, .gid = gid };
	struct stat sb;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		w.err = errno;
	} else {
		w.dev = sb.st_dev;
		chown_dir(&w, fd, 0);
		if ((sb.st_uid != uid || sb.st_gid != gid) && fchown(fd, uid, gid))
			note_err(&w.err, errno);
	}
	close(fd);
	for (unsigned int i = 0; i <= CHOWN_MAX_DEPTH; i++)
		free(w.buf[i]);
	return -w.err;
}

/* The rules for one directory on the way: owned by @want (or root, for an
 * ancestor), not writable by group or others unless sticky (ancestors). */
static int check_one(const char *path, const struct stat *sb, bool self, char *err, size_t errlen)
{
	uid_t me = geteuid();

	if (!S_ISDIR(sb->st_mode)) {
		snprintf(err, errlen, "%s is not a directory", path);
		return -ENOTDIR;
	}
	if (sb->st_uid != me && (self || sb->st_uid != 0)) {
		snprintf(err, errlen,
			 "refusing session directory: %s is owned by uid %u, not by %s%u "
			 "(another user could plant links or swap directories in it)",
			 path, (unsigned)sb->st_uid, self || me == 0 ? "uid " : "root or uid ",
			 (unsigned)me);
		return -EPERM;
	}
	if ((sb->st_mode & (S_IWGRP | S_IWOTH)) && (self || !(sb->st_mode & S_ISVTX))) {
		snprintf(err, errlen,
			 "refusing session directory: %s is writable by %s (mode %04o); "
			 "make it writable by its owner only",
			 path, (sb->st_mode & S_IWOTH) ? "others" : "its group",
			 (unsigned)(sb->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int du_sdir_check(const char *canon, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	struct stat sb;
	char *slash;
	int ret;

	if (snprintf(buf, sizeof(buf), "%s", canon) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (bool self = true;; self = false) {
		if (lstat(buf[0] ? buf : "/", &sb)) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", buf[0] ? buf : "/", strerror(errno));
			return ret;
		}
		ret = check_one(buf[0] ? buf : "/", &sb, self, err, errlen);
		if (ret)
			return ret;
		if (!buf[0])
			return 0;
		slash = strrchr(buf, '/');
		if (!slash)
			return 0;
		*slash = '\0';
	}
}

int du_sdir_prepare(const char *dir, char *canon, size_t canon_size, char *err, size_t errlen)
{
	char parent[PATH_MAX], real[PATH_MAX];
	struct group gr, *grp = NULL;
	char grbuf[4096];
	mode_t want = 0700;
	struct stat sb;
	int fd, ret;

	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent)) {
		snprintf(err, errlen, "session directory name too long");
		return -ENAMETOOLONG;
	}
	if (lstat(dir, &sb) && errno == ENOENT) {
		char *slash = strrchr(parent, '/');

		if (slash && slash != parent) {
			*slash = '\0';
			ret = du_mkdir_p(parent);
			if (ret) {
				snprintf(err, errlen, "cannot create %s: %s", parent, strerror(-ret));
				return ret;
			}
		}
		if (mkdir(dir, 0700) && errno != EEXIST) {
			ret = -errno;
			snprintf(err, errlen, "cannot create session directory %s: %s", dir, strerror(errno));
			return ret;
		}
	}
	errno = 0;
	if (!realpath(dir, real) || strlen(real) >= canon_size) {
		ret = errno ? -errno : -ENAMETOOLONG;
		snprintf(err, errlen, "session directory %s: %s", dir, strerror(-ret));
		return ret;
	}
	memcpy(canon, real, strlen(real) + 1);
	ret = du_sdir_check(canon, err, errlen);
	if (ret)
		return ret;
	fd = du_nf_open(canon, O_RDONLY | O_DIRECTORY, 0, false);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open session directory %s: %s", canon, strerror(-fd));
		return fd;
	}
	if (!getgrnam_r(DU_SDIR_GROUP, &gr, grbuf, sizeof(grbuf), &grp) && grp &&
	    !fchown(fd, (uid_t)-1, grp->gr_gid))
		want = 02750;
	ret = fstat(fd, &sb) ? -errno : 0;
	if (!ret && (sb.st_mode & 07777) != want && fchmod(fd, want))
		ret = -errno;
	if (ret)
		snprintf(err, errlen, "session directory %s: %s", canon, strerror(-ret));
	close(fd);
	return ret;
}

bool du_sdir_session_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 128 || name[0] == '.' || name[0] == '-' || !strcmp(name, "current"))
		return false;
	/* a plain word: no '/', no glob or shell character, nothing a
	 * terminal would act on */
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._+-@") == n;
}
