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
#include "util/du_sdir.h"

/* Next component of the path at *@p (skipping one '/'), copied to @comp.
 * 1 if there is one, 0 at the end, -errno for an unusable one. */
static int next_comp(const char **p, char comp[NAME_MAX + 1])
{
	const char *s = *p, *e;
	size_t n;

	if (*s == '\0')
		return 0;
	if (*s != '/')
		return -EINVAL;
	s++;
	e = strchrnul(s, '/');
	n = (size_t)(e - s);
	if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return -EINVAL;
	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(comp, s, n);
	comp[n] = '\0';
	*p = e;
	return 1;
}

static int open_dir_at(int dfd, const char *comp, bool mkdirs)
{
	struct stat sb;
	int fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && mkdirs) {
		if (mkdirat(dfd, comp, DU_SDIR_DIR_MODE) && errno != EEXIST)
			return -errno;
		fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd >= 0)
		return fd;
	/* O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR: say ELOOP */
	if (errno == ENOTDIR && !fstatat(dfd, comp, &sb, AT_SYMLINK_NOFOLLOW) && S_ISLNK(sb.st_mode))
		return -ELOOP;
	return -errno;
}

/* The directory @path names up to @end (a '/' or its NUL), each component
 * opened below the previous one with O_NOFOLLOW.  The fd or -errno. */
static int walk(const char *path, const char *end, bool mkdirs)
{
	char comp[NAME_MAX + 1];
	const char *p = path;
	int dfd, fd, ret;

	if (path[0] != '/')
		return -EINVAL;
	dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	while (p < end) {
		ret = next_comp(&p, comp);
		if (ret <= 0 || p > end) {
			close(dfd);
			return ret < 0 ? ret : -EINVAL;
		}
		fd = open_dir_at(dfd, comp, mkdirs);
		close(dfd);
		if (fd < 0)
			return fd;
		dfd = fd;
	}
	return dfd;
}

int du_nf_open_parent(const char *path, bool mkdirs, const char **base)
{
	char comp[NAME_MAX + 1];
	const char *last, *p;
	int ret;

	if (path[0] != '/')
		return -EINVAL;
	last = strrchr(path, '/');
	p = last;
	ret = next_comp(&p, comp);	/* the last component must be usable too */
	if (ret <= 0)
		return ret ? ret : -EINVAL;
	*base = last + 1;
	return walk(path, last, mkdirs);
}

int du_nf_open(const char *path, int flags, mode_t mode, bool mkdirs)
{
	const char *base;
	int dfd, fd;

	dfd = du_nf_open_parent(path, mkdirs, &base);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, base, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		fd = -errno;
	close(dfd);
	return fd;
}

int du_nf_mkdirs(const char *dir)
{
	size_t n = strlen(dir);
	int fd;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 1 && dir[0] == '/')
		return 0;
	fd = walk(dir, dir + n, true);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int du_nf_rename(const char *from, const char *to)
{
	const char *fb, *tb;
	int fd1, fd2, ret = 0;

	fd1 = du_nf_open_parent(from, false, &fb);
	if (fd1 < 0)
		return fd1;
	fd2 = du_nf_open_parent(to, false, &tb);
	if (fd2 < 0) {
		close(fd1);
		return fd2;
	}
	if (renameat(fd1, fb, fd2, tb))
		ret = -errno;
	close(fd1);
	close(fd2);
	return ret;
}

int du_nf_unlink(const char *path)
{
	const char *base;
	int dfd, ret = 0;

	dfd = du_nf_open_parent(path, false, &base);
	if (dfd < 0)
		return dfd;
	if (unlinkat(dfd, base, 0))
		ret = -errno;
	close(dfd);
	return ret;
}

FILE *du_nf_fopen(const char *path, const char *mode, mode_t perm)
{
	int flags, fd;
	FILE *f;

	switch (mode[0]) {
	case 'r':
		flags = O_RDONLY;
		break;
	case 'w':
		flags = O_WRONLY | O_CREAT | O_TRUNC;
		break;
	case 'a':
		flags = O_WRONLY | O_CREAT | O_APPEND;
		break;
	default:
		errno = EINVAL;
		return NULL;
	}
	fd = du_nf_open(path, flags, perm, false);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, mode[0] == 'r' ? "r" : mode[0] == 'w' ? "w" : "a");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

int du_sdir_worker_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name ? name : "domprof");

	if (!pw && !name)
		pw = getpwnam("nobody");
	if (!pw)
		return -ENOENT;
	if (pw->pw_uid == 0)
		return -EINVAL;
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
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

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

/* Everything below directory @dfd, each directory's entries before the
 * directory itself: a directory stays its old owner's while its entries
 * change hands, so the new owner cannot swap one for a link meanwhile.
 * Directories are opened O_NOFOLLOW, on @dev only. */
static void chown_below(int dfd, dev_t dev, uid_t uid, gid_t gid, unsigned int depth, int *err)
{
	struct dirent *de;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		note_err(err, errno);
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat sb;
		int sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			chown_entry(dfd, de->d_name, uid, gid, err);
			continue;
		}
		if (fstat(sub, &sb) || sb.st_dev != dev) {
			close(sub);	/* another file system: not entered */
			continue;
		}
		if (depth < CHOWN_MAX_DEPTH)
			chown_below(sub, dev, uid, gid, depth + 1, err);
		else
			note_err(err, ELOOP);
		if (fchown(sub, uid, gid))
			note_err(err, errno);
		close(sub);
	}
	closedir(d);
}

int du_sdir_chown_tree(const char *dir, uid_t uid, gid_t gid)
{
	struct stat sb;
	int err = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		err = errno;
	} else {
		chown_below(fd, sb.st_dev, uid, gid, 0, &err);
		if (fchown(fd, uid, gid))
			note_err(&err, errno);
	}
	close(fd);
	return -err;
}

/* The note for @canon: DU_SDIR_GIVEN_DIR/<FNV-1a of the path>. */
static void given_path(const char *canon, char *out, size_t size)
{
	uint64_t h = 14695981039346656037ull;

	for (const char *p = canon; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	snprintf(out, size, "%s/%016llx", DU_SDIR_GIVEN_DIR, (unsigned long long)h);
}

int du_sdir_mark_given(const char *canon)
{
	char path[128];
	struct stat sb;
	size_t len = strlen(canon);
	int fd, ret = 0;

	(void)mkdir("/run/domprof", 0755);
	(void)mkdir(DU_SDIR_GIVEN_DIR, 0700);
	/* root's alone, or no note */
	if (lstat(DU_SDIR_GIVEN_DIR, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != 0 ||
	    (sb.st_mode & 077))
		return -EPERM;
	given_path(canon, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, canon, len) != (ssize_t)len)
		ret = -EIO;
	close(fd);
	return ret;
}

void du_sdir_unmark_given(const char *canon)
{
	char path[128];

	given_path(canon, path, sizeof(path));
	(void)unlink(path);
}

/* Is @canon noted as given? */
static bool is_given(const char *canon)
{
	char path[128], buf[PATH_MAX + 1];
	ssize_t n;
	int fd;

	given_path(canon, path, sizeof(path));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return !strcmp(buf, canon);
}

int du_sdir_take_back(const char *dir, uid_t worker, char *msg, size_t msglen)
{
	struct stat sb;
	int ret;

	if (geteuid() != 0 || worker == 0 || lstat(dir, &sb) || !S_ISDIR(sb.st_mode) ||
	    sb.st_uid != worker || !is_given(dir))
		return 0;
	ret = du_sdir_chown_tree(dir, 0, 0);
	if (ret)
		return ret;
	du_sdir_unmark_given(dir);
	snprintf(msg, msglen, "took back session directory %s from uid %u, the privsep worker's "
		 "user: the daemon that ran there was stopped without giving it back (killed?)",
		 dir, (unsigned)worker);
	return 1;
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
