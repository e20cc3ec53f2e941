/*
 * Raw stream decoder: header parser and record walker.
 *
 * Both are pure functions over a bounds-checked cursor (util/du_cursor.h):
 * no allocation, no printing, no length used before it is checked.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "raw/raw_stream.h"
#include "util/du_cursor.h"

/*
 * A header may be longer than this version's struct plus event table (a
 * later version of the same format may append fields), but not absurdly so.
 */
#define RAW_HEADER_MAX	65536

int raw_header_parse(const void *buf, size_t len, struct raw_header *out)
{
	struct du_cursor c;
	uint64_t magic, start_ns;
	uint32_t version, header_size, word_size, nr_events, flags, collector;
	size_t need;
	uint32_t i;

	/* Nothing to read, and buf may be NULL (NULL + 0 is undefined). */
	if (!len)
		return -EAGAIN;
	du_cur_init(&c, buf, len);
	/* A wrong magic is known as soon as it is there: say so early. */
	if (!du_cur_u64(&c, &magic))
		return -EAGAIN;
	if (magic != DP_RAW_MAGIC)
		return -EBADMSG;
	if (!du_cur_u32(&c, &version) || !du_cur_u32(&c, &header_size) ||
	    !du_cur_u32(&c, &word_size) || !du_cur_u32(&c, &nr_events) ||
	    !du_cur_u32(&c, &flags) || !du_cur_u32(&c, &collector) ||
	    !du_cur_u64(&c, &start_ns))
		return -EAGAIN;
	if (version != DP_RAW_VERSION || word_size != DP_RAW_WORD ||
	    nr_events > DP_RAW_MAX_EVENTS)
		return -EBADMSG;
	need = sizeof(struct dp_raw_header) + (size_t)nr_events * sizeof(struct dp_raw_event);
	/* Records start on a word boundary after the header. */
	if (header_size < need || header_size > RAW_HEADER_MAX || header_size % DP_RAW_WORD)
		return -EBADMSG;
	if (len < header_size)
		return -EAGAIN;

	memset(out, 0, sizeof(*out));
	out->version = version;
	out->flags = flags;
	out->collector = collector;
	out->start_ns = start_ns;
	out->nr_events = nr_events;
	for (i = 0; i < nr_events; i++) {
		du_cur_get(&c, out->events[i].name, DP_RAW_EVENT_NAME);
		out->events[i].name[DP_RAW_EVENT_NAME] = '\0';
		du_cur_u64(&c, &out->events[i].count);
		du_cur_u32(&c, &out->events[i].unit_mask);
		du_cur_u32(&c, &out->events[i].flags);
	}
	/* header_size >= need and len >= header_size: cannot run short. */
	if (c.bad)
		return -EBADMSG;
	return (int)header_size;
}

/*
 * Escape records.  A payload decoder returns 0 when it handed the record
 * on, a handler's negative errno, or RAW_BAD_PAYLOAD when the payload is
 * not what its type says (the record is then skipped and counted).
 */
#define RAW_BAD_PAYLOAD	1

typedef int (*raw_payload_fn)(const struct raw_ops *ops, void *ctx, struct du_cursor *c);

static int dec_cpu(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	uint32_t cpu, pad;

	if (!du_cur_u32(c, &cpu) || !du_cur_u32(c, &pad) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->cpu ? ops->cpu(ctx, cpu) : 0;
}

static int dec_task(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	uint32_t pid, tid;

	if (!du_cur_u32(c, &pid) || !du_cur_u32(c, &tid) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->task ? ops->task(ctx, pid, tid) : 0;
}

static int dec_mode(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	uint32_t mode, pad;

	if (!du_cur_u32(c, &mode) || !du_cur_u32(c, &pad) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->mode ? ops->mode(ctx, mode) : 0;
}

static int dec_domain(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	uint64_t key;
	uint32_t vcpu, key_ns;

	if (!du_cur_u64(c, &key) || !du_cur_u32(c, &vcpu) || !du_cur_u32(c, &key_ns) ||
	    !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->domain ? ops->domain(ctx, key, vcpu, key_ns) : 0;
}

static int dec_lost(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	uint64_t count;

	if (!du_cur_u64(c, &count) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->lost ? ops->lost(ctx, count) : 0;
}

static int dec_time(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	uint64_t ns;

	if (!du_cur_u64(c, &ns) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->time ? ops->time(ctx, ns) : 0;
}

static int dec_mmap(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_mmap m;
	const uint8_t *path;

	if (!du_cur_get(c, &m, sizeof(m)) || m.path_len > DP_RAW_MAX_PATH)
		return RAW_BAD_PAYLOAD;
	path = du_cur_take(c, m.path_len);
	if (!path || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->mmap ? ops->mmap(ctx, &m, (const char *)path, m.path_len) : 0;
}

static int dec_comm(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_comm cm;

	if (!du_cur_get(c, &cm, sizeof(cm)) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->comm ? ops->comm(ctx, cm.pid, cm.tid, cm.flags, cm.comm,
				     strnlen(cm.comm, sizeof(cm.comm))) : 0;
}

static int dec_fork(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_task_ev t;

	if (!du_cur_get(c, &t, sizeof(t)) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->fork ? ops->fork(ctx, &t) : 0;
}

static int dec_exit(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_task_ev t;

	if (!du_cur_get(c, &t, sizeof(t)) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->exit ? ops->exit(ctx, &t) : 0;
}

static int dec_sample(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_sample s;

	if (!du_cur_get(c, &s, sizeof(s)) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->sample ? ops->sample(ctx, s.pc, s.event) : 0;
}

static int dec_kmod(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_kmod k;
	const uint8_t *name;

	if (!du_cur_get(c, &k, sizeof(k)) || k.name_len > DP_RAW_MAX_PATH)
		return RAW_BAD_PAYLOAD;
	name = du_cur_take(c, k.name_len);
	if (!name || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->kmod ? ops->kmod(ctx, k.start, k.size, (const char *)name, k.name_len) : 0;
}

static int dec_asid(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_asid a;

	if (!du_cur_get(c, &a, sizeof(a)) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->asid ? ops->asid(ctx, a.asid) : 0;
}

static int dec_callchain(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_callchain h;
	const uint8_t *frames;

	if (!du_cur_get(c, &h, sizeof(h)) || h.nr == 0 || h.nr > DP_RAW_CC_MAX ||
	    h.nr_kernel > h.nr)
		return RAW_BAD_PAYLOAD;
	frames = du_cur_take(c, (size_t)h.nr * 8);
	if (!frames || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->callchain ? ops->callchain(ctx, h.nr, h.nr_kernel, h.flags, frames) : 0;
}

static int dec_guest_tsc(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_guest_tsc g;

	if (!du_cur_get(c, &g, sizeof(g)) || !du_cur_end(c) || !g.khz)
		return RAW_BAD_PAYLOAD;
	return ops->guest_tsc ? ops->guest_tsc(ctx, &g) : 0;
}

static int dec_time_spread(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_time_spread t;

	if (!du_cur_get(c, &t, sizeof(t)) || !du_cur_end(c))
		return RAW_BAD_PAYLOAD;
	return ops->time_spread ? ops->time_spread(ctx, t.ns) : 0;
}

static int dec_guest_task(const struct raw_ops *ops, void *ctx, struct du_cursor *c)
{
	struct dp_raw_guest_task t;

	if (!du_cur_get(c, &t, sizeof(t)) || !du_cur_end(c) || !t.tgid)
		return RAW_BAD_PAYLOAD;
	return ops->guest_task ? ops->guest_task(ctx, t.tgid) : 0;
}

static const raw_payload_fn raw_payload_table[DP_RAW_NR_TYPES] = {
	[DP_RAW_CPU] = dec_cpu,
	[DP_RAW_TASK] = dec_task,
	[DP_RAW_MODE] = dec_mode,
	[DP_RAW_DOMAIN] = dec_domain,
	[DP_RAW_LOST] = dec_lost,
	[DP_RAW_TIME] = dec_time,
	[DP_RAW_MMAP] = dec_mmap,
	[DP_RAW_COMM] = dec_comm,
	[DP_RAW_FORK] = dec_fork,
	[DP_RAW_EXIT] = dec_exit,
	[DP_RAW_SAMPLE] = dec_sample,
	[DP_RAW_KMOD] = dec_kmod,
	[DP_RAW_ASID] = dec_asid,
	[DP_RAW_CALLCHAIN] = dec_callchain,
	[DP_RAW_GUEST_TSC] = dec_guest_tsc,
	[DP_RAW_TIME_SPREAD] = dec_time_spread,
	[DP_RAW_GUEST_TASK] = dec_guest_task,
};

#define RAW_REC_HEAD	(2 * DP_RAW_WORD)

/* One call's counts (@local, and the records and samples it decoded)
 * into the caller's @st, if it asked for them. */
static void stats_add(struct raw_decode_stats *st, const struct raw_decode_stats *local,
		      uint64_t records, uint64_t samples)
{
	if (!st)
		return;
	st->unknown_type += local->unknown_type;
	st->bad_payload += local->bad_payload;
	st->records += records;
	st->samples += samples;
}

int raw_decode(const struct raw_ops *ops, void *ctx, const void *buf, size_t len,
	       size_t *consumed, struct raw_decode_stats *st)
{
	struct raw_decode_stats local = { 0 };
	int (*const on_sample)(void *, uint64_t, uint32_t) = ops->sample;
	struct du_cursor c;
	const uint8_t *start = buf, *rec = buf;
	uint64_t records = 0, samples = 0;
	int rc = 0;

	/* buf may be NULL when there is nothing (NULL + 0 is undefined) */
	if (!len) {
		*consumed = 0;
		return 0;
	}
	du_cur_init(&c, buf, len);
	for (;;) {
		const uint8_t *head;
		uint64_t w0, w1;
		uint32_t type, plen;
		size_t padded;
		struct du_cursor pc;

		rec = c.p;
		/* A record is at least two words; fewer is a cut-off record. */
		if (du_cur_left(&c) < RAW_REC_HEAD)
			break;
		head = du_cur_take(&c, RAW_REC_HEAD);
		memcpy(&w0, head, sizeof(w0));
		memcpy(&w1, head + DP_RAW_WORD, sizeof(w1));

		/* The hot path: a plain sample, one indirect call. */
		if (__builtin_expect(w0 != DP_RAW_ESCAPE, 1)) {
			if (__builtin_expect(w1 > UINT32_MAX, 0)) {
				local.bad_payload++;
				continue;
			}
			records++;
			samples++;
			if (on_sample && (rc = on_sample(ctx, w0, (uint32_t)w1)) != 0) {
				rec = c.p;
				break;
			}
			continue;
		}

		type = (uint32_t)w1;
		plen = (uint32_t)(w1 >> 32);
		if (plen > DP_RAW_MAX_PAYLOAD) {
			rc = -EBADMSG;
			break;
		}
		padded = ((size_t)plen + DP_RAW_WORD - 1) & ~(size_t)(DP_RAW_WORD - 1);
		if (du_cur_left(&c) < padded)
			break;
		du_cur_init(&pc, du_cur_take(&c, padded), plen);

		if (type == 0 || type >= DP_RAW_NR_TYPES || !raw_payload_table[type]) {
			local.unknown_type++;
			continue;
		}
		rc = raw_payload_table[type](ops, ctx, &pc);
		if (rc == RAW_BAD_PAYLOAD) {
			rc = 0;
			local.bad_payload++;
			continue;
		}
		records++;
		if (type == DP_RAW_SAMPLE)
			samples++;
		if (rc) {
			rec = c.p;
			break;
		}
	}

	*consumed = (size_t)(rec - start);
	stats_add(st, &local, records, samples);
	return rc;
}
