#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "util/du_fs.h"

int du_mkdir_parents(char *path, size_t from)
{
	for (char *p = path + from; *p; p++) {
		if (*p != '/' || p == path)
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
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
	return du_mkdir_parents(buf, 0);
}
