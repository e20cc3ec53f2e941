/*
 * The kmod collector: the raw stream of the domprof kernel module
 * (host-kmod/, /dev/domprof), behind the collector ops of opd_collector.h.
 *
 * The module writes the stream itself, header included, so this file only
 * configures it (include/domprof/kmod.h), enables it, and hands what it
 * reads to the daemon's sink.  It never loads or builds the module:
 * opcontrol loads the installed one with modprobe before it starts us.
 *
 * Order of the stream: the module's header comes first (the first read
 * after ENABLE returns exactly the header), then the present as the
 * daemon's snapshot synthesizes it, then the samples, which the module
 * holds in its per-CPU rings until we read them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "collect_kmod.h"
#include "opd_snapshot.h"
#include "util/du_log.h"

#define KM_BUF		(256 * 1024)
/* Bounded wait for the header right after enabling. */
#define KM_HEADER_MS	2000

struct collect_kmod {
	const struct opd_raw_sink *sink;
	const char *session_dir;
	struct dp_kmod_config cfg;
	int fd;
	bool enabled;
	uint8_t *buf;
};

/* The device: DOMPROF_KMOD_DEVICE overrides it (tests). */
static const char *km_device(void)
{
	const char *d = getenv("DOMPROF_KMOD_DEVICE");

	return d && *d ? d : DP_KMOD_DEVICE;
}

/*
 * The module samples with one counter: CPU_CLK_UNHALTED (cycles) or
 * TIMER (the CPU clock), at the count given; no event: cycles where
 * there is a PMU, else the clock, at the module's defaults.
 */
int collect_kmod_config(const struct opd_conf *conf, struct dp_kmod_config *cfg)
{
	const struct ev_spec *ev;

	memset(cfg, 0, sizeof(*cfg));
	cfg->abi = DP_KMOD_ABI;
	cfg->event = DP_KMOD_EV_AUTO;
	cfg->period = DP_KMOD_DEF_PERIOD;
	cfg->clock_ns = DP_KMOD_DEF_CLOCK_NS;
	cfg->ring_entries = DP_KMOD_DEF_RING;
	cfg->flags = DP_KMOD_CF_KERNEL | DP_KMOD_CF_USER;
	/* --callgraph: the module walks guest stacks (host samples: none) */
	if (conf)
		cfg->callgraph_depth = conf->callgraph_depth < DP_KMOD_MAX_CG_DEPTH ?
			conf->callgraph_depth : DP_KMOD_MAX_CG_DEPTH;
	if (!conf || conf->nr_events == 0)
		return 0;
	if (conf->nr_events > 1) {
		du_err("kmod: the kernel module samples one event, %u given", conf->nr_events);
		return -EINVAL;
	}
	ev = &conf->events[0];
	if (!strcmp(ev->name, "CPU_CLK_UNHALTED")) {
		cfg->event = DP_KMOD_EV_CYCLES;
		if (ev->count)
			cfg->period = ev->count;
	} else if (!strcmp(ev->name, "TIMER")) {
		cfg->event = DP_KMOD_EV_CPU_CLOCK;
		if (ev->count)
			cfg->clock_ns = ev->count;
	} else {
		du_err("kmod: event %s: the kernel module samples CPU_CLK_UNHALTED or TIMER",
		       ev->name);
		return -EINVAL;
	}
	if (ev->um_given && ev->unit_mask) {
		du_err("kmod: event %s: no unit mask in the kernel module", ev->name);
		return -EINVAL;
	}
	cfg->flags = (ev->kernel ? DP_KMOD_CF_KERNEL : 0) | (ev->user ? DP_KMOD_CF_USER : 0);
	if (!cfg->flags) {
		du_err("kmod: event %s counts neither kernel nor user mode", ev->name);
		return -EINVAL;
	}
	if (cfg->period < DP_KMOD_MIN_PERIOD || cfg->clock_ns < DP_KMOD_MIN_CLOCK_NS) {
		du_err("kmod: event %s: count %llu is below the module's minimum (%llu)", ev->name,
		       (unsigned long long)ev->count,
		       (unsigned long long)(cfg->event == DP_KMOD_EV_CYCLES ? DP_KMOD_MIN_PERIOD :
					    DP_KMOD_MIN_CLOCK_NS));
		return -EINVAL;
	}
	return 0;
}

static void km_close(void *state)
{
	struct collect_kmod *k = state;

	if (!k)
		return;
	if (k->enabled)
		ioctl(k->fd, DP_KMOD_IOC_DISABLE);
	if (k->fd >= 0)
		close(k->fd);
	free(k->buf);
	free(k);
}

static int km_open(const struct opd_collector_args *a, void **state)
{
	struct collect_kmod *k;
	const char *dev = km_device();
	int ret;

	*state = NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->fd = -1;
	k->sink = a->sink;
	k->session_dir = a->conf->session_dir;
	ret = collect_kmod_config(a->conf, &k->cfg);
	if (ret)
		goto fail;
	k->buf = malloc(KM_BUF);
	if (!k->buf) {
		ret = -ENOMEM;
		goto fail;
	}
	k->fd = open(dev, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			du_err("kmod: no %s: the domprof module is not loaded (modprobe domprof)", dev);
		else if (ret == -EBUSY)
			du_err("kmod: %s is open elsewhere (another oprofiled?)", dev);
		else
			du_err("kmod: %s: %s", dev, strerror(-ret));
		goto fail;
	}
	if (ioctl(k->fd, DP_KMOD_IOC_SET_CONFIG, &k->cfg) < 0) {
		ret = -errno;
		du_err("kmod: configuring %s: %s%s", dev, strerror(-ret),
		       ret == -EPROTO ? " (module and daemon differ in version)" : "");
		goto fail;
	}
	*state = k;
	return 0;
fail:
	km_close(k);
	return ret;
}

static size_t km_pollfds(void *state, struct pollfd *pfd, size_t max)
{
	struct collect_kmod *k = state;

	if (!max)
		return 0;
	pfd[0].fd = k->fd;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	return 1;
}

/* Read once; 0 with *@got = 0 when nothing is there now. */
static int km_read_once(struct collect_kmod *k, size_t *got)
{
	ssize_t n = read(k->fd, k->buf, KM_BUF);

	*got = 0;
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		du_err("kmod: reading %s: %s", km_device(), strerror(errno));
		return -errno;
	}
	*got = (size_t)n;
	return n ? k->sink->feed(k->sink->ctx, k->buf, (size_t)n) : OPD_COLLECT_EOF;
}

/*
 * The present after the module's header, as the perf collector gives it:
 * kernel tables copied into the session, processes and their mappings as
 * records (the module's own records carry CLOCK_MONOTONIC times too).
 */
static int km_snapshot(struct collect_kmod *k)
{
	struct raw_writer *w = raw_writer_new(k->sink->feed, k->sink->ctx, 256 * 1024);
	struct timespec ts;
	int ret;

	if (!w)
		return -ENOMEM;
	opd_snapshot_copy_kernel(NULL, k->session_dir);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ret = raw_put_time(w, (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
	if (!ret)
		ret = opd_snapshot_write(w, NULL);
	if (raw_writer_close(w) && !ret)
		ret = -EIO;
	if (ret)
		du_err("kmod: writing the host snapshot: %s", strerror(-ret));
	return ret;
}

static int km_start(void *state)
{
	struct collect_kmod *k = state;
	struct pollfd pfd = { .fd = k->fd, .events = POLLIN };
	size_t got;
	int ret;

	if (ioctl(k->fd, DP_KMOD_IOC_ENABLE) < 0) {
		ret = -errno;
		du_err("kmod: enabling sampling: %s", strerror(-ret));
		return ret;
	}
	k->enabled = true;
	if (ioctl(k->fd, DP_KMOD_IOC_GET_CONFIG, &k->cfg) == 0)
		du_info("kmod: sampling with %s",
			k->cfg.active_event == DP_KMOD_EV_CYCLES ? "cycles (PMU)" :
			"the CPU clock (no PMU)");
	/* the header: the first read of a new stream returns it alone */
	if (poll(&pfd, 1, KM_HEADER_MS) <= 0) {
		du_err("kmod: no stream header from %s", km_device());
		return -ETIMEDOUT;
	}
	ret = km_read_once(k, &got);
	if (ret < 0)
		return ret;
	if (!got) {
		du_err("kmod: no stream header from %s", km_device());
		return -EPROTO;
	}
	return km_snapshot(k);
}

static int km_read(void *state, const struct pollfd *pfd, size_t n)
{
	struct collect_kmod *k = state;
	size_t got;
	int ret, i;

	if (n && !(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
		return 0;
	/* a few reads per turn, so a busy host does not starve the loop */
	for (i = 0; i < 8; i++) {
		ret = km_read_once(k, &got);
		if (ret || got < KM_BUF / 2)
			return ret;
	}
	return 0;
}

static int km_stop(void *state)
{
	struct collect_kmod *k = state;
	size_t got;
	int ret;

	if (!k->enabled)
		return 0;
	if (ioctl(k->fd, DP_KMOD_IOC_DISABLE) < 0) {
		ret = -errno;
		du_err("kmod: disabling sampling: %s", strerror(-ret));
		return ret;
	}
	k->enabled = false;
	/* disabled: reads return what is buffered, then 0 */
	do
		ret = km_read_once(k, &got);
	while (ret == 0 && got);
	return ret == OPD_COLLECT_EOF ? 0 : ret;
}

const struct opd_collector_ops opd_collector_kmod = {
	.name = "kmod",
	.caps = OPD_CAP_LIVE | OPD_CAP_CALLCHAIN | OPD_CAP_EVENTS_OPT,
	.open = km_open,
	.pollfds = km_pollfds,
	.start = km_start,
	.read = km_read,
	.stop = km_stop,
	.close = km_close,
};
