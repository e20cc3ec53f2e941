#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "opd_kvmtsc_trace.h"
#include "util/du_cursor.h"

#define TRACEFS		"/sys/kernel/tracing"
#define TRACEFS_OLD	"/sys/kernel/debug/tracing"
#define EVENT		"events/kvm/kvm_write_tsc_offset"
/* Data pages per CPU (a power of two): 256 KiB, about 4000 writes, drained
 * every daemon round. */
#define RING_PAGES	64
#define REC_MAX		512

struct tcpu {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t size;
};

struct opd_kvmtsc_trace {
	struct opd_kvmtsc_fmt fmt;
	struct tcpu *cpus;
	int nr;
	uint64_t since;
	size_t page;
	uint8_t tmp[REC_MAX];
};

/* One "field:TYPE NAME;\toffset:N;\tsize:N;" line: NAME, N, N. */
static int field_line(const char *l, char *name, size_t nlen, unsigned int *off, unsigned int *size)
{
	const char *d = strstr(l, "field:"), *semi, *e, *b;
	const char *o, *s;

	if (!d || !(semi = strchr(d, ';')))
		return -EINVAL;
	e = semi;
	if ((b = memchr(d, '[', (size_t)(semi - d))))
		e = b;		/* an array: the name stops at '[' */
	b = e;
	while (b > d && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
		b--;
	if (b == e || (size_t)(e - b) >= nlen)
		return -EINVAL;
	memcpy(name, b, (size_t)(e - b));
	name[e - b] = 0;
	o = strstr(semi, "offset:");
	s = strstr(semi, "size:");
	if (!o || !s || sscanf(o, "offset:%u;", off) != 1 || sscanf(s, "size:%u;", size) != 1)
		return -EINVAL;
	return 0;
}

int opd_kvmtsc_fmt_parse(const char *text, struct opd_kvmtsc_fmt *f)
{
	unsigned int got = 0;
	const char *l = text;

	memset(f, 0, sizeof(*f));
	while (l && *l) {
		const char *nl = strchr(l, '\n');
		char line[256], name[64];
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		unsigned int off, size;

		if (n < sizeof(line)) {
			memcpy(line, l, n);
			line[n] = 0;
			if (!field_line(line, name, sizeof(name), &off, &size) && off < 4096) {
				if (!strcmp(name, "vcpu_id") && (size == 4 || size == 8)) {
					f->vcpu_off = off;
					f->vcpu_size = size;
					got |= 1;
				} else if (!strcmp(name, "previous_tsc_offset") && size == 8) {
					f->prev_off = off;
					got |= 2;
				} else if (!strcmp(name, "next_tsc_offset") && size == 8) {
					f->next_off = off;
					got |= 4;
				}
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	return got == 7 ? 0 : -EINVAL;
}

/* The sample_id trailer of a non-sample record: pid, tid, time. */
static int decode_lost(const uint8_t *rec, size_t len, struct opd_kvmtsc_write *w)
{
	struct du_cursor c;
	uint64_t id, lost;

	du_cur_init(&c, rec, len);
	du_cur_skip(&c, sizeof(struct perf_event_header));
	du_cur_u64(&c, &id);
	du_cur_u64(&c, &lost);
	du_cur_u32(&c, &w->pid);
	du_cur_u32(&c, &w->tid);
	du_cur_u64(&c, &w->t_ns);
	return du_cur_end(&c) ? 2 : -EBADMSG;
}

int opd_kvmtsc_decode(const struct opd_kvmtsc_fmt *f, const uint8_t *rec, size_t len,
		      struct opd_kvmtsc_write *w)
{
	struct perf_event_header h;
	struct du_cursor c, r;
	const uint8_t *raw;
	uint32_t rsize, v32 = 0;
	uint64_t v64 = 0;

	memset(w, 0, sizeof(*w));
	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, rec, sizeof(h));
	if (h.size != len)
		return -EBADMSG;
	if (h.type == PERF_RECORD_LOST)
		return decode_lost(rec, len, w);
	if (h.type != PERF_RECORD_SAMPLE)
		return 0;
	du_cur_init(&c, rec + sizeof(h), len - sizeof(h));
	du_cur_u32(&c, &w->pid);
	du_cur_u32(&c, &w->tid);
	du_cur_u64(&c, &w->t_ns);
	du_cur_u32(&c, &rsize);
	raw = du_cur_take(&c, rsize);
	if (!raw)
		return -EBADMSG;
	/* (the raw part is padded so the record ends on 8 bytes) */
	du_cur_init(&r, raw, rsize);
	du_cur_skip(&r, f->vcpu_off);
	if (f->vcpu_size == 8) {
		du_cur_u64(&r, &v64);
		v32 = (uint32_t)v64;
	} else {
		du_cur_u32(&r, &v32);
	}
	w->vcpu = v32;
	du_cur_init(&r, raw, rsize);
	du_cur_skip(&r, f->prev_off);
	du_cur_get(&r, &w->prev, 8);
	if (r.bad)
		return -EBADMSG;
	du_cur_init(&r, raw, rsize);
	du_cur_skip(&r, f->next_off);
	du_cur_get(&r, &w->next, 8);
	return r.bad || du_cur_left(&c) >= 8 ? -EBADMSG : 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static char *slurp(const char *path)
{
	char *buf = malloc(16384);
	ssize_t n;
	int fd;

	if (!buf)
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd < 0 ? -1 : read(fd, buf, 16383);
	if (fd >= 0)
		close(fd);
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	return buf;
}

/* The event's directory under tracefs (mounted if the daemon can: as
 * root, never in the privsep worker, whose seccomp list has no mount). */
static int event_dir(const char *tracefs, char *dir, size_t len)
{
	struct stat sb;

	if (tracefs) {
		snprintf(dir, len, "%s/%s", tracefs, EVENT);
		return stat(dir, &sb) ? -errno : 0;
	}
	snprintf(dir, len, "%s/%s", TRACEFS, EVENT);
	if (!stat(dir, &sb))
		return 0;
	if (stat(TRACEFS "/events", &sb) && geteuid() == 0)
		(void)mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	if (!stat(dir, &sb))
		return 0;
	snprintf(dir, len, "%s/%s", TRACEFS_OLD, EVENT);
	return stat(dir, &sb) ? -ENOENT : 0;
}

/* The tracepoint's id and field layout. */
static int event_info(const char *tracefs, uint64_t *id, struct opd_kvmtsc_fmt *f,
		      char *why, size_t whylen)
{
	char dir[512], p[600], *text;
	int err = event_dir(tracefs, dir, sizeof(dir));

	if (err) {
		snprintf(why, whylen, "no tracepoint kvm:kvm_write_tsc_offset (%s)",
			 tracefs ? tracefs : TRACEFS);
		return err;
	}
	snprintf(p, sizeof(p), "%s/id", dir);
	text = slurp(p);
	if (!text || sscanf(text, "%" SCNu64, id) != 1) {
		free(text);
		snprintf(why, whylen, "%s: unreadable", p);
		return -EINVAL;
	}
	free(text);
	snprintf(p, sizeof(p), "%s/format", dir);
	text = slurp(p);
	err = text ? opd_kvmtsc_fmt_parse(text, f) : -EINVAL;
	free(text);
	if (err)
		snprintf(why, whylen, "%s: not the expected fields", p);
	return err;
}

/* Open the tracepoint @id on @cpu (not mapped).  The fd or -errno. */
static int open_cpu(int cpu, uint64_t id)
{
	struct perf_event_attr a;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = id;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(RING_PAGES * page);
	fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

size_t opd_kvmtsc_trace_map_len(void)
{
	return (RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
}

int opd_kvmtsc_trace_open_cpus(const char *tracefs, struct opd_kvmtsc_fmt *f, int *fds, int max,
			       char *why, size_t whylen)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t id;
	int err, opened = 0;

	for (int i = 0; i < max; i++)
		fds[i] = -1;
	if (n <= 0)
		return -ENODEV;
	if (n > max)
		n = max;
	err = event_info(tracefs, &id, f, why, whylen);
	if (err)
		return err;
	for (int i = 0; i < (int)n; i++) {
		int fd = open_cpu(i, id);

		if (fd >= 0) {
			fds[i] = fd;
			opened++;
		} else if (fd != -ENODEV && fd != -EINVAL) {	/* (offline CPUs) */
			err = fd;
		}
	}
	if (!opened) {
		if (!err)
			err = -ENODEV;
		snprintf(why, whylen, "perf_event_open(kvm:kvm_write_tsc_offset): %s",
			 strerror(-err));
		return err;
	}
	return (int)n;
}

struct opd_kvmtsc_trace *opd_kvmtsc_trace_adopt(const struct opd_kvmtsc_fmt *f, int *fds, int n,
						char *why, size_t whylen)
{
	struct opd_kvmtsc_trace *tr = calloc(1, sizeof(*tr));
	size_t len = opd_kvmtsc_trace_map_len();
	int err = -ENOMEM, mapped = 0;

	if (!tr || n <= 0 || !(tr->cpus = calloc((size_t)n, sizeof(*tr->cpus))))
		goto out_free;
	tr->fmt = *f;
	tr->nr = n;
	tr->page = (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < n; i++) {
		struct tcpu *c = &tr->cpus[i];
		void *m;

		c->fd = fds[i];
		fds[i] = -1;
		if (c->fd < 0)
			continue;
		m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (m == MAP_FAILED) {
			err = -errno;
			continue;
		}
		c->meta = m;
		c->data = (uint8_t *)m + tr->page;
		c->size = RING_PAGES * tr->page;
		mapped++;
	}
	if (!mapped) {
		snprintf(why, whylen, "mmap(kvm:kvm_write_tsc_offset): %s", strerror(-err));
		goto out_free;
	}
	tr->since = mono_ns();
	return tr;
out_free:
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	opd_kvmtsc_trace_close(tr);
	errno = -err;
	return NULL;
}

struct opd_kvmtsc_trace *opd_kvmtsc_trace_open_via(opd_kvmtsc_open_fn open, void *ctx, char *why,
						   size_t whylen)
{
	struct opd_kvmtsc_fmt f;
	int fds[OPD_KVMTSC_MAX_CPUS], n;

	n = open(ctx, &f, fds, OPD_KVMTSC_MAX_CPUS, why, whylen);
	if (n < 0) {
		errno = -n;
		return NULL;
	}
	return opd_kvmtsc_trace_adopt(&f, fds, n, why, whylen);
}

static int open_local(void *ctx, struct opd_kvmtsc_fmt *f, int *fds, int max, char *why,
		      size_t whylen)
{
	return opd_kvmtsc_trace_open_cpus(ctx, f, fds, max, why, whylen);
}

struct opd_kvmtsc_trace *opd_kvmtsc_trace_open(const char *tracefs, char *why, size_t whylen)
{
	return opd_kvmtsc_trace_open_via(open_local, (void *)tracefs, why, whylen);
}

void opd_kvmtsc_trace_close(struct opd_kvmtsc_trace *tr)
{
	if (!tr)
		return;
	for (int i = 0; tr->cpus && i < tr->nr; i++) {
		if (tr->cpus[i].meta)
			munmap(tr->cpus[i].meta, (RING_PAGES + 1) * tr->page);
		if (tr->cpus[i].fd >= 0)
			close(tr->cpus[i].fd);
	}
	free(tr->cpus);
	free(tr);
}

uint64_t opd_kvmtsc_trace_since(const struct opd_kvmtsc_trace *tr)
{
	return tr->since;
}

/* The record at @tail, copied out when it wraps; NULL when it is not
 * sane (the ring is then skipped to its head). */
static const uint8_t *ring_rec(struct opd_kvmtsc_trace *tr, struct tcpu *c, uint64_t tail,
			       uint64_t head, struct perf_event_header *h)
{
	uint64_t off = tail & (c->size - 1);

	for (size_t i = 0; i < sizeof(*h); i++)
		((uint8_t *)h)[i] = c->data[(off + i) & (c->size - 1)];
	if (h->size < sizeof(*h) || h->size > head - tail)
		return NULL;
	if (off + h->size <= c->size)
		return c->data + off;
	if (h->size > sizeof(tr->tmp))
		return NULL;
	for (size_t i = 0; i < h->size; i++)
		tr->tmp[i] = c->data[(off + i) & (c->size - 1)];
	return tr->tmp;
}

size_t opd_kvmtsc_trace_drain(struct opd_kvmtsc_trace *tr, pid_t pid,
			      void (*write)(void *arg, const struct opd_kvmtsc_write *w),
			      void (*lost)(void *arg, uint64_t t_ns), void *arg)
{
	size_t n = 0;

	for (int i = 0; i < tr->nr; i++) {
		struct tcpu *c = &tr->cpus[i];
		uint64_t head, tail;

		if (!c->meta)
			continue;
		head = __atomic_load_n(&c->meta->data_head, __ATOMIC_ACQUIRE);
		tail = c->meta->data_tail;
		while (tail < head) {
			struct perf_event_header h;
			struct opd_kvmtsc_write w;
			const uint8_t *rec = ring_rec(tr, c, tail, head, &h);
			int r;

			if (!rec) {
				lost(arg, mono_ns());	/* what was there is not known */
				tail = head;
				break;
			}
			r = opd_kvmtsc_decode(&tr->fmt, rec, h.size, &w);
			if (r == 1 && (pid_t)w.pid == pid)
				write(arg, &w);
			else if (r == 2)
				lost(arg, w.t_ns);
			else if (r < 0)
				lost(arg, mono_ns());	/* a write that cannot be read */
			tail += h.size;
			n++;
		}
		__atomic_store_n(&c->meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	return n;
}
