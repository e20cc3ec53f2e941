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
#include "opd_guest_int.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

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

bool opd_guest_take_layout(struct opd_guest *g, struct dp_ag_task_layout *l)
{
	if (!g->layout_new)
		return false;
	*l = g->layout;
	g->layout_new = false;
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
