/*
 * The file collector: replay a recorded raw stream (--input=FILE).  The
 * file is read into one buffer, a window at a time, and each window's
 * whole records are handed to the daemon in place; a record cut by the
 * window's end moves to the buffer's start and the next read extends it.
 * The loop reacts to signals between windows.  (A buffer used over and
 * over costs a copy from the page cache; a mapping of the file costs a
 * page fault for each 4 KiB, dearer than the copy, and as much memory as
 * the file.)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "domprof/raw.h"
#include "opd_collector.h"
#include "util/du_log.h"

/* Read window: small enough to stay in the CPU's caches while it is
 * decoded and to react to signals at once, large enough that per-read
 * costs vanish; it holds the largest record many times over. */
#define WINDOW (1UL << 20)
_Static_assert(WINDOW > 4 * (DP_RAW_MAX_PAYLOAD + 2 * DP_RAW_WORD), "a record fits a window");

struct collect_file {
	const char *path;
	const struct opd_raw_sink *sink;
	uint8_t *buf;		/* WINDOW bytes */
	size_t len;		/* in buf: a cut record carried over, then read */
	uint64_t off;		/* stream offset of buf[0] */
	bool eof;		/* read() returned 0 */
	int fd;
	bool failed;		/* read() failed: no "stopped at" message */
};

static void file_close(void *state)
{
	struct collect_file *f = state;

	if (!f)
		return;
	free(f->buf);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static int file_open(const struct opd_collector_args *a, void **state)
{
	struct collect_file *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return -ENOMEM;
	f->path = a->conf->input;
	f->sink = a->sink;
	f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		ret = -errno;
		du_err("cannot open %s: %s", f->path, strerror(errno));
		goto out_close;
	}
	f->buf = malloc(WINDOW);
	if (!f->buf) {
		ret = -ENOMEM;
		goto out_close;
	}
	posix_fadvise(f->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	*state = f;
	return 0;

out_close:
	file_close(f);
	return ret;
}

/* Fill the buffer after what it holds.  0 or -errno (logged). */
static int file_fill(struct collect_file *f)
{
	while (f->len < WINDOW && !f->eof) {
		ssize_t n = read(f->fd, f->buf + f->len, WINDOW - f->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			du_err("cannot read %s: %s", f->path, strerror(errno));
			f->failed = true;
			return -errno;
		}
		if (!n)
			f->eof = true;
		f->len += (size_t)n;
	}
	return 0;
}

static size_t file_pollfds(void *state, struct pollfd *pfd, size_t max)
{
	(void)state;
	(void)pfd;
	(void)max;
	return 0;	/* always ready */
}

/* The stream's own header starts the file: nothing to write. */
static int file_start(void *state)
{
	(void)state;
	return 0;
}

/* The stream cut off at the end of the file, or an empty file. */
static int file_truncated(struct collect_file *f)
{
	if (!f->off && !f->len)
		du_err("%s: empty file, no stream header at byte offset 0", f->path);
	else if (!f->off)
		du_err("%s: truncated stream header at byte offset 0", f->path);
	else
		du_err("%s: truncated record at byte offset %" PRIu64, f->path, f->off);
	f->failed = true;
	return -EBADMSG;
}

/* One window of whole records. */
static int file_read(void *state, const struct pollfd *pfd, size_t n)
{
	struct collect_file *f = state;
	size_t used = 0;
	int ret;

	(void)pfd;
	(void)n;
	ret = file_fill(f);
	if (ret)
		return ret;
	if (f->eof && !f->len && f->off)
		return OPD_COLLECT_EOF;
	ret = f->len ? f->sink->decode(f->sink->ctx, f->buf, f->len, &used) : 0;
	if (ret) {
		f->failed = true;
		return ret;
	}
	f->off += used;
	f->len -= used;
	memmove(f->buf, f->buf + used, f->len);
	if (f->eof && (f->len || !f->off))
		return file_truncated(f);	/* what is left is cut off */
	return f->eof ? OPD_COLLECT_EOF : 0;
}

static int file_stop(void *state)
{
	struct collect_file *f = state;

	if ((!f->eof || f->len) && !f->failed)
		du_info("%s: stopped at byte offset %" PRIu64, f->path, f->off);
	return 0;
}

const struct opd_collector_ops opd_collector_file = {
	.name = "file",
	.caps = OPD_CAP_INPUT,
	.open = file_open,
	.pollfds = file_pollfds,
	.start = file_start,
	.read = file_read,
	.stop = file_stop,
	.close = file_close,
};
