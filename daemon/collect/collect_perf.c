/*
 * The perf collector (--collector=perf; doc/architecture.md, "Collectors"):
 * one perf event per CPU and event, a CPU's events sharing one ring.  Each
 * round reads every ring (collect_perf_ring.c) and writes the records,
 * merged by time, as raw records with the context they need.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collect_perf_int.h"
#include "opd_collector.h"
#include "opd_procfs.h"
#include "opd_snapshot.h"
#include "raw/raw_stream.h"
#include "util/du_log.h"

#define MAX_CPUS	4096
#define POLL_MS		200
/* Context TIME records are emitted when time moved by this much: enough
 * for the daemon's exit lingering, without a TIME before every sample. */
#define TIME_GRAIN_NS	1000000ULL

static long perf_open(struct perf_event_attr *a, int cpu)
{
	return syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_ev *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static void perf_close(void *state)
{
	struct collect_perf *p = state;

	if (!p)
		return;
	for (int i = 0; i < p->nr_cpus; i++) {
		if (p->cpus[i].base)
			munmap(p->cpus[i].base, p->mmap_len);
		free(p->cpus[i].recs);
		free(p->cpus[i].arena);
		free(p->cpus[i].ccbuf);
	}
	for (int i = 0; i < p->nr_fds; i++)
		close(p->fds[i]);
	raw_writer_close(p->w);
	free(p->cpus);
	free(p->fds);
	free(p->ids);
	free(p);
}

static int map_ring(struct collect_perf *p, struct pcpu *pc, long pagesz)
{
	pc->base = mmap(NULL, p->mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED, pc->fd, 0);
	if (pc->base == MAP_FAILED) {
		pc->base = NULL;
		du_err("mmap of the cpu %d ring buffer: %s", pc->cpu, strerror(errno));
		return -errno;
	}
	pc->meta = pc->base;
	pc->data = (uint8_t *)pc->base + pagesz;
	pc->size = (uint64_t)p->conf->perf_pages * (uint64_t)pagesz;
	if (pc->meta->data_size) {
		pc->data = (uint8_t *)pc->base + pc->meta->data_offset;
		pc->size = pc->meta->data_size;
	}
	return 0;
}

static void fill_attr(const struct opd_conf *conf, unsigned int e, long pagesz,
		      struct perf_event_attr *attr)
{
	attr->size = sizeof(*attr);
	attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	attr->disabled = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->sample_id_all = 1;
	if (conf->callgraph_depth) {
		/* frame-pointer chains, kernel and user; the sample's own pc
		 * comes first in perf's chain, hence one more */
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
		attr->sample_max_stack = (uint16_t)(conf->callgraph_depth + 1);
	}
	attr->watermark = 1;
	attr->wakeup_watermark = (uint32_t)(conf->perf_pages * (size_t)pagesz / 4);
	if (e == 0) {
		attr->mmap = 1;	/* the kernel matches exec mmaps on it */
		attr->mmap2 = 1;
		attr->comm = 1;
		attr->comm_exec = 1;
		attr->task = 1;
	}
}

/* Open every event on one CPU; the first owns the ring, the others
 * write into it. */
static int open_cpu(struct collect_perf *p, const struct ev_table *t, struct pcpu *pc,
		    long pagesz)
{
	const struct opd_conf *conf = p->conf;

	for (unsigned int e = 0; e < conf->nr_events; e++) {
		struct perf_event_attr attr;
		long fd;
		int ret;

		memset(&attr, 0, sizeof(attr));
		ret = ev_spec_to_perf(t, &conf->events[e], &attr);
		if (ret) {
			du_err("event %s: cannot program it: %s", conf->events[e].name, strerror(-ret));
			return ret;
		}
		fill_attr(conf, e, pagesz, &attr);
		/* embedded, a sample is CPU time used, as the other
		 * collector's are (the xen collector's vCPU time): the idle
		 * task's is not (the timer honours it) */
		attr.exclude_idle = p->embedded;
		fd = perf_open(&attr, pc->cpu);
		if (fd < 0) {
			int e2 = errno;

			du_err("perf_event_open(%s, cpu %d): %s%s", conf->events[e].name, pc->cpu,
			       strerror(e2),
			       e2 == EACCES || e2 == EPERM ?
			       " (run as root or lower /proc/sys/kernel/perf_event_paranoid)" :
			       e2 == ENOENT || e2 == EOPNOTSUPP ? " (event not supported here)" : "");
			return -e2;
		}
		p->fds[p->nr_fds++] = (int)fd;
		if (ioctl((int)fd, PERF_EVENT_IOC_ID, &p->ids[p->nr_ids].id)) {
			du_err("PERF_EVENT_IOC_ID: %s", strerror(errno));
			return -errno;
		}
		p->ids[p->nr_ids++].event = e;
		if (e == 0) {
			pc->fd = (int)fd;
			ret = map_ring(p, pc, pagesz);
			if (ret)
				return ret;
		} else if (ioctl((int)fd, PERF_EVENT_IOC_SET_OUTPUT, pc->fd)) {
			du_err("PERF_EVENT_IOC_SET_OUTPUT: %s", strerror(errno));
			return -errno;
		}
	}
	return 0;
}

static int perf_alloc(struct collect_perf *p)
{
	int cpus[MAX_CPUS];
	int n = opd_procfs_cpu_list("/sys/devices/system/cpu/online", cpus, MAX_CPUS);

	if (n < 0) {
		du_err("cannot read /sys/devices/system/cpu/online: %s", strerror(-n));
		return n;
	}
	p->nr_cpus = n;
	p->cpus = calloc((size_t)n, sizeof(*p->cpus));
	p->fds = calloc((size_t)n * p->conf->nr_events, sizeof(*p->fds));
	p->ids = calloc((size_t)n * p->conf->nr_events, sizeof(*p->ids));
	if (!p->cpus || !p->fds || !p->ids) {
		du_err("out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		p->cpus[i].cpu = cpus[i];
		p->cpus[i].fd = -1;
	}
	return 0;
}

/* Open the counters (disabled) and their ring buffers, copy kallsyms and
 * modules into the session. */
static int perf_open_ops(const struct opd_collector_args *a, void **state)
{
	struct collect_perf *p;
	long pagesz = sysconf(_SC_PAGESIZE);
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p) {
		du_err("out of memory");
		return -ENOMEM;
	}
	p->conf = a->conf;
	p->embedded = a->embedded;
	ret = perf_alloc(p);
	if (ret)
		goto out_close;
	p->mmap_len = (size_t)(p->conf->perf_pages + 1) * (size_t)pagesz;
	for (int i = 0; i < p->nr_cpus; i++) {
		ret = open_cpu(p, a->events, &p->cpus[i], pagesz);
		if (ret)
			goto out_close;
	}
	qsort(p->ids, (size_t)p->nr_ids, sizeof(*p->ids), cmp_id);
	p->w = raw_writer_new(a->sink->feed, a->sink->ctx, 256 * 1024);
	if (!p->w) {
		ret = -errno;
		du_err("raw writer: %s", strerror(errno));
		goto out_close;
	}
	opd_snapshot_copy_kernel(NULL, p->conf->session_dir);
	du_info("perf collector: %d cpus, %u events, %u pages per ring, call chains %u deep",
		p->nr_cpus, p->conf->nr_events, p->conf->perf_pages, p->conf->callgraph_depth);
	*state = p;
	return 0;

out_close:
	perf_close(p);
	return ret ? ret : -EINVAL;
}

/* ---- context tracking on the writer side ---- */

static int put_time(struct collect_perf *p, uint64_t t, bool exact)
{
	if (p->embedded)
		return 0;	/* the other collector's TIME records rule */
	if (p->have_time && (t == p->cur_time || (!exact && t >= p->cur_time &&
						   t - p->cur_time < TIME_GRAIN_NS)))
		return 0;
	p->have_time = true;
	p->cur_time = t;
	return raw_put_time(p->w, t);
}

static int put_ctx(struct collect_perf *p, uint32_t cpu, uint32_t pid, uint32_t tid)
{
	int ret = 0;

	if (!p->have_cpu || cpu != p->cur_cpu) {
		p->have_cpu = true;
		p->cur_cpu = cpu;
		ret = raw_put_cpu(p->w, cpu);
	}
	if (!ret && (!p->have_task || pid != p->cur_pid || tid != p->cur_tid)) {
		p->have_task = true;
		p->cur_pid = pid;
		p->cur_tid = tid;
		ret = raw_put_task(p->w, pid, tid);
	}
	return ret;
}

static uint32_t cpumode_to_mode(uint16_t misc, uint64_t ip)
{
	switch (misc & PERF_RECORD_MISC_CPUMODE_MASK) {
	case PERF_RECORD_MISC_KERNEL:
	case PERF_RECORD_MISC_HYPERVISOR:
		return DP_MODE_HOST_KERNEL;
	case PERF_RECORD_MISC_USER:
		return DP_MODE_HOST_USER;
	case PERF_RECORD_MISC_GUEST_KERNEL:
		return DP_MODE_GUEST_KERNEL;
	case PERF_RECORD_MISC_GUEST_USER:
		return DP_MODE_GUEST_USER;
	default:
		return (int64_t)ip < 0 ? DP_MODE_HOST_KERNEL : DP_MODE_HOST_USER;
	}
}

static int emit(struct collect_perf *p, const struct pcpu *pc, const struct prec *r)
{
	int ret;

	switch (r->type) {
	case PERF_RECORD_SAMPLE: {
		uint32_t mode = cpumode_to_mode(r->misc, r->ip);

		ret = put_ctx(p, r->cpu, r->pid, r->tid);
		/* guest samples are matched to the guest's switch timeline:
		 * they need their own time, not the grain's */
		if (!ret)
			ret = put_time(p, r->time, mode == DP_MODE_GUEST_KERNEL ||
					       mode == DP_MODE_GUEST_USER);
		if (!ret && (!p->have_mode || mode != p->cur_mode)) {
			p->have_mode = true;
			p->cur_mode = mode;
			ret = raw_put_mode(p->w, mode);
		}
		if (!ret && r->cc_nr)
			ret = raw_put_callchain(p->w, r->cc_nr, r->cc_nk, 0, pc->ccbuf + r->cc_off);
		return ret ? ret : raw_put_sample(p->w, r->ip, r->event);
	}
	case PERF_RECORD_MMAP2:
		ret = put_time(p, r->time, true);
		return ret ? ret : raw_put_mmap(p->w, &r->m, pc->arena + r->path_off, r->m.path_len);
	case PERF_RECORD_COMM:
		ret = put_time(p, r->time, true);
		return ret ? ret : raw_put_comm(p->w, r->pid, r->tid, r->flags, r->comm);
	case PERF_RECORD_FORK:
		ret = put_time(p, r->time, true);
		return ret ? ret : raw_put_fork(p->w, &r->t);
	case PERF_RECORD_EXIT:
		ret = put_time(p, r->time, true);
		return ret ? ret : raw_put_exit(p->w, &r->t);
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		return raw_put_lost(p->w, r->lost);
	default:
		return 0;
	}
}

/* Read every ring, then emit all records merged by time. */
static int collect_round(struct collect_perf *p)
{
	int ret = 0;

	/* another collector's records came since our last: say it all again */
	if (p->embedded)
		p->have_cpu = p->have_task = p->have_mode = false;
	for (int i = 0; i < p->nr_cpus; i++) {
		p->cpus[i].nr = p->cpus[i].pos = 0;
		p->cpus[i].arena_len = 0;
		p->cpus[i].cc_len = 0;
		ret = cp_read_ring(p, &p->cpus[i]);
		if (ret)
			return ret;
	}
	for (;;) {
		struct pcpu *best = NULL;

		for (int i = 0; i < p->nr_cpus; i++) {
			struct pcpu *pc = &p->cpus[i];

			if (pc->pos < pc->nr &&
			    (!best || pc->recs[pc->pos].time < best->recs[best->pos].time))
				best = pc;
		}
		if (!best)
			break;
		ret = emit(p, best, &best->recs[best->pos++]);
		if (ret)
			return ret;
	}
	return 0;
}

static int set_enabled(struct collect_perf *p, bool on)
{
	for (int i = 0; i < p->nr_fds; i++)
		if (ioctl(p->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0))
			return -errno;
	return 0;
}

/* Stream header, the present (opd_snapshot), then enable the counters. */
static int perf_start(void *state)
{
	struct collect_perf *p = state;
	struct dp_raw_event ev[DP_RAW_MAX_EVENTS];
	int ret;

	memset(ev, 0, sizeof(ev));
	for (unsigned int i = 0; i < p->conf->nr_events; i++) {
		const struct ev_spec *s = &p->conf->events[i];

		snprintf(ev[i].name, sizeof(ev[i].name), "%s", s->name);
		ev[i].count = s->count;
		ev[i].unit_mask = s->unit_mask;
		ev[i].flags = (s->kernel ? DP_RAW_EV_KERNEL : 0) | (s->user ? DP_RAW_EV_USER : 0);
	}
	ret = p->embedded ? 0 : raw_put_header(p->w, DP_RAW_F_TIMESTAMPS, DP_RAW_COLLECTOR_PERF,
					       now_ns(), ev, p->conf->nr_events);
	if (!ret)
		ret = put_time(p, now_ns(), true);
	if (!ret)
		ret = opd_snapshot_write(p->w, NULL);
	if (!ret)
		ret = raw_writer_flush(p->w);
	if (ret) {
		du_err("perf collector: cannot start: %s", strerror(-ret));
		return ret;
	}
	ret = set_enabled(p, true);
	if (ret)
		du_err("cannot enable the counters: %s", strerror(-ret));
	return ret;
}

static size_t perf_pollfds(void *state, struct pollfd *pfd, size_t max)
{
	struct collect_perf *p = state;
	size_t n = 0;

	for (int i = 0; i < p->nr_cpus && n < max; i++, n++) {
		pfd[n].fd = p->cpus[i].fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
	}
	return n;
}

/* Every ring is read each round (the merge by time needs them all), so
 * which fds poll() flagged does not matter. */
static int perf_read(void *state, const struct pollfd *pfd, size_t n)
{
	struct collect_perf *p = state;
	int ret;

	(void)pfd;
	(void)n;
	ret = collect_round(p);
	/* flushing each round makes a dump cover everything read so far */
	if (!ret)
		ret = raw_writer_flush(p->w);
	if (ret)
		du_err("perf collector: %s", strerror(-ret));
	return ret;
}

/* Disable, then drain what the rings still hold. */
static int perf_stop(void *state)
{
	struct collect_perf *p = state;
	int ret;

	set_enabled(p, false);
	ret = collect_round(p);
	if (!ret)
		ret = raw_writer_flush(p->w);
	if (p->throttles)
		du_warn("perf collector: the kernel throttled sampling %llu times",
			(unsigned long long)p->throttles);
	return ret;
}

const struct opd_collector_ops opd_collector_perf = {
	.name = "perf",
	.caps = OPD_CAP_LIVE | OPD_CAP_EVENTS | OPD_CAP_CALLCHAIN,
	.open = perf_open_ops,
	.pollfds = perf_pollfds,
	.start = perf_start,
	.read = perf_read,
	.stop = perf_stop,
	.close = perf_close,
};
