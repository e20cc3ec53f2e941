#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opd_daemon.h"
#include "opd_gpipe.h"
#include "opd_log.h"
#include "opd_pub.h"
#include "util/du_fs.h"
#include "util/du_io.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

struct opd_sigflags opd_sig;

/* Poll timeout while the collector has fds: signals interrupt it, and
 * domain rescans and batch flushes are due about once a second. */
#define POLL_MS 200
/* pollfds: the collector's (a ring per CPU) and the agent channels' */
#define MAX_POLLFDS (4096 + 256)

static int sink_decode(void *ctx, const void *buf, size_t len, size_t *used)
{
	return opd_daemon_decode(ctx, buf, len, used);
}

static int header_hook(void *ctx, const struct raw_header *h)
{
	return opd_daemon_write_session_conf(ctx, h);
}

/* The host-side tables and sample files, and the domain registry if the
 * daemon follows domains.  -errno; the caller frees what was made. */
static int open_tables(struct opd_daemon *d, const struct opd_conf *conf)
{
	d->images = opd_images_new();
	if (!d->images)
		return -ENOMEM;
	d->procs = opd_procs_new(conf, d->images, &d->st);
	if (!d->procs)
		return -ENOMEM;
	d->kernel = opd_kernel_new(d->images);
	if (!d->kernel)
		return -ENOMEM;
	d->sfiles = opd_sfiles_new(conf, &d->st);
	if (!d->sfiles)
		return -errno;
	d->batch = opd_batch_new(d->sfiles, &d->st, 0);
	if (!d->batch)
		return -errno;
	d->cc = opd_cc_new(conf->session_dir, d->sfiles, &d->st);
	if (!d->cc)
		return -errno;
	if (conf->track_domains) {
		d->domains = opd_domains_new(conf, &d->st, d->images, d->sfiles);
		if (!d->domains) {
			int ret = -errno;

			du_err("cannot follow domains: %s", strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* The translator over the tables, with the guests' agent channels when
 * domains are followed.  -errno; the caller frees what was made. */
static int open_trans(struct opd_daemon *d, const struct opd_conf *conf)
{
	d->trans = opd_trans_new(conf, &d->st, d->images, d->procs, d->kernel, d->sfiles);
	if (!d->trans)
		return -errno;
	if (d->domains) {
		struct opd_guest_limits lim;

		opd_guest_limits_default(&lim);
		if (conf->guest_cpu_ms)
			lim.cpu_ns = conf->guest_cpu_ms * 1000ULL * 1000;
		if (conf->guest_cpu_total_ms)
			lim.total_cpu_ns = conf->guest_cpu_total_ms * 1000ULL * 1000;
		d->agents = opd_agents_new(conf->session_dir, &lim, d->images, &d->st);
		if (!d->agents) {
			int ret = -errno;

			du_err("cannot set up agent channels: %s", strerror(-ret));
			return ret;
		}
		d->gpipe = opd_gpipe_new(conf, d->agents,
					 &(struct opd_filer){ d->sfiles, d->batch, &d->st });
		if (!d->gpipe)
			return -errno;
		opd_gpipe_set_cc(d->gpipe, d->cc);
		opd_trans_set_gpipe(d->trans, d->gpipe);
	}
	opd_trans_set_domains(d->trans, d->domains);
	opd_trans_set_batch(d->trans, d->batch);
	opd_trans_set_cc(d->trans, d->cc);
	return 0;
}

int opd_daemon_init(struct opd_daemon *d, const struct opd_conf *conf, const char *stream_name)
{
	char path[PATH_MAX];
	int ret;

	memset(d, 0, sizeof(*d));
	d->conf = conf;
	d->record_fd = -1;
	d->pub_fd = -1;
	d->st.running = true;
	d->st.collector = conf->collector;
	d->sink.ctx = d;
	d->sink.feed = opd_daemon_sink;
	d->sink.decode = sink_decode;
	d->st.start_time = (int64_t)time(NULL);
	if (snprintf(path, sizeof(path), "%s/samples/current", conf->session_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	ret = du_nf_mkdirs(path);
	if (ret) {
		du_err("cannot create %s: %s", path, strerror(-ret));
		return ret;
	}
	ret = open_tables(d, conf);
	if (!ret)
		ret = open_trans(d, conf);
	if (ret)
		goto out_fini;
	d->stream = opd_stream_new(d->trans, stream_name, header_hook, d);
	if (!d->stream) {
		ret = -ENOMEM;
		goto out_fini;
	}
	if (conf->record) {
		/* kernel addresses: the caller's alone, and never through a
		 * link planted where the file goes (/tmp) */
		d->record_fd = du_openat_own(AT_FDCWD, conf->record, O_WRONLY | O_CREAT | O_TRUNC,
					     DU_SDIR_SECRET_MODE);
		if (d->record_fd < 0) {
			ret = d->record_fd;
			d->record_fd = -1;
			du_err("refusing record file %s: %s", conf->record, du_own_strerror(ret));
			goto out_fini;
		}
	}
	return 0;

out_fini:
	opd_daemon_fini(d);
	return ret;
}

void opd_daemon_fini(struct opd_daemon *d)
{
	opd_stream_free(d->stream);
	opd_trans_free(d->trans);
	d->trans = NULL;
	opd_gpipe_free(d->gpipe);
	d->gpipe = NULL;
	opd_agents_free(d->agents);
	d->agents = NULL;
	opd_domains_free(d->domains);
	/* what is still queued goes in (fini syncs nothing, but loses
	 * nothing either) */
	if (d->batch)
		opd_batch_flush(d->batch);
	opd_batch_free(d->batch);
	opd_cc_free(d->cc);
	d->cc = NULL;
	if (d->exiting)
		opd_sfiles_free_exiting(d->sfiles);
	else
		opd_sfiles_free(d->sfiles);
	opd_kernel_free(d->kernel);
	opd_procs_free(d->procs);
	opd_images_free(d->images);
	if (d->record_fd >= 0)
		close(d->record_fd);
	d->stream = NULL;
	d->domains = NULL;
	d->batch = NULL;
	d->sfiles = NULL;
	d->kernel = NULL;
	d->procs = NULL;
	d->images = NULL;
	d->record_fd = -1;
}

/* A failed write stops the recording, not the profile. */
static void tee_record(struct opd_daemon *d, const void *buf, size_t len)
{
	int ret;

	if (d->record_fd < 0 || !len)
		return;
	ret = du_write_all(d->record_fd, buf, len);
	if (ret) {
		du_err("writing record file %s: %s; recording stopped", d->conf->record,
		       strerror(-ret));
		close(d->record_fd);
		d->record_fd = -1;
	}
}

int opd_daemon_feed(struct opd_daemon *d, const void *buf, size_t len)
{
	tee_record(d, buf, len);
	return opd_stream_feed(d->stream, buf, len);
}

int opd_daemon_decode(struct opd_daemon *d, const void *buf, size_t len, size_t *used)
{
	int ret;

	*used = 0;
	ret = opd_stream_decode(d->stream, buf, len, used);
	if (!ret)
		tee_record(d, buf, *used);
	return ret;
}

int opd_daemon_sink(void *ctx, const void *buf, size_t len)
{
	return opd_daemon_feed(ctx, buf, len);
}

int opd_daemon_write_stats(struct opd_daemon *d)
{
	int ret = opd_stats_write(&d->st, d->conf->session_dir, d->pub_fd);

	if (d->agents)
		opd_agents_write_stats(d->agents);	/* SESSION/domains/<esc>/stats */

	if (ret)
		du_err("cannot write %s/stats: %s", d->conf->session_dir, strerror(-ret));
	return ret;
}

static uint64_t mono_ns(void);

/* The guest samples held that are due at @now_ns (@all: every one). */
static void drain_guests(struct opd_daemon *d, uint64_t now_ns, bool all)
{
	if (d->gpipe)
		opd_gpipe_drain(d->gpipe, now_ns, all);
}

/* syncfs of the file system holding @dir/@sub (the worker may reach only
 * what it was handed, not the session directory itself) */
static int sync_session(const char *dir, const char *sub)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, sub) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = du_nf_open(path, O_RDONLY | O_DIRECTORY, 0, false);
	if (fd < 0)
		return fd;
	if (syncfs(fd))
		ret = -errno;
	close(fd);
	return ret;
}

int opd_daemon_dump(struct opd_daemon *d)
{
	uint64_t now = mono_ns();
	int ret = 0;

	/* a dump covers every guest sample so far, with what is known; its
	 * moment goes in the stats, so that another profiler's record can be
	 * cut where this one is */
	drain_guests(d, now, true);
	d->st.dump_time_ns = now;
	/* No msync: the sample files are shared mappings of the page cache,
	 * so opreport sees every count as soon as the batch is applied, and a
	 * killed daemon loses none of them.  Durability is the stop's job. */
	opd_batch_flush(d->batch);
	opd_cc_write(d->cc);
	/* a binary rebuilt while it was profiled: its new identity too */
	opd_sfiles_recheck_images(d->sfiles);
	if (d->record_fd >= 0 && fdatasync(d->record_fd)) {
		ret = -errno;
		du_warn("syncing record file %s: %s", d->conf->record, strerror(errno));
	}
	d->st.dumps++;
	return opd_daemon_write_stats(d) ? : ret;
}

/* A fresh samples/current: the monitor's (privsep), else made here. */
static int fresh_current(struct opd_daemon *d)
{
	char path[PATH_MAX];
	int fd, ret;

	if (snprintf(path, sizeof(path), "%s/samples/current", d->conf->session_dir) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	if (!d->samples_dir)
		return du_nf_mkdirs(path);
	ret = d->samples_dir(d->samples_dir_ctx, &fd);
	if (ret)
		return ret;
	ret = du_nf_root_add(path, fd);	/* replaces the root of that path */
	if (ret)
		close(fd);
	return ret;
}

int opd_daemon_new_current(struct opd_daemon *d)
{
	int ret;

	/* what was read before the signal goes with the saved session */
	drain_guests(d, mono_ns(), true);
	opd_batch_flush(d->batch);
	opd_cc_write(d->cc);
	opd_sfiles_recheck_images(d->sfiles);
	ret = opd_sfiles_restart(d->sfiles);
	opd_cc_restart(d->cc);
	if (!ret)
		ret = fresh_current(d);
	if (ret)
		du_err("after --save: no fresh samples/current (%s); samples go on into the "
		       "saved session", strerror(-ret));
	else
		du_info("samples set aside (opcontrol --save); a new samples/current begins");
	d->st.saves++;
	return opd_daemon_write_stats(d) ? : ret;
}

int opd_daemon_stop(struct opd_daemon *d)
{
	int ret;

	drain_guests(d, mono_ns(), true);
	opd_batch_flush(d->batch);
	opd_cc_write(d->cc);
	opd_sfiles_recheck_images(d->sfiles);
	/* One syncfs writes every sample file out in a single pass; an msync
	 * per file made the kernel dispatch each file's few pages on its own
	 * (a fifth of a large replay's CPU time). */
	ret = sync_session(d->conf->session_dir, "samples/current");
	if (ret)
		du_warn("syncing sample files: %s", strerror(-ret));
	if (d->record_fd >= 0 && fsync(d->record_fd))
		du_warn("syncing record file: %s", strerror(errno));
	d->st.running = false;
	if (d->domains)
		opd_domains_finish(d->domains, (int64_t)time(NULL));
	return opd_daemon_write_stats(d) ? : ret;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int opd_daemon_scan_domains(struct opd_daemon *d)
{
	int ret;

	if (!d->domains)
		return 0;
	ret = opd_domains_scan(d->domains, mono_ns(), (int64_t)time(NULL));
	if (ret < 0) {
		du_warn("scanning domains: %s", strerror(-ret));
		return ret;
	}
	if (ret > 0)
		opd_trans_invalidate(d->trans);
	if (d->agents)
		opd_agents_sync(d->agents, d->domains);
	return 0;
}

/* A domain backend with lifecycle events (libvirt) wakes the loop
 * through its fd, first in the array; the agents' fds follow. */
static bool domains_polled(const struct opd_daemon *d, const struct pollfd *pfd, size_t n)
{
	return d->domains && n && pfd[0].fd >= 0 && pfd[0].fd == opd_domains_fd(d->domains);
}

size_t opd_daemon_pollfds(struct opd_daemon *d, struct pollfd *pfd, size_t max)
{
	size_t k = 0;

	if (d->domains && max && opd_domains_fd(d->domains) >= 0) {
		pfd[0].fd = opd_domains_fd(d->domains);
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		k = 1;
	}
	return k + (d->agents ? opd_agents_pollfds(d->agents, pfd + k, max - k) : 0);
}

void opd_daemon_polled(struct opd_daemon *d, const struct pollfd *pfd, size_t n)
{
	uint64_t now = mono_ns();

	if (domains_polled(d, pfd, n)) {
		if (pfd[0].revents)
			opd_daemon_scan_domains(d);
		pfd++;
		n--;
	}
	if (!d->agents)
		return;
	opd_agents_io(d->agents, pfd, n, now);
	drain_guests(d, now, false);
}

bool opd_daemon_service(struct opd_daemon *d)
{
	int ret;

	if (opd_sig.hup) {
		opd_sig.hup = 0;
		if (opd_log_reopen())
			du_warn("cannot reopen the log");
		du_info("log reopened");
	}
	/* live mode: queued samples reach their files within about 1 s */
	opd_batch_flush_due(d->batch, mono_ns(), 1000000000ULL);
	if (opd_sig.dump) {
		opd_sig.dump = 0;
		ret = opd_daemon_dump(d);
		if (ret)
			du_err("dump %" PRIu64 " incomplete: %s", d->st.dumps, strerror(-ret));
		else
			du_debug("dump %" PRIu64 " done", d->st.dumps);
	}
	if (opd_sig.save) {
		opd_sig.save = 0;
		opd_daemon_new_current(d);
	}
	if (d->domains && opd_domains_scan_due(d->domains, mono_ns()))
		opd_daemon_scan_domains(d);
	return opd_sig.stop != 0;
}

int opd_daemon_write_session_conf(struct opd_daemon *d, const struct raw_header *h)
{
	char path[PATH_MAX];
	size_t off = 0, len = 0;
	char *buf = NULL;
	FILE *f;
	int ret = 0;

	d->st.events[0] = '\0';
	for (uint32_t i = 0; i < h->nr_events; i++) {
		int n = snprintf(d->st.events + off, sizeof(d->st.events) - off, "%s%s:%" PRIu64 ":%u:%d:%d",
				 i ? "," : "", h->events[i].name, h->events[i].count, h->events[i].unit_mask,
				 !!(h->events[i].flags & DP_RAW_EV_KERNEL), !!(h->events[i].flags & DP_RAW_EV_USER));

		if (n < 0 || (size_t)n >= sizeof(d->st.events) - off)
			break;
		off += (size_t)n;
	}
	if (d->conf_written)
		return 0;
	d->conf_written = true;
	snprintf(path, sizeof(path), "%s/session.conf", d->conf->session_dir);
	f = open_memstream(&buf, &len);
	if (!f) {
		ret = -errno;
		goto out_err;
	}
	for (uint32_t i = 0; i < h->nr_events; i++)
		fprintf(f, "event %s:%" PRIu64 ":%u:%d:%d\n", h->events[i].name, h->events[i].count,
			h->events[i].unit_mask, !!(h->events[i].flags & DP_RAW_EV_KERNEL),
			!!(h->events[i].flags & DP_RAW_EV_USER));
	fprintf(f, "separate %s\n", d->conf->separate_str ? d->conf->separate_str : "none");
	fprintf(f, "collector %s\n", d->conf->collector);
	if (d->conf->cpu_type)
		fprintf(f, "cpu_type %s\n", d->conf->cpu_type);
	if (d->conf->domains)
		fprintf(f, "domains %s\n", d->conf->domains);
	if (d->conf->input)
		fprintf(f, "input %s\n", d->conf->input);
	if (d->conf->callgraph_depth)
		fprintf(f, "callgraph %u\n", d->conf->callgraph_depth);
	ret = fclose(f) ? -errno :
	      opd_pub_write(d->pub_fd, d->conf->session_dir, OPD_PUB_CONF, buf, len);
	free(buf);
	if (ret)
		goto out_err;
	return 0;

out_err:
	du_err("cannot write %s: %s", path, strerror(-ret));
	return ret;
}

/* One turn's wait: the collector's fds and the agents'.  A collector
 * without fds (a file) is always ready: then only a look at the agents. */
static int loop_poll(struct opd_daemon *d, const struct opd_collector_ops *ops, void *state,
		     struct pollfd *pfd, size_t *nc)
{
	size_t na;

	*nc = ops->pollfds(state, pfd, MAX_POLLFDS);
	na = opd_daemon_pollfds(d, pfd + *nc, MAX_POLLFDS - *nc);
	if (*nc + na && poll(pfd, (nfds_t)(*nc + na), *nc ? POLL_MS : 0) < 0 && errno != EINTR) {
		du_err("poll: %s", strerror(errno));
		return -errno;
	}
	opd_daemon_polled(d, pfd + *nc, na);
	return 0;
}

int opd_daemon_run(struct opd_daemon *d, const struct opd_collector_ops *ops, void *state)
{
	struct pollfd *pfd;
	size_t nc;
	int ret, sret;

	ret = ops->start(state);
	if (ret)
		return ret;
	if (d->started && d->started(d->started_ctx)) {
		ops->stop(state);
		return -EPERM;
	}
	pfd = calloc(MAX_POLLFDS, sizeof(*pfd));
	if (!pfd)
		return -ENOMEM;
	while (!opd_daemon_service(d)) {
		ret = loop_poll(d, ops, state, pfd, &nc);
		if (!ret)
			ret = ops->read(state, pfd, nc);
		if (ret)
			break;
	}
	free(pfd);
	if (ret == OPD_COLLECT_EOF)
		ret = 0;
	sret = ops->stop(state);
	return ret ? ret : sret;
}
