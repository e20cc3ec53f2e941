#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd_privsep.h"
#include "opd_relay.h"
#include "util/du_log.h"
#include "util/du_array.h"

/* ---- monitor side -------------------------------------------------------- */

struct opd_relay_mon {
	const struct opd_collector_ops *ops;
	void *state;			/* the collector's, NULL until opened */
	struct opd_collector_args args;	/* borrowed by the collector */
	struct opd_raw_sink sink;
	int wfd;			/* -1 once the stream ended */
	bool started;
	char *buf;			/* bytes the pipe had no room for */
	size_t len, cap;
};

/* Write what waits, as much as the pipe takes.  0 or -errno. */
static int flush_some(struct opd_relay_mon *r)
{
	size_t off = 0;

	while (off < r->len) {
		ssize_t n = write(r->wfd, r->buf + off, r->len - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		off += (size_t)n;
	}
	memmove(r->buf, r->buf + off, r->len - off);
	r->len -= off;
	return 0;
}

static int relay_feed(void *ctx, const void *data, size_t len)
{
	struct opd_relay_mon *r = ctx;
	int ret;

	if (r->wfd < 0)
		return -EPIPE;
	if (r->len + len > OPD_RELAY_MAX_PENDING) {
		du_err("privsep: the worker left %zu bytes of the %s collector's stream unread; "
		       "stopping the collector", r->len, r->ops->name);
		return -ENOBUFS;
	}
	if (DU_GROW(r->buf, r->cap, r->len + len, 64 * 1024))
		return -ENOMEM;
	memcpy(r->buf + r->len, data, len);
	r->len += len;
	ret = flush_some(r);
	if (ret)
		du_err("privsep: relaying the %s collector's stream: %s", r->ops->name,
		       strerror(-ret));
	return ret;
}

/* End the stream: the worker reads to its end. */
static void end_stream(struct opd_relay_mon *r)
{
	if (r->wfd >= 0)
		close(r->wfd);
	r->wfd = -1;
	r->len = 0;
}

struct opd_relay_mon *opd_relay_mon_open(const struct opd_collector_ops *ops,
					 const struct opd_conf *conf,
					 const struct ev_table *events, int wfd)
{
	struct opd_relay_mon *r = calloc(1, sizeof(*r));
	int fl = fcntl(wfd, F_GETFL);

	if (!r || fl < 0 || fcntl(wfd, F_SETFL, fl | O_NONBLOCK) < 0) {
		du_err("privsep: cannot set up the %s collector's relay: %s", ops->name,
		       r ? strerror(errno) : "out of memory");
		free(r);
		close(wfd);
		return NULL;
	}
	/* room for bursts while the worker is busy (best effort) */
	(void)fcntl(wfd, F_SETPIPE_SZ, 1 << 20);
	r->ops = ops;
	r->wfd = wfd;
	r->sink.ctx = r;
	r->sink.feed = relay_feed;
	r->args.conf = conf;
	r->args.events = events;
	r->args.sink = &r->sink;
	r->args.relay_fd = -1;
	if (ops->open(&r->args, &r->state)) {
		r->state = NULL;
		opd_relay_mon_close(r);
		return NULL;
	}
	du_info("privsep: monitor %d runs the %s collector and relays its stream", (int)getpid(),
		ops->name);
	return r;
}

size_t opd_relay_mon_pollfds(struct opd_relay_mon *r, struct pollfd *pfd, size_t max)
{
	size_t n = 0;

	if (!r || r->wfd < 0)
		return 0;
	if (r->len && max > 0)
		pfd[n++] = (struct pollfd){ .fd = r->wfd, .events = POLLOUT };
	if (r->started && r->ops->pollfds)
		n += r->ops->pollfds(r->state, pfd + n, max - n);
	return n;
}

int opd_relay_mon_service(struct opd_relay_mon *r, const struct pollfd *pfd, size_t n)
{
	int ret = 0;

	if (!r || r->wfd < 0)
		return 0;
	if (r->len && n > 0) {
		ret = flush_some(r);
		pfd++;
		n--;
	}
	if (!ret && r->started)
		ret = r->ops->read(r->state, pfd, n);
	if (ret < 0 || ret == OPD_COLLECT_EOF) {
		du_err("privsep: the %s collector stopped: %s; ending its stream", r->ops->name,
		       ret < 0 ? strerror(-ret) : "end of input");
		if (r->started)
			r->ops->stop(r->state);
		r->started = false;
		end_stream(r);
		return ret < 0 ? ret : -EPIPE;
	}
	return 0;
}

int opd_relay_mon_collect(struct opd_relay_mon *r, bool start)
{
	int ret;

	if (!r)
		return -ENODEV;
	if (start) {
		if (r->started || r->wfd < 0)
			return -EALREADY;
		ret = r->ops->start(r->state);
		r->started = !ret;
		return ret;
	}
	ret = r->started ? r->ops->stop(r->state) : 0;
	r->started = false;
	if (r->wfd >= 0) {
		/* the worker reads while it waits for the answer: write the
		 * rest blocking, then end the stream */
		int fl = fcntl(r->wfd, F_GETFL);

		if (fl >= 0)
			(void)fcntl(r->wfd, F_SETFL, fl & ~O_NONBLOCK);
		if (!ret)
			ret = flush_some(r);
		end_stream(r);
	}
	return ret;
}

int opd_relay_mon_task_layout(struct opd_relay_mon *r, const struct opd_ps_layout *l)
{
	struct dp_ag_task_layout tl = { .current = l->current, .tgid_off = l->tgid_off };

	if (!r || !r->state)
		return -ENODEV;
	if (!r->ops->task_layout)
		return -EOPNOTSUPP;
	r->ops->task_layout(r->state, l->key_ns, l->key, &tl);
	return 0;
}

void opd_relay_mon_close(struct opd_relay_mon *r)
{
	if (!r)
		return;
	if (r->started)
		r->ops->stop(r->state);
	if (r->state)
		r->ops->close(r->state);
	end_stream(r);
	free(r->buf);
	free(r);
}

/* ---- worker side --------------------------------------------------------- */

struct relay_w {
	const struct opd_raw_sink *sink;
	const struct opd_ps_chan *chan;
	int rfd;
	bool ended;
};

static int rw_open(const struct opd_collector_args *a, void **state)
{
	struct relay_w *w;

	if (a->relay_fd < 0 || !a->relay_chan) {
		du_err("relay: no stream from the monitor");
		return -EINVAL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->sink = a->sink;
	w->chan = a->relay_chan;
	w->rfd = a->relay_fd;
	*state = w;
	return 0;
}

static size_t rw_pollfds(void *state, struct pollfd *pfd, size_t max)
{
	struct relay_w *w = state;

	if (max < 1 || w->ended)
		return 0;
	pfd[0] = (struct pollfd){ .fd = w->rfd, .events = POLLIN };
	return 1;
}

/* Ask the monitor to start or stop its collector; its answer. */
static int rw_ask(struct relay_w *w, bool start)
{
	struct opd_ps_msg m;

	opd_ps_msg_init(&m, OPD_PS_COLLECT);
	m.u.end = start;
	return opd_ps_send(w->chan->sock, &m, -1);
}

static int rw_start(void *state)
{
	struct relay_w *w = state;
	int ret = rw_ask(w, true);

	if (!ret)
		ret = opd_ps_recv_end(w->chan->sock);
	if (ret)
		du_err("relay: the monitor could not start the collector: %s", strerror(-ret));
	return ret;
}

/* Bytes from the pipe into the sink: 0, 1 at the end of the stream, or
 * -errno. */
static int rw_pull(struct relay_w *w)
{
	char buf[64 * 1024];
	ssize_t n = read(w->rfd, buf, sizeof(buf));

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0) {
		w->ended = true;
		return 1;
	}
	return w->sink->feed(w->sink->ctx, buf, (size_t)n);
}

static int rw_read(void *state, const struct pollfd *pfd, size_t n)
{
	struct relay_w *w = state;
	int ret;

	if (n < 1 || !(pfd[0].revents & (POLLIN | POLLHUP)))
		return 0;
	ret = rw_pull(w);
	if (ret == 1) {
		du_err("relay: the monitor ended the collector's stream");
		return -EPIPE;
	}
	return ret;
}

static int rw_stop(void *state)
{
	struct relay_w *w = state;
	bool asked = !w->ended;	/* else the monitor ended it: nothing to ask */
	int ret = asked ? rw_ask(w, false) : 0, got;

	/* the rest of the stream, then the answer */
	while (!ret && !w->ended) {
		struct pollfd p = { .fd = w->rfd, .events = POLLIN };
		int pr = poll(&p, 1, OPD_RELAY_STOP_MS);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			du_err("relay: no end of the collector's stream after %d ms",
			       OPD_RELAY_STOP_MS);
			return pr < 0 ? -errno : -ETIMEDOUT;
		}
		got = rw_pull(w);
		if (got < 0)
			ret = got;
	}
	if (!ret && asked)
		ret = opd_ps_recv_end(w->chan->sock);
	return ret;
}

static void rw_task_layout(void *state, uint32_t key_ns, uint64_t key,
			   const struct dp_ag_task_layout *l)
{
	struct relay_w *w = state;
	int ret;

	if (key_ns != DP_DOMKEY_XEN_DOMID)
		return;		/* the monitor's collector keys domains by domid */
	ret = opd_ps_task_layout(w->chan, key_ns, key, l->current, l->tgid_off);
	if (ret)
		du_warn("relay: domain key %llu's task layout not taken by the monitor: %s",
			(unsigned long long)key, strerror(-ret));
}

static void rw_close(void *state)
{
	struct relay_w *w = state;

	if (!w)
		return;
	close(w->rfd);
	free(w);
}

void opd_relay_worker_ops(const struct opd_collector_ops *real, struct opd_collector_ops *out)
{
	*out = (struct opd_collector_ops){
		.name = real->name, .caps = real->caps,
		.open = rw_open, .pollfds = rw_pollfds, .start = rw_start, .read = rw_read,
		.stop = rw_stop, .close = rw_close,
		.task_layout = real->task_layout ? rw_task_layout : NULL,
	};
}
