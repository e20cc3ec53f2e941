/*
 * Guest sideband from perf: one software `dummy` event per CPU, system
 * wide, that samples nothing and only produces side-band records (mmap2,
 * comm, fork/exit, CPU-wide context switches), stamped with
 * CLOCK_MONOTONIC.  Each CPU has its own ring; records are turned into
 * frames ring by ring, so order within a CPU is kept and the host orders
 * across CPUs by time.
 */
#include "config.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_log.h"

/* Switches are batched per CPU up to this many per SWITCH frame. */
#define AG_SWITCH_BATCH	512

struct ag_ring {
	int fd;
	uint32_t cpu;
	void *base;			/* metadata page + data */
	uint64_t lost_kernel;
};

struct ag_perf {
	struct ag_ring *rings;
	unsigned int n;
	size_t data_size, page;
	uint8_t rec[65536];		/* a record that wraps is copied here */
	struct dp_ag_switch sw[AG_SWITCH_BATCH];
	unsigned int nsw;
};

/* sample_id_all trailer for sample_type TID | TIME | CPU. */
struct ag_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

static int perf_open(struct perf_event_attr *a, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

struct ag_perf *ag_perf_open(unsigned int ring_pages)
{
	struct perf_event_attr a;
	struct ag_perf *p;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int i;
	int saved = 0;

	p = calloc(1, sizeof(*p));
	if (!p || ncpu < 1)
		goto out_free;
	p->page = (size_t)sysconf(_SC_PAGESIZE);
	p->data_size = (size_t)ring_pages * p->page;
	p->rings = calloc((size_t)ncpu, sizeof(*p->rings));
	if (!p->rings)
		goto out_free;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a.sample_id_all = 1;
	a.mmap = 1;
	a.mmap2 = 1;
	a.comm = 1;
	a.comm_exec = 1;
	a.task = 1;
	a.context_switch = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	/* Wake the agent when a quarter of a ring is full, not per record. */
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(p->data_size / 4);

	for (i = 0; i < (unsigned int)ncpu; i++) {
		struct ag_ring *r = &p->rings[p->n];
		int fd = perf_open(&a, (int)i);

		if (fd < 0) {
			/* An offline CPU has no events; anything else is fatal. */
			if (errno == ENODEV)
				continue;
			saved = errno;
			goto out_close;
		}
		r->base = mmap(NULL, p->page + p->data_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r->base == MAP_FAILED) {
			saved = errno;
			close(fd);
			goto out_close;
		}
		r->fd = fd;
		r->cpu = i;
		p->n++;
	}
	if (!p->n) {
		saved = ENODEV;
		goto out_close;
	}
	return p;

out_close:
	ag_perf_close(p);
	errno = saved ? saved : ENOMEM;
	return NULL;
out_free:
	if (p)
		free(p->rings);
	free(p);
	errno = ENOMEM;
	return NULL;
}

void ag_perf_close(struct ag_perf *p)
{
	unsigned int i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++) {
		munmap(p->rings[i].base, p->page + p->data_size);
		close(p->rings[i].fd);
	}
	free(p->rings);
	free(p);
}

unsigned int ag_perf_nfds(const struct ag_perf *p)
{
	return p ? p->n : 0;
}

int ag_perf_fd(const struct ag_perf *p, unsigned int i)
{
	return p->rings[i].fd;
}

static int flush_switches(struct ag_perf *p, struct ag_out *o, uint32_t cpu)
{
	int err = 0;

	if (p->nsw)
		err = AG_PUT(o, ap_put_switches, cpu, p->sw, p->nsw);
	p->nsw = 0;
	return err;
}

static bool get_sid(const uint8_t *rec, size_t size, size_t body, struct ag_sample_id *sid)
{
	if (size < sizeof(struct perf_event_header) + body + sizeof(*sid))
		return false;
	memcpy(sid, rec + size - sizeof(*sid), sizeof(*sid));
	return true;
}

/* A PERF_RECORD_MMAP2 record (@rec, @size bytes); a short one is skipped. */
static int handle_mmap(struct ag_ring *r, struct ag_out *o, struct ag_cookies *ck,
		       const uint8_t *rec, size_t size)
{
	struct perf_event_header h;
	const uint8_t *b = rec + sizeof(h);
	struct ag_sample_id sid;
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_gen;
		uint32_t prot, flags;
	} mm;
	struct dp_ag_mmap m = { .cpu = r->cpu };
	const char *path;
	size_t room;

	memcpy(&h, rec, sizeof(h));
	if (!get_sid(rec, size, sizeof(mm), &sid))
		return 0;
	memcpy(&mm, b, sizeof(mm));
	path = (const char *)b + sizeof(mm);
	room = size - sizeof(h) - sizeof(mm) - sizeof(sid);
	m.time_ns = sid.time;
	m.pid = mm.pid;
	m.tid = mm.tid;
	m.start = mm.addr;
	m.len = mm.len;
	m.pgoff = mm.pgoff;
	m.prot = mm.prot;
	m.flags = mm.flags;
	room = strnlen(path, room);
	if (room > DP_AG_MAX_PATH)
		room = DP_AG_MAX_PATH;
	if (!(h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
		ag_fill_cookie(ck, &m, makedev(mm.maj, mm.min), mm.ino, path, room);
	return AG_PUT(o, ap_put_mmap, &m, path, room);
}

/* A PERF_RECORD_COMM record. */
static int handle_comm(struct ag_out *o, const uint8_t *rec, size_t size)
{
	struct perf_event_header h;
	const uint8_t *b = rec + sizeof(h);
	struct ag_sample_id sid;
	struct dp_ag_comm c = { 0 };
	uint32_t pt[2];
	const char *name = (const char *)b + 8;
	size_t n;

	memcpy(&h, rec, sizeof(h));
	if (!get_sid(rec, size, 8, &sid))
		return 0;
	memcpy(pt, b, sizeof(pt));
	n = strnlen(name, size - sizeof(h) - 8 - sizeof(sid));
	c.time_ns = sid.time;
	c.pid = pt[0];
	c.tid = pt[1];
	c.flags = (h.misc & PERF_RECORD_MISC_COMM_EXEC) ? DP_AG_COMM_EXEC : 0;
	return AG_PUT(o, ap_put_comm, &c, name, n > DP_AG_MAX_COMM ? DP_AG_MAX_COMM : n);
}

/* One kernel record; sizes are checked even though the kernel wrote it. */
static int handle(struct ag_perf *p, struct ag_ring *r, struct ag_out *o, struct ag_cookies *ck,
		  const uint8_t *rec, size_t size)
{
	struct perf_event_header h;
	const uint8_t *b = rec + sizeof(h);
	struct ag_sample_id sid;
	int err;

	memcpy(&h, rec, sizeof(h));
	if (h.type == PERF_RECORD_SWITCH_CPU_WIDE) {
		uint32_t np[2];

		/* Each switch gives an OUT record on the old task and an IN
		 * record on the new one; IN names both and is kept. */
		if ((h.misc & PERF_RECORD_MISC_SWITCH_OUT) || !get_sid(rec, size, 8, &sid))
			return 0;
		memcpy(np, b, sizeof(np));
		p->sw[p->nsw++] = (struct dp_ag_switch){
			.time_ns = sid.time, .prev_pid = np[0], .prev_tid = np[1],
			.next_pid = sid.pid, .next_tid = sid.tid,
		};
		return p->nsw == AG_SWITCH_BATCH ? flush_switches(p, o, r->cpu) : 0;
	}
	/* Other records keep their place relative to the switches. */
	err = flush_switches(p, o, r->cpu);
	if (err)
		return err;
	switch (h.type) {
	case PERF_RECORD_MMAP2:
		return handle_mmap(r, o, ck, rec, size);
	case PERF_RECORD_COMM:
		return handle_comm(o, rec, size);
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		struct dp_ag_task t;
		uint32_t v[4];

		if (!get_sid(rec, size, 24, &sid))
			return 0;
		memcpy(v, b, sizeof(v));
		t = (struct dp_ag_task){ .time_ns = sid.time, .pid = v[0], .ppid = v[1],
					 .tid = v[2], .ptid = v[3] };
		return AG_PUT(o, ap_put_task, h.type == PERF_RECORD_FORK ? DP_AG_FORK : DP_AG_EXIT, &t);
	}
	case PERF_RECORD_LOST: {
		uint64_t v[2];
		struct dp_ag_lost l = { .cpu = r->cpu, .source = DP_AG_LOST_KERNEL };

		if (size < sizeof(h) + sizeof(v))
			return 0;
		memcpy(v, b, sizeof(v));
		l.count = v[1];
		l.time_ns = get_sid(rec, size, sizeof(v), &sid) ? sid.time : ag_now_ns();
		r->lost_kernel += v[1];
		return AG_PUT(o, ap_put_lost, &l);
	}
	default:
		return 0;
	}
}

static int drain_ring(struct ag_perf *p, struct ag_ring *r, struct ag_out *o, struct ag_cookies *ck)
{
	struct perf_event_mmap_page *meta = r->base;
	const uint8_t *data = (const uint8_t *)r->base + p->page;
	uint64_t head, tail, mask = p->data_size - 1;
	int err = 0;

	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	while (tail < head && !err) {
		struct perf_event_header h;
		size_t off = (size_t)(tail & mask), first;
		const uint8_t *rec;

		if (head - tail < sizeof(h))
			break;
		first = p->data_size - off;
		if (first >= sizeof(h)) {
			memcpy(&h, data + off, sizeof(h));
		} else {
			memcpy(&h, data + off, first);
			memcpy((uint8_t *)&h + first, data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail) {
			/* Cannot happen with a sane kernel; drop the rest. */
			tail = head;
			break;
		}
		if (first >= h.size) {
			rec = data + off;
		} else {
			memcpy(p->rec, data + off, first);
			memcpy(p->rec + first, data, h.size - first);
			rec = p->rec;
		}
		err = handle(p, r, o, ck, rec, h.size);
		tail += h.size;
	}
	if (!err)
		err = flush_switches(p, o, r->cpu);
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	return err;
}

int ag_perf_drain(struct ag_perf *p, struct ag_out *o, struct ag_cookies *ck)
{
	unsigned int i;
	int err = 0;

	for (i = 0; p && i < p->n && !err; i++)
		err = drain_ring(p, &p->rings[i], o, ck);
	return err;
}
