#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
