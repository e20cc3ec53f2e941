/*
 * The file collector: replay a recorded raw stream (--input=FILE).  The
 * file is mapped and handed to the daemon in place, a window per read, so
 * the loop reacts to signals between windows.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opd_collector.h"
#include "util/du_log.h"

/* Decode window: small enough to react to signals within a fraction of a
 * second, large enough that per-call costs vanish. */
#define WINDOW (64UL << 20)

struct collect_file {
	const char *path;
	const struct opd_raw_sink *sink;
	const uint8_t *base;
	size_t size, off;
	int fd;
	bool failed;		/* read() failed: no "stopped at" message */
};

static void file_close(void *state)
{
	struct collect_file *f = state;

	if (!f)
		return;
	if (f->base)
		munmap((void *)f->base, f->size);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static int file_map(struct collect_file *f)
{
	struct stat st;

	if (fstat(f->fd, &st)) {
		du_err("cannot stat %s: %s", f->path, strerror(errno));
		return -errno;
	}
	f->size = (size_t)st.st_size;
	if (!f->size) {
		du_err("%s: empty file, no stream header at byte offset 0", f->path);
		return -EBADMSG;
	}
	f->base = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, f->fd, 0);
	if (f->base == MAP_FAILED) {
		f->base = NULL;
		du_err("cannot map %s: %s", f->path, strerror(errno));
		return -errno;
	}
	madvise((void *)f->base, f->size, MADV_SEQUENTIAL);
	return 0;
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
	ret = file_map(f);
	if (ret)
		goto out_close;
	*state = f;
	return 0;

out_close:
	file_close(f);
	return ret;
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

/* One window of whole records. */
static int file_read(void *state, const struct pollfd *pfd, size_t n)
{
	struct collect_file *f = state;
	size_t len = f->size - f->off < WINDOW ? f->size - f->off : WINDOW;
	size_t used = 0;
	int ret;

	(void)pfd;
	(void)n;
	if (f->off == f->size)
		return OPD_COLLECT_EOF;
	ret = f->sink->decode(f->sink->ctx, f->base + f->off, len, &used);
	if (ret) {
		f->failed = true;
		return ret;
	}
	f->off += used;
	if (!used && len == f->size - f->off) {
		/* the last record (or the header) is cut off */
		if (!f->off)
			du_err("%s: truncated stream header at byte offset 0", f->path);
		else
			du_err("%s: truncated record at byte offset %zu", f->path, f->off);
		f->failed = true;
		return -EBADMSG;
	}
	return f->off == f->size ? OPD_COLLECT_EOF : 0;
}

static int file_stop(void *state)
{
	struct collect_file *f = state;

	if (f->off < f->size && !f->failed)
		du_info("%s: stopped at byte offset %zu of %zu", f->path, f->off, f->size);
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
