/*
 * The perf collector's ring reader: one CPU's ring buffer read from its
 * tail to its head, each record the collector wants (SAMPLE, MMAP2, COMM,
 * FORK, EXIT, LOST, LOST_SAMPLES) checked against its length and parsed
 * into a struct prec for collect_perf.c's merge by time, a sample's event
 * found by its identifier.
 */
#include "config.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "collect_perf_int.h"
#include "util/du_log.h"
#include "util/du_array.h"

/* sample_id trailer with TID|TIME|CPU|IDENTIFIER */
#define ID_TRAILER	32

static uint32_t id_to_event(const struct collect_perf *p, uint64_t id)
{
	int lo = 0, hi = p->nr_ids;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (p->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < p->nr_ids && p->ids[lo].id == id)
		return p->ids[lo].event;
	return p->conf->nr_events;	/* the daemon counts it as a bad event */
}

static struct prec *new_rec(struct pcpu *pc)
{
	if (pc->nr == pc->cap) {
		size_t ncap = pc->cap ? pc->cap * 2 : 1024;
		struct prec *n = realloc(pc->recs, ncap * sizeof(*n));

		if (!n)
			return NULL;
		pc->recs = n;
		pc->cap = ncap;
	}
	return memset(&pc->recs[pc->nr], 0, sizeof(pc->recs[0]));
}

static int arena_add(struct pcpu *pc, const char *s, size_t len, size_t *off)
{
	if (DU_GROW(pc->arena, pc->arena_cap, pc->arena_len + len + 1, 65536))
		return -ENOMEM;
	memcpy(pc->arena + pc->arena_len, s, len);
	pc->arena[pc->arena_len + len] = '\0';
	*off = pc->arena_len;
	pc->arena_len += len + 1;
	return 0;
}

/* The sample_id trailer at the end of a non-sample record. */
static bool read_trailer(const uint8_t *rec, size_t size, struct prec *r)
{
	uint32_t v[2];

	if (size < sizeof(struct perf_event_header) + ID_TRAILER)
		return false;
	rec += size - ID_TRAILER;
	memcpy(v, rec, 8);
	r->pid = v[0];
	r->tid = v[1];
	memcpy(&r->time, rec + 8, 8);
	memcpy(v, rec + 16, 8);
	r->cpu = v[0];
	return true;
}

/* The parsers below fill *@r from record body @b (@blen bytes) of the
 * whole record @rec (@size bytes): 1 to keep it, 0 to drop it (short, or
 * not wanted), -errno. */

static int cc_reserve(struct pcpu *pc, size_t n)
{
	return DU_GROW(pc->ccbuf, pc->cc_cap, pc->cc_len + n, 4096);
}

/*
 * perf's chain (@n entries at @e) into DP_RAW_CALLCHAIN's form: context
 * markers dropped, the sample's own pc (the first entry) left out, kernel
 * frames then user frames, guest contexts (perf gives none for KVM guests)
 * dropped, at most @depth frames.
 */
static int parse_chain(struct pcpu *pc, struct prec *r, const uint8_t *e, uint64_t n,
		       unsigned int depth)
{
	uint64_t ctx = PERF_CONTEXT_USER;
	bool first = true;
	uint16_t nr = 0, nk = 0;

	if (depth > DP_RAW_CC_MAX)
		depth = DP_RAW_CC_MAX;
	if (cc_reserve(pc, depth))
		return -ENOMEM;
	r->cc_off = pc->cc_len;
	for (uint64_t i = 0; i < n && nr < depth; i++) {
		uint64_t v;

		memcpy(&v, e + i * 8, 8);
		if (v >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = v;
			continue;
		}
		if (first) {
			first = false;
			if (v == r->ip)
				continue;
		}
		if (ctx == PERF_CONTEXT_KERNEL) {
			if (nr != nk)
				continue;	/* kernel after user: not our layout */
			nk++;
		} else if (ctx != PERF_CONTEXT_USER) {
			continue;
		}
		pc->ccbuf[pc->cc_len + nr++] = v;
	}
	r->cc_nr = nr;
	r->cc_nk = nk;
	pc->cc_len += nr;
	return 0;
}

static int parse_sample(struct collect_perf *p, struct pcpu *pc, struct prec *r,
			const uint8_t *b, size_t blen)
{
	uint64_t id;
	uint32_t v[2];

	if (blen < 40)
		return 0;
	memcpy(&id, b, 8);
	memcpy(&r->ip, b + 8, 8);
	memcpy(v, b + 16, 8);
	r->pid = v[0];
	r->tid = v[1];
	memcpy(&r->time, b + 24, 8);
	memcpy(v, b + 32, 8);
	r->cpu = v[0];
	r->event = id_to_event(p, id);
	if (p->conf->callgraph_depth && blen >= 48) {
		uint64_t n;
		int ret;

		memcpy(&n, b + 40, 8);
		if (n > (blen - 48) / 8)
			n = (blen - 48) / 8;
		ret = parse_chain(pc, r, b + 48, n, p->conf->callgraph_depth);
		if (ret)
			return ret;
	}
	return 1;
}

static int parse_mmap2(struct pcpu *pc, struct prec *r, const uint8_t *rec, size_t size,
		       const uint8_t *b, size_t blen)
{
	uint32_t v[2];
	const char *path;
	size_t plen;

	if (blen < 64 + ID_TRAILER || !read_trailer(rec, size, r))
		return 0;
	memcpy(v, b, 8);
	r->m.pid = v[0];
	r->m.tid = v[1];
	memcpy(&r->m.start, b + 8, 8);
	memcpy(&r->m.len, b + 16, 8);
	memcpy(&r->m.pgoff, b + 24, 8);
	if (!(r->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		memcpy(&r->m.maj, b + 32, 4);
		memcpy(&r->m.min, b + 36, 4);
		memcpy(&r->m.ino, b + 40, 8);
	}
	memcpy(&r->m.prot, b + 56, 4);
	if (!(r->m.prot & PROT_EXEC))
		return 0;
	path = (const char *)b + 64;
	plen = strnlen(path, blen - 64 - ID_TRAILER);
	if (plen > DP_RAW_MAX_PATH)
		plen = DP_RAW_MAX_PATH;
	r->m.path_len = (uint16_t)plen;
	if (arena_add(pc, path, plen, &r->path_off))
		return -ENOMEM;
	return 1;
}

static int parse_comm(struct prec *r, const uint8_t *rec, size_t size, const uint8_t *b,
		      size_t blen)
{
	uint32_t v[2];
	size_t clen;

	if (blen < 8 + ID_TRAILER || !read_trailer(rec, size, r))
		return 0;
	memcpy(v, b, 8);
	r->pid = v[0];
	r->tid = v[1];
	clen = strnlen((const char *)b + 8, blen - 8 - ID_TRAILER);
	memcpy(r->comm, b + 8, clen < 15 ? clen : 15);
	r->flags = (r->misc & PERF_RECORD_MISC_COMM_EXEC) ? DP_RAW_COMM_EXEC : 0;
	return 1;
}

/* FORK, EXIT, LOST and LOST_SAMPLES: a fixed body and the trailer. */
static int parse_fixed(struct prec *r, const uint8_t *rec, size_t size, const uint8_t *b,
		       size_t blen)
{
	size_t need = r->type == PERF_RECORD_LOST_SAMPLES ? 8 :
		      r->type == PERF_RECORD_LOST ? 16 : 24;

	if (blen < need + ID_TRAILER || !read_trailer(rec, size, r))
		return 0;
	if (r->type == PERF_RECORD_LOST)
		memcpy(&r->lost, b + 8, 8);
	else if (r->type == PERF_RECORD_LOST_SAMPLES)
		memcpy(&r->lost, b, 8);
	else
		memcpy(&r->t, b, 16);
	return 1;
}

static int parse_record(struct collect_perf *p, struct pcpu *pc, const uint8_t *rec, size_t size)
{
	struct perf_event_header h;
	const uint8_t *b = rec + sizeof(h);
	size_t blen;
	struct prec *r;
	int ret;

	memcpy(&h, rec, sizeof(h));
	blen = size - sizeof(h);
	switch (h.type) {
	case PERF_RECORD_THROTTLE:
		if (!p->throttles++)
			du_warn("perf collector: the kernel throttles sampling on cpu %d "
				"(its sampling interrupts take too long; see "
				"kernel.perf_event_max_sample_rate): fewer samples than the rate asks",
				pc->cpu);
		return 0;
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		break;
	default:
		return 0;
	}
	r = new_rec(pc);
	if (!r)
		return -ENOMEM;
	r->type = h.type;
	r->misc = h.misc;
	r->cpu = (uint32_t)pc->cpu;
	if (h.type == PERF_RECORD_SAMPLE)
		ret = parse_sample(p, pc, r, b, blen);
	else if (h.type == PERF_RECORD_MMAP2)
		ret = parse_mmap2(pc, r, rec, size, b, blen);
	else if (h.type == PERF_RECORD_COMM)
		ret = parse_comm(r, rec, size, b, blen);
	else
		ret = parse_fixed(r, rec, size, b, blen);
	if (ret <= 0)
		return ret;
	pc->nr++;
	return 0;
}

int cp_read_ring(struct collect_perf *p, struct pcpu *pc)
{
	uint64_t head, tail;
	int ret = 0;

	if (!pc->meta)
		return 0;
	head = __atomic_load_n(&pc->meta->data_head, __ATOMIC_ACQUIRE);
	tail = pc->meta->data_tail;
	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail & (pc->size - 1);
		const uint8_t *rec;

		if (off + sizeof(h) <= pc->size) {
			memcpy(&h, pc->data + off, sizeof(h));
		} else {
			size_t first = (size_t)(pc->size - off);

			memcpy(&h, pc->data + off, first);
			memcpy((uint8_t *)&h + first, pc->data, sizeof(h) - first);
		}
		if (h.size < sizeof(h) || h.size > head - tail)
			break;	/* cannot happen with a sane kernel; resync next round */
		if (off + h.size <= pc->size) {
			rec = pc->data + off;
		} else {
			size_t first = (size_t)(pc->size - off);

			memcpy(p->tmp, pc->data + off, first);
			memcpy(p->tmp + first, pc->data, h.size - first);
			rec = p->tmp;
		}
		ret = parse_record(p, pc, rec, h.size);
		if (ret)
			break;
		tail += h.size;
	}
	__atomic_store_n(&pc->meta->data_tail, tail, __ATOMIC_RELEASE);
	return ret;
}
