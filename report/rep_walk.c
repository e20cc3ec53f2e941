#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rep_walk.h"
#include "util/du_fs.h"
#include "util/du_log.h"

/* Deeper than any sample file name goes (doc/sample-files.md). */
#define WALK_MAX_DEPTH 32
#define WALK_BUF 32768

struct walk {
	const struct rep_walk_ops *ops;
	void *ctx;
	char path[PATH_MAX];	/* the entry at hand */
	size_t rootlen;
	char *buf[WALK_MAX_DEPTH + 1];	/* a directory's entries, per level */
	int rc;
};

static void walk_dir(struct walk *w, int fd, size_t len, unsigned int level, const char *parent);

/* The type of entry @name of directory @fd, looked up where the
 * directory does not say (no link followed); DT_UNKNOWN when it fails. */
static unsigned char entry_type(int fd, const char *name, unsigned char type)
{
	struct stat sb;

	if (type != DT_UNKNOWN)
		return type;
	if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW))
		return DT_UNKNOWN;
	return S_ISDIR(sb.st_mode) ? DT_DIR : S_ISREG(sb.st_mode) ? DT_REG : DT_UNKNOWN;
}

/* Directory @name, an entry at @level of directory @fd, its path the
 * first @len bytes of w->path. */
static void walk_subdir(struct walk *w, int fd, size_t len, unsigned int level, const char *name)
{
	int sub;

	if (level >= WALK_MAX_DEPTH) {
		du_warn("cannot read %s: %s", w->path, strerror(ELOOP));
		return;
	}
	sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) {
		du_warn("cannot read %s: %s", w->path, strerror(errno));
		return;
	}
	walk_dir(w, sub, len, level + 1, name);
	close(sub);
}

/* The entries of directory @fd at @level, its path the first @len bytes
 * of w->path, its name @parent. */
static void walk_dir(struct walk *w, int fd, size_t len, unsigned int level, const char *parent)
{
	struct du_dents d = { .fd = fd, .buf = w->buf[level], .size = WALK_BUF };
	const struct dirent64 *de;

	if (!d.buf) {
		d.buf = w->buf[level] = malloc(WALK_BUF);
		if (!d.buf) {
			w->rc = -ENOMEM;
			return;
		}
	}
	while (!w->rc && (de = du_dents_next(&d))) {
		size_t nlen = strlen(de->d_name);
		unsigned char type = entry_type(fd, de->d_name, de->d_type);

		if (len + 1 + nlen >= sizeof(w->path)) {
			w->path[len] = '\0';
			du_warn("cannot read %s/%s: %s", w->path, de->d_name, strerror(ENAMETOOLONG));
			continue;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, de->d_name, nlen + 1);
		if (type == DT_REG)
			w->rc = w->ops->file(w->ctx, w->path, w->path + w->rootlen + 1, level,
					     fd, de->d_name);
		else if (type == DT_DIR && w->ops->dir_ok(w->ctx, level, parent, de->d_name))
			walk_subdir(w, fd, len + 1 + nlen, level, de->d_name);
	}
	if (!w->rc && errno) {
		w->path[len] = '\0';
		du_warn("cannot read %s: %s", w->path, strerror(errno));
	}
}

int rep_walk(const char *dir, const struct rep_walk_ops *ops, void *ctx)
{
	struct walk *w = calloc(1, sizeof(*w));
	size_t len = strlen(dir);
	int fd, rc;

	if (!w)
		return -ENOMEM;
	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (len >= sizeof(w->path)) {
		free(w);
		return -ENAMETOOLONG;
	}
	memcpy(w->path, dir, len);
	w->path[len] = '\0';
	w->rootlen = len;
	w->ops = ops;
	w->ctx = ctx;
	fd = open(w->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		walk_dir(w, fd, len, 1, "");
		close(fd);
	} else if (errno != ENOENT) {
		du_warn("cannot read %s: %s", w->path, strerror(errno));
	}
	rc = w->rc;
	for (unsigned int i = 0; i <= WALK_MAX_DEPTH; i++)
		free(w->buf[i]);
	free(w);
	return rc;
}
