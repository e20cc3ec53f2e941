/*
 * The agent's frames (doc/agent-protocol.md): finding the stream's start,
 * decoding, and what each frame does to the domain's state.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "domprof/raw.h"
#include "opd_guest_int.h"
#include "util/du_log.h"

static void seen(struct opd_guest *g, uint64_t t)
{
	if (t > g->seen_ns)
		g->seen_ns = t;
}

/* ---- the agent's frames ---- */

static int h_hello(void *ctx, const struct dp_ag_hello *h, const char *rel, size_t len)
{
	struct opd_guest *g = ctx;
	struct dp_ag_host_hello hh = { .proto_version = DP_AG_PROTO_VERSION };
	struct dp_ag_config cfg = {
		.image_budget = g->lim.max_image_bytes,
		.image_rate = 64u << 20,
		.image_max = 256u << 20,
	};

	/* the newest version both speak */
	if (h->proto_min > DP_AG_PROTO_VERSION || h->proto_max < DP_AG_PROTO_MIN ||
	    h->proto_max < h->proto_min) {
		du_warn("domain %s: agent speaks protocol %u..%u only; channel closed", g->name,
			h->proto_min, h->proto_max);
		g->st->agent_closed_bad++;
		return -EPROTONOSUPPORT;
	}
	hh.proto_version = h->proto_max < DP_AG_PROTO_VERSION ? h->proto_max : DP_AG_PROTO_VERSION;
	if (g->has_agent && h->instance != g->instance)
		opd_gimgs_agent_restart(&g->imgs);
	g->has_agent = true;
	g->instance = h->instance;
	g->flags = h->flags;
	g->nr_cpus = h->nr_cpus;
	g->agent_version = h->agent_version;
	len = strnlen(rel, len < DP_AG_MAX_RELEASE ? len : DP_AG_MAX_RELEASE);
	memcpy(g->release, rel, len);
	g->release[len] = '\0';
	opd_gclock_hello(&g->clock, h->now_ns, g->host_now);
	seen(g, h->now_ns);
	opd_gout_host_hello(&g->out, &hh);
	opd_gout_config(&g->out, &cfg);
	du_info("domain %s: agent %u.%u.%u, %u cpus, flags %#x", g->name, h->agent_version >> 16,
		(h->agent_version >> 8) & 0xff, h->agent_version & 0xff, h->nr_cpus, h->flags);
	return 0;
}

static int h_kallsyms(void *ctx, const char *text, size_t len)
{
	opd_gkern_text(&((struct opd_guest *)ctx)->kern, DP_AG_KALLSYMS, text, len);
	return 0;
}

static int h_kallsyms_end(void *ctx, const struct dp_ag_table_end *e)
{
	opd_gkern_end(&((struct opd_guest *)ctx)->kern, DP_AG_KALLSYMS, e);
	return 0;
}

static int h_modules(void *ctx, const char *text, size_t len)
{
	opd_gkern_text(&((struct opd_guest *)ctx)->kern, DP_AG_MODULES, text, len);
	return 0;
}

static int h_modules_end(void *ctx, const struct dp_ag_table_end *e)
{
	opd_gkern_end(&((struct opd_guest *)ctx)->kern, DP_AG_MODULES, e);
	return 0;
}

static int h_switch(void *ctx, uint32_t cpu, const struct dp_ag_switch *s)
{
	struct opd_guest *g = ctx;
	int ret = opd_gtl_add(&g->tl, cpu, s->time_ns, s->prev_pid, s->next_pid);

	if (ret > 0)
		seen(g, s->time_ns);
	return ret < 0 ? ret : 0;
}

/* The mapping's image: NULL for an anonymous one (no path, [vdso], or a
 * path refused, counted); false when the image cannot be kept. */
static bool mmap_image(struct opd_guest *g, const char *path, size_t len, struct opd_gimg **gi)
{
	char clean[AP_PATH_MAX + 1];
	ssize_t n;

	*gi = NULL;
	if (!len || path[0] != '/')
		return true;
	n = ap_sanitize_path(path, len, clean);
	if (n <= 1 || n > OPD_GUEST_PATH_MAX) {
		/* kept as an anonymous mapping: its samples are counted
		 * unresolved, not lost */
		g->st->guest_paths_rejected++;
		return true;
	}
	*gi = opd_gimgs_get(&g->imgs, clean, (size_t)n);
	return *gi != NULL;
}

static int h_mmap(void *ctx, const struct dp_ag_mmap *m, const char *path, size_t len)
{
	struct opd_guest *g = ctx;
	struct opd_gtask *t;
	struct opd_gmap gm;

	if (m->cpu != DP_AG_CPU_UNKNOWN)
		seen(g, m->time_ns);
	if (!m->len || m->start + m->len < m->start) {
		g->st->guest_bad_values++;
		return 0;
	}
	t = opd_gtasks_get(&g->tasks, m->pid);
	if (!t)
		return 0;
	memset(&gm, 0, sizeof(gm));
	gm.start = m->start;
	gm.end = m->start + m->len;
	gm.pgoff = m->pgoff;
	gm.t = m->time_ns;
	gm.vdso = len == 6 && !memcmp(path, "[vdso]", 6);
	if (!mmap_image(g, path, len, &gm.gi))
		return 0;
	if (gm.gi)
		opd_gimg_note(gm.gi, m->cookie, m->build_id, m->build_id_size);
	if (opd_gtasks_map(&g->tasks, t, &gm))
		return 0;
	g->st->guest_mmaps++;
	return 0;
}

static int h_comm(void *ctx, const struct dp_ag_comm *c, const char *name, size_t len)
{
	struct opd_guest *g = ctx;

	(void)name;
	(void)len;
	seen(g, c->time_ns);
	if ((c->flags & DP_AG_COMM_EXEC) && c->pid == c->tid) {
		opd_gtasks_exec(&g->tasks, c->pid, c->time_ns);
		opd_gasid_forget(&g->asid, c->pid, c->time_ns, true);	/* a new address space */
	}
	return 0;
}

static int h_fork(void *ctx, const struct dp_ag_task *ft)
{
	struct opd_guest *g = ctx;

	seen(g, ft->time_ns);
	if (ft->pid != ft->ppid)	/* else a thread */
		opd_gtasks_fork(&g->tasks, ft->pid, ft->ppid);
	return 0;
}

static int h_exit(void *ctx, const struct dp_ag_task *et)
{
	struct opd_guest *g = ctx;

	seen(g, et->time_ns);
	if (et->pid == et->tid) {
		opd_gtasks_exit(&g->tasks, et->pid, et->time_ns, g->seen_ns, LINGER_NS);
		opd_gasid_forget(&g->asid, et->pid, et->time_ns, false);
	}
	return 0;
}

static int h_lost(void *ctx, const struct dp_ag_lost *l)
{
	struct opd_guest *g = ctx;

	g->st->guest_lost_records += l->count > UINT32_MAX ? UINT32_MAX : l->count;
	g->ds.lost_records += l->count > UINT32_MAX ? UINT32_MAX : l->count;
	return 0;
}

/* The exchange just counted and the offset in use (--verbose): how the
 * guest's clock moves against the host's. */
static void log_pong(const struct opd_guest *g)
{
	const struct opd_gclock *c = &g->clock;
	size_t last = (c->pos + OPD_GCLOCK_WINDOW - 1) % OPD_GCLOCK_WINDOW;

	du_debug("domain %s: pong at %" PRIu64 ": offset %" PRId64 " rtt %" PRIu64
		 " (in use %" PRId64 " rtt %" PRIu64 ")", g->name, g->host_now, c->win[last].off,
		 c->win[last].rtt, c->off, c->rtt);
}

static int h_pong(void *ctx, const struct dp_ag_pong *p)
{
	struct opd_guest *g = ctx;

	if (opd_gclock_pong(&g->clock, p, g->host_now)) {
		g->st->guest_bad_values++;
		return 0;
	}
	g->st->guest_clock_rtt_ns = g->clock.rtt;
	log_pong(g);
	seen(g, p->send_ns);
	return 0;
}

/* Kept for the agents' side (opd_agent), which relates them to the host's
 * clock through KVM's offset. */
static int h_tsc(void *ctx, const struct dp_ag_tsc *t)
{
	struct opd_guest *g = ctx;

	if (t->cpu >= g->lim.max_cpus) {
		g->st->guest_bad_values++;
		return 0;
	}
	opd_gclock_tsc_push(&g->clock, t);
	return 0;
}

/* Handed to the collector by the agents' side (opd_agent), which knows
 * the domain's key. */
static int h_task_layout(void *ctx, const struct dp_ag_task_layout *l)
{
	struct opd_guest *g = ctx;

	g->layout = *l;
	g->layout_new = true;
	return 0;
}

static int h_image_data(void *ctx, const struct dp_ag_image_data *d, const uint8_t *b,
			size_t len)
{
	opd_gimgs_data(&((struct opd_guest *)ctx)->imgs, d, b, len);
	return 0;
}

static int h_image_end(void *ctx, const struct dp_ag_image_end *e)
{
	opd_gimgs_end(&((struct opd_guest *)ctx)->imgs, e);
	return 0;
}

static int h_state_end(void *ctx, const struct dp_ag_state_end *e)
{
	struct opd_guest *g = ctx;

	du_info("domain %s: agent state complete (%u tasks, %u mappings; %zu tasks known)", g->name,
		e->nr_tasks, e->nr_mmaps, g->tasks.nr_tasks);
	return 0;
}

static const struct ap_ops guest_ops = {
	.hello = h_hello,
	.kallsyms = h_kallsyms,
	.kallsyms_end = h_kallsyms_end,
	.modules = h_modules,
	.modules_end = h_modules_end,
	.task_switch = h_switch,
	.mmap = h_mmap,
	.comm = h_comm,
	.fork = h_fork,
	.exit = h_exit,
	.lost = h_lost,
	.pong = h_pong,
	.tsc = h_tsc,
	.task_layout = h_task_layout,
	.image_data = h_image_data,
	.image_end = h_image_end,
	.state_end = h_state_end,
};

void opd_guest_rejoin(struct opd_guest *g)
{
	if (!g->synced)
		opd_gout_host_join(&g->out, g->joins);
}

void opd_guest_reset_input(struct opd_guest *g)
{
	g->in_len = 0;
	g->fed = 0;
	g->rx = 0;
	g->hello_at = 0;
	g->acked = 0;
	g->ack_due = false;
	g->synced = false;
	opd_gkern_reset(&g->kern);
	opd_gimgs_reset(&g->imgs);
	opd_gout_clear(&g->out);
	opd_gout_host_join(&g->out, ++g->joins);
}
static int decode(struct opd_guest *g, const uint8_t *buf, size_t len, size_t *used)
{
	const uint8_t *start = buf;
	struct ap_stats before = g->ast;
	int ret;

	*used = 0;
	if (!g->synced) {
		size_t off = ap_find_hello(buf, len);

		if (off == len) {
			/* keep a possible partial header */
			*used = len > sizeof(struct dp_ag_frame) ? len - sizeof(struct dp_ag_frame) + 1 : 0;
			g->st->agent_skipped_bytes += *used;
			g->fed += *used;
			return 0;
		}
		g->st->agent_skipped_bytes += off;
		buf += off;
		len -= off;
		*used = off;
		g->synced = true;
		g->hello_at = g->fed + off;
		g->ack_due = true;
	}
	{
		size_t c = 0;

		ret = ap_decode(&guest_ops, g, buf, len, &c, &g->ast);
		*used += c;
	}
	g->st->agent_frames += g->ast.frames - before.frames;
	g->st->agent_bytes += g->ast.bytes - before.bytes;
	g->st->agent_bad_frames += g->ast.bad_payload - before.bad_payload;
	g->st->agent_unknown_frames += g->ast.unknown_type - before.unknown_type;
	g->fed += *used;
	if (ret == -EBADMSG) {
		struct dp_ag_frame f;
		size_t off = *used - (size_t)(buf - start);	/* the bad header */

		/* where and what, for the log (numbers only: hostile bytes) */
		memset(&f, 0, sizeof(f));
		memcpy(&f, buf + (off < len ? off : len), len - off < sizeof(f) ? len - off : sizeof(f));
		du_warn("domain %s: not a frame at byte %llu of this connection: magic 0x%08x "
			"type %u len %u (%llu frames before it)", g->name,
			(unsigned long long)g->fed, f.magic, f.type, f.len,
			(unsigned long long)g->ast.frames);
		g->st->agent_closed_bad++;
		g->ds.agent_closed_bad++;
	}
	return ret;
}

int opd_guest_feed(struct opd_guest *g, const void *buf, size_t len, uint64_t host_ns)
{
	const uint8_t *p = buf;
	const size_t cap = sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD;
	size_t used;
	int ret;

	g->host_now = host_ns;
	g->rx += len;
	while (len) {
		if (g->in_len) {
			/* complete the held partial frame first */
			size_t n = len < cap - g->in_len ? len : cap - g->in_len;

			memcpy(g->in + g->in_len, p, n);
			g->in_len += n;
			p += n;
			len -= n;
			ret = decode(g, g->in, g->in_len, &used);
			if (ret)
				return ret;
			memmove(g->in, g->in + used, g->in_len - used);
			g->in_len -= used;
			continue;
		}
		ret = decode(g, p, len, &used);
		if (ret)
			return ret;
		p += used;
		len -= used;
		if (len) {
			/* a frame cut short: hold it (at most one frame) */
			memcpy(g->in, p, len);
			g->in_len = len;
			len = 0;
		}
	}
	opd_gimgs_next_request(&g->imgs);
	return 0;
}
