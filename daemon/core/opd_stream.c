#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "opd_stream.h"
#include "util/du_log.h"
#include "util/du_array.h"

struct opd_stream {
	struct opd_trans *t;
	opd_header_fn hook;
	void *hook_ctx;
	bool have_header;
	struct raw_header hdr;
	uint64_t offset;	/* of carry[0] / the next byte to decode */
	uint8_t *carry;
	size_t carry_len, carry_cap;
	char name[];
};

struct opd_stream *opd_stream_new(struct opd_trans *t, const char *name, opd_header_fn hook,
				  void *hook_ctx)
{
	struct opd_stream *s = calloc(1, sizeof(*s) + strlen(name) + 1);

	if (!s)
		return NULL;
	s->t = t;
	s->hook = hook;
	s->hook_ctx = hook_ctx;
	strcpy(s->name, name);
	return s;
}

void opd_stream_free(struct opd_stream *s)
{
	if (!s)
		return;
	free(s->carry);
	free(s);
}

uint64_t opd_stream_offset(const struct opd_stream *s)
{
	return s->offset;
}

/* Find the record raw_decode refused, by walking the record lengths. */
static size_t bad_record_offset(const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (off + 16 <= len) {
		uint64_t w0, w1;
		uint32_t plen;

		memcpy(&w0, buf + off, 8);
		if (w0 != DP_RAW_ESCAPE) {
			off += 16;
			continue;
		}
		memcpy(&w1, buf + off + 8, 8);
		plen = (uint32_t)(w1 >> 32);
		if (plen > DP_RAW_MAX_PAYLOAD)
			return off;
		off += 16 + (((size_t)plen + 7) & ~(size_t)7);
	}
	return off;
}

int opd_stream_decode(struct opd_stream *s, const void *buf, size_t len, size_t *consumed)
{
	struct raw_decode_stats st = { 0 };
	size_t used = 0, hlen = 0;
	int ret;

	*consumed = 0;
	if (!s->have_header) {
		ret = raw_header_parse(buf, len, &s->hdr);
		if (ret == -EAGAIN)
			return 0;
		if (ret < 0) {
			du_err("%s: bad stream header at byte offset %" PRIu64, s->name, s->offset);
			return -EBADMSG;
		}
		hlen = (size_t)ret;
		s->have_header = true;
		ret = opd_trans_set_events(s->t, &s->hdr);
		if (!ret && s->hook)
			ret = s->hook(s->hook_ctx, &s->hdr);
		if (ret)
			return ret;
		s->offset += hlen;
		*consumed = hlen;
		buf = (const uint8_t *)buf + hlen;
		len -= hlen;
	}
	len &= ~(size_t)(DP_RAW_WORD - 1);
	opd_trans_begin_window(s->t);
	ret = raw_decode(&opd_trans_ops, s->t, buf, len, &used, &st);
	opd_trans_stats(s->t)->stream_records += st.records;
	opd_trans_stats(s->t)->stream_unknown_records += st.unknown_type;
	opd_trans_stats(s->t)->stream_bad_records += st.bad_payload;
	if (ret == -EBADMSG) {
		size_t bad = bad_record_offset(buf, len);

		du_err("%s: corrupt stream at byte offset %" PRIu64, s->name, s->offset + bad);
		s->offset += bad;
		return ret;
	}
	if (used > len)
		used = len;
	s->offset += used;
	opd_trans_stats(s->t)->stream_bytes += used + hlen;
	*consumed = hlen + used;
	if (ret)
		du_err("%s: decoding stopped at byte offset %" PRIu64 ": %s", s->name, s->offset,
		       strerror(-ret));
	return ret;
}

int opd_stream_feed(struct opd_stream *s, const void *buf, size_t len)
{
	size_t used;
	int ret;

	if (!s->carry_len) {
		ret = opd_stream_decode(s, buf, len, &used);
		if (ret)
			return ret;
		buf = (const uint8_t *)buf + used;
		len -= used;
		/* a record cut by the chunk boundary waits for the rest */
		if (!len)
			return 0;
	}
	if (DU_GROW(s->carry, s->carry_cap, s->carry_len + len, 65536))
		return -ENOMEM;
	memcpy(s->carry + s->carry_len, buf, len);
	s->carry_len += len;
	ret = opd_stream_decode(s, s->carry, s->carry_len, &used);
	if (ret)
		return ret;
	memmove(s->carry, s->carry + used, s->carry_len - used);
	s->carry_len -= used;
	return 0;
}

int opd_stream_finish(struct opd_stream *s)
{
	if (!s->have_header) {
		du_err("%s: stream ends inside its header (byte offset %" PRIu64 ")", s->name,
		       s->offset + s->carry_len);
		return -EBADMSG;
	}
	if (s->carry_len) {
		du_err("%s: stream ends inside a record at byte offset %" PRIu64, s->name, s->offset);
		return -EBADMSG;
	}
	return 0;
}
