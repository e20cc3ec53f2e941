/*
 * opagent: the guest side of domprof (doc/architecture.md, "The guest
 * agent and its protocol").  Options and
 * the connection loop; the work is in the ag_*.c modules.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_cli.h"
#include "util/du_log.h"

#define AG_POLL_MS	250	/* rings are drained at least this often */
#define AG_HOST_POLL_MS	100	/* a port whose host side is closed */
#define AG_HOST_POLLS	50	/* then the port is looked for again */
#define AG_MAX_COOKIES	16384
#define AG_INBUF	(2 * (sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD))
/* TSC pairs: the host's exact correlation follows the guest clock's NTP
 * slew through them (doc/clock.md). */
#define AG_TSC_NS	(1000ULL * 1000 * 1000)
/* A tty (a Xen PV console) loses what the host has not read beyond its
 * back end's limit (1 MiB from libxl): bulk and the snapshot wait while
 * this much (--tty-window) is not acknowledged (HOST_ACK), and after
 * HELLO until the first ACK, at most AG_ACK_WAIT_NS (a host that never
 * says it is an older one).  A snapshot that waits AG_PACE_MAX_NS with no
 * ACK gives up the connection. */
#define AG_TTY_WINDOW	(256u << 10)
#define AG_ACK_WAIT_NS	(2000ULL * 1000 * 1000)
#define AG_PACE_MAX_NS	(60ULL * 1000 * 1000 * 1000)

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

struct ag_state {
	const struct ag_opts *opts;
	struct ag_out out;
	struct ag_cookies *ck;
	struct ag_images *im;
	struct ag_perf *perf;
	struct ag_table ks;	/* /proc/kallsyms, sent between other work */
	uint64_t instance;
	uint8_t *in;
	size_t inlen;
	int err;		/* from a handler: ends the connection */
	bool hello_wait;	/* HELLO sent, HOST_HELLO not seen yet */
	/* the HOST_JOIN this agent last started over for (or whose HELLO
	 * was on its way): the host says it again until it sees a HELLO */
	uint64_t join_token;
	bool joined_once;
	/* this connection's HOST_ACKs against the bytes sent since HELLO */
	uint64_t hello_bytes;	/* out.bytes + out.len when HELLO was queued */
	uint64_t hello_ns;
	uint64_t acked;
	bool ack_seen;
	bool tsc;		/* TSC frames are sent on this connection */
	uint64_t next_tsc;
	/* TASK_LAYOUT, learnt once: the kernel does not change under us */
	bool layout_tried;
	int layout_err;
	struct dp_ag_task_layout layout;
};

static int on_ping(void *ctx, const struct dp_ag_ping *p)
{
	struct ag_state *s = ctx;
	struct dp_ag_pong pong = { .token = p->token, .recv_ns = ag_now_ns() };
	int err;

	/* Flush what is queued first, so the PONG leaves right after its
	 * clock read and the host's round trip stays short. */
	err = ag_out_flush(&s->out);
	if (err)
		return err;
	pong.send_ns = ag_now_ns();
	err = AG_PUT(&s->out, ap_put_pong, &pong);
	return err ? err : ag_out_flush(&s->out);
}

static int on_image_request(void *ctx, const struct dp_ag_image_request *r)
{
	struct ag_state *s = ctx;

	ag_images_request(s->im, r->cookie);
	return 0;
}

static int on_config(void *ctx, const struct dp_ag_config *c)
{
	struct ag_state *s = ctx;

	ag_images_config(s->im, c);
	return 0;
}

static int on_host_hello(void *ctx, const struct dp_ag_host_hello *h)
{
	struct ag_state *s = ctx;

	s->hello_wait = false;
	if (h->proto_version < DP_AG_PROTO_MIN || h->proto_version > DP_AG_PROTO_VERSION) {
		du_warn("host chose protocol %u, this agent speaks %u..%u", h->proto_version,
			DP_AG_PROTO_MIN, DP_AG_PROTO_VERSION);
		return -EPROTO;
	}
	return 0;
}

/* A host connected (HOST_JOIN): start over with HELLO and the whole state
 * (-ECONNRESET ends this connection's loop), unless this is a
 * virtio-serial port whose HELLO, sent when the port's host side opened,
 * is still unanswered: that HELLO is on its way to this very host. */
static int on_host_join(void *ctx, const struct dp_ag_host_join *j)
{
	struct ag_state *s = ctx;
	bool repeat = s->joined_once && j->token == s->join_token;

	s->join_token = j->token;
	s->joined_once = true;
	if (repeat || (!s->out.is_tty && s->hello_wait))
		return 0;
	if (s->opts->verbose)
		du_info("a host joined (its connection %llu): starting over",
			(unsigned long long)j->token);
	return -ECONNRESET;
}

static int on_host_ack(void *ctx, const struct dp_ag_host_ack *a)
{
	struct ag_state *s = ctx;

	if (a->bytes > s->acked)
		s->acked = a->bytes;
	s->ack_seen = true;
	return 0;
}

/* May bulk (the symbol table, binaries) go out now?  Always on a lossless
 * channel; on a tty, within the window of bytes not acknowledged. */
static bool bulk_ok(const struct ag_state *s)
{
	uint64_t sent;

	if (!s->out.is_tty)
		return true;
	if (!s->ack_seen)
		return ag_now_ns() - s->hello_ns >= AG_ACK_WAIT_NS;
	sent = s->out.bytes + s->out.len - s->hello_bytes;
	return sent < s->acked || sent - s->acked < s->opts->tty_window;
}

static const struct ap_ops host_ops = {
	.host_hello = on_host_hello,
	.ping = on_ping,
	.image_request = on_image_request,
	.config = on_config,
	.host_join = on_host_join,
	.host_ack = on_host_ack,
};

/* Waiting for a host on a tty: nothing but HOST_JOIN counts. */
static const struct ap_ops join_ops = {
	.host_join = on_host_join,
};

/* Offset of the next frame magic in @p after its first byte (@n if none). */
static size_t next_magic(const uint8_t *p, size_t n)
{
	for (size_t i = 1; i + sizeof(uint32_t) <= n; i++) {
		uint32_t m;

		memcpy(&m, p + i, sizeof(m));
		if (m == DP_AG_MAGIC)
			return i;
	}
	return n > sizeof(uint32_t) ? n - sizeof(uint32_t) + 1 : 0;
}

/* Read and act on what the host sent; -EPIPE when it went away,
 * -ECONNRESET when a host joined.  Bytes that are not frames (a channel
 * joined midway: a tty keeps what the last host left) are skipped up to
 * the next frame magic. */
static int read_host(struct ag_state *s, int fd, const struct ap_ops *ops)
{
	struct ap_stats st = { 0 };
	size_t used = 0;
	ssize_t n;
	int err;

	n = read(fd, s->in + s->inlen, AG_INBUF - s->inlen);
	if (n < 0)
		return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;
	if (n == 0)
		return -EPIPE;
	s->inlen += (size_t)n;
	/* the frames after bytes out of step are decoded now, not when the
	 * host next sends: a JOIN read with the end of a cut frame is a host
	 * waiting for its HELLO */
	for (;;) {
		size_t at = 0;

		err = ap_decode(ops, s, s->in + used, s->inlen - used, &at, &st);
		used += at;
		if (err != -EBADMSG)
			break;
		du_debug("host bytes out of step; looking for the next frame");
		used += next_magic(s->in + used, s->inlen - used);
		err = 0;
	}
	if (st.unknown_type || st.bad_payload)
		du_debug("host sent %llu unknown and %llu malformed frames",
			 (unsigned long long)st.unknown_type, (unsigned long long)st.bad_payload);
	memmove(s->in, s->in + used, s->inlen - used);
	s->inlen -= used;
	return err;
}

/* The snapshot on a tty, between processes: while the window is full, it
 * waits, reading the host's frames (its ACKs; a JOIN ends the connection
 * with -ECONNRESET as in the loop) and passing the sideband on as the loop
 * does, which is not held (its rings would overflow).  Given up when the
 * host's acknowledgement has not moved for AG_PACE_MAX_NS. */
static int pace_tty(void *ctx)
{
	struct ag_state *s = ctx;
	uint64_t since = ag_now_ns(), acked = s->acked;
	int err;

	if (bulk_ok(s))
		return 0;
	err = ag_out_flush(&s->out);
	while (!err && !stop && !bulk_ok(s)) {
		struct pollfd p = { .fd = s->out.fd, .events = POLLIN };

		if (s->acked != acked) {
			acked = s->acked;
			since = ag_now_ns();
		} else if (ag_now_ns() - since > AG_PACE_MAX_NS) {
			du_warn("the host acknowledged nothing for %llu s: starting over",
				(unsigned long long)(AG_PACE_MAX_NS / 1000000000ULL));
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, 50) < 0 && errno != EINTR)
			return -errno;
		if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
			return -EPIPE;
		if (p.revents & POLLIN)
			err = read_host(s, s->out.fd, &host_ops);
		if (!err)
			err = ag_perf_drain(s->perf, &s->out, s->ck);
		if (!err)
			err = ag_out_flush(&s->out);
	}
	return err;
}

/* TASK_LAYOUT when the kernel tells it, learnt on the first connection;
 * why it does not is said once. */
static int send_layout(struct ag_state *s)
{
	if (s->opts->no_task_layout)
		return 0;
	if (!s->layout_tried) {
		s->layout_tried = true;
		s->layout_err = ag_layout_learn(&s->layout);
		if (s->layout_err)
			du_warn("task layout unavailable (%s): the host learns address spaces from the clock",
				ag_layout_why(s->layout_err));
		else if (s->opts->verbose)
			du_info("task layout: current task at per-CPU %#llx, tgid at +%u",
				(unsigned long long)s->layout.current, s->layout.tgid_off);
	}
	return s->layout_err ? 0 : ag_layout_send(&s->out, &s->layout);
}

/* Everything a new connection needs before the stream: who we are, the
 * modules, and the tasks that already exist.  The kernel's symbol table
 * (megabytes, against a channel that may carry a few hundred KB/s) follows
 * a piece at a time beside the stream, so that the host can place samples
 * from the first seconds; its first lines give the host the kernel's
 * _text. */

static int send_state(struct ag_state *s)
{
	uint32_t flags = DP_AG_HELLO_F_IMAGES;
	int err;

	s->perf = ag_perf_open(s->opts->ring_pages);
	if (s->perf)
		flags |= DP_AG_HELLO_F_PERF | DP_AG_HELLO_F_SWITCH;
	else
		du_warn("perf events unavailable (%s): no task or mmap stream", strerror(errno));
	/* A host of protocol 1 skips TSC frames by their length. */
	s->tsc = !s->opts->no_tsc && ag_tsc_usable();
	if (s->tsc)
		flags |= DP_AG_HELLO_F_TSC;
	s->hello_wait = true;
	s->hello_bytes = s->out.bytes + s->out.len;
	s->hello_ns = ag_now_ns();
	s->acked = 0;
	s->ack_seen = false;
	err = ag_send_hello(&s->out, flags, s->instance);
	if (!err && s->tsc) {
		err = ag_tsc_send(&s->out);
		s->next_tsc = ag_now_ns() + AG_TSC_NS;
	}
	if (!err)
		err = send_layout(s);
	if (!err)
		err = ag_send_table(&s->out, "/proc/modules", DP_AG_MODULES, DP_AG_MODULES_END);
	if (!err) {
		if (s->out.is_tty) {
			s->out.pace = pace_tty;
			s->out.pace_ctx = s;
		}
		err = ag_send_snapshot(&s->out, s->ck);
		s->out.pace = NULL;
	}
	if (!err)
		err = ag_out_flush(&s->out);
	if (!err)
		err = ag_table_open(&s->ks, "/proc/kallsyms", DP_AG_KALLSYMS, DP_AG_KALLSYMS_END);
	return err;
}

/* One turn's output, after the poll: the kernel's records, a TSC pair
 * when one is due, one chunk of the symbol table after the stream. */
static int send_turn(struct ag_state *s)
{
	int err = ag_perf_drain(s->perf, &s->out, s->ck);

	if (!err && s->tsc && ag_now_ns() >= s->next_tsc) {
		err = ag_tsc_send(&s->out);
		s->next_tsc = ag_now_ns() + AG_TSC_NS;
	}
	if (!err)
		err = ag_out_flush(&s->out);
	/* one chunk of the symbol table per turn, after the stream */
	if (!err && s->ks.pending && bulk_ok(s)) {
		err = ag_table_send(&s->ks, &s->out, 1);
		if (err > 0 && s->opts->verbose)
			du_info("kernel symbols sent: %llu bytes in %u chunks",
				(unsigned long long)s->ks.end.total_bytes, s->ks.end.chunks);
		if (err > 0)
			err = 0;
		if (!err)
			err = ag_out_flush(&s->out);
	}
	return err;
}

/* One connection, from HELLO until the host goes away (-EPIPE), a stop
 * (0), or an error. */
static int run_connection(struct ag_state *s, uint64_t deadline)
{
	struct pollfd pfd[1 + 512];
	int err, wait;
	unsigned int i, n;
	bool bulk;

	ag_images_reset(s->im);
	err = send_state(s);
	if (err || s->opts->once) {
		if (!err)
			err = ag_table_send(&s->ks, &s->out, SIZE_MAX);
		if (err > 0)
			err = 0;
		if (!err)
			err = ag_perf_drain(s->perf, &s->out, s->ck);
		if (!err)
			err = ag_out_flush(&s->out);
		goto out_perf;
	}
	while (!stop && (!deadline || ag_now_ns() < deadline)) {
		n = 0;
		if (!s->out.is_file)
			pfd[n++] = (struct pollfd){ .fd = s->out.fd, .events = POLLIN };
		for (i = 0; i < ag_perf_nfds(s->perf) && n < sizeof(pfd) / sizeof(pfd[0]); i++)
			pfd[n++] = (struct pollfd){ .fd = ag_perf_fd(s->perf, i), .events = POLLIN };
		bulk = bulk_ok(s);
		wait = AG_POLL_MS;
		if (bulk) {
			err = ag_images_work(s->im, &s->out, s->ck, &wait);
			if (err)
				break;
		} else {
			wait = 50;	/* an ACK wakes the poll sooner */
		}
		if (wait < 0 || wait > AG_POLL_MS)
			wait = AG_POLL_MS;
		if (s->out.len || (s->ks.pending && bulk))
			wait = 0;
		if (poll(pfd, n, wait) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (!s->out.is_file) {
			if (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
				err = -EPIPE;
				break;
			}
			if (pfd[0].revents & POLLIN) {
				err = read_host(s, s->out.fd, &host_ops);
				if (err)
					break;
			}
		}
		err = send_turn(s);
		if (err)
			break;
	}
	if (!err)
		err = ag_out_flush(&s->out);
out_perf:
	ag_table_close(&s->ks);
	ag_perf_close(s->perf);
	s->perf = NULL;
	return err;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A tty shows no hang-up: wait until a host says it is there (HOST_JOIN);
 * 0 then, -EINTR on a stop or at @deadline, or -errno. */
static int wait_join(struct ag_state *s, uint64_t deadline)
{
	while (!stop && (!deadline || ag_now_ns() < deadline)) {
		struct pollfd pfd = { .fd = s->out.fd, .events = POLLIN };
		int err;

		if (poll(&pfd, 1, AG_POLL_MS) < 0 && errno != EINTR)
			return -errno;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		err = read_host(s, s->out.fd, &join_ops);
		if (err == -ECONNRESET)
			return 0;
		/* a tty whose other side hung up reads as the end: it
		 * may come back, looked at no faster than the polls */
		if (err == -EPIPE) {
			sleep_ms(AG_POLL_MS);
			continue;
		}
		if (err)
			return err;
	}
	return -EINTR;
}


/* The port, once the host side is open.  A missing port is looked for with
 * backoff; a port whose host side is closed is kept open and looked at
 * every AG_HOST_POLL_MS, because the daemon holds a new domain's samples
 * only briefly while it waits for the agent. */
static int connect_port(const struct ag_opts *o, unsigned int *backoff_ms, bool *is_tty)
{
	while (!stop) {
		char *path = o->port ? strdup(o->port) : ag_port_find();
		int fd = path ? ag_port_open(path, is_tty) : -ENOENT;

		if (fd >= 0 && *is_tty) {
			/* no hang-up to look at: a host says HOST_JOIN */
			if (o->verbose)
				du_info("channel %s (a tty): waiting for a host", path);
			free(path);
			*backoff_ms = 100;
			return fd;
		}
		if (fd >= 0) {
			if (o->verbose && !ag_port_connected(fd))
				du_info("port %s: host not connected; waiting", path);
			for (unsigned int i = 0; !stop && i < AG_HOST_POLLS; i++) {
				if (ag_port_connected(fd)) {
					if (o->verbose)
						du_info("connected on %s", path);
					free(path);
					*backoff_ms = 100;
					return fd;
				}
				sleep_ms(AG_HOST_POLL_MS);
			}
			close(fd);	/* and look for the port again */
			free(path);
			continue;
		}
		if (o->verbose)
			du_info("port %s: %s; retrying in %u ms", path ? path : DP_AG_PORT_NAME,
				strerror(-fd), *backoff_ms);
		free(path);
		sleep_ms(*backoff_ms);
		if (*backoff_ms < 5000)
			*backoff_ms *= 2;
	}
	return -EINTR;
}

/* Hosts one after another on the channel s->out.fd (@tty: a serial
 * port, whose host must say it joined): one that (re)joins starts over. */
static int serve_channel(struct ag_state *s, bool tty, uint64_t deadline)
{
	bool joined = !tty;
	int err;

	for (;;) {
		if (!joined) {
			err = wait_join(s, deadline);
			if (err)
				break;
		}
		err = run_connection(s, deadline);
		/* a host (re)joined: start over on the same channel */
		joined = err == -ECONNRESET;
		if (joined)
			continue;
		/* a tty nobody reads (or acknowledges): wait
		 * for the next host */
		if (tty && (err == -EPIPE || err == -ETIMEDOUT) && !stop) {
			if (s->opts->verbose)
				du_info("no host is reading; waiting for one");
			continue;
		}
		break;
	}
	return err;
}

/* The agent on its port until stopped or @deadline: a host that closes or
 * restarts is waited for and given everything again (it may have lost
 * all it knew).  0, or with --once the connection's error. */
static int serve_port(struct ag_state *s, uint64_t deadline)
{
	unsigned int backoff = 100;
	int err = 0;

	while (!stop && (!deadline || ag_now_ns() < deadline)) {
		bool tty = false;
		int fd = connect_port(s->opts, &backoff, &tty);

		if (fd < 0)
			break;
		s->out.fd = fd;
		s->out.is_tty = tty;
		s->inlen = 0;
		err = serve_channel(s, tty, deadline);
		if (err == -EINTR)
			err = 0;
		close(fd);
		s->out.fd = -1;
		if (s->opts->once)
			break;
		if (err && err != -EPIPE)
			du_warn("connection ended: %s", strerror(-err));
		else if (s->opts->verbose)
			du_info("host went away; reconnecting");
		err = 0;
	}
	return err;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: opagent [OPTION]...\n"
		"Send this guest's task, mapping, module and symbol sideband to the\n"
		"domprof host over the channel " DP_AG_PORT_NAME ": a virtio-serial\n"
		"port, or a Xen PV console channel (/dev/hvcN, found through xenstore).\n\n"
		"  --port=PATH       channel device (default: discover)\n"
		"  --output=FILE     write frames to FILE instead of the port\n"
		"  --budget=BYTES    image bytes sent per connection (default 256M)\n"
		"  --image-max=BYTES largest file sent whole (default 64M)\n"
		"  --rate=BYTES      image bytes per second (default 8M)\n"
		"  --ring-pages=N    perf ring pages per CPU, a power of two (default 64)\n"
		"  --duration=SECS   stop after SECS seconds\n"
		"  --once            send the current state and exit\n"
		"  --no-tsc          send no TSC pairs (the host correlates by ping/pong)\n"
		"  --no-task-layout  do not tell where the kernel keeps the running task\n"
		"                    (the host learns address spaces from the clock)\n"
		"  --tty-window=BYTES  on a tty, bytes sent ahead of the host's\n"
		"                    acknowledgement (default 256K, at least 4K; the host\n"
		"                    acknowledges every 32K and each ping: less crawls)\n"
		"  --verbose         say what happens\n"
		"  --help            this text\n"
	      "  --version         the version\n"
		"Sizes take a K, M or G suffix.\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	}
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

/* 0, 1 (--help or --version: printed), or -EINVAL with *@bad the word
 * that was wrong. */
static int parse_opts(int argc, char **argv, struct ag_opts *o, const char **bad)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "budget", required_argument, NULL, 'b' },
		{ "image-max", required_argument, NULL, 'm' },
		{ "rate", required_argument, NULL, 'r' },
		{ "ring-pages", required_argument, NULL, 'R' },
		{ "duration", required_argument, NULL, 'd' },
		{ "once", no_argument, NULL, '1' },
		{ "no-tsc", no_argument, NULL, 'T' },
		{ "no-task-layout", no_argument, NULL, 'L' },
		{ "tty-window", required_argument, NULL, 'W' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	uint64_t v;
	int c;

	*bad = "";
	*o = (struct ag_opts){ .budget = 256ULL << 20, .image_max = 64ULL << 20,
			       .rate = 8U << 20, .ring_pages = 64, .tty_window = AG_TTY_WINDOW };
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		*bad = argv[optind - 1];
		switch (c) {
		case 'p': o->port = optarg; break;
		case 'o': o->output = optarg; break;
		case 'b': if (parse_size(optarg, &o->budget)) return -EINVAL; break;
		case 'm': if (parse_size(optarg, &o->image_max)) return -EINVAL; break;
		case 'r':
			if (parse_size(optarg, &v) || !v || v > UINT32_MAX)
				return -EINVAL;
			o->rate = (uint32_t)v;
			break;
		case 'R':
			if (parse_size(optarg, &v) || !v || v > 4096 || (v & (v - 1)))
				return -EINVAL;
			o->ring_pages = (unsigned int)v;
			break;
		case 'd':
			if (parse_size(optarg, &v) || v > 1000000)
				return -EINVAL;
			o->duration = (unsigned int)v;
			break;
		case '1': o->once = true; break;
		case 'T': o->no_tsc = true; break;
		case 'L': o->no_task_layout = true; break;
		case 'W':
			if (parse_size(optarg, &v) || v < 4096 || v > (1u << 30))
				return -EINVAL;
			o->tty_window = (uint32_t)v;
			break;
		case 'v': o->verbose = true; break;
		case 'h': usage(stdout); return 1;
		case 'V': du_cli_version(stdout, "opagent"); return 1;
		default: return -EINVAL;
		}
	}
	if (optind < argc) {
		*bad = argv[optind];
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ag_opts opts;
	struct ag_state s = { .opts = &opts, .ks = { .fd = -1 } };
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t deadline = 0;
	const char *bad;
	int err = 0, ret = 1;

	du_log_set_prog("opagent");
	err = parse_opts(argc, argv, &opts, &bad);
	if (err > 0)
		return 0;
	if (err) {
		char msg[256];

		snprintf(msg, sizeof(msg), "unknown or malformed option, or bad value: \"%.200s\"",
			 bad ? bad : "");
		du_cli_usage_error(stderr, "opagent", msg);
		return 2;
	}
	du_log_set_level(opts.verbose ? DU_LOG_INFO : DU_LOG_WARN);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (getrandom(&s.instance, sizeof(s.instance), GRND_NONBLOCK) != sizeof(s.instance))
		s.instance = ag_now_ns() ^ ((uint64_t)getpid() << 32);
	if (opts.duration)
		deadline = ag_now_ns() + opts.duration * 1000000000ULL;
	s.ck = ag_cookies_new(AG_MAX_COOKIES);
	s.im = ag_images_new(&opts);
	s.in = malloc(AG_INBUF);
	if (!s.ck || !s.im || !s.in || ag_out_init(&s.out, 1 << 20)) {
		du_err("out of memory");
		goto out_free;
	}

	if (opts.output) {
		s.out.fd = open(opts.output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (s.out.fd < 0) {
			du_err("%s: %s", opts.output, strerror(errno));
			goto out_free;
		}
		s.out.is_file = true;
		err = run_connection(&s, deadline);
		close(s.out.fd);
	} else {
		err = serve_port(&s, deadline);
	}
	if (err)
		du_err("%s", strerror(-err));
	else
		ret = 0;
	if (opts.verbose)
		du_info("%llu frames, %llu bytes written",
			(unsigned long long)s.out.frames, (unsigned long long)s.out.bytes);
out_free:
	ag_out_free(&s.out);
	free(s.in);
	ag_images_free(s.im);
	ag_cookies_free(s.ck);
	return ret;
}
