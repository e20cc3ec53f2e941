#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "opd_pub.h"
#include "util/du_sdir.h"

/* The file's name and its temporary name, by the type's letter. */
static int names(char which, const char *session, char *path, char *tmp, size_t size)
{
	const char *base = which == OPD_PUB_STATS ? "stats" :
			   which == OPD_PUB_CONF ? "session.conf" : NULL;

	if (!base)
		return -EBADMSG;
	if (snprintf(path, size, "%s/%s", session, base) >= (int)size ||
	    snprintf(tmp, size, "%s/.%s.tmp", session, base) >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

int opd_pub_write(int fd, const char *session, enum opd_pub_file which, const char *buf,
		  size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	char *msg;
	ssize_t n;
	int ret;

	if (len > OPD_PUB_MAX)
		return -EMSGSIZE;
	if (fd < 0) {
		ret = names((char)which, session, path, tmp, sizeof(path));
		return ret ? ret : du_nf_write_atomic(path, tmp, buf, len, DU_SDIR_FILE_MODE);
	}
	msg = malloc(len + 1);
	if (!msg)
		return -ENOMEM;
	msg[0] = (char)which;
	memcpy(msg + 1, buf, len);
	n = send(fd, msg, len + 1, MSG_NOSIGNAL);
	ret = n < 0 ? -errno : (size_t)n != len + 1 ? -EIO : 0;
	free(msg);
	return ret;
}

int opd_pub_serve(int fd, const char *session)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	char msg[OPD_PUB_MAX + 2];
	ssize_t n;
	int ret;

	n = recv(fd, msg, sizeof(msg), MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (n == 0)
		return -EPIPE;
	/* a file of text, whole: no NUL, no more than fits */
	if ((size_t)n > OPD_PUB_MAX + 1 || memchr(msg + 1, '\0', (size_t)n - 1))
		return -EBADMSG;
	ret = names(msg[0], session, path, tmp, sizeof(path));
	if (ret)
		return ret;
	return du_nf_write_atomic(path, tmp, msg + 1, (size_t)n - 1, DU_SDIR_FILE_MODE);
}
