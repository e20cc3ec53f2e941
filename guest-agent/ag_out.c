/*
 * The channel: frames are batched in one buffer and written in large
 * pieces.  The port is non-blocking so that a host that stops reading, or
 * goes away mid-write, shows up as a timeout or POLLHUP instead of an agent
 * stuck in write() forever.  A Xen PV console (a tty) shows no hang-up:
 * there a shorter timeout is what says the host is gone (dom0's backend
 * stops taking bytes once its ring is full and nobody reads).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_log.h"

/* A host that takes no bytes for this long is treated as gone. */
#define AG_WRITE_TIMEOUT_MS	30000
#define AG_TTY_WRITE_TIMEOUT_MS	5000

uint64_t ag_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int ag_out_init(struct ag_out *o, size_t cap)
{
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	/* Room for the largest frame, so a flush always makes room. */
	if (cap < sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD)
		cap = sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD;
	o->buf = malloc(cap);
	if (!o->buf)
		return -ENOMEM;
	o->cap = cap;
	return 0;
}

void ag_out_free(struct ag_out *o)
{
	free(o->buf);
	o->buf = NULL;
}

int ag_out_flush(struct ag_out *o)
{
	size_t off = 0;
	int err = 0;

	if (o->fd < 0) {
		o->len = 0;
		return -EPIPE;
	}
	while (off < o->len) {
		ssize_t n = write(o->fd, o->buf + off, o->len - off);
		struct pollfd pfd = { .fd = o->fd, .events = POLLOUT };
		int r;

		if (n > 0) {
			off += (size_t)n;
			o->bytes += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			err = -errno;
			break;
		}
		r = poll(&pfd, 1, o->is_tty ? AG_TTY_WRITE_TIMEOUT_MS : AG_WRITE_TIMEOUT_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))) {
			err = -EPIPE;
			break;
		}
	}
	/* Whatever was not written belongs to a connection that is over. */
	o->len = 0;
	return err;
}

static bool port_name_is_ours(const char *dir, const char *ent)
{
	char path[512], name[128];
	FILE *f;
	bool ok = false;

	snprintf(path, sizeof(path), "%s/%s/name", dir, ent);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = '\0';
		ok = !strcmp(name, DP_AG_PORT_NAME);
	}
	fclose(f);
	return ok;
}

char *ag_port_find(void)
{
	static const char sysdir[] = "/sys/class/virtio-ports";
	char path[512];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/dev/virtio-ports/%s", DP_AG_PORT_NAME);
	if (!access(path, F_OK))
		return strdup(path);
	/* No udev in a minimal guest: the name is in sysfs, the node is vportNpM. */
	d = opendir(sysdir);
	if (!d)
		return ag_xen_port_find();
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !port_name_is_ours(sysdir, de->d_name))
			continue;
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		closedir(d);
		if (access(path, F_OK)) {
			errno = ENOENT;
			return NULL;
		}
		return strdup(path);
	}
	closedir(d);
	return ag_xen_port_find();
}

int ag_port_open(const char *path, bool *is_tty)
{
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct termios t;

	if (fd < 0)
		return -errno;
	*is_tty = isatty(fd);
	if (!*is_tty)
		return fd;
	/* Binary frames: no echo, no line editing, no CR/LF mapping, no
	 * signals from bytes, 8 bits. */
	if (tcgetattr(fd, &t)) {
		int err = -errno;

		close(fd);
		return err;
	}
	cfmakeraw(&t);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSANOW, &t)) {
		int err = -errno;

		close(fd);
		return err;
	}
	tcflush(fd, TCIOFLUSH);
	return fd;
}

bool ag_port_connected(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };

	/* virtio_console reports POLLHUP while the host side is closed. */
	if (poll(&pfd, 1, 0) < 0)
		return false;
	return !(pfd.revents & (POLLHUP | POLLERR | POLLNVAL));
}
