// SPDX-License-Identifier: GPL-2.0
/*
 * domprof kernel collector: ring entries to raw-stream records
 * (include/domprof/raw.h, doc/raw-stream.md).
 *
 * This runs in the reader's process context.  The stream is a sequence of
 * context changes followed by two-word samples; an entry only costs the
 * context records whose values differ from the previous entry's, so a run
 * of samples from one task on one CPU is a TIME record and a sample each.
 */
#include <linux/kernel.h>
#include <linux/string.h>

#include "domprof.h"

static size_t dp_put_rec(u8 *p, u32 type, const void *payload, u32 len)
{
	u64 w[2] = { DP_RAW_ESCAPE, (u64)len << 32 | type };
	size_t padded = ALIGN(len, DP_RAW_WORD);

	memcpy(p, w, sizeof(w));
	memcpy(p + sizeof(w), payload, len);
	memset(p + sizeof(w) + len, 0, padded - len);
	return sizeof(w) + padded;
}

static const char * const dp_event_names[] = {
	[DP_KMOD_EV_CYCLES] = "CPU_CLK_UNHALTED",
	[DP_KMOD_EV_CPU_CLOCK] = "TIMER",
};

size_t dp_stream_header(void *buf, size_t len, u32 event, u64 period,
			u32 cf_flags, u64 start_ns)
{
	struct dp_raw_header *h = buf;
	struct dp_raw_event *ev;
	size_t size = sizeof(*h) + sizeof(*ev);

	if (len < size || event >= ARRAY_SIZE(dp_event_names) ||
	    !dp_event_names[event])
		return 0;
	memset(buf, 0, size);
	h->magic = DP_RAW_MAGIC;
	h->version = DP_RAW_VERSION;
	h->header_size = size;
	h->word_size = DP_RAW_WORD;
	h->nr_events = 1;
	h->flags = DP_RAW_F_TIMESTAMPS;
	h->collector = DP_RAW_COLLECTOR_KMOD;
	h->start_ns = start_ns;
	ev = h->events;
	strscpy(ev->name, dp_event_names[event], sizeof(ev->name));
	ev->count = period;
	if (cf_flags & DP_KMOD_CF_KERNEL)
		ev->flags |= DP_RAW_EV_KERNEL;
	if (cf_flags & DP_KMOD_CF_USER)
		ev->flags |= DP_RAW_EV_USER;
	return size;
}

size_t dp_stream_lost(void *buf, u64 count)
{
	struct dp_raw_lost l = { .count = count };

	return dp_put_rec(buf, DP_RAW_LOST, &l, sizeof(l));
}

/*
 * A DP_RAW_CALLCHAIN record from a chain slot (domprof.h): it goes right
 * before the sample it belongs to.  Returns the bytes written, 0 if the
 * slot holds no chain.  The counts are checked again: the stream must
 * stay well formed whatever the slot holds.
 */
static size_t dp_put_chain(u8 *p, const u64 *cc)
{
	u64 w[2], head;
	u32 nr, nr_kernel, len;

	if (!cc)
		return 0;
	head = cc[0];
	nr = DP_CC_NR(head);
	nr_kernel = DP_CC_NR_KERNEL(head);
	if (!nr || nr > DP_KMOD_MAX_CG_DEPTH || nr_kernel > nr)
		return 0;
	len = 8 + 8 * nr;
	w[0] = DP_RAW_ESCAPE;
	w[1] = (u64)len << 32 | DP_RAW_CALLCHAIN;
	memcpy(p, w, sizeof(w));
	/* nr u16, nr_kernel u16, flags u32: the slot's head word as it is */
	head = DP_CC_WORD(nr, nr_kernel, DP_CC_FLAGS(head));
	memcpy(p + sizeof(w), &head, sizeof(head));
	memcpy(p + sizeof(w) + 8, cc + 1, 8 * nr);
	return sizeof(w) + len;
}

/*
 * Encode @e, taken on @cpu, with its call chain slot @cc (NULL: none)
 * into @buf (at least DP_REC_MAX bytes).  Returns the bytes written.
 */
size_t dp_stream_entry(struct dp_stream *s, void *buf, u32 cpu,
		       const struct dp_entry *e, const u64 *cc)
{
	bool guest = e->mode == DP_MODE_GUEST_KERNEL ||
		     e->mode == DP_MODE_GUEST_USER;
	u8 *p = buf;
	u64 w[2];

	if (!s->have_ctx || s->cpu != cpu) {
		struct dp_raw_cpu r = { .cpu = cpu };

		p += dp_put_rec(p, DP_RAW_CPU, &r, sizeof(r));
		s->cpu = cpu;
		/* another CPU's records: state the whole context again */
		s->have_ctx = false;
		s->have_guest = false;
	}
	if (!s->have_ctx || s->pid != e->pid || s->tid != e->tid) {
		struct dp_raw_task r = { .pid = e->pid, .tid = e->tid };

		p += dp_put_rec(p, DP_RAW_TASK, &r, sizeof(r));
		s->pid = e->pid;
		s->tid = e->tid;
	}
	if (!s->have_ctx || s->mode != e->mode) {
		struct dp_raw_mode r = { .mode = e->mode };

		p += dp_put_rec(p, DP_RAW_MODE, &r, sizeof(r));
		s->mode = e->mode;
	}
	/* domain and address space only matter to guest samples */
	if (guest && (!s->have_guest || s->domain != e->domain ||
		      s->vcpu != e->vcpu)) {
		struct dp_raw_domain r = { .key = e->domain, .vcpu = e->vcpu };

		p += dp_put_rec(p, DP_RAW_DOMAIN, &r, sizeof(r));
		s->domain = e->domain;
		s->vcpu = e->vcpu;
	}
	if (guest && (!s->have_guest || s->asid != e->asid)) {
		struct dp_raw_asid r = { .asid = e->asid };

		p += dp_put_rec(p, DP_RAW_ASID, &r, sizeof(r));
		s->asid = e->asid;
	}
	if (guest)
		s->have_guest = true;
	s->have_ctx = true;
	{
		struct dp_raw_time t = { .ns = e->time };

		p += dp_put_rec(p, DP_RAW_TIME, &t, sizeof(t));
	}
	p += dp_put_chain(p, cc);
	if (e->pc == DP_RAW_ESCAPE) {
		struct dp_raw_sample r = { .pc = e->pc, .event = 0 };

		p += dp_put_rec(p, DP_RAW_SAMPLE, &r, sizeof(r));
	} else {
		w[0] = e->pc;
		w[1] = 0;
		memcpy(p, w, sizeof(w));
		p += sizeof(w);
	}
	return p - (u8 *)buf;
}
