/*
 * The agent channel in a Xen guest: a PV console channel (xl
 * channel=["name=org.domprof.agent.0,..."]).  Its name is in xenstore under
 * the guest's device/console/N/name (N >= 1; console 0 is the primary
 * console), read here through /dev/xen/xenbus with the xenstore wire
 * protocol; its tty is /dev/hvcM.
 *
 * The answer comes from dom0's xenstored, but it is read like anything
 * untrusted: a bounded length, the request's id, a deadline for the whole
 * exchange.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_log.h"

#define AG_XENBUS_DEV	"/dev/xen/xenbus"
#define AG_XS_TIMEOUT_MS 2000
/* Console channels looked at: Linux's hvc_xen takes the console number
 * from the last character of the device's name, so 1..9 are all it serves. */
#define AG_XEN_CONSOLES	9

ssize_t ag_xs_request(uint8_t *buf, size_t size, uint32_t type, uint32_t req_id, const char *path)
{
	struct ag_xs_hdr h = { .type = type, .req_id = req_id };
	size_t n = strlen(path) + 1;

	if (n > AG_XS_PAYLOAD_MAX)
		return -ENAMETOOLONG;
	if (size < sizeof(h) + n)
		return -ENOSPC;
	h.len = (uint32_t)n;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), path, n);
	return (ssize_t)(sizeof(h) + n);
}

/* XS_ERROR's payload is an errno name ("ENOENT"). */
static int xs_error(const uint8_t *p, size_t n)
{
	static const struct { const char *name; int err; } names[] = {
		{ "ENOENT", ENOENT }, { "EACCES", EACCES }, { "EINVAL", EINVAL },
		{ "E2BIG", E2BIG }, { "EAGAIN", EAGAIN }, { "EIO", EIO },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t l = strlen(names[i].name);

		if ((n == l || (n == l + 1 && !p[l])) && !memcmp(p, names[i].name, l))
			return -names[i].err;
	}
	return -EIO;
}

ssize_t ag_xs_parse_read(const uint8_t *buf, size_t len, uint32_t req_id, char *out, size_t cap)
{
	struct ag_xs_hdr h;
	const uint8_t *p = buf + sizeof(h);
	size_t n;

	if (len < sizeof(h))
		return -EAGAIN;
	memcpy(&h, buf, sizeof(h));
	if (h.len > AG_XS_PAYLOAD_MAX || h.req_id != req_id ||
	    (h.type != AG_XS_READ && h.type != AG_XS_ERROR))
		return -EPROTO;
	if (len - sizeof(h) < h.len)
		return -EAGAIN;
	if (len - sizeof(h) > h.len)
		return -EPROTO;		/* one request, one answer: nothing after it */
	if (h.type == AG_XS_ERROR)
		return xs_error(p, h.len);
	n = h.len;
	if (n && !p[n - 1])
		n--;			/* a value may come with its NUL */
	if (memchr(p, '\0', n) || n >= cap)
		return -EMSGSIZE;
	memcpy(out, p, n);
	out[n] = '\0';
	return (ssize_t)n;
}

static int elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int)((t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000);
}

ssize_t ag_xs_read(int fd, uint32_t req_id, const char *path, char *out, size_t cap)
{
	uint8_t req[sizeof(struct ag_xs_hdr) + 256];
	uint8_t ans[sizeof(struct ag_xs_hdr) + AG_XS_PAYLOAD_MAX];
	size_t have = 0;
	struct timespec t0;
	ssize_t n = ag_xs_request(req, sizeof(req), AG_XS_READ, req_id, path);

	if (n < 0)
		return n;
	/* the xenbus device takes a message in one write */
	if (write(fd, req, (size_t)n) != n)
		return -EIO;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = AG_XS_TIMEOUT_MS - elapsed_ms(&t0), r;
		ssize_t got;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r ? -errno : -ETIMEDOUT;
		got = read(fd, ans + have, sizeof(ans) - have);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return got ? -errno : -EIO;
		have += (size_t)got;
		n = ag_xs_parse_read(ans, have, req_id, out, cap);
		if (n != -EAGAIN)
			return n;
		if (have == sizeof(ans))
			return -EPROTO;
	}
}

/* Is xenbus device console-@k bound to a driver (hvc_xen made it a tty)? */
static bool console_bound(unsigned int k)
{
	char p[96];

	snprintf(p, sizeof(p), "/sys/bus/xen/devices/console-%u/driver", k);
	return !access(p, F_OK);
}

unsigned int ag_xen_hvc_index(unsigned int n, bool (*bound)(unsigned int k))
{
	unsigned int m = 1;

	/* hvc0 is the primary console; hvc_xen gives every channel it
	 * probes the next free index, in the order xenbus lists them */
	for (unsigned int k = 1; k < n; k++)
		if (bound(k))
			m++;
	return m;
}

static bool any_console(unsigned int k)
{
	return true;
}

char *ag_xen_port_find(void)
{
	bool sysfs = !access("/sys/bus/xen/devices", F_OK);
	char path[64], val[128];
	char *found = NULL;
	int fd = open(AG_XENBUS_DEV, O_RDWR | O_CLOEXEC);
	int err = ENOENT;

	if (fd < 0) {
		errno = ENOENT;
		return NULL;
	}
	for (unsigned int k = 1; k <= AG_XEN_CONSOLES; k++) {
		ssize_t r;
		unsigned int m;

		snprintf(path, sizeof(path), "device/console/%u/name", k);
		r = ag_xs_read(fd, k, path, val, sizeof(val));
		if (r == -ENOENT || r == -EMSGSIZE)
			continue;
		if (r < 0) {
			/* a broken answer: the stream may be out of step, stop */
			du_info("xenstore %s: %s", path, strerror((int)-r));
			err = -(int)r;
			break;
		}
		if (strcmp(val, DP_AG_PORT_NAME))
			continue;
		if (sysfs && !console_bound(k)) {
			du_info("xen console %u is %s but has no tty", k, DP_AG_PORT_NAME);
			break;
		}
		m = ag_xen_hvc_index(k, sysfs ? console_bound : any_console);
		snprintf(path, sizeof(path), "/dev/hvc%u", m);
		if (access(path, F_OK)) {
			du_info("xen console %u is %s but %s is missing", k, DP_AG_PORT_NAME, path);
			break;
		}
		found = strdup(path);
		err = found ? 0 : ENOMEM;
		break;
	}
	close(fd);
	if (!found)
		errno = err;
	return found;
}
