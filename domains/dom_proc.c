#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dom_proc.h"

pid_t dom_proc_pid(const char *name)
{
	char *end;
	long v;

	if (name[0] < '1' || name[0] > '9')
		return 0;
	errno = 0;
	v = strtol(name, &end, 10);
	if (*end || errno || v <= 0 || v > INT_MAX)
		return 0;
	return (pid_t)v;
}

/* The field after the one @p is in (past its space), or NULL at the end. */
static const char *next_field(const char *p, const char *end)
{
	p = memchr(p, ' ', (size_t)(end - p));
	return p ? p + 1 : NULL;
}

int dom_proc_stat(int dirfd, pid_t pid, struct dom_pstat *st)
{
	char path[32], buf[1024];
	const char *open_p, *close_p, *p, *end;
	size_t got = 0, len;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "%d/stat", (int)pid);
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while (got < sizeof(buf) - 1) {
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	end = buf + got;
	/* "PID (COMM) S PPID ...": COMM may hold any bytes, ')' and spaces
	 * too, so it ends at the last ')' and fields are counted from there */
	open_p = memchr(buf, '(', got);
	close_p = memrchr(buf, ')', got);
	if (!open_p || !close_p || close_p < open_p || close_p + 2 >= end)
		return -EINVAL;
	len = (size_t)(close_p - open_p - 1);
	if (len >= sizeof(st->comm))
		len = sizeof(st->comm) - 1;
	memcpy(st->comm, open_p + 1, len);
	st->comm[len] = '\0';
	p = close_p + 2;	/* field 3 */
	st->state = *p;
	st->flags = 0;
	for (field = 3; field < 22 && p; field++) {
		p = next_field(p, end);
		if (p && field + 1 == 9)
			st->flags = strtoul(p, NULL, 10);
	}
	if (!p)
		return -EINVAL;
	st->start = strtoull(p, NULL, 10);
	return 0;
}
