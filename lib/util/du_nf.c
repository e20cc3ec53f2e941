/*
 * The walks of util/du_sdir.h's du_nf_* functions: a path below the
 * session opened one component at a time with O_NOFOLLOW (or in one
 * openat2 that refuses the same), and the worker's roots.  The session
 * directory's own checks are in du_sdir.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/du_fs.h"
#include "util/du_io.h"
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

/* Directory @comp of @dfd, made if missing and @mkdirs; *@made: it was
 * made now (then the ones below it are missing too: they are made first,
 * not looked for). */
static int open_dir_at(int dfd, const char *comp, bool mkdirs, bool *made)
{
	struct stat sb;
	int fd = -1;

	if (!*made)
		fd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if ((*made || (fd < 0 && errno == ENOENT)) && mkdirs) {
		if (!mkdirat(dfd, comp, DU_SDIR_DIR_MODE))
			*made = true;
		else if (errno != EEXIST)
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

/*
 * The roots of du_nf_root_add(): process state, like the working
 * directory, set once before the privsep worker drops root and read by
 * every walk after; there is no other place a path's resolution could
 * come from without threading a context through every module that
 * writes in the session.
 */
#define NF_MAX_ROOTS 4
static struct nf_root {
	char path[PATH_MAX];
	size_t len;
	int fd;
} nf_roots[NF_MAX_ROOTS];
static unsigned int nf_nr_roots;

int du_nf_root_add(const char *path, int fd)
{
	struct nf_root *r = &nf_roots[nf_nr_roots];
	size_t len = strlen(path);

	if (path[0] != '/' || len < 2 || len >= sizeof(r->path) || path[len - 1] == '/')
		return -EINVAL;
	for (unsigned int i = 0; i < nf_nr_roots; i++) {
		if (nf_roots[i].len == len && !memcmp(nf_roots[i].path, path, len)) {
			close(nf_roots[i].fd);	/* the same path, a new directory */
			nf_roots[i].fd = fd;
			return 0;
		}
	}
	if (nf_nr_roots == NF_MAX_ROOTS)
		return -ENOSPC;
	memcpy(r->path, path, len + 1);
	r->len = len;
	r->fd = fd;
	nf_nr_roots++;
	return 0;
}

/* The root @path lies in (up to @end), with *@rest what follows it; NULL
 * when there is none. */
static const struct nf_root *nf_root_of(const char *path, const char *end, const char **rest)
{
	for (unsigned int i = 0; i < nf_nr_roots; i++) {
		const struct nf_root *r = &nf_roots[i];

		if ((size_t)(end - path) >= r->len && !memcmp(path, r->path, r->len) &&
		    (path + r->len == end || path[r->len] == '/')) {
			*rest = path + r->len;
			return r;
		}
	}
	return NULL;
}

/* @path from *@p up to @end, its components checked as the walk would
 * (none empty, "." or ".."), copied without the leading '/' to @rel. */
static int rel_path(const char *p, const char *end, char rel[PATH_MAX])
{
	char comp[NAME_MAX + 1];
	size_t off = 0, n;
	int ret;

	while (p < end) {
		ret = next_comp(&p, comp);
		if (ret <= 0 || p > end)
			return ret < 0 ? ret : -EINVAL;
		n = strlen(comp);
		if (off + n + 2 > PATH_MAX)
			return -ENAMETOOLONG;
		if (off)
			rel[off++] = '/';
		memcpy(rel + off, comp, n);
		off += n;
	}
	rel[off] = '\0';
	return 0;
}

/*
 * The deepest directory of @rel (a path that is not all there, below
 * @dfd) that one openat2 opens, from the longest prefix back: a sample
 * file's new directory is most often one or two names below one that is
 * there.  Its fd, with *@p moved past the names it covers (@rel is *@p's
 * rest without its leading '/'); -ENOENT for none (then *@p is as it
 * was); another -errno where openat2 found something the walk must look
 * at (a link) or cannot be used.
 */
static int deepest_there(int dfd, char *rel, const char **p)
{
	char *slash;
	int fd;

	while ((slash = strrchr(rel, '/'))) {
		*slash = '\0';
		fd = du_openat2_beneath(dfd, rel, O_RDONLY | O_DIRECTORY, 0);
		if (fd != -ENOENT) {
			if (fd >= 0)
				*p += 1 + (size_t)(slash - rel);
			return fd;
		}
	}
	return -ENOENT;
}

/* The walk from @dfd (its fd, taken) over *@p's names up to @end, made
 * where missing if @mkdirs (@made: the first is known missing). */
static int walk_from(int dfd, const char *p, const char *end, bool mkdirs, bool made)
{
	char comp[NAME_MAX + 1];
	int fd, ret;

	while (p < end) {
		ret = next_comp(&p, comp);
		if (ret <= 0 || p > end) {
			close(dfd);
			return ret < 0 ? ret : -EINVAL;
		}
		fd = open_dir_at(dfd, comp, mkdirs, &made);
		close(dfd);
		if (fd < 0)
			return fd;
		dfd = fd;
	}
	return dfd;
}

/* The directory @path names up to @end (a '/' or its NUL), each component
 * opened below the previous one with O_NOFOLLOW, from "/" or, once roots
 * were set, from the root it lies in (none: -EACCES).  The fd or -errno.
 * Where the directory is there, one openat2 does the same (2,000 sample
 * files 12 directories deep cost 48,000 calls to open at a daemon's
 * start, one at a time); where it is not, -ENOENT at once, or with
 * @mkdirs the walk makes the rest from the deepest one there (a new
 * sample file's directory had the walk from the root twice: 22 opens and
 * closes a file). */
static int walk(const char *path, const char *end, bool mkdirs)
{
	char rel[PATH_MAX];
	const char *p = path;
	const struct nf_root *r = NULL;
	bool made = false;
	int dfd, fd;

	if (path[0] != '/')
		return -EINVAL;
	if (nf_nr_roots) {
		r = nf_root_of(path, end, &p);
		if (!r)
			return -EACCES;
	}
	/* the root's fd is borrowed; "/" is opened here, and the walk goes on
	 * from it if openat2 cannot do the whole */
	dfd = r ? r->fd : open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (p < end && !rel_path(p, end, rel)) {
		/* (du_fs.h: the same refusals as the walk below) */
		fd = du_openat2_beneath(dfd, rel, O_RDONLY | O_DIRECTORY, 0);
		if (fd >= 0)
			p = end;
		else if (fd == -ENOENT && mkdirs) {
			/* what follows the deepest one there is missing */
			fd = deepest_there(dfd, rel, &p);
			made = fd >= 0 || fd == -ENOENT;
		}
		if (fd >= 0 || (fd == -ENOENT && !mkdirs)) {
			if (!r)
				close(dfd);
			return fd < 0 || p == end ? fd : walk_from(fd, p, end, mkdirs, made);
		}
		/* none there (made: from the root), or a name the walk must
		 * look at to say what is wrong */
	}
	if (r && (dfd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return -errno;
	return walk_from(dfd, p, end, mkdirs, made);
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

int du_fd_check_own(int fd, uid_t owner)
{
	struct stat sb;

	if (fstat(fd, &sb))
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -EINVAL;
	if (sb.st_nlink != 1)
		return -EMLINK;
	if (sb.st_uid != geteuid() && sb.st_uid != owner)
		return -EPERM;
	return 0;
}

const char *du_own_strerror(int err)
{
	switch (err) {
	case -ELOOP:
		return "a symbolic link (not followed)";
	case -EMLINK:
		return "a file with more than one name (a hard link: not written)";
	case -EPERM:
		return "owned by another user (not written)";
	case -EINVAL:
		return "not a regular file";
	default:
		return strerror(-err);
	}
}

int du_openat_own(int dfd, const char *base, int flags, mode_t mode)
{
	int acc = flags & O_ACCMODE, fd = -1, ret;
	struct stat dsb;

	flags |= O_NOFOLLOW | O_CLOEXEC;
	if (acc == O_RDONLY && !(flags & O_CREAT)) {
		fd = openat(dfd, base, flags);
		return fd < 0 ? -errno : fd;
	}
	/* fresh, or an existing file looked at before it is used; a few
	 * rounds: an entry removed between the two opens is made anew */
	for (int round = 0; round < 3; round++) {
		if (flags & O_CREAT) {
			fd = openat(dfd, base, (flags | O_EXCL) & ~O_TRUNC, mode);
			if (fd >= 0)
				return fd;
			if (errno != EEXIST || (flags & O_EXCL))
				return -errno;
		}
		/* (non-blocking: a FIFO planted here must not hang us) */
		fd = openat(dfd, base, (flags & ~(O_CREAT | O_EXCL | O_TRUNC)) | O_NONBLOCK);
		if (fd >= 0 || errno != ENOENT || !(flags & O_CREAT))
			break;
	}
	if (fd < 0)
		return -errno;
	/* the directory's owner could have replaced the file anyway */
	if (dfd == AT_FDCWD)
		dsb.st_uid = geteuid();
	else if (fstat(dfd, &dsb))
		dsb.st_uid = geteuid();
	ret = du_fd_check_own(fd, dsb.st_uid);
	if (!ret && (flags & O_TRUNC) && ftruncate(fd, 0))
		ret = -errno;
	/* (O_NONBLOCK stays: on the regular file checked it changes nothing) */
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * du_nf_open's quick way, for a file below a root (the worker's) that is
 * there or made here: the whole path in one openat2 from the root, which
 * refuses every link and any way out as the walk does, then accepted only
 * where the walk would accept it with nothing more to look at (a regular
 * file with one name, our own; or any file read).  The fd, or -errno:
 * then du_nf_open takes the walk, which makes directories, accepts a file
 * of the directory's owner and says exactly what is wrong.
 */
static int open_file_beneath(const char *path, int flags, mode_t mode)
{
	const char *end = path + strlen(path), *p;
	const struct nf_root *r = nf_nr_roots ? nf_root_of(path, end, &p) : NULL;
	bool rd = (flags & O_ACCMODE) == O_RDONLY && !(flags & O_CREAT);
	char rel[PATH_MAX];
	int fd;

	if (!r || p == end || (flags & O_TRUNC) || rel_path(p, end, rel))
		return -ENOSYS;
	fd = du_openat2_beneath(r->fd, rel, flags | (rd ? 0 : O_NONBLOCK), mode);
	if (fd < 0)
		return fd;
	/* (made by this call with O_EXCL: ours, whoever the file system
	 * says owns it) */
	if (rd || (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) ||
	    !du_fd_check_own(fd, geteuid()))
		return fd;
	close(fd);
	return -EPERM;
}

int du_nf_open(const char *path, int flags, mode_t mode, bool mkdirs)
{
	const char *base, *rest;
	int dfd, fd;

	fd = open_file_beneath(path, flags, mode);
	/* (a file it could have made is missing: its directory is, which
	 * the walk would only find again) */
	if (fd >= 0 || (fd == -ENOENT && (flags & O_CREAT) && !mkdirs))
		return fd;

	/* a root itself: what the worker was handed, not its parent */
	if (nf_nr_roots && nf_root_of(path, path + strlen(path), &rest) && !*rest) {
		fd = openat(nf_root_of(path, path + strlen(path), &rest)->fd, ".",
			    (flags & ~O_CREAT) | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	dfd = du_nf_open_parent(path, mkdirs, &base);
	if (dfd < 0)
		return dfd;
	fd = du_openat_own(dfd, base, flags, mode);
	close(dfd);
	return fd;
}

int du_nf_open_made(const char *path, size_t there, int flags, mode_t mode)
{
	char comp[NAME_MAX + 1];
	const char *last = strrchr(path, '/'), *p = last;
	int dfd, fd;

	flags |= O_CREAT;
	if (path[0] != '/' || !there || there > (size_t)(last - path) || path[there] != '/' ||
	    next_comp(&p, comp) <= 0)
		return du_nf_open(path, flags, mode, true);
	/* (one openat2 below the root it lies in) */
	dfd = walk(path, path + there, false);
	if (dfd < 0)	/* gone, or not to be opened: the whole walk says */
		return du_nf_open(path, flags, mode, true);
	dfd = walk_from(dfd, path + there, last, true, true);
	if (dfd < 0)
		return dfd;
	fd = du_openat_own(dfd, last + 1, flags, mode);
	close(dfd);
	return fd;
}

int du_nf_write_atomic(const char *path, const char *tmp, const void *buf, size_t len,
		       mode_t mode)
{
	int fd, ret;

	ret = du_nf_unlink(tmp);	/* a crashed writer's */
	if (ret && ret != -ENOENT)
		return ret;
	fd = du_nf_open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode, false);
	if (fd < 0)
		return fd;
	ret = du_write_all(fd, buf, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret)
		ret = du_nf_rename(tmp, path);
	if (ret)
		du_nf_unlink(tmp);
	return ret;
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

int du_nf_lstat(const char *path, struct stat *sb)
{
	const char *base;
	int dfd, ret = 0;

	dfd = du_nf_open_parent(path, false, &base);
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, base, sb, AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	close(dfd);
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
