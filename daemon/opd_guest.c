#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "domprof/raw.h"
#include "opd_guest.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

/* Exited guest processes are kept this long (guest time) for held samples. */
#define LINGER_NS	(3ULL * OPD_GUEST_HOLD_NS)

/* The parts (each its own file) and what ties them: the agent protocol's
 * input, and the resolution of held samples against all of them. */
struct opd_guest {
	char *name, *dir;
	struct opd_guest_limits lim;
	struct opd_stats *st;
	/* the domain identity's memory account (opd_guest_new_in), shared by
	 * the states of one UUID (a VM and its restart), else own_budget */
	struct opd_gbudget *budget, own_budget;

	/* input */
	uint8_t *in;
	size_t in_len;
	bool synced;		/* a HELLO was found on this connection */
	uint64_t fed;		/* bytes decoded on this connection, skipped ones too */
	uint64_t rx;		/* bytes received on this connection */
	uint64_t hello_at;	/* where its HELLO began (rx counts) */
	uint64_t acked;		/* rx - hello_at last said in a HOST_ACK */
	bool ack_due;		/* a HELLO was found: say HOST_ACK at once */
	uint64_t joins;		/* the last connection's HOST_JOIN token */
	bool has_agent;
	uint64_t instance;
	uint32_t flags;
	uint32_t nr_cpus;
	uint32_t agent_version;			/* from HELLO */
	char release[DP_AG_MAX_RELEASE + 1];	/* guest uname -r, from HELLO */
	uint64_t host_now;
	/* --verbose lines about address spaces, at most OPD_GUEST_DEBUG_PER_S
	 * in a second of samples (a guest can make many) */
	uint64_t dbg_sec;
	uint32_t dbg_n, dbg_dropped;
	uint64_t seen_ns;	/* latest guest time in the stream */
	struct ap_stats ast;

	struct opd_gout out;
	struct opd_gclock clock;
	struct opd_gtimeline tl;
	struct opd_gtasks tasks;
	struct opd_gimgs imgs;
	struct opd_gkernel kern;
	struct opd_ghold hold;
	/* samples waiting for their address space's owner, beside the hold
	 * so that they hold up no other sample; wait_new_owner: a space got
	 * an owner since the last look through them */
	struct opd_ghold wait;
	bool wait_new_owner;
	size_t wait_filed;	/* filed out of turn, still in g->wait */
	struct opd_gasid asid;

	struct opd_guest_dstats ds;
	struct opd_image *domain;	/* the domain's name, as in sample files */
	struct opd_image *anon_kernel, *anon_user, *vdso;
	/* what sole_owner() may still look at, refilled over host time */
	uint64_t owner_tokens, owner_t;
	bool owner_started;
};

void opd_guest_limits_default(struct opd_guest_limits *l)
{
	l->max_tasks = 32768;
	l->max_maps = 262144;
	l->max_bytes = 64u << 20;
	l->max_table_bytes = 64u << 20;
	l->max_image_bytes = 1024u << 20;
	l->max_images = 4096;
	l->max_cpus = 1024;
	l->ring = 16384;
	l->queue = 131072;
	/* About 1 ms of CPU a second: a guest that says it sends switches and
	 * sends none cannot make the daemon scan all its tasks per sample. */
	l->owner_visits = 1u << 20;
	/* A fifth of a CPU a second: an agent needs a few ms; a guest that
	 * sends costly frames without end waits, and others do not. */
	l->cpu_ns = DP_AG_GUEST_CPU_MS * 1000ULL * 1000;
	/* Half a CPU for all of them: the one worker thread keeps the rest
	 * for the collector, however many domains flood it. */
	l->total_cpu_ns = DP_AG_GUEST_CPU_TOTAL_MS * 1000ULL * 1000;
}

static int parts_init(struct opd_guest *g, struct opd_images *images,
		      struct opd_imgcache *cache)
{
	const struct opd_guest_limits *lim = &g->lim;
	int ret;

	g->own_budget = (struct opd_gbudget){ .max = lim->max_bytes,
					      .capped = &g->st->guest_bytes_capped };
	if (!g->budget)
		g->budget = &g->own_budget;
	opd_gout_init(&g->out, &g->st->agent_output_dropped);
	opd_gclock_init(&g->clock);
	opd_gtl_init(&g->tl, lim->max_cpus, lim->ring, g->budget, g->st);
	opd_gasid_init(&g->asid, OPD_GASID_MAX_SPACES, images);
	ret = opd_gtasks_init(&g->tasks, lim->max_tasks, lim->max_maps, g->budget, g->st);
	if (!ret)
		ret = opd_gimgs_init(&g->imgs, g->name, g->dir, lim->max_images, lim->max_image_bytes,
			     images, cache, &g->out, g->budget, g->st);
	if (!ret)
		ret = opd_gkern_init(&g->kern, g->name, g->dir, lim->max_table_bytes, images, g->st);
	g->kern.nr_images = &g->imgs.nr_filed;
	g->kern.max_images = lim->max_images;
	if (!ret)
		ret = opd_ghold_init(&g->hold, lim->queue);
	if (!ret)
		ret = opd_ghold_init(&g->wait, lim->queue);
	return ret;
}

/* Tokens of this daemon's connections: from the wall clock, so that an
 * agent that started over for another daemon's JOIN (or this one's in an
 * earlier life) does not take ours for a repeat. */
static uint64_t join_seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) << 8;
}

struct opd_guest *opd_guest_new(const char *name, const char *dir,
				const struct opd_guest_limits *lim, struct opd_images *images,
				struct opd_imgcache *cache, struct opd_stats *st)
{
	return opd_guest_new_in(name, dir, lim, images, cache, st, NULL);
}

struct opd_guest *opd_guest_new_in(const char *name, const char *dir,
				   const struct opd_guest_limits *lim, struct opd_images *images,
				   struct opd_imgcache *cache, struct opd_stats *st,
				   struct opd_gbudget *budget)
{
	struct opd_guest *g = calloc(1, sizeof(*g));
	int ret = -ENOMEM;

	if (!g)
		return NULL;
	g->budget = budget;
	g->lim = *lim;
	g->st = st;
	g->joins = join_seed();
	g->imgs.xfer_fd = g->kern.ks.fd = g->kern.mods.fd = -1;
	g->name = strdup(name);
	g->dir = strdup(dir);
	g->in = malloc(sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD);
	g->domain = opd_image_get(images, SFN_ANON, name, strlen(name));
	g->anon_kernel = opd_image_get(images, SFN_ANON, "guest-kernel", 12);
	g->anon_user = opd_image_get(images, SFN_ANON, "guest-user", 10);
	g->vdso = opd_image_get(images, SFN_ANON, "vdso", 4);
	if (!g->name || !g->dir || !g->in || !g->domain || !g->anon_kernel || !g->vdso || !g->anon_user)
		goto out_free;
	ret = parts_init(g, images, cache);
	if (!ret)
		ret = du_nf_mkdirs(g->dir);
	if (ret)
		goto out_free;
	return g;

out_free:
	opd_guest_free(g);
	errno = -ret;
	return NULL;
}

void opd_guest_free(struct opd_guest *g)
{
	if (!g)
		return;
	opd_gtasks_fini(&g->tasks);
	opd_gimgs_fini(&g->imgs);
	opd_gtl_fini(&g->tl);
	opd_gkern_fini(&g->kern);
	opd_ghold_fini(&g->hold);
	opd_ghold_fini(&g->wait);
	opd_gasid_fini(&g->asid);
	free(g->in);
	free(g->name);
	free(g->dir);
	free(g);
}

size_t opd_guest_output(struct opd_guest *g, void *buf, size_t size)
{
	return opd_gout_take(&g->out, buf, size);
}

bool opd_guest_facts(const struct opd_guest *g, uint32_t *agent_version, const char **release)
{
	if (!g->has_agent)
		return false;
	*agent_version = g->agent_version;
	*release = g->release;
	return true;
}

void opd_guest_ping(struct opd_guest *g, uint64_t host_ns)
{
	opd_guest_ack(g, true);
	opd_gout_ping(&g->out, opd_gclock_ping(&g->clock, host_ns));
}

void opd_guest_ack(struct opd_guest *g, bool force)
{
	uint64_t n;

	if (!g->synced)
		return;
	n = g->rx - g->hello_at;
	if (!force && !g->ack_due && n - g->acked < OPD_GUEST_ACK_EVERY)
		return;
	opd_gout_host_ack(&g->out, n);
	g->acked = n;
	g->ack_due = false;
}

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
		opd_gasid_forget(&g->asid, c->pid, c->time_ns);	/* a new address space */
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
		opd_gasid_forget(&g->asid, et->pid, et->time_ns);
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

/* ---- resolution ---- */

/* The sample ran in task @t, in its mapping @m. */
static void place_user(struct opd_guest *g, const struct opd_guest_sample *s,
		       struct opd_guest_res *r, const struct opd_gtask *t,
		       const struct opd_gmap *m)
{
	r->pid = t->pid;
	if (m->vdso) {
		/* the kernel's own small ELF: a binary, without a file */
		r->image = t->main ? opd_gimgs_image(&g->imgs, t->main) : g->vdso;
		r->dep = g->vdso;
		r->key = s->pc - m->start;
		r->resolved = r->image != NULL;
		r->counter = &g->st->guest_user_resolved_vdso;
		return;
	}
	if (!m->gi) {
		r->counter = &g->st->guest_user_unresolved_anon;
		return;
	}
	r->dep = opd_gimgs_image(&g->imgs, m->gi);
	r->image = t->main ? opd_gimgs_image(&g->imgs, t->main) : r->dep;
	if (!r->dep || !r->image)
		return;	/* counted as capped; stays unresolved */
	r->key = s->pc - m->start + m->pgoff;
	r->resolved = true;
	r->counter = &g->st->guest_user_resolved;
	opd_gimgs_want(&g->imgs, m->gi, g->flags & DP_AG_HELLO_F_IMAGES);
}

/*
 * With no timeline to say which task ran: the sole owner of the pc
 * (opd_gtasks_sole_owner).  It scans every task: only samples from before
 * a vCPU's first switch come here, within a budget of task visits,
 * refilled at limits.owner_visits a second.
 */
static const struct opd_gtask *sole_owner(struct opd_guest *g, uint64_t pc, uint64_t host_ns,
					  const struct opd_gmap **mp)
{
	uint64_t cost = opd_gtasks_scan_cost(&g->tasks), cap = g->lim.owner_visits;

	if (!g->owner_started) {
		g->owner_tokens = cap;
		g->owner_t = host_ns;
		g->owner_started = true;
	} else if (host_ns > g->owner_t) {
		uint64_t dt = host_ns - g->owner_t;
		uint64_t add = dt >= 1000000000ULL ? cap :
			       (uint64_t)((unsigned __int128)cap * dt / 1000000000ULL);

		g->owner_tokens = g->owner_tokens + add > cap ? cap : g->owner_tokens + add;
		g->owner_t = host_ns;
	}
	if (g->owner_tokens < cost) {
		g->st->guest_owner_scans_capped++;
		return NULL;
	}
	g->owner_tokens -= cost;
	return opd_gtasks_sole_owner(&g->tasks, pc, mp);
}

#define MAX_CAND 16

/* How far from a switch @s may have run on either side of it: the clock's
 * uncertainty and the sample's own (DP_RAW_TIME_SPREAD). */
static uint64_t near_of(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	return opd_gclock_near(&g->clock) + (uint64_t)s->spread_us * 1000;
}

/* The tasks that may have run @s, most likely first; *@early: the sample
 * is from before the vCPU's timeline, clearly. */
static int candidates(struct opd_guest *g, const struct opd_guest_sample *s,
		      uint32_t cand[MAX_CAND], bool *early)
{
	const struct opd_gtimeline *tl = &g->tl;
	uint64_t gt = opd_gclock_guest(&g->clock, s->host_ns);
	uint64_t near = near_of(g, s);
	size_t count = opd_gtl_count(tl, s->vcpu);
	long i = opd_gtl_find(tl, s->vcpu, gt);
	int nc = 0;

	if (i < 0) {
		/* Before the vCPU's first switch: the task that switch took
		 * off the vCPU had been running since the agent's events
		 * opened, and likely before; its mappings must hold the pc. */
		const struct opd_gswitch *f = opd_gtl_at(tl, s->vcpu, 0);

		*early = f->t - gt > near;
		cand[nc++] = f->prev;
		if (!*early)
			cand[nc++] = f->next;
		return nc;
	}
	/* the task that ran then first, then those that ran within the
	 * clock's uncertainty before and after, nearest first */
	cand[nc++] = opd_gtl_at(tl, s->vcpu, i)->next;
	for (long k = 0; nc + 2 <= MAX_CAND; k++) {
		bool more = false;

		if (i - k >= 0 && gt - opd_gtl_at(tl, s->vcpu, i - k)->t < near) {
			cand[nc++] = opd_gtl_at(tl, s->vcpu, i - k)->prev;
			more = true;
		}
		if ((size_t)(i + k + 1) < count && opd_gtl_at(tl, s->vcpu, i + k + 1)->t - gt < near) {
			cand[nc++] = opd_gtl_at(tl, s->vcpu, i + k + 1)->next;
			more = true;
		}
		if (!more)
			break;
	}
	return nc;
}

/* The first candidate whose mappings hold the pc.  *@known: some
 * candidate is a task we know. */
static bool place_candidate(struct opd_guest *g, const struct opd_guest_sample *s,
			    struct opd_guest_res *r, const uint32_t *cand, int nc, bool *known)
{
	for (int k = 0; k < nc; k++) {
		const struct opd_gtask *t;
		const struct opd_gmap *m;

		if (!cand[k])
			continue;
		t = opd_gtasks_find(&g->tasks, cand[k]);
		if (!t)
			continue;
		*known = true;
		m = opd_gtask_find_map(t, s->pc);
		if (!m)
			continue;
		place_user(g, s, r, t, m);
		return true;
	}
	return false;
}

static bool ready(const struct opd_guest *g, const struct opd_guest_sample *s);

#define OPD_GUEST_DEBUG_PER_S 20

/* May a --verbose line about sample @s be written?  At most
 * OPD_GUEST_DEBUG_PER_S a second of sample time; the rest are counted and
 * said when the next second starts. */
static bool debug_ok(struct opd_guest *g, const struct opd_guest_sample *s)
{
	uint64_t sec = s->host_ns / 1000000000ull;

	if (sec != g->dbg_sec) {
		if (g->dbg_dropped)
			du_debug("domain %s: %" PRIu32 " more lines on address spaces left out",
				 g->name, g->dbg_dropped);
		g->dbg_sec = sec;
		g->dbg_n = 0;
		g->dbg_dropped = 0;
	}
	if (g->dbg_n >= OPD_GUEST_DEBUG_PER_S) {
		g->dbg_dropped++;
		return false;
	}
	g->dbg_n++;
	return true;
}

/* The owner of @s's address space at its time (opd_gasid_owner). */
static uint32_t owner_of(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	return opd_gasid_owner(&g->asid, s->asid, opd_gclock_guest(&g->clock, s->host_ns));
}

/* Is @t known to run in another address space than @asid at guest time
 * @gt (the owner of one)?  A process runs in one at a time. */
static bool runs_elsewhere(const struct opd_guest *g, const struct opd_gtask *t, uint64_t asid,
			   uint64_t gt)
{
	return t->asid && t->asid != asid && opd_gasid_owner(&g->asid, t->asid, gt) == t->pid;
}

/*
 * The pid @s votes for as its address space's owner, or 0: the one task
 * among the clock's @nc candidates (candidates()), whose mappings hold the
 * pc.  While the space has no
 * owner, the tasks known to run in another address space are set aside
 * first (so that, of two processes taking turns, the second is learned
 * from the turns' edges too once the first is known).  Not once it has
 * one: a wrong owner of each of two spaces would then set the right one
 * aside in both, and no vote could correct them.  A task the agent has
 * not named is never set aside.
 */
static uint32_t voter(const struct opd_guest *g, const struct opd_guest_sample *s,
		      const uint32_t *cand, int nc)
{
	uint64_t gt = opd_gclock_guest(&g->clock, s->host_ns);
	bool aside = !opd_gasid_owner(&g->asid, s->asid, gt);
	const struct opd_gtask *t;
	uint32_t one = 0;

	for (int k = 0; k < nc; k++) {
		if (!cand[k] || cand[k] == one)
			continue;
		t = opd_gtasks_find(&g->tasks, cand[k]);
		if (aside && t && runs_elsewhere(g, t, s->asid, gt))
			continue;
		if (one)
			return 0;	/* two remain */
		one = cand[k];
	}
	t = one ? opd_gtasks_find(&g->tasks, one) : NULL;
	return t && opd_gtask_find_map(t, s->pc) ? one : 0;
}

/* @s votes for @pid as its address space's owner; a new owner is logged
 * (--verbose) and noted in its task. */
static void vote(struct opd_guest *g, const struct opd_guest_sample *s, uint32_t pid)
{
	uint32_t was = owner_of(g, s);
	struct opd_gtask *t;

	if (!opd_gasid_vote(&g->asid, s->asid, pid, opd_gclock_guest(&g->clock, s->host_ns),
			    s->host_ns))
		return;
	g->wait_new_owner = true;
	g->wait.scanned = 0;
	t = opd_gtasks_find(&g->tasks, pid);
	if (t)
		t->asid = s->asid;
	if (debug_ok(g, s))
		du_debug("domain %s: address space %#" PRIx64 " is pid %" PRIu32 "'s (was %" PRIu32
			 "), sample at %" PRIu64 " on vcpu %d, clock offset %" PRId64
			 " near %" PRIu64, g->name, s->asid, pid, was, s->host_ns, s->vcpu,
			 g->clock.off, opd_gclock_near(&g->clock));
}

/*
 * The kernel collector's guest address space (opd_guest_asid.h): a sample
 * the clock gives to one process votes for its ASID's owner; a known owner
 * whose mappings hold the pc takes the sample whatever the clock says.
 */
static bool resolve_asid(struct opd_guest *g, const struct opd_guest_sample *s,
			 struct opd_guest_res *r)
{
	uint32_t cand[MAX_CAND], clock_pid = 0, owner, v;
	const struct opd_gtask *t;
	const struct opd_gmap *m;
	bool early = false;
	int nc = 0;

	g->asid.s.seen++;
	if (opd_gclock_known(&g->clock) && opd_gtl_count(&g->tl, s->vcpu))
		nc = candidates(g, s, cand, &early);
	if (nc >= 1 && !early)
		clock_pid = cand[0];
	if (!s->voted && nc && !early && (v = voter(g, s, cand, nc))) {
		/* only where the agent's stream has passed the sample: beyond
		 * it, the last switch known is not what ran */
		if (ready(g, s))
			vote(g, s, v);
		else
			g->asid.s.votes_ahead++;
	}
	owner = owner_of(g, s);
	if (!owner)
		return false;
	t = opd_gtasks_find(&g->tasks, owner);
	m = t ? opd_gtask_find_map(t, s->pc) : NULL;
	if (!m) {
		g->asid.s.no_mapping++;
		opd_gasid_doubt(&g->asid, s->asid);
		return false;
	}
	place_user(g, s, r, t, m);
	g->asid.s.filed++;
	g->asid.s.overrode_clock += clock_pid && clock_pid != owner;
	return true;
}

static void resolve_user(struct opd_guest *g, const struct opd_guest_sample *s,
			 struct opd_guest_res *r)
{
	uint32_t cand[MAX_CAND];
	bool known = false, early = true;
	const struct opd_gtask *ot;
	const struct opd_gmap *om;
	int nc;

	if (!g->has_agent) {
		r->counter = &g->st->guest_user_unresolved_no_agent;
		return;
	}
	if (s->asid && resolve_asid(g, s, r))
		return;
	if (!opd_gclock_known(&g->clock)) {
		r->counter = &g->st->guest_user_unresolved_no_clock;
		return;
	}
	if (opd_gtl_count(&g->tl, s->vcpu)) {
		early = false;
		nc = candidates(g, s, cand, &early);
		/* a switch within the clock's uncertainty: either side may
		 * have run it (the mappings decide below) */
		g->st->guest_user_ambiguous += nc > 1;
		/* the task whose mappings hold the pc wins, in order of likelihood */
		if (place_candidate(g, s, r, cand, nc, &known)) {
			g->st->guest_user_before_timeline += early && r->resolved;
			return;
		}
		if (!early) {
			r->counter = known ? &g->st->guest_user_unresolved_no_mapping :
					     &g->st->guest_user_unresolved_no_task;
			return;
		}
	}
	/* (an agent without switches would send every sample here: the scan
	 * is for the first moments of a timeline only) */
	ot = g->flags & DP_AG_HELLO_F_SWITCH ? sole_owner(g, s->pc, s->host_ns, &om) : NULL;
	if (!ot) {
		r->counter = &g->st->guest_user_unresolved_no_switch;
		return;
	}
	place_user(g, s, r, ot, om);
	g->st->guest_user_before_timeline += r->resolved;
}

static void resolve_kernel(struct opd_guest *g, const struct opd_guest_sample *s,
			   struct opd_guest_res *r)
{
	r->counter = &g->st->guest_kernel_unresolved;
	if (opd_gkern_resolve(&g->kern, s->pc, &r->image, &r->key)) {
		r->dep = r->image;
		r->resolved = true;
		r->counter = &g->st->guest_kernel_resolved;
	}
}

/*
 * The mode the pc's half of the x86-64 address space says.  The host's
 * guest/user flag comes from the guest's CPL as the hypervisor saw it,
 * which nested virtualization gets wrong at times; a pc in the other half
 * cannot be that mode's (counted guest_mode_by_address).
 */
static uint8_t effective_mode(struct opd_guest *g, const struct opd_guest_sample *s)
{
	if (s->mode == DP_MODE_GUEST_USER && s->pc >= 0xffff800000000000ULL) {
		g->st->guest_mode_by_address++;
		return DP_MODE_GUEST_KERNEL;
	}
	if (s->mode == DP_MODE_GUEST_KERNEL && s->pc < 0x0000800000000000ULL) {
		g->st->guest_mode_by_address++;
		return DP_MODE_GUEST_USER;
	}
	return s->mode;
}

void opd_guest_resolve(struct opd_guest *g, const struct opd_guest_sample *s,
		       struct opd_guest_res *r)
{
	memset(r, 0, sizeof(*r));
	r->mode = effective_mode(g, s);
	if (r->mode == DP_MODE_GUEST_KERNEL)
		resolve_kernel(g, s, r);
	else
		resolve_user(g, s, r);
	if (!r->counter)
		r->counter = &g->st->guest_user_unresolved_capped;
	if (!r->resolved) {
		r->image = r->dep = r->mode == DP_MODE_GUEST_KERNEL ? g->anon_kernel : g->anon_user;
		r->key = s->pc;
		/* no agent: one bucket per address space when the collector
		 * knows it, {anon:guest-user:asN} */
		if (r->mode != DP_MODE_GUEST_KERNEL && !g->has_agent && s->asid) {
			struct opd_image *b = opd_gasid_bucket(&g->asid, s->asid);

			if (b)
				r->image = r->dep = b;
		}
	}
}

/* ---- holding ---- */

/* Resolve @s into *@out, *@r (counted by what it resolved to). */
static void take(struct opd_guest *g, const struct opd_guest_sample *s,
		 struct opd_guest_sample *out, struct opd_guest_res *r)
{
	*out = *s;
	opd_guest_resolve(g, out, r);
	(*r->counter)++;
	if (r->resolved)
		g->ds.resolved++;
	else
		g->ds.anon++;
	if (r->mode != DP_MODE_GUEST_KERNEL) {
		if (r->resolved)
			g->ds.user_resolved++;
		else
			g->ds.user_unresolved++;
	}
}

bool opd_guest_defer(struct opd_guest *g, const struct opd_guest_sample *s,
		     struct opd_guest_sample *out, struct opd_guest_res *r)
{
	struct opd_guest_sample q = *s;
	bool now = false;

	/* the hold's own marks start clear, whatever the caller left there */
	q.voted = false;
	q.waited = false;
	q.filed = false;
	g->ds.received++;
	if (!g->hold.cap) {
		take(g, &q, out, r);
		return true;
	}
	if (opd_ghold_full(&g->hold)) {
		g->st->guest_queue_overflow++;
		g->ds.queue_overflow++;
		take(g, opd_ghold_oldest(&g->hold), out, r);
		opd_ghold_pop(&g->hold);
		now = true;
	}
	opd_ghold_push(&g->hold, &q);
	return now;
}

/* Does the sample with this ASID vote, as resolve_asid would? */
static void vote_now(struct opd_guest *g, struct opd_guest_sample *q)
{
	uint32_t cand[MAX_CAND], v;
	bool early = false;
	int nc;

	q->voted = true;
	if (!opd_gclock_known(&g->clock) || !opd_gtl_count(&g->tl, q->vcpu))
		return;
	nc = candidates(g, q, cand, &early);
	if (!early && (v = voter(g, q, cand, nc)))
		vote(g, q, v);
}

/*
 * Should @s, the oldest held sample, its time passed by the timeline, wait
 * for its address space's owner?  While a space has none yet, its samples
 * vote as they leave the hold (this one first), and the owner they elect
 * files them (doc/guest-asid.md), not the clock, which may be wrong by
 * more than it knows (a ping/pong clock over a slow channel) and cannot
 * tell apart two processes of one binary.  They wait beside the hold
 * (g->wait), so that no other sample waits behind them: one space that
 * never gets an owner (a process the agent does not report, the agent
 * itself) would otherwise hold every sample of the domain back.  At most
 * OPD_GUEST_OWNER_WAIT_NS after its time; then the clock places it.
 */
static bool wait_for_owner(struct opd_guest *g, struct opd_guest_sample *s)
{
	if (!s->asid || s->mode != DP_MODE_GUEST_USER || !g->has_agent)
		return false;
	if (!s->voted)
		vote_now(g, s);
	if (owner_of(g, s))
		return false;
	if (opd_ghold_full(&g->wait)) {
		g->asid.s.wait_full++;
		return false;
	}
	g->asid.s.waited++;
	s->waited = true;
	opd_ghold_push(&g->wait, s);
	return true;
}

/*
 * The next waiting sample to file (opd_guest_next): the oldest once its
 * space has an owner or its wait is over (@all: now), else, after a space
 * got an owner, the next one of the samples behind it that has one now.
 */
static struct opd_guest_sample *wait_next(struct opd_guest *g, uint64_t host_ns, bool all)
{
	struct opd_guest_sample *q;

	if (!g->wait.count)
		return NULL;
	q = opd_ghold_at(&g->wait, 0);
	if (all || host_ns - q->host_ns >= OPD_GUEST_OWNER_WAIT_NS || owner_of(g, q)) {
		if (!owner_of(g, q)) {
			g->asid.s.wait_expired++;
			if (debug_ok(g, q))
				du_debug("domain %s: address space %#" PRIx64 " has no owner after %"
					 PRIu64 " ms: the clock places its sample at %" PRIu64,
					 g->name, q->asid, (host_ns - q->host_ns) / 1000000,
					 q->host_ns);
		}
		return q;
	}
	for (; g->wait_new_owner && g->wait.scanned < g->wait.count; g->wait.scanned++) {
		q = opd_ghold_at(&g->wait, g->wait.scanned);
		if (!q->filed && owner_of(g, q))
			return q;
	}
	g->wait_new_owner = false;
	return NULL;
}

/* Has the sideband passed @s's time?  Its vCPU's timeline says so when a
 * switch after it arrived; kernel samples need no timeline. */
static bool ready(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	size_t n;
	uint64_t gt;

	if (s->mode == DP_MODE_GUEST_KERNEL && s->pc >= 0xffff800000000000ULL)
		return opd_gkern_ready(&g->kern);
	if (!opd_gclock_known(&g->clock))
		return false;
	gt = opd_gclock_guest(&g->clock, s->host_ns) + near_of(g, s);
	n = opd_gtl_count(&g->tl, s->vcpu);
	return n && opd_gtl_at(&g->tl, s->vcpu, (long)n - 1)->t >= gt;
}

bool opd_guest_next(struct opd_guest *g, uint64_t host_ns, bool all,
		    struct opd_guest_sample *out, struct opd_guest_res *r)
{
	uint64_t hold = g->has_agent ? OPD_GUEST_HOLD_NS : OPD_GUEST_HOLD_NOAGENT_NS;
	struct opd_guest_sample *s = wait_next(g, host_ns, all);
	bool is_ready;

	if (s) {
		take(g, s, out, r);
		s->filed = true;
		g->wait_filed++;
		while (g->wait.count && opd_ghold_at(&g->wait, 0)->filed) {
			opd_ghold_pop(&g->wait);
			g->wait_filed--;
		}
		return true;
	}
	while ((s = g->hold.count ? opd_ghold_at(&g->hold, 0) : NULL)) {
		is_ready = ready(g, s);
		if (!all && !is_ready && host_ns - s->host_ns < hold)
			return false;
		if (all || !is_ready || !wait_for_owner(g, s))
			break;
		opd_ghold_pop(&g->hold);
	}
	if (!s)
		return false;
	take(g, s, out, r);
	/* placed by the last switch known, though the agent's stream had not
	 * passed the sample's time: a guess if the agent lags (doc/clock.md) */
	g->st->guest_user_past_timeline += !is_ready && r->resolved && !s->asid &&
					   r->mode != DP_MODE_GUEST_KERNEL && g->has_agent;
	opd_ghold_pop(&g->hold);
	return true;
}

void opd_guest_note_deferred(struct opd_guest *g)
{
	g->st->guest_budget_deferred++;
	g->ds.budget_deferred++;
}

const struct opd_guest_dstats *opd_guest_dstats(const struct opd_guest *g)
{
	return &g->ds;
}

/* The TSC path's state beside the method (doc/clock.md). */
static void write_clock_detail(FILE *f, const struct opd_gclock *c, uint32_t flags)
{
	const char *why = c->why;

	if (c->pp_method == OPD_GCLOCK_PING)
		fprintf(f, "clock_pingpong_rtt_ns %" PRIu64 "\nclock_pingpong_offset_ns %" PRId64
			"\n", c->pp_rtt, c->pp_off);
	fprintf(f, "clock_tsc_offset_changes %" PRIu64 "\nclock_tsc_fallbacks %" PRIu64 "\n",
		c->tsc_offset_changes, c->tsc_fallbacks);
	if (!opd_gclock_exact(c) && !*why && !(flags & DP_AG_HELLO_F_TSC))
		why = "the agent sends no TSC pairs";
	if (!opd_gclock_exact(c) && *why)
		fprintf(f, "clock_why %s\n", why);
}

int opd_guest_write_stats(const struct opd_guest *g, bool connected)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int ret = 0;

	if (snprintf(path, sizeof(path), "%s/stats", g->dir) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.stats.tmp", g->dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = du_nf_fopen(tmp, "w", DU_SDIR_FILE_MODE);
	if (!f)
		return -errno;
	fprintf(f, "agent_connected %d\nagent_seen %d\n", connected ? 1 : 0, g->has_agent ? 1 : 0);
	fprintf(f, "agent_closed_bad %" PRIu64 "\n", g->ds.agent_closed_bad);
	fprintf(f, "clock_method %s\n", opd_gclock_method_name(g->clock.method));
	fprintf(f, "clock_offset_ns %" PRId64 "\n", g->clock.off);
	fprintf(f, "clock_uncertainty_ns %" PRIu64 "\n",
		(uint64_t)(opd_gclock_known(&g->clock) ? opd_gclock_near(&g->clock) : 0));
	write_clock_detail(f, &g->clock, g->flags);
	fprintf(f, "samples_received %" PRIu64 "\nsamples_resolved %" PRIu64 "\n",
		g->ds.received, g->ds.resolved);
	fprintf(f, "samples_anon %" PRIu64 "\nsamples_held %zu\n", g->ds.anon,
		g->hold.count + g->wait.count - g->wait_filed);
	fprintf(f, "samples_user_resolved %" PRIu64 "\nsamples_user_unresolved %" PRIu64 "\n",
		g->ds.user_resolved, g->ds.user_unresolved);
	fprintf(f, "queue_overflow %" PRIu64 "\nlost_records %" PRIu64 "\n",
		g->ds.queue_overflow, g->ds.lost_records);
	fprintf(f, "budget_deferred %" PRIu64 "\n", g->ds.budget_deferred);
	fprintf(f, "tasks %zu\nmappings %zu\nbytes %zu\n", g->tasks.nr_tasks,
		g->tasks.nr_maps, g->budget->used);
	opd_gasid_write_stats(&g->asid, f);
	if (fflush(f))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret)
		ret = du_nf_rename(tmp, path);
	if (ret)
		du_nf_unlink(tmp);
	return ret;
}

struct opd_image *opd_guest_domain(const struct opd_guest *g)
{
	return g->domain;
}

bool opd_guest_has_agent(const struct opd_guest *g)
{
	return g->has_agent;
}

bool opd_guest_offset(const struct opd_guest *g, int64_t *offset, uint64_t *rtt)
{
	if (offset)
		*offset = g->clock.off;
	if (rtt)
		*rtt = g->clock.rtt;
	return opd_gclock_known(&g->clock);
}

struct opd_gclock *opd_guest_gclock(struct opd_guest *g)
{
	return &g->clock;
}

size_t opd_guest_nr_tasks(const struct opd_guest *g)
{
	return g->tasks.nr_tasks;
}

size_t opd_guest_nr_maps(const struct opd_guest *g)
{
	return g->tasks.nr_maps;
}

size_t opd_guest_bytes(const struct opd_guest *g)
{
	return g->budget->used;
}

size_t opd_guest_held(const struct opd_guest *g)
{
	return g->hold.count + g->wait.count - g->wait_filed;
}
