#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "util/du_fs.h"

int du_mkdir_parents(char *path, size_t from, mode_t mode)
{
	for (char *p = path + from; *p; p++) {
		if (*p != '/' || p == path)
			continue;
		*p = '\0';
		if (mkdir(path, mode) && errno != EEXIST) {
			int ret = -errno;

			*p = '/';
			return ret;
		}
		*p = '/';
	}
	return 0;
}

int du_mkdir_p(const char *dir)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s/", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	return du_mkdir_parents(buf, 0, 0755);
}

ssize_t du_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

const struct dirent64 *du_dents_next(struct du_dents *d)
{
	for (;;) {
		const struct dirent64 *de;

		if (d->off >= d->n) {
			d->n = getdents64(d->fd, d->buf, d->size);
			d->off = 0;
			if (d->n <= 0) {
				errno = d->n < 0 ? errno : 0;
				d->n = 0;
				return NULL;
			}
		}
		de = (const struct dirent64 *)(d->buf + d->off);
		d->off += de->d_reclen;
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			return de;
	}
}

int du_openat2_beneath(int dfd, const char *rel, int flags, mode_t mode)
{
#ifdef SYS_openat2
	static int have = 1;
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.mode = flags & O_CREAT ? mode : 0,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
	};
	long fd;

	if (!have)
		return -ENOSYS;
	fd = syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	if (errno == ENOSYS || errno == EPERM)
		have = 0;
	return errno == ENOSYS || errno == EPERM ? -ENOSYS : -errno;
#else
	(void)dfd;
	(void)rel;
	(void)flags;
	(void)mode;
	return -ENOSYS;
#endif
}

/* Are @rel's components all names (none empty, ".", ".." or too long)? */
static int rel_ok(const char *rel)
{
	for (const char *p = rel, *q = rel;; q++) {
		if (*q && *q != '/')
			continue;
		if (q == p || q - p > NAME_MAX || (q - p == 1 && p[0] == '.') ||
		    (q - p == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (!*q)
			return 1;
		p = q + 1;
	}
}

/* du_open_beneath_walk of a @rel and @flags already checked */
static int walk_beneath(int dfd, const char *rel, int flags)
{
	char comp[NAME_MAX + 1];
	const char *p = rel;
	int cur = dfd, fd;

	for (;;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		memcpy(comp, p, len);
		comp[len] = '\0';
		fd = openat(cur, comp, slash ? O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
					     : flags | O_NOFOLLOW | O_CLOEXEC);
		fd = fd < 0 ? -errno : fd;
		if (!slash || fd < 0)
			break;
		if (cur != dfd)
			close(cur);
		cur = fd;
		p = slash + 1;
	}
	if (cur != dfd)
		close(cur);
	return fd;
}

int du_open_beneath_walk(int dfd, const char *rel, int flags)
{
	if (!rel_ok(rel) || (flags & O_CREAT))
		return -EINVAL;
	return walk_beneath(dfd, rel, flags);
}

int du_open_beneath(int dfd, const char *rel, int flags)
{
	int fd;

	if (!rel_ok(rel) || (flags & O_CREAT))
		return -EINVAL;
	fd = du_openat2_beneath(dfd, rel, flags, 0);
	return fd != -ENOSYS ? fd : walk_beneath(dfd, rel, flags);
}

int du_open_beneath_file(int dfd, const char *rel)
{
	int fd = du_open_beneath(dfd, rel, O_RDONLY | O_NONBLOCK), e;
	struct stat sb;

	if (fd < 0)
		return fd;
	if (fstat(fd, &sb))
		e = errno;
	else if (!S_ISREG(sb.st_mode))
		e = EINVAL;
	else if (fcntl(fd, F_SETFL, 0))
		e = errno;
	else
		return fd;
	close(fd);
	return -e;
}

FILE *du_fopen_beneath(const char *dir, const char *rel)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	FILE *f;

	if (dfd < 0)
		return NULL;
	fd = du_open_beneath_file(dfd, rel);
	close(dfd);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

int du_rm_tree(const char *dir)
{
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
