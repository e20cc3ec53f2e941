/*
 * Answering IMAGE_REQUEST.  The host decides what it needs; the agent only
 * answers, one file at a time, within a per-connection byte budget, a
 * per-file size cap and a rate (a token bucket), so that a host asking for
 * everything cannot make the guest spend its I/O or CPU on it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_log.h"

#define AG_IMAGE_QUEUE	64
#define AG_IMAGE_CHUNK	(DP_AG_MAX_PAYLOAD - sizeof(struct dp_ag_image_data))

struct ag_images {
	uint64_t budget, image_max;	/* as configured (ceilings) */
	uint32_t rate;
	uint64_t cur_budget, cur_max;	/* this connection's, maybe lowered */
	uint32_t cur_rate;
	uint64_t spent;
	uint32_t queue[AG_IMAGE_QUEUE];
	unsigned int qhead, qlen;
	/* the file being sent */
	int fd;
	uint32_t cookie;
	uint64_t off, size;
	/* token bucket */
	double tokens;
	uint64_t last_ns;
	uint8_t *chunk;
};

struct ag_images *ag_images_new(const struct ag_opts *opts)
{
	struct ag_images *im = calloc(1, sizeof(*im));

	if (!im)
		return NULL;
	im->chunk = malloc(AG_IMAGE_CHUNK);
	if (!im->chunk) {
		free(im);
		errno = ENOMEM;
		return NULL;
	}
	im->budget = opts->budget;
	im->image_max = opts->image_max;
	im->rate = opts->rate ? opts->rate : 1;
	im->fd = -1;
	ag_images_reset(im);
	return im;
}

void ag_images_free(struct ag_images *im)
{
	if (!im)
		return;
	if (im->fd >= 0)
		close(im->fd);
	free(im->chunk);
	free(im);
}

void ag_images_reset(struct ag_images *im)
{
	if (im->fd >= 0)
		close(im->fd);
	im->fd = -1;
	im->qhead = im->qlen = 0;
	im->spent = 0;
	im->cur_budget = im->budget;
	im->cur_max = im->image_max;
	im->cur_rate = im->rate;
	im->tokens = 0;
	im->last_ns = ag_now_ns();
}

void ag_images_request(struct ag_images *im, uint32_t cookie)
{
	unsigned int i;

	for (i = 0; i < im->qlen; i++)
		if (im->queue[(im->qhead + i) % AG_IMAGE_QUEUE] == cookie)
			return;
	if ((im->fd >= 0 && im->cookie == cookie) || im->qlen == AG_IMAGE_QUEUE) {
		du_debug("image request for cookie %u ignored (busy or queue full)", cookie);
		return;
	}
	im->queue[(im->qhead + im->qlen++) % AG_IMAGE_QUEUE] = cookie;
}

void ag_images_config(struct ag_images *im, const struct dp_ag_config *c)
{
	if (c->image_budget < im->cur_budget)
		im->cur_budget = c->image_budget;
	if (c->image_max < im->cur_max)
		im->cur_max = c->image_max;
	if (c->image_rate && c->image_rate < im->cur_rate)
		im->cur_rate = c->image_rate;
}

static int send_end(struct ag_out *o, const struct ag_cookie *c, uint32_t cookie, uint32_t status,
		    uint64_t size)
{
	struct dp_ag_image_end e = { .cookie = cookie, .status = status, .size = size };

	if (c) {
		e.build_id_size = c->build_id_size;
		memcpy(e.build_id, c->build_id, sizeof(e.build_id));
	}
	return AG_PUT(o, ap_put_image_end, &e);
}

/* Take the next request: answer it at once if it cannot be sent. */
static int start_next(struct ag_images *im, struct ag_out *o, struct ag_cookies *ck)
{
	uint32_t cookie = im->queue[im->qhead];
	const struct ag_cookie *c = ag_cookie_find(ck, cookie);
	struct stat st;
	int fd;

	im->qhead = (im->qhead + 1) % AG_IMAGE_QUEUE;
	im->qlen--;
	if (!c)
		return send_end(o, NULL, cookie, DP_AG_IMAGE_UNKNOWN, 0);
	fd = ag_cookie_open(c);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return send_end(o, c, cookie, DP_AG_IMAGE_UNREADABLE, 0);
	}
	if ((uint64_t)st.st_size > im->cur_max) {
		close(fd);
		return send_end(o, c, cookie, DP_AG_IMAGE_TOO_BIG, (uint64_t)st.st_size);
	}
	if (im->spent + (uint64_t)st.st_size > im->cur_budget) {
		close(fd);
		return send_end(o, c, cookie, DP_AG_IMAGE_OVER_BUDGET, (uint64_t)st.st_size);
	}
	/* Charged up front: a request that is then cut short still counts. */
	im->spent += (uint64_t)st.st_size;
	im->fd = fd;
	im->cookie = cookie;
	im->off = 0;
	im->size = (uint64_t)st.st_size;
	return 0;
}

int ag_images_work(struct ag_images *im, struct ag_out *o, struct ag_cookies *ck, int *wait_ms)
{
	uint64_t now = ag_now_ns();
	double burst = im->cur_rate / 4.0 > AG_IMAGE_CHUNK ? im->cur_rate / 4.0 : AG_IMAGE_CHUNK;
	int err = 0;

	im->tokens += (double)(now - im->last_ns) * im->cur_rate / 1e9;
	if (im->tokens > burst)
		im->tokens = burst;
	im->last_ns = now;
	*wait_ms = -1;
	while (!err) {
		struct dp_ag_image_data d;
		size_t want;
		ssize_t n;

		if (im->fd < 0) {
			if (!im->qlen)
				return 0;
			err = start_next(im, o, ck);
			continue;
		}
		want = im->size - im->off < AG_IMAGE_CHUNK ? (size_t)(im->size - im->off) : AG_IMAGE_CHUNK;
		if (want && im->tokens < (double)want) {
			*wait_ms = (int)(((double)want - im->tokens) * 1000.0 / im->cur_rate) + 1;
			return 0;
		}
		n = want ? pread(im->fd, im->chunk, want, (off_t)im->off) : 0;
		if (n <= 0 || im->off + (uint64_t)n >= im->size) {
			const struct ag_cookie *c = ag_cookie_find(ck, im->cookie);
			bool short_read = n < (ssize_t)want;

			if (n > 0) {
				d = (struct dp_ag_image_data){ .cookie = im->cookie, .offset = im->off };
				err = AG_PUT(o, ap_put_image_data, &d, im->chunk, (size_t)n);
				im->off += (uint64_t)n;
				im->tokens -= (double)n;
			}
			close(im->fd);
			im->fd = -1;
			/* A file that shrank while being sent is not that file. */
			if (!err)
				err = send_end(o, c, im->cookie,
					       short_read ? DP_AG_IMAGE_UNREADABLE : DP_AG_IMAGE_SENT,
					       short_read ? im->off : im->size);
			continue;
		}
		d = (struct dp_ag_image_data){ .cookie = im->cookie, .offset = im->off };
		err = AG_PUT(o, ap_put_image_data, &d, im->chunk, (size_t)n);
		im->off += (uint64_t)n;
		im->tokens -= (double)n;
	}
	return err;
}
