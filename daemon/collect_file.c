#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect_file.h"
#include "util/du_io.h"
#include "util/du_log.h"

/* Decode window: small enough to react to signals within a fraction of a
 * second, large enough that per-call costs vanish. */
#define WINDOW (64UL << 20)

static int tee_record(struct opd_daemon *d, const uint8_t *p, size_t len)
{
	int ret;

	if (d->record_fd < 0)
		return 0;
	ret = du_write_all(d->record_fd, p, len);
	if (ret)
		du_err("writing record file %s: %s", d->conf->record, strerror(-ret));
	return ret;
}

int collect_file_run(struct opd_daemon *d, const char *path)
{
	const uint8_t *base;
	struct stat st;
	size_t off = 0, size;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		du_err("cannot open %s: %s", path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		du_err("cannot stat %s: %s", path, strerror(errno));
		goto out_close;
	}
	size = (size_t)st.st_size;
	if (!size) {
		du_err("%s: empty file, no stream header at byte offset 0", path);
		ret = -EBADMSG;
		goto out_close;
	}
	base = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (base == MAP_FAILED) {
		ret = -errno;
		du_err("cannot map %s: %s", path, strerror(errno));
		goto out_close;
	}
	madvise((void *)base, size, MADV_SEQUENTIAL);
	d->record_raw = true;	/* we tee the bytes ourselves, in order */

	while (off < size) {
		size_t len = size - off < WINDOW ? size - off : WINDOW;
		size_t used = 0;

		ret = opd_stream_decode(d->stream, base + off, len, &used);
		if (ret)
			break;
		if (tee_record(d, base + off, used)) {
			close(d->record_fd);
			d->record_fd = -1;
		}
		off += used;
		if (!used && len == size - off) {
			/* the last record (or the header) is cut off */
			ret = -EBADMSG;
			if (!opd_stream_has_header(d->stream))
				du_err("%s: truncated stream header at byte offset 0", path);
			else
				du_err("%s: truncated record at byte offset %zu", path, off);
			break;
		}
		if (opd_daemon_service(d)) {
			du_info("%s: stopped at byte offset %zu of %zu", path, off, size);
			break;
		}
	}
	munmap((void *)base, size);

out_close:
	close(fd);
	return ret;
}
