#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "domprof/raw.h"
#include "opd_guest.h"
#include "util/du_fs.h"
#include "util/du_hash.h"
#include "util/du_log.h"
#include "util/du_range.h"

#define TASK_BUCKETS	4096
#define IMG_BUCKETS	1024
#define NR_PINGS	16
#define NR_CLOCK	32
#define LINE_MAX_BYTES	512
#define MAX_MODULES	4096
#define KERNEL_IMAGE_MAX (1ULL << 30)	/* x86-64: the kernel image mapping */
#define MAX_REQ		256
#define OUT_SIZE	8192
/* A sample this close to a switch may belong to either side of it. */
#define NEAR_MIN_NS	(1000ULL * 1000)
/* With the exact (TSC) clock: its stated uncertainty plus this margin for
 * what neither side's stamp sees (doc/clock.md). */
#define EXACT_MARGIN_NS	(20ULL * 1000)
#define NR_TSC		8
/* Exited guest processes are kept this long (guest time) for held samples. */
#define LINGER_NS	(3ULL * OPD_GUEST_HOLD_NS)

struct gimg {
	struct gimg *next;	/* hash chain */
	uint32_t hash;
	uint32_t cookie;	/* 0: none (or the agent restarted) */
	uint8_t bid[DP_AG_BUILD_ID_MAX];
	uint8_t bid_size;
	bool requested, mapped, queued;
	struct opd_image *img;	/* interned {root} path, made on first sample */
	size_t len;
	char path[];		/* sanitized, NUL-terminated */
};

struct gmap {
	uint64_t start, end, pgoff;
	uint64_t t;		/* guest time of the MMAP (exec drops older ones) */
	bool vdso;		/* the kernel's [vdso] image */
	struct gimg *gi;	/* NULL: anonymous ([vdso], no file) */
};

struct gtask {
	struct gtask *next;
	uint32_t pid;
	bool exited;
	uint64_t exit_ns;
	struct gimg *main;
	uint64_t main_t;
	struct gmap *maps;	/* sorted by start, disjoint */
	size_t nr, cap;
};

struct gswitch {
	uint64_t t;
	uint32_t prev, next;	/* pids */
};

struct gcpu {
	struct gswitch *ring;
	size_t head, count;	/* oldest at head */
};

struct gmod {
	uint64_t start, end;
	struct opd_image *img;
};

struct table_file {
	int fd;
	uint64_t bytes;
	uint32_t chunks;
	char line[LINE_MAX_BYTES];
	size_t line_len;
	bool line_over;
};

struct opd_guest {
	char *name, *dir, *map_path;
	struct opd_guest_limits lim;
	struct opd_images *images;
	struct opd_imgcache *cache;
	struct opd_stats *st;

	/* input */
	uint8_t *in;
	size_t in_len;
	bool synced;		/* a HELLO was found on this connection */
	bool has_agent;
	uint64_t instance;
	uint32_t flags;
	uint32_t nr_cpus;
	uint64_t host_now;
	struct ap_stats ast;

	/* output */
	uint8_t out[OUT_SIZE];
	size_t out_len;

	/* tasks and images */
	struct gtask *tasks[TASK_BUCKETS];
	size_t nr_tasks, nr_maps, bytes;
	struct gimg *imgs[IMG_BUCKETS];
	size_t nr_filed_imgs;
	uint64_t last_reap;

	/* switches */
	struct gcpu *cpus;
	uint64_t seen_ns;	/* latest guest time in the stream */

	/* clock */
	struct { uint64_t token, host_ns; } pings[NR_PINGS];
	uint64_t next_token;
	struct { int64_t off; uint64_t rtt; } clk[NR_CLOCK];
	size_t nr_clk, clk_pos;
	bool have_off;
	int64_t off;
	uint64_t rtt;
	int64_t pp_off;		/* ping/pong's own, kept beside the exact one */
	uint64_t pp_rtt;
	bool have_pp;
	bool exact;		/* off comes from the TSC path, +- unc */
	uint64_t unc;
	struct dp_ag_tsc tsc[NR_TSC];	/* TSC pairs not yet taken */
	size_t nr_tsc;

	/* kernel */
	struct table_file ks, mods;
	uint64_t ktext, ketext, klast;
	struct gmod *modv;
	size_t nr_mod, table_bytes;
	struct opd_image *vmlinux, *anon_kernel, *anon_user, *vdso;

	/* images */
	struct gimg *req[MAX_REQ];
	size_t nr_req;
	struct gimg *xfer_img;	/* requested, awaiting IMAGE_END */
	int xfer_fd;
	uint64_t xfer_bytes, image_bytes;
	char xfer_tmp[PATH_MAX];

	/* held samples */
	struct opd_guest_sample *q;
	size_t q_head, q_count;
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
}

struct opd_guest *opd_guest_new(const char *name, const char *dir,
				const struct opd_guest_limits *lim, struct opd_images *images,
				struct opd_imgcache *cache, struct opd_stats *st)
{
	struct opd_guest *g = calloc(1, sizeof(*g));
	int ret = -ENOMEM;

	if (!g)
		return NULL;
	g->lim = *lim;
	g->images = images;
	g->cache = cache;
	g->st = st;
	g->ks.fd = g->mods.fd = g->xfer_fd = -1;
	g->name = strdup(name);
	g->dir = strdup(dir);
	g->in = malloc(sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD);
	g->q = calloc(lim->queue ? lim->queue : 1, sizeof(*g->q));
	g->vmlinux = opd_image_get(images, SFN_KERN, "vmlinux", 7);
	g->anon_kernel = opd_image_get(images, SFN_ANON, "guest-kernel", 12);
	g->anon_user = opd_image_get(images, SFN_ANON, "guest-user", 10);
	g->vdso = opd_image_get(images, SFN_ANON, "vdso", 4);
	if (!g->name || !g->dir || !g->in || !g->q || !g->vmlinux || !g->anon_kernel || !g->vdso ||
	    !g->anon_user || asprintf(&g->map_path, "%s/images", dir) < 0) {
		g->map_path = NULL;
		goto out_free;
	}
	ret = du_mkdir_p(g->dir);
	if (ret)
		goto out_free;
	return g;

out_free:
	opd_guest_free(g);
	errno = -ret;
	return NULL;
}

static void task_free(struct opd_guest *g, struct gtask *t)
{
	g->nr_maps -= t->nr;
	g->bytes -= sizeof(*t) + t->cap * sizeof(struct gmap);
	g->nr_tasks--;
	free(t->maps);
	free(t);
}

static void xfer_abort(struct opd_guest *g)
{
	if (g->xfer_fd >= 0) {
		close(g->xfer_fd);
		unlink(g->xfer_tmp);
	}
	g->xfer_fd = -1;
	g->xfer_bytes = 0;
}

void opd_guest_free(struct opd_guest *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < TASK_BUCKETS; i++) {
		struct gtask *t, *n;

		for (t = g->tasks[i]; t; t = n) {
			n = t->next;
			task_free(g, t);
		}
	}
	for (size_t i = 0; i < IMG_BUCKETS; i++) {
		struct gimg *x, *n;

		for (x = g->imgs[i]; x; x = n) {
			n = x->next;
			free(x);
		}
	}
	if (g->cpus) {
		for (unsigned int i = 0; i < g->lim.max_cpus; i++)
			free(g->cpus[i].ring);
		free(g->cpus);
	}
	if (g->ks.fd >= 0)
		close(g->ks.fd);
	if (g->mods.fd >= 0)
		close(g->mods.fd);
	xfer_abort(g);
	free(g->modv);
	free(g->q);
	free(g->in);
	free(g->map_path);
	free(g->name);
	free(g->dir);
	free(g);
}

/* ---- output ---- */

static void out_frame(struct opd_guest *g, ssize_t (*put)(void *, size_t, const void *),
		      const void *arg)
{
	ssize_t n = put(g->out + g->out_len, sizeof(g->out) - g->out_len, arg);

	if (n > 0)
		g->out_len += (size_t)n;
	else
		g->st->agent_output_dropped++;
}

static ssize_t put_host_hello(void *b, size_t s, const void *a)
{
	return ap_put_host_hello(b, s, a);
}

static ssize_t put_config(void *b, size_t s, const void *a)
{
	return ap_put_config(b, s, a);
}

static ssize_t put_ping(void *b, size_t s, const void *a)
{
	return ap_put_ping(b, s, *(const uint64_t *)a);
}

static ssize_t put_req(void *b, size_t s, const void *a)
{
	return ap_put_image_request(b, s, *(const uint32_t *)a);
}

size_t opd_guest_output(struct opd_guest *g, void *buf, size_t size)
{
	size_t n = 0;

	/* whole frames only: walk headers */
	while (n + sizeof(struct dp_ag_frame) <= g->out_len) {
		struct dp_ag_frame f;

		memcpy(&f, g->out + n, sizeof(f));
		if (n + sizeof(f) + f.len > size)
			break;
		n += sizeof(f) + f.len;
	}
	memcpy(buf, g->out, n);
	memmove(g->out, g->out + n, g->out_len - n);
	g->out_len -= n;
	return n;
}

void opd_guest_ping(struct opd_guest *g, uint64_t host_ns)
{
	uint64_t token = ++g->next_token;

	g->pings[token % NR_PINGS].token = token;
	g->pings[token % NR_PINGS].host_ns = host_ns;
	out_frame(g, put_ping, &token);
}

/* One image request at a time: the agent sends one file at a time anyway,
 * and IMAGE_END then names what the bytes before it were. */
static void next_request(struct opd_guest *g)
{
	while (!g->xfer_img && g->nr_req) {
		struct gimg *x = g->req[0];

		memmove(g->req, g->req + 1, (g->nr_req - 1) * sizeof(g->req[0]));
		g->nr_req--;
		x->queued = false;
		if (!x->cookie || x->mapped)
			continue;
		g->xfer_img = x;
		g->st->guest_images_requested++;
		out_frame(g, put_req, &x->cookie);
	}
}

/* ---- images ---- */

static struct gimg *gimg_get(struct opd_guest *g, const char *path, size_t len)
{
	uint32_t h = du_fnv1a32(DU_FNV32_BASIS, path, len);
	struct gimg *x;

	for (x = g->imgs[h % IMG_BUCKETS]; x; x = x->next)
		if (x->hash == h && x->len == len && !memcmp(x->path, path, len))
			return x;
	if (g->bytes + sizeof(*x) + len + 1 > g->lim.max_bytes) {
		g->st->guest_bytes_capped++;
		return NULL;
	}
	x = calloc(1, sizeof(*x) + len + 1);
	if (!x)
		return NULL;
	x->hash = h;
	x->len = len;
	memcpy(x->path, path, len);
	x->next = g->imgs[h % IMG_BUCKETS];
	g->imgs[h % IMG_BUCKETS] = x;
	g->bytes += sizeof(*x) + len + 1;
	return x;
}

static void image_map(struct opd_guest *g, struct gimg *x, const char *rel)
{
	int ret = opd_imgcache_map_add(g->map_path, rel, x->path, x->len);

	if (ret)
		du_warn("domain %s: cannot write %s: %s", g->name, g->map_path, strerror(-ret));
	x->mapped = true;
}

/* A sample landed in @x: make sure the host will have the binary. */
static void want_image(struct opd_guest *g, struct gimg *x)
{
	char id[OPD_IMG_ID_MAX], rel[PATH_MAX];

	if (x->mapped || x->requested)
		return;
	if (opd_imgcache_build_id(x->bid, x->bid_size, id) &&
	    opd_imgcache_lookup(g->cache, id, rel, sizeof(rel))) {
		g->st->guest_images_dedup++;
		image_map(g, x, rel);
		return;
	}
	if (!x->cookie || !(g->flags & DP_AG_HELLO_F_IMAGES))
		return;
	x->requested = true;
	if (g->nr_req == MAX_REQ) {
		g->st->guest_images_failed++;
		return;
	}
	x->queued = true;
	g->req[g->nr_req++] = x;
	next_request(g);
}

/* ---- tasks ---- */

static struct gtask *task_find(struct opd_guest *g, uint32_t pid)
{
	for (struct gtask *t = g->tasks[pid % TASK_BUCKETS]; t; t = t->next)
		if (t->pid == pid)
			return t;
	return NULL;
}

static struct gtask *task_get(struct opd_guest *g, uint32_t pid)
{
	struct gtask *t = task_find(g, pid);

	if (t)
		return t;
	if (g->nr_tasks >= g->lim.max_tasks) {
		g->st->guest_tasks_capped++;
		return NULL;
	}
	if (g->bytes + sizeof(*t) > g->lim.max_bytes) {
		g->st->guest_bytes_capped++;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->pid = pid;
	t->next = g->tasks[pid % TASK_BUCKETS];
	g->tasks[pid % TASK_BUCKETS] = t;
	g->nr_tasks++;
	g->bytes += sizeof(*t);
	return t;
}

static void task_clear_maps(struct opd_guest *g, struct gtask *t)
{
	g->nr_maps -= t->nr;
	t->nr = 0;
	t->main = NULL;
}

/* exec at @t replaced the address space: mappings made before it go (an
 * MMAP of the new image may have arrived before the COMM that says exec) */
static void task_drop_before(struct opd_guest *g, struct gtask *t, uint64_t when)
{
	size_t j = 0;

	t->main = NULL;
	for (size_t i = 0; i < t->nr; i++) {
		if (t->maps[i].t < when)
			continue;
		t->maps[j++] = t->maps[i];
		if (t->maps[i].gi && (!t->main || t->maps[i].t < t->main_t)) {
			t->main = t->maps[i].gi;
			t->main_t = t->maps[i].t;
		}
	}
	g->nr_maps -= t->nr - j;
	t->nr = j;
}

static const struct gmap *task_find_map(const struct gtask *t, uint64_t pc)
{
	size_t lo = DU_FIRST_END_AFTER(t->maps, t->nr, pc);

	if (lo < t->nr && t->maps[lo].start <= pc)
		return &t->maps[lo];
	return NULL;
}

/* Insert a mapping; overlapped ones are replaced (MMAP is idempotent). */
static int task_add_map(struct opd_guest *g, struct gtask *t, const struct gmap *m)
{
	size_t i = 0, j;

	while (i < t->nr && t->maps[i].end <= m->start)
		i++;
	j = i;
	while (j < t->nr && t->maps[j].start < m->end)
		j++;
	if (j == i + 1 && t->maps[i].start == m->start && t->maps[i].end == m->end) {
		t->maps[i] = *m;
		return 0;
	}
	if (j == i) {
		if (g->nr_maps >= g->lim.max_maps) {
			g->st->guest_maps_capped++;
			return -ENOSPC;
		}
		if (t->nr == t->cap) {
			size_t ncap = t->cap ? t->cap * 2 : 8;
			size_t more = (ncap - t->cap) * sizeof(*m);
			struct gmap *n;

			if (g->bytes + more > g->lim.max_bytes) {
				g->st->guest_bytes_capped++;
				return -ENOSPC;
			}
			n = realloc(t->maps, ncap * sizeof(*m));
			if (!n)
				return -ENOMEM;
			t->maps = n;
			t->cap = ncap;
			g->bytes += more;
		}
		memmove(t->maps + i + 1, t->maps + i, (t->nr - i) * sizeof(*m));
		t->nr++;
		g->nr_maps++;
	} else {
		/* drop maps i+1..j-1, reuse slot i */
		memmove(t->maps + i + 1, t->maps + j, (t->nr - j) * sizeof(*m));
		g->nr_maps -= j - i - 1;
		t->nr -= j - i - 1;
	}
	t->maps[i] = *m;
	return 0;
}

static void reap(struct opd_guest *g)
{
	if (g->seen_ns - g->last_reap < OPD_GUEST_HOLD_NS)
		return;
	g->last_reap = g->seen_ns;
	for (size_t i = 0; i < TASK_BUCKETS; i++) {
		struct gtask **pp = &g->tasks[i];

		while (*pp) {
			struct gtask *t = *pp;

			if (t->exited && g->seen_ns - t->exit_ns > LINGER_NS) {
				*pp = t->next;
				task_free(g, t);
			} else {
				pp = &t->next;
			}
		}
	}
}

static void seen(struct opd_guest *g, uint64_t t)
{
	if (t > g->seen_ns)
		g->seen_ns = t;
}

/* ---- handlers ---- */

static int h_hello(void *ctx, const struct dp_ag_hello *h, const char *rel, size_t len)
{
	struct opd_guest *g = ctx;
	struct dp_ag_host_hello hh = { .proto_version = DP_AG_PROTO_VERSION };
	struct dp_ag_config cfg = {
		.image_budget = g->lim.max_image_bytes,
		.image_rate = 64u << 20,
		.image_max = 256u << 20,
	};

	(void)rel;
	(void)len;
	/* the newest version both speak */
	if (h->proto_min > DP_AG_PROTO_VERSION || h->proto_max < DP_AG_PROTO_MIN ||
	    h->proto_max < h->proto_min) {
		du_warn("domain %s: agent speaks protocol %u..%u only; channel closed", g->name,
			h->proto_min, h->proto_max);
		g->st->agent_closed_bad++;
		return -EPROTONOSUPPORT;
	}
	hh.proto_version = h->proto_max < DP_AG_PROTO_VERSION ? h->proto_max : DP_AG_PROTO_VERSION;
	if (g->has_agent && h->instance != g->instance) {
		/* the agent restarted: its cookies mean other files now */
		for (size_t i = 0; i < IMG_BUCKETS; i++)
			for (struct gimg *x = g->imgs[i]; x; x = x->next)
				if (!x->mapped) {
					x->cookie = 0;
					x->requested = false;
				}
		xfer_abort(g);
		g->xfer_img = NULL;
	}
	g->has_agent = true;
	g->instance = h->instance;
	g->flags = h->flags;
	g->nr_cpus = h->nr_cpus;
	/* A first, rough offset: HELLO left the guest moments ago.  PONGs
	 * replace it. */
	if (!g->have_off) {
		g->off = (int64_t)(h->now_ns - g->host_now);
		g->rtt = 100ULL * 1000 * 1000;
		g->have_off = true;
	}
	seen(g, h->now_ns);
	out_frame(g, put_host_hello, &hh);
	out_frame(g, put_config, &cfg);
	du_info("domain %s: agent %u.%u.%u, %u cpus, flags %#x", g->name, h->agent_version >> 16,
		(h->agent_version >> 8) & 0xff, h->agent_version & 0xff, h->nr_cpus, h->flags);
	return 0;
}

/* Table text goes to a temporary file, renamed at its END frame. */
static int table_open(struct opd_guest *g, struct table_file *tf, const char *name)
{
	char tmp[PATH_MAX];

	if (tf->fd >= 0)
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", g->dir, name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	tf->fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (tf->fd < 0)
		return -errno;
	tf->bytes = 0;
	tf->chunks = 0;
	tf->line_len = 0;
	tf->line_over = false;
	return 0;
}

static void table_close(struct opd_guest *g, struct table_file *tf, const char *name,
			const struct dp_ag_table_end *e)
{
	char tmp[PATH_MAX], path[PATH_MAX];

	if (tf->fd < 0 && e->status != DP_AG_TABLE_UNREADABLE)
		return;
	if (tf->fd < 0 && table_open(g, tf, name))
		return;
	close(tf->fd);
	tf->fd = -1;
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", g->dir, name);
	snprintf(path, sizeof(path), "%s/%s", g->dir, name);
	if (e->total_bytes != tf->bytes || e->chunks != tf->chunks)
		g->st->guest_bad_values++;
	if (rename(tmp, path))
		du_warn("domain %s: cannot write %s: %s", g->name, path, strerror(errno));
}

/* Split text into lines for @fn; a line over LINE_MAX_BYTES is skipped. */
static void table_text(struct opd_guest *g, struct table_file *tf, const char *name,
		       const char *text, size_t len, void (*fn)(struct opd_guest *, char *))
{
	if (table_open(g, tf, name))
		return;
	if (g->table_bytes + len > g->lim.max_table_bytes) {
		g->st->guest_bytes_capped++;
		return;
	}
	g->table_bytes += len;
	if (write(tf->fd, text, len) != (ssize_t)len)
		g->st->guest_bad_values++;
	tf->bytes += len;
	tf->chunks++;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c == '\n') {
			if (!tf->line_over) {
				tf->line[tf->line_len] = '\0';
				fn(g, tf->line);
			}
			tf->line_len = 0;
			tf->line_over = false;
		} else if (tf->line_len + 1 < sizeof(tf->line)) {
			tf->line[tf->line_len++] = c;
		} else {
			tf->line_over = true;
		}
	}
}

static void ks_line(struct opd_guest *g, char *line)
{
	char *end, *name;
	uint64_t addr = strtoull(line, &end, 16);

	if (end == line || *end != ' ')
		return;
	name = strchr(end + 1, ' ');
	if (!name)
		return;
	name++;
	if (!strcmp(name, "_text"))
		g->ktext = addr;
	else if (!strchr(name, '[') && addr > g->klast && addr < 0xffffffffff000000ULL)
		g->klast = addr;	/* not a module's: part of the kernel image */
}

static bool mod_name_ok(const char *s, size_t len)
{
	if (!len || len > 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* "name size refcount deps state address [taint]" */
static void mod_line(struct opd_guest *g, char *line)
{
	char *f[8], *save = NULL, *tok;
	int n = 0;
	uint64_t size, addr;
	struct gmod *nv;

	for (tok = strtok_r(line, " ", &save); tok && n < 8; tok = strtok_r(NULL, " ", &save))
		f[n++] = tok;
	if (n < 6 || !mod_name_ok(f[0], strlen(f[0])))
		return;
	size = strtoull(f[1], NULL, 10);
	addr = strtoull(f[5], NULL, 16);
	if (!addr || !size || addr + size < addr || size > (1ULL << 32))
		return;
	if (g->nr_mod >= MAX_MODULES) {
		g->st->guest_bad_values++;
		return;
	}
	nv = realloc(g->modv, (g->nr_mod + 1) * sizeof(*nv));
	if (!nv)
		return;
	g->modv = nv;
	nv[g->nr_mod].start = addr;
	nv[g->nr_mod].end = addr + size;
	nv[g->nr_mod].img = opd_image_get(g->images, SFN_KERN, f[0], strlen(f[0]));
	if (nv[g->nr_mod].img)
		g->nr_mod++;
}

static int h_kallsyms(void *ctx, const char *text, size_t len)
{
	struct opd_guest *g = ctx;

	table_text(g, &g->ks, "kallsyms", text, len, ks_line);
	return 0;
}

static int h_kallsyms_end(void *ctx, const struct dp_ag_table_end *e)
{
	struct opd_guest *g = ctx;

	table_close(g, &g->ks, "kallsyms", e);
	/* the image runs from _text past its last symbol (entry text,
	 * .init, data symbols): samples there are the kernel's too */
	g->ketext = g->klast + 4096;
	if (g->ktext && (g->ketext <= g->ktext || g->ketext - g->ktext > KERNEL_IMAGE_MAX))
		g->ketext = g->ktext + (64ULL << 20);
	return 0;
}

static int h_modules(void *ctx, const char *text, size_t len)
{
	struct opd_guest *g = ctx;

	if (!g->mods.chunks)
		g->nr_mod = 0;	/* a new table replaces the old */
	table_text(g, &g->mods, "modules", text, len, mod_line);
	return 0;
}

static int h_modules_end(void *ctx, const struct dp_ag_table_end *e)
{
	struct opd_guest *g = ctx;

	table_close(g, &g->mods, "modules", e);
	g->mods.chunks = 0;
	return 0;
}

static int h_switch(void *ctx, uint32_t cpu, const struct dp_ag_switch *s)
{
	struct opd_guest *g = ctx;
	struct gcpu *c;
	struct gswitch *last;

	if (cpu >= g->lim.max_cpus) {
		g->st->guest_bad_values++;
		return 0;
	}
	if (!g->cpus) {
		g->cpus = calloc(g->lim.max_cpus, sizeof(*g->cpus));
		if (!g->cpus)
			return -ENOMEM;
	}
	c = &g->cpus[cpu];
	if (!c->ring) {
		size_t b = (size_t)g->lim.ring * sizeof(*c->ring);

		if (g->bytes + b > g->lim.max_bytes) {
			g->st->guest_bytes_capped++;
			return 0;
		}
		c->ring = malloc(b);
		if (!c->ring)
			return -ENOMEM;
		g->bytes += b;
	}
	if (c->count) {
		last = &c->ring[(c->head + c->count - 1) % g->lim.ring];
		if (s->time_ns < last->t) {
			g->st->guest_bad_values++;	/* out of order: keep the timeline sorted */
			return 0;
		}
	}
	if (c->count == g->lim.ring) {
		c->head = (c->head + 1) % g->lim.ring;
		c->count--;
		g->st->guest_switches_overwritten++;
	}
	c->ring[(c->head + c->count) % g->lim.ring] =
		(struct gswitch){ .t = s->time_ns, .prev = s->prev_pid, .next = s->next_pid };
	c->count++;
	g->st->guest_switches++;
	seen(g, s->time_ns);
	return 0;
}

static int h_mmap(void *ctx, const struct dp_ag_mmap *m, const char *path, size_t len)
{
	struct opd_guest *g = ctx;
	char clean[AP_PATH_MAX + 1];
	struct gtask *t;
	struct gmap gm;
	ssize_t n;

	if (m->cpu != DP_AG_CPU_UNKNOWN)
		seen(g, m->time_ns);
	if (!m->len || m->start + m->len < m->start) {
		g->st->guest_bad_values++;
		return 0;
	}
	t = task_get(g, m->pid);
	if (!t)
		return 0;
	memset(&gm, 0, sizeof(gm));
	gm.start = m->start;
	gm.end = m->start + m->len;
	gm.pgoff = m->pgoff;
	gm.t = m->time_ns;
	gm.vdso = len == 6 && !memcmp(path, "[vdso]", 6);
	if (len && path[0] == '/') {
		n = ap_sanitize_path(path, len, clean);
		if (n <= 1 || n > OPD_GUEST_PATH_MAX) {
			/* kept as an anonymous mapping: its samples are
			 * counted unresolved, not lost */
			g->st->guest_paths_rejected++;
		} else {
			gm.gi = gimg_get(g, clean, (size_t)n);
			if (!gm.gi)
				return 0;
		}
	}
	if (gm.gi) {
		if (m->cookie)
			gm.gi->cookie = m->cookie;
		if (m->build_id_size && !gm.gi->bid_size) {
			memcpy(gm.gi->bid, m->build_id, m->build_id_size);
			gm.gi->bid_size = m->build_id_size;
		}
	}
	if (task_add_map(g, t, &gm))
		return 0;
	/* the kernel maps the executable before the interpreter and
	 * libraries; the snapshot lists maps by address, main first */
	if (gm.gi && (!t->main || gm.t < t->main_t)) {
		t->main = gm.gi;
		t->main_t = gm.t;
	}
	g->st->guest_mmaps++;
	return 0;
}

static int h_comm(void *ctx, const struct dp_ag_comm *c, const char *name, size_t len)
{
	struct opd_guest *g = ctx;
	struct gtask *t;

	(void)name;
	(void)len;
	seen(g, c->time_ns);
	if (!(c->flags & DP_AG_COMM_EXEC) || c->pid != c->tid)
		return 0;
	t = task_find(g, c->pid);
	if (t) {
		task_drop_before(g, t, c->time_ns);
		t->exited = false;
	}
	return 0;
}

static int h_fork(void *ctx, const struct dp_ag_task *ft)
{
	struct opd_guest *g = ctx;
	struct gtask *p, *c;

	seen(g, ft->time_ns);
	if (ft->pid == ft->ppid)
		return 0;	/* a thread */
	p = task_find(g, ft->ppid);
	c = task_get(g, ft->pid);
	if (!c)
		return 0;
	task_clear_maps(g, c);
	c->exited = false;
	if (!p || p == c)
		return 0;
	for (size_t i = 0; i < p->nr; i++)
		if (task_add_map(g, c, &p->maps[i]))
			break;
	c->main = p->main;
	return 0;
}

static int h_exit(void *ctx, const struct dp_ag_task *et)
{
	struct opd_guest *g = ctx;
	struct gtask *t;

	seen(g, et->time_ns);
	if (et->pid != et->tid)
		return 0;
	t = task_find(g, et->pid);
	if (t) {
		t->exited = true;
		t->exit_ns = et->time_ns;
	}
	reap(g);
	return 0;
}

static int h_lost(void *ctx, const struct dp_ag_lost *l)
{
	struct opd_guest *g = ctx;

	g->st->guest_lost_records += l->count > UINT32_MAX ? UINT32_MAX : l->count;
	return 0;
}

static int h_pong(void *ctx, const struct dp_ag_pong *p)
{
	struct opd_guest *g = ctx;
	uint64_t t0, t3 = g->host_now, rtt, best = UINT64_MAX;
	int64_t off;

	if (p->token == 0 || g->pings[p->token % NR_PINGS].token != p->token ||
	    p->send_ns < p->recv_ns) {
		g->st->guest_bad_values++;
		return 0;
	}
	t0 = g->pings[p->token % NR_PINGS].host_ns;
	g->pings[p->token % NR_PINGS].token = 0;
	if (t3 < t0 || t3 - t0 < p->send_ns - p->recv_ns) {
		g->st->guest_bad_values++;
		return 0;
	}
	rtt = (t3 - t0) - (p->send_ns - p->recv_ns);
	/* offset = guest - host at the midpoint of the exchange */
	off = (int64_t)(p->recv_ns / 2 + p->send_ns / 2) - (int64_t)(t0 / 2 + t3 / 2);
	g->clk[g->clk_pos].off = off;
	g->clk[g->clk_pos].rtt = rtt;
	g->clk_pos = (g->clk_pos + 1) % NR_CLOCK;
	if (g->nr_clk < NR_CLOCK)
		g->nr_clk++;
	/* the recent exchange with the smallest round trip wins; a window
	 * (not all time) follows drift */
	for (size_t i = 0; i < g->nr_clk; i++) {
		if (g->clk[i].rtt < best) {
			best = g->clk[i].rtt;
			g->pp_off = g->clk[i].off;
		}
	}
	g->pp_rtt = best;
	g->have_pp = true;
	if (!g->exact) {
		g->off = g->pp_off;
		g->rtt = best;
	}
	g->have_off = true;
	g->st->guest_clock_rtt_ns = best;
	seen(g, p->send_ns);
	return 0;
}

static int h_tsc(void *ctx, const struct dp_ag_tsc *t)
{
	struct opd_guest *g = ctx;

	if (t->cpu >= g->lim.max_cpus) {
		g->st->guest_bad_values++;
		return 0;
	}
	if (g->nr_tsc == NR_TSC) {
		memmove(g->tsc, g->tsc + 1, sizeof(g->tsc[0]) * (NR_TSC - 1));
		g->nr_tsc--;
	}
	g->tsc[g->nr_tsc++] = *t;
	return 0;
}

static int h_image_data(void *ctx, const struct dp_ag_image_data *d, const uint8_t *b,
			size_t len)
{
	struct opd_guest *g = ctx;
	struct gimg *x = g->xfer_img;

	if (!x || d->cookie != x->cookie) {
		g->st->guest_bad_values++;
		return 0;
	}
	if (g->xfer_fd < 0 && d->offset == 0) {
		if (snprintf(g->xfer_tmp, sizeof(g->xfer_tmp), "%s/.tmp-%d-%p", opd_imgcache_dir(g->cache),
			     (int)getpid(), (void *)g) >= (int)sizeof(g->xfer_tmp))
			return 0;
		g->xfer_fd = open(g->xfer_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
				  0644);
		g->xfer_bytes = 0;
		if (g->xfer_fd < 0)
			return 0;
	}
	if (g->xfer_fd < 0)
		return 0;
	if (d->offset != g->xfer_bytes || g->image_bytes + len > g->lim.max_image_bytes) {
		if (d->offset != g->xfer_bytes)
			g->st->guest_bad_values++;
		else
			g->st->guest_bytes_capped++;
		xfer_abort(g);
		return 0;
	}
	if (write(g->xfer_fd, b, len) != (ssize_t)len) {
		xfer_abort(g);
		return 0;
	}
	g->xfer_bytes += len;
	g->image_bytes += len;
	g->st->guest_image_bytes += len;
	return 0;
}

static int h_image_end(void *ctx, const struct dp_ag_image_end *e)
{
	struct opd_guest *g = ctx;
	struct gimg *x = g->xfer_img;
	char id[OPD_IMG_ID_MAX], rel[PATH_MAX];
	const char *base;
	bool have_id;
	int ret;

	if (!x || e->cookie != x->cookie) {
		g->st->guest_bad_values++;
		return 0;
	}
	g->xfer_img = NULL;
	if (e->status != DP_AG_IMAGE_SENT || g->xfer_fd < 0 || e->size != g->xfer_bytes) {
		g->st->guest_images_failed++;
		du_debug("domain %s: image %s not received (status %u)", g->name, x->path, e->status);
		xfer_abort(g);
		next_request(g);
		return 0;
	}
	close(g->xfer_fd);
	g->xfer_fd = -1;
	have_id = opd_imgcache_build_id(e->build_id, e->build_id_size > DP_AG_BUILD_ID_MAX ? 0 :
					e->build_id_size, id) ||
		  opd_imgcache_build_id(x->bid, x->bid_size, id);
	base = strrchr(x->path, '/');
	base = base ? base + 1 : x->path;
	ret = opd_imgcache_commit(g->cache, g->xfer_tmp, have_id ? id : NULL, base, strlen(base),
				  rel, sizeof(rel));
	if (ret < 0) {
		g->st->guest_images_failed++;
		du_warn("domain %s: cannot cache image %s: %s", g->name, x->path, strerror(-ret));
	} else {
		image_map(g, x, rel);
	}
	next_request(g);
	return 0;
}

static int h_state_end(void *ctx, const struct dp_ag_state_end *e)
{
	struct opd_guest *g = ctx;

	du_info("domain %s: agent state complete (%u tasks, %u mappings; %zu tasks known)", g->name,
		e->nr_tasks, e->nr_mmaps, g->nr_tasks);
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

void opd_guest_reset_input(struct opd_guest *g)
{
	g->in_len = 0;
	g->synced = false;
	if (g->ks.fd >= 0) {
		close(g->ks.fd);
		g->ks.fd = -1;
	}
	if (g->mods.fd >= 0) {
		close(g->mods.fd);
		g->mods.fd = -1;
	}
	g->mods.chunks = 0;
	xfer_abort(g);
	g->xfer_img = NULL;
	/* what was asked on the old connection is asked again */
	for (size_t i = 0; i < IMG_BUCKETS; i++)
		for (struct gimg *x = g->imgs[i]; x; x = x->next)
			if (!x->mapped && !x->queued)
				x->requested = false;
	g->out_len = 0;
}

static int decode(struct opd_guest *g, const uint8_t *buf, size_t len, size_t *used)
{
	struct ap_stats before = g->ast;
	int ret;

	*used = 0;
	if (!g->synced) {
		size_t off = ap_find_hello(buf, len);

		if (off == len) {
			/* keep a possible partial header */
			*used = len > sizeof(struct dp_ag_frame) ? len - sizeof(struct dp_ag_frame) + 1 : 0;
			g->st->agent_skipped_bytes += *used;
			return 0;
		}
		g->st->agent_skipped_bytes += off;
		buf += off;
		len -= off;
		*used = off;
		g->synced = true;
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
	if (ret == -EBADMSG)
		g->st->agent_closed_bad++;
	return ret;
}

int opd_guest_feed(struct opd_guest *g, const void *buf, size_t len, uint64_t host_ns)
{
	const uint8_t *p = buf;
	const size_t cap = sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD;
	size_t used;
	int ret;

	g->host_now = host_ns;
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
	next_request(g);
	return 0;
}

/* ---- resolution ---- */

/* Index of the last switch at or before @t on @c, or -1. */
static long ring_find(const struct opd_guest *g, const struct gcpu *c, uint64_t t)
{
	size_t lo = 0, hi = c->count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->ring[(c->head + mid) % g->lim.ring].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

static const struct gswitch *ring_at(const struct opd_guest *g, const struct gcpu *c, long i)
{
	return &c->ring[(c->head + (size_t)i) % g->lim.ring];
}

static struct opd_image *gimg_image(struct opd_guest *g, struct gimg *x)
{
	if (!x->img) {
		if (g->nr_filed_imgs >= g->lim.max_images) {
			g->st->guest_images_capped++;
			return NULL;
		}
		x->img = opd_image_get(g->images, SFN_ROOT, x->path, x->len);
		if (x->img)
			g->nr_filed_imgs++;
	}
	return x->img;
}

/* How far from a switch a sample may have been on either side of it. */
static uint64_t near_ns(const struct opd_guest *g)
{
	return g->exact ? g->unc + EXACT_MARGIN_NS : g->rtt / 2 + NEAR_MIN_NS;
}

/* The sample ran in task @t, in its mapping @m. */
static void place_user(struct opd_guest *g, const struct opd_guest_sample *s,
		       struct opd_guest_res *r, const struct gtask *t, const struct gmap *m)
{
	r->pid = t->pid;
	if (m->vdso) {
		/* the kernel's own small ELF: a binary, without a file */
		r->image = t->main ? gimg_image(g, t->main) : g->vdso;
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
	r->dep = gimg_image(g, m->gi);
	r->image = t->main ? gimg_image(g, t->main) : r->dep;
	if (!r->dep || !r->image)
		return;	/* counted as capped; stays unresolved */
	r->key = s->pc - m->start + m->pgoff;
	r->resolved = true;
	r->counter = &g->st->guest_user_resolved;
	want_image(g, m->gi);
}

/*
 * With no timeline to say which task ran: the task whose mappings hold the
 * pc, if all the live tasks that map it map the same file at the same
 * offset (one process, or several running the same binary); NULL if none
 * does or they disagree.  It scans every task: only samples from before a
 * vCPU's first switch come here, within a budget (limits.owner_visits).
 */
static const struct gtask *sole_owner(struct opd_guest *g, uint64_t pc, uint64_t host_ns,
				      const struct gmap **mp)
{
	const struct gtask *found = NULL;
	const struct gmap *fm = NULL;
	uint64_t cost = TASK_BUCKETS + g->nr_tasks, cap = g->lim.owner_visits;

	/* a budget of task visits, refilled at owner_visits a second */
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

	for (size_t i = 0; i < TASK_BUCKETS; i++) {
		for (const struct gtask *t = g->tasks[i]; t; t = t->next) {
			const struct gmap *m = t->exited ? NULL : task_find_map(t, pc);

			if (!m)
				continue;
			if (!found) {
				found = t;
				fm = m;
			} else if (m->gi != fm->gi || m->vdso != fm->vdso || !m->gi ||
				   pc - m->start + m->pgoff != pc - fm->start + fm->pgoff) {
				return NULL;
			}
		}
	}
	*mp = fm;
	return found;
}

static void resolve_user(struct opd_guest *g, const struct opd_guest_sample *s,
			 struct opd_guest_res *r)
{
	uint32_t cand[16];
	int nc = 0;
	bool task_known = false, early = false;
	uint64_t gt, near;
	const struct gcpu *c;
	const struct gtask *ot;
	const struct gmap *om;
	long i;

	if (!g->has_agent) {
		r->counter = &g->st->guest_user_unresolved_no_agent;
		return;
	}
	if (!g->have_off) {
		r->counter = &g->st->guest_user_unresolved_no_clock;
		return;
	}
	if (s->vcpu < 0 || (unsigned int)s->vcpu >= g->lim.max_cpus || !g->cpus ||
	    !g->cpus[s->vcpu].count) {
		early = true;
		goto no_timeline;
	}
	c = &g->cpus[s->vcpu];
	gt = (uint64_t)((int64_t)s->host_ns + g->off);
	near = near_ns(g);
	i = ring_find(g, c, gt);
	if (i < 0) {
		/* Before the vCPU's first switch: the task that switch took
		 * off the vCPU had been running since the agent's events
		 * opened, and likely before; its mappings must hold the pc. */
		const struct gswitch *f = ring_at(g, c, 0);

		early = f->t - gt > near;
		cand[nc++] = f->prev;
		if (!early)
			cand[nc++] = f->next;
	} else {
		const struct gswitch *w = ring_at(g, c, i);

		/* the task that ran then first, then those that ran within
		 * the clock's uncertainty before and after, nearest first */
		cand[nc++] = w->next;
		for (long k = 0; nc + 2 <= 16; k++) {
			bool more = false;

			if (i - k >= 0 && gt - ring_at(g, c, i - k)->t < near) {
				cand[nc++] = ring_at(g, c, i - k)->prev;
				more = true;
			}
			if ((size_t)(i + k + 1) < c->count && ring_at(g, c, i + k + 1)->t - gt < near) {
				cand[nc++] = ring_at(g, c, i + k + 1)->next;
				more = true;
			}
			if (!more)
				break;
		}
	}
	/* A switch within the clock's uncertainty: either side may have run
	 * it.  The task that ran at the corrected time comes first and keeps
	 * the sample if its mappings hold the pc; another candidate takes it
	 * only when that task cannot have run it (no mapping holds the pc),
	 * which is the one case the mappings decide correctly. */
	if (nc > 1)
		g->st->guest_user_ambiguous++;
	for (int k = 0; k < nc; k++) {
		struct gtask *t;
		const struct gmap *m;

		if (!cand[k])
			continue;
		t = task_find(g, cand[k]);
		if (!t)
			continue;
		task_known = true;
		m = task_find_map(t, s->pc);
		if (!m)
			continue;
		place_user(g, s, r, t, m);
		g->st->guest_user_before_timeline += early && r->resolved;
		return;
	}
	if (!early) {
		r->counter = task_known ? &g->st->guest_user_unresolved_no_mapping :
					  &g->st->guest_user_unresolved_no_task;
		return;
	}
no_timeline:
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
	/* Until the whole symbol table is in, the image's end is not known:
	 * anything within the kernel image's largest size from _text that is
	 * not a module's is taken for the kernel's. */
	uint64_t end = g->ketext ? g->ketext : g->ktext + KERNEL_IMAGE_MAX;

	r->counter = &g->st->guest_kernel_unresolved;
	for (size_t i = 0; i < g->nr_mod; i++) {
		if (s->pc >= g->modv[i].start && s->pc < g->modv[i].end) {
			r->image = r->dep = g->modv[i].img;
			r->key = s->pc - g->modv[i].start;
			r->resolved = true;
			r->counter = &g->st->guest_kernel_resolved;
			return;
		}
	}
	if (g->ktext && s->pc >= g->ktext && s->pc < end) {
		r->image = r->dep = g->vmlinux;
		r->key = s->pc - g->ktext;
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
	}
}

static void file_now(struct opd_guest *g, const struct opd_guest_sample *s,
		     opd_guest_file_fn file, void *ctx)
{
	struct opd_guest_res r;

	opd_guest_resolve(g, s, &r);
	(*r.counter)++;
	file(ctx, s, &r);
}

void opd_guest_defer(struct opd_guest *g, const struct opd_guest_sample *s,
		     opd_guest_file_fn file, void *ctx)
{
	if (!g->lim.queue) {
		file_now(g, s, file, ctx);
		return;
	}
	if (g->q_count == g->lim.queue) {
		g->st->guest_queue_overflow++;
		file_now(g, &g->q[g->q_head], file, ctx);
		g->q_head = (g->q_head + 1) % g->lim.queue;
		g->q_count--;
	}
	g->q[(g->q_head + g->q_count) % g->lim.queue] = *s;
	g->q_count++;
}

/* Has the sideband passed @s's time?  Its vCPU's timeline says so when a
 * switch after it arrived; kernel samples need no timeline. */
static bool ready(const struct opd_guest *g, const struct opd_guest_sample *s)
{
	uint64_t gt;

	if (s->mode == DP_MODE_GUEST_KERNEL && s->pc >= 0xffff800000000000ULL)
		return g->ktext != 0;
	if (!g->have_off)
		return false;
	gt = (uint64_t)((int64_t)s->host_ns + g->off) + near_ns(g);
	if (s->vcpu >= 0 && (unsigned int)s->vcpu < g->lim.max_cpus && g->cpus &&
	    g->cpus[s->vcpu].count &&
	    ring_at(g, &g->cpus[s->vcpu], (long)g->cpus[s->vcpu].count - 1)->t >= gt)
		return true;
	return false;
}

size_t opd_guest_drain(struct opd_guest *g, uint64_t host_ns, bool all, opd_guest_file_fn file,
		       void *ctx)
{
	size_t n = 0;

	while (g->q_count) {
		const struct opd_guest_sample *s = &g->q[g->q_head];

		if (!all && !ready(g, s) && host_ns - s->host_ns < OPD_GUEST_HOLD_NS)
			break;
		file_now(g, s, file, ctx);
		g->q_head = (g->q_head + 1) % g->lim.queue;
		g->q_count--;
		n++;
	}
	return n;
}

bool opd_guest_has_agent(const struct opd_guest *g)
{
	return g->has_agent;
}

bool opd_guest_offset(const struct opd_guest *g, int64_t *offset, uint64_t *rtt)
{
	if (offset)
		*offset = g->off;
	if (rtt)
		*rtt = g->rtt;
	return g->have_off;
}

size_t opd_guest_take_tsc(struct opd_guest *g, struct dp_ag_tsc *out, size_t max)
{
	size_t n = g->nr_tsc < max ? g->nr_tsc : max;

	memcpy(out, g->tsc, n * sizeof(*out));
	memmove(g->tsc, g->tsc + n, (g->nr_tsc - n) * sizeof(*out));
	g->nr_tsc -= n;
	return n;
}

void opd_guest_set_exact(struct opd_guest *g, bool exact, int64_t off, uint64_t unc)
{
	g->exact = exact;
	if (exact) {
		g->off = off;
		g->unc = unc;
		g->have_off = true;
	} else if (g->have_pp) {
		g->off = g->pp_off;
		g->rtt = g->pp_rtt;
	}
}

bool opd_guest_clock(const struct opd_guest *g, struct opd_guest_clock *c)
{
	c->exact = g->exact;
	c->offset = g->off;
	c->unc = g->exact ? g->unc : g->rtt / 2;
	c->near = near_ns(g);
	c->pp_offset = g->pp_off;
	c->pp_rtt = g->pp_rtt;
	c->have_pp = g->have_pp;
	c->tsc_flag = (g->flags & DP_AG_HELLO_F_TSC) != 0;
	return g->have_off;
}

const char *opd_guest_dir(const struct opd_guest *g)
{
	return g->dir;
}

size_t opd_guest_nr_tasks(const struct opd_guest *g)
{
	return g->nr_tasks;
}

size_t opd_guest_nr_maps(const struct opd_guest *g)
{
	return g->nr_maps;
}

size_t opd_guest_bytes(const struct opd_guest *g)
{
	return g->bytes;
}

size_t opd_guest_held(const struct opd_guest *g)
{
	return g->q_count;
}
