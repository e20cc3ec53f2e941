/*
 * Raw stream encoder.  Records are built in a memory buffer and handed to
 * the sink in chunks of about chunk_bytes; a put either appends its whole
 * record or fails without appending anything, so an error from the sink
 * never leaves half a record behind.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raw/raw_stream.h"

#define RAW_CHUNK_DEFAULT	(64 * 1024)
/* The longest record: escape, type word, largest payload (word aligned). */
#define RAW_REC_MAX		(2 * DP_RAW_WORD + DP_RAW_MAX_PAYLOAD)

struct raw_writer {
	raw_sink_fn sink;
	void *sink_ctx;
	uint8_t *buf;
	size_t used;
	size_t chunk;	/* flush before a record would take used past this */
};

struct raw_writer *raw_writer_new(raw_sink_fn sink, void *sink_ctx, size_t chunk_bytes)
{
	struct raw_writer *w;

	if (!sink) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->sink = sink;
	w->sink_ctx = sink_ctx;
	w->chunk = chunk_bytes ? chunk_bytes : RAW_CHUNK_DEFAULT;
	/* Room for a full chunk, or for one record larger than a chunk. */
	w->buf = malloc(w->chunk > RAW_REC_MAX ? w->chunk : RAW_REC_MAX);
	if (!w->buf)
		goto out_free_w;
	return w;

out_free_w:
	free(w);
	return NULL;
}

int raw_writer_flush(struct raw_writer *w)
{
	int rc;

	if (!w->used)
		return 0;
	rc = w->sink(w->sink_ctx, w->buf, w->used);
	if (rc)
		return rc;
	w->used = 0;
	return 0;
}

int raw_writer_close(struct raw_writer *w)
{
	int rc;

	if (!w)
		return 0;
	rc = raw_writer_flush(w);
	free(w->buf);
	free(w);
	return rc;
}

/* Make room for @n bytes (n <= RAW_REC_MAX) and return where they go. */
static int raw_reserve(struct raw_writer *w, size_t n, uint8_t **out)
{
	int rc;

	if (w->used && w->used + n > w->chunk) {
		rc = raw_writer_flush(w);
		if (rc)
			return rc;
	}
	*out = w->buf + w->used;
	w->used += n;
	return 0;
}

int raw_put_header(struct raw_writer *w, uint32_t flags, uint32_t collector, uint64_t start_ns,
		   const struct dp_raw_event *events, uint32_t nr)
{
	struct dp_raw_header h;
	size_t size;
	uint8_t *p;
	int rc;

	if (nr > DP_RAW_MAX_EVENTS || (nr && !events))
		return -EINVAL;
	size = sizeof(h) + (size_t)nr * sizeof(*events);
	memset(&h, 0, sizeof(h));
	h.magic = DP_RAW_MAGIC;
	h.version = DP_RAW_VERSION;
	h.header_size = (uint32_t)size;
	h.word_size = DP_RAW_WORD;
	h.nr_events = nr;
	h.flags = flags;
	h.collector = collector;
	h.start_ns = start_ns;
	rc = raw_reserve(w, size, &p);
	if (rc)
		return rc;
	memcpy(p, &h, sizeof(h));
	if (nr)
		memcpy(p + sizeof(h), events, (size_t)nr * sizeof(*events));
	return 0;
}

/* An escape record whose payload is @a (@alen bytes) then @b (@blen bytes). */
static int raw_put2(struct raw_writer *w, uint32_t type, const void *a, size_t alen,
		    const void *b, size_t blen)
{
	size_t plen = alen + blen;
	size_t padded = (plen + DP_RAW_WORD - 1) & ~(size_t)(DP_RAW_WORD - 1);
	uint64_t w0 = DP_RAW_ESCAPE, w1;
	uint8_t *p;
	int rc;

	if (plen > DP_RAW_MAX_PAYLOAD)
		return -EMSGSIZE;
	w1 = (uint64_t)type | (uint64_t)plen << 32;
	rc = raw_reserve(w, 2 * DP_RAW_WORD + padded, &p);
	if (rc)
		return rc;
	memcpy(p, &w0, sizeof(w0));
	memcpy(p + DP_RAW_WORD, &w1, sizeof(w1));
	p += 2 * DP_RAW_WORD;
	if (alen)
		memcpy(p, a, alen);
	if (blen)
		memcpy(p + alen, b, blen);
	memset(p + plen, 0, padded - plen);
	return 0;
}

int raw_put_record(struct raw_writer *w, uint32_t type, const void *payload, size_t len)
{
	if (len && !payload)
		return -EINVAL;
	return raw_put2(w, type, payload, len, NULL, 0);
}

int raw_put_sample(struct raw_writer *w, uint64_t pc, uint32_t event)
{
	uint64_t w1 = event;
	uint8_t *p;

	if (__builtin_expect(pc == DP_RAW_ESCAPE, 0)) {
		struct dp_raw_sample s = { .pc = pc, .event = event };

		return raw_put2(w, DP_RAW_SAMPLE, &s, sizeof(s), NULL, 0);
	}
	/* Inline fast path: no flush needed. */
	if (__builtin_expect(w->used + 2 * DP_RAW_WORD <= w->chunk, 1)) {
		p = w->buf + w->used;
		w->used += 2 * DP_RAW_WORD;
	} else {
		int rc = raw_reserve(w, 2 * DP_RAW_WORD, &p);

		if (rc)
			return rc;
	}
	memcpy(p, &pc, sizeof(pc));
	memcpy(p + DP_RAW_WORD, &w1, sizeof(w1));
	return 0;
}

int raw_put_cpu(struct raw_writer *w, uint32_t cpu)
{
	struct dp_raw_cpu r = { .cpu = cpu };

	return raw_put2(w, DP_RAW_CPU, &r, sizeof(r), NULL, 0);
}

int raw_put_task(struct raw_writer *w, uint32_t pid, uint32_t tid)
{
	struct dp_raw_task r = { .pid = pid, .tid = tid };

	return raw_put2(w, DP_RAW_TASK, &r, sizeof(r), NULL, 0);
}

int raw_put_mode(struct raw_writer *w, uint32_t mode)
{
	struct dp_raw_mode r = { .mode = mode };

	return raw_put2(w, DP_RAW_MODE, &r, sizeof(r), NULL, 0);
}

int raw_put_asid(struct raw_writer *w, uint64_t asid)
{
	struct dp_raw_asid r = { .asid = asid };

	return raw_put2(w, DP_RAW_ASID, &r, sizeof(r), NULL, 0);
}

int raw_put_time_spread(struct raw_writer *w, uint64_t ns)
{
	struct dp_raw_time_spread r = { .ns = ns };

	return raw_put2(w, DP_RAW_TIME_SPREAD, &r, sizeof(r), NULL, 0);
}

int raw_put_guest_task(struct raw_writer *w, uint32_t tgid)
{
	struct dp_raw_guest_task r = { .tgid = tgid };

	if (!tgid)
		return -EINVAL;
	return raw_put2(w, DP_RAW_GUEST_TASK, &r, sizeof(r), NULL, 0);
}

int raw_put_guest_tsc(struct raw_writer *w, const struct dp_raw_guest_tsc *g)
{
	if (!g->khz)
		return -EINVAL;
	return raw_put2(w, DP_RAW_GUEST_TSC, g, sizeof(*g), NULL, 0);
}

int raw_put_domain(struct raw_writer *w, uint64_t key, uint32_t vcpu)
{
	return raw_put_domain_ns(w, DP_DOMKEY_HOST_PID, key, vcpu);
}

int raw_put_domain_ns(struct raw_writer *w, uint32_t key_ns, uint64_t key, uint32_t vcpu)
{
	struct dp_raw_domain r = { .key = key, .vcpu = vcpu, .key_ns = key_ns };

	return raw_put2(w, DP_RAW_DOMAIN, &r, sizeof(r), NULL, 0);
}

int raw_put_lost(struct raw_writer *w, uint64_t count)
{
	struct dp_raw_lost r = { .count = count };

	return raw_put2(w, DP_RAW_LOST, &r, sizeof(r), NULL, 0);
}

int raw_put_time(struct raw_writer *w, uint64_t ns)
{
	struct dp_raw_time r = { .ns = ns };

	return raw_put2(w, DP_RAW_TIME, &r, sizeof(r), NULL, 0);
}

int raw_put_mmap(struct raw_writer *w, const struct dp_raw_mmap *m, const char *path, size_t path_len)
{
	struct dp_raw_mmap r;

	if (path_len > DP_RAW_MAX_PATH)
		return -ENAMETOOLONG;
	if (!m || (path_len && !path))
		return -EINVAL;
	r = *m;
	r.path_len = (uint16_t)path_len;
	r.pad = 0;
	return raw_put2(w, DP_RAW_MMAP, &r, sizeof(r), path, path_len);
}

int raw_put_comm(struct raw_writer *w, uint32_t pid, uint32_t tid, uint32_t flags, const char *comm)
{
	struct dp_raw_comm r;

	memset(&r, 0, sizeof(r));
	r.pid = pid;
	r.tid = tid;
	r.flags = flags;
	if (comm)
		memcpy(r.comm, comm, strnlen(comm, sizeof(r.comm)));
	return raw_put2(w, DP_RAW_COMM, &r, sizeof(r), NULL, 0);
}

int raw_put_fork(struct raw_writer *w, const struct dp_raw_task_ev *t)
{
	if (!t)
		return -EINVAL;
	return raw_put2(w, DP_RAW_FORK, t, sizeof(*t), NULL, 0);
}

int raw_put_exit(struct raw_writer *w, const struct dp_raw_task_ev *t)
{
	if (!t)
		return -EINVAL;
	return raw_put2(w, DP_RAW_EXIT, t, sizeof(*t), NULL, 0);
}

int raw_put_kmod(struct raw_writer *w, uint64_t start, uint64_t size, const char *name, size_t name_len)
{
	struct dp_raw_kmod r;

	if (name_len > DP_RAW_MAX_PATH)
		return -ENAMETOOLONG;
	if (name_len && !name)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.start = start;
	r.size = size;
	r.name_len = (uint16_t)name_len;
	return raw_put2(w, DP_RAW_KMOD, &r, sizeof(r), name, name_len);
}

int raw_put_callchain(struct raw_writer *w, uint32_t nr, uint32_t nr_kernel, uint32_t flags,
		      const uint64_t *frames)
{
	struct dp_raw_callchain r;

	if (nr == 0 || nr > DP_RAW_CC_MAX || nr_kernel > nr || !frames)
		return -EINVAL;
	r.nr = (uint16_t)nr;
	r.nr_kernel = (uint16_t)nr_kernel;
	r.flags = flags;
	return raw_put2(w, DP_RAW_CALLCHAIN, &r, sizeof(r), frames, (size_t)nr * 8);
}
