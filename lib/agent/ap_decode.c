/*
 * Agent frame decoder: a walk over complete frames and one payload parser
 * per type, all over a bounds-checked cursor (util/du_cursor.h).  Each
 * parser reads the fixed struct, checks every length and count in it
 * against what is left of the payload, and requires that the payload is
 * used up exactly before a handler sees anything.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "agent/agent.h"
#include "util/du_cursor.h"

/* A parser returns 0, a handler's negative errno, or AP_BAD when the
 * payload is not what its type says. */
#define AP_BAD	1

typedef int (*ap_parse_fn)(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
			   uint16_t type, struct ap_stats *st);

/* Fixed-size payloads: exactly one struct. */
#define FIXED(c, s) (du_cur_get((c), (s), sizeof(*(s))) && du_cur_end(c))

static int p_hello(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		   uint16_t type, struct ap_stats *st)
{
	struct dp_ag_hello h;
	const uint8_t *rel;

	if (!du_cur_get(c, &h, sizeof(h)) || h.release_len > DP_AG_MAX_RELEASE ||
	    du_cur_left(c) != h.release_len)
		return AP_BAD;
	rel = du_cur_take(c, h.release_len);
	if (!rel && h.release_len)
		return AP_BAD;
	return ops->hello ? ops->hello(ctx, &h, (const char *)rel, h.release_len) : 0;
}

static int p_text(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		  uint16_t type, struct ap_stats *st)
{
	size_t n = du_cur_left(c);
	const char *text = (const char *)du_cur_take(c, n);
	int (*fn)(void *, const char *, size_t);

	/* An empty chunk says nothing: the END frame carries the totals. */
	if (!n)
		return AP_BAD;
	fn = type == DP_AG_KALLSYMS ? ops->kallsyms : ops->modules;
	return fn ? fn(ctx, text, n) : 0;
}

static int p_table_end(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		       uint16_t type, struct ap_stats *st)
{
	struct dp_ag_table_end e;
	int (*fn)(void *, const struct dp_ag_table_end *);

	if (!FIXED(c, &e))
		return AP_BAD;
	fn = type == DP_AG_KALLSYMS_END ? ops->kallsyms_end : ops->modules_end;
	return fn ? fn(ctx, &e) : 0;
}

static int p_switch(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		    uint16_t type, struct ap_stats *st)
{
	struct dp_ag_switch_hdr h;
	struct dp_ag_switch s;
	uint32_t i;
	int err;

	/* The count is checked against the bytes before any record is used;
	 * nr <= DP_AG_MAX_SWITCH follows, so the product cannot overflow. */
	if (!du_cur_get(c, &h, sizeof(h)) || h.nr == 0 || h.nr > DP_AG_MAX_SWITCH ||
	    du_cur_left(c) != (size_t)h.nr * sizeof(s))
		return AP_BAD;
	for (i = 0; i < h.nr; i++) {
		du_cur_get(c, &s, sizeof(s));
		if (st)
			st->switches++;
		if (ops->task_switch) {
			err = ops->task_switch(ctx, h.cpu, &s);
			if (err)
				return err;
		}
	}
	return 0;
}

static int p_mmap(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		  uint16_t type, struct ap_stats *st)
{
	struct dp_ag_mmap m;
	const uint8_t *path;

	if (!du_cur_get(c, &m, sizeof(m)) || m.path_len > DP_AG_MAX_PATH ||
	    m.build_id_size > DP_AG_BUILD_ID_MAX || du_cur_left(c) != m.path_len)
		return AP_BAD;
	path = du_cur_take(c, m.path_len);
	return ops->mmap ? ops->mmap(ctx, &m, (const char *)path, m.path_len) : 0;
}

static int p_comm(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		  uint16_t type, struct ap_stats *st)
{
	struct dp_ag_comm m;
	const uint8_t *name;

	if (!du_cur_get(c, &m, sizeof(m)) || m.name_len > DP_AG_MAX_COMM ||
	    du_cur_left(c) != m.name_len)
		return AP_BAD;
	name = du_cur_take(c, m.name_len);
	return ops->comm ? ops->comm(ctx, &m, (const char *)name, m.name_len) : 0;
}

static int p_task(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		  uint16_t type, struct ap_stats *st)
{
	struct dp_ag_task t;
	int (*fn)(void *, const struct dp_ag_task *);

	if (!FIXED(c, &t))
		return AP_BAD;
	fn = type == DP_AG_FORK ? ops->fork : ops->exit;
	return fn ? fn(ctx, &t) : 0;
}

static int p_lost(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		  uint16_t type, struct ap_stats *st)
{
	struct dp_ag_lost l;

	if (!FIXED(c, &l))
		return AP_BAD;
	return ops->lost ? ops->lost(ctx, &l) : 0;
}

static int p_pong(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		  uint16_t type, struct ap_stats *st)
{
	struct dp_ag_pong p;

	if (!FIXED(c, &p))
		return AP_BAD;
	return ops->pong ? ops->pong(ctx, &p) : 0;
}

static int p_tsc(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		 uint16_t type, struct ap_stats *st)
{
	struct dp_ag_tsc t;

	if (!FIXED(c, &t))
		return AP_BAD;
	return ops->tsc ? ops->tsc(ctx, &t) : 0;
}

static int p_task_layout(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
			 uint16_t type, struct ap_stats *st)
{
	struct dp_ag_task_layout l;

	if (!FIXED(c, &l))
		return AP_BAD;
	return ops->task_layout ? ops->task_layout(ctx, &l) : 0;
}

static int p_image_data(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
			uint16_t type, struct ap_stats *st)
{
	struct dp_ag_image_data d;
	size_t n;
	const uint8_t *bytes;

	if (!du_cur_get(c, &d, sizeof(d)))
		return AP_BAD;
	n = du_cur_left(c);
	/* A chunk that would run past 2^64 cannot be part of any file. */
	if (!n || d.offset > UINT64_MAX - n)
		return AP_BAD;
	bytes = du_cur_take(c, n);
	return ops->image_data ? ops->image_data(ctx, &d, bytes, n) : 0;
}

static int p_image_end(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		       uint16_t type, struct ap_stats *st)
{
	struct dp_ag_image_end e;

	if (!FIXED(c, &e) || e.build_id_size > DP_AG_BUILD_ID_MAX)
		return AP_BAD;
	return ops->image_end ? ops->image_end(ctx, &e) : 0;
}

static int p_state_end(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		       uint16_t type, struct ap_stats *st)
{
	struct dp_ag_state_end e;

	if (!FIXED(c, &e))
		return AP_BAD;
	return ops->state_end ? ops->state_end(ctx, &e) : 0;
}

static int p_host_hello(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
			uint16_t type, struct ap_stats *st)
{
	struct dp_ag_host_hello h;

	if (!FIXED(c, &h))
		return AP_BAD;
	return ops->host_hello ? ops->host_hello(ctx, &h) : 0;
}

static int p_ping(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		  uint16_t type, struct ap_stats *st)
{
	struct dp_ag_ping p;

	if (!FIXED(c, &p))
		return AP_BAD;
	return ops->ping ? ops->ping(ctx, &p) : 0;
}

static int p_image_request(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
			   uint16_t type, struct ap_stats *st)
{
	struct dp_ag_image_request r;

	if (!FIXED(c, &r))
		return AP_BAD;
	return ops->image_request ? ops->image_request(ctx, &r) : 0;
}

static int p_config(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		    uint16_t type, struct ap_stats *st)
{
	struct dp_ag_config cf;

	if (!FIXED(c, &cf))
		return AP_BAD;
	return ops->config ? ops->config(ctx, &cf) : 0;
}

static int p_host_join(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		       uint16_t type, struct ap_stats *st)
{
	struct dp_ag_host_join j;

	if (!FIXED(c, &j))
		return AP_BAD;
	return ops->host_join ? ops->host_join(ctx, &j) : 0;
}

static int p_host_ack(const struct ap_ops *ops, void *ctx, struct du_cursor *c,
		      uint16_t type, struct ap_stats *st)
{
	struct dp_ag_host_ack a;

	if (!FIXED(c, &a))
		return AP_BAD;
	return ops->host_ack ? ops->host_ack(ctx, &a) : 0;
}

static const struct {
	ap_parse_fn fn;
	const char *name;
} ap_types[DP_AG_TYPE_LAST + 1] = {
	[DP_AG_HELLO] = { p_hello, "HELLO" },
	[DP_AG_KALLSYMS] = { p_text, "KALLSYMS" },
	[DP_AG_KALLSYMS_END] = { p_table_end, "KALLSYMS_END" },
	[DP_AG_MODULES] = { p_text, "MODULES" },
	[DP_AG_MODULES_END] = { p_table_end, "MODULES_END" },
	[DP_AG_SWITCH] = { p_switch, "SWITCH" },
	[DP_AG_MMAP] = { p_mmap, "MMAP" },
	[DP_AG_COMM] = { p_comm, "COMM" },
	[DP_AG_FORK] = { p_task, "FORK" },
	[DP_AG_EXIT] = { p_task, "EXIT" },
	[DP_AG_LOST] = { p_lost, "LOST" },
	[DP_AG_PONG] = { p_pong, "PONG" },
	[DP_AG_IMAGE_DATA] = { p_image_data, "IMAGE_DATA" },
	[DP_AG_IMAGE_END] = { p_image_end, "IMAGE_END" },
	[DP_AG_STATE_END] = { p_state_end, "STATE_END" },
	[DP_AG_TSC] = { p_tsc, "TSC" },
	[DP_AG_TASK_LAYOUT] = { p_task_layout, "TASK_LAYOUT" },
	[DP_AG_HOST_HELLO] = { p_host_hello, "HOST_HELLO" },
	[DP_AG_PING] = { p_ping, "PING" },
	[DP_AG_IMAGE_REQUEST] = { p_image_request, "IMAGE_REQUEST" },
	[DP_AG_CONFIG] = { p_config, "CONFIG" },
	[DP_AG_HOST_JOIN] = { p_host_join, "HOST_JOIN" },
	[DP_AG_HOST_ACK] = { p_host_ack, "HOST_ACK" },
};

const char *ap_type_name(uint32_t type)
{
	if (type < sizeof(ap_types) / sizeof(ap_types[0]) && ap_types[type].name)
		return ap_types[type].name;
	return "?";
}

int ap_decode(const struct ap_ops *ops, void *ctx, const void *buf, size_t len,
	      size_t *consumed, struct ap_stats *st)
{
	static const struct ap_ops no_ops;
	const uint8_t *p = buf;
	size_t off = 0;
	int err = 0;

	if (!ops)
		ops = &no_ops;
	while (len - off >= sizeof(struct dp_ag_frame)) {
		struct dp_ag_frame f;
		struct du_cursor c;
		int r;

		memcpy(&f, p + off, sizeof(f));
		if (f.magic != DP_AG_MAGIC || f.len > DP_AG_MAX_PAYLOAD) {
			err = -EBADMSG;
			break;
		}
		if (len - off - sizeof(f) < f.len)
			break;
		du_cur_init(&c, p + off + sizeof(f), f.len);
		if (st) {
			st->frames++;
			st->bytes += sizeof(f) + f.len;
		}
		off += sizeof(f) + f.len;
		if (f.type >= sizeof(ap_types) / sizeof(ap_types[0]) || !ap_types[f.type].fn) {
			if (st)
				st->unknown_type++;
			continue;
		}
		r = ap_types[f.type].fn(ops, ctx, &c, f.type, st);
		if (r == AP_BAD) {
			if (st)
				st->bad_payload++;
			continue;
		}
		if (st)
			st->by_type[f.type]++;
		if (r < 0) {
			err = r;
			break;
		}
	}
	*consumed = off;
	return err;
}

size_t ap_find_hello(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; len >= sizeof(struct dp_ag_frame) && i <= len - sizeof(struct dp_ag_frame); i++) {
		struct dp_ag_frame f;

		memcpy(&f, p + i, sizeof(f));
		if (f.magic == DP_AG_MAGIC && f.type == DP_AG_HELLO && f.len <= DP_AG_MAX_PAYLOAD)
			return i;
	}
	return len;
}
