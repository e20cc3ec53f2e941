#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opd_proc.h"
#include "opd_procfs.h"
#include "util/du_hash.h"
#include "util/du_log.h"
#include "util/du_range.h"
#include "util/du_array.h"

struct opd_proc {
	uint32_t tgid;
	bool exited;
	bool lookup_tried;
	uint64_t exit_ns;
	char comm[16];
	struct opd_image *main;
	struct opd_map *maps;	/* sorted by start, non-overlapping */
	size_t nr_maps, cap_maps;
	struct du_hlink hl;	/* in opd_procs.tab, hash pid_hash(tgid) */
	struct opd_proc *xnext, *xprev;	/* exited list, oldest first */
};

struct opd_procs {
	const struct opd_conf *conf;
	struct opd_images *images;
	struct opd_stats *st;
	struct du_htab tab;
	struct opd_proc *xhead, *xtail;
	size_t nr_exited;
};

static inline uint32_t pid_hash(uint32_t tgid)
{
	return tgid * 2654435761u;
}

struct opd_procs *opd_procs_new(const struct opd_conf *conf, struct opd_images *images,
				struct opd_stats *st)
{
	struct opd_procs *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->conf = conf;
	t->images = images;
	t->st = st;
	if (du_htab_init(&t->tab, 1024)) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static void proc_destroy(struct opd_proc *p)
{
	free(p->maps);
	free(p);
}

static void proc_free_link(struct du_hlink *l)
{
	proc_destroy(du_container_of(l, struct opd_proc, hl));
}

void opd_procs_free(struct opd_procs *t)
{
	if (!t)
		return;
	du_htab_fini(&t->tab, proc_free_link);
	free(t);
}

struct opd_proc *opd_proc_find(struct opd_procs *t, uint32_t tgid)
{
	for (struct du_hlink *l = du_htab_chain(&t->tab, pid_hash(tgid)); l; l = l->next) {
		struct opd_proc *p = du_container_of(l, struct opd_proc, hl);

		if (p->tgid == tgid)
			return p;
	}
	return NULL;
}

static void exited_unlink(struct opd_procs *t, struct opd_proc *p)
{
	if (!p->exited)
		return;
	if (p->xprev)
		p->xprev->xnext = p->xnext;
	else
		t->xhead = p->xnext;
	if (p->xnext)
		p->xnext->xprev = p->xprev;
	else
		t->xtail = p->xprev;
	p->xnext = p->xprev = NULL;
	p->exited = false;
	t->nr_exited--;
}

static void proc_remove(struct opd_procs *t, struct opd_proc *p)
{
	exited_unlink(t, p);
	du_htab_del(&t->tab, &p->hl);
	t->st->processes_freed++;
	proc_destroy(p);
}

struct opd_proc *opd_proc_get(struct opd_procs *t, uint32_t tgid)
{
	struct opd_proc *p = opd_proc_find(t, tgid);

	if (p)
		return p;
	if (t->tab.count > t->tab.mask * 2 && du_htab_grow(&t->tab)) {
		errno = ENOMEM;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tgid = tgid;
	du_htab_add(&t->tab, &p->hl, pid_hash(tgid));
	t->st->processes_seen++;
	return p;
}

static void proc_drop_maps(struct opd_proc *p)
{
	p->nr_maps = 0;
	p->main = NULL;
}

static int maps_reserve(struct opd_proc *p, size_t need)
{
	return DU_GROW(p->maps, p->cap_maps, need, 16);
}

/* Index of the first mapping whose end is above @addr (nr_maps: none). */
static inline size_t maps_first_end_after(const struct opd_proc *p, uint64_t addr)
{
	return DU_FIRST_END_AFTER(p->maps, p->nr_maps, addr);
}

/* Insert @m, replacing whatever it overlaps (a new mmap over an old range
 * means the old one is gone; munmap is not reported). */
static int proc_add_map(struct opd_proc *p, const struct opd_map *m)
{
	size_t i;
	int ret;

	/* At most one existing mapping can be split in two: room for 2 more. */
	ret = maps_reserve(p, p->nr_maps + 2);
	if (ret)
		return ret;
	i = maps_first_end_after(p, m->start);
	if (i < p->nr_maps && p->maps[i].start < m->start && p->maps[i].end > m->end) {
		/* split: [s, m.start) m [m.end, e) */
		struct opd_map tail = p->maps[i];

		tail.pgoff += m->end - tail.start;
		tail.start = m->end;
		p->maps[i].end = m->start;
		memmove(&p->maps[i + 3], &p->maps[i + 1], (p->nr_maps - i - 1) * sizeof(*p->maps));
		p->maps[i + 1] = *m;
		p->maps[i + 2] = tail;
		p->nr_maps += 2;
		return 0;
	}
	if (i < p->nr_maps && p->maps[i].start < m->start) {
		p->maps[i].end = m->start;	/* trim the left neighbour */
		i++;
	}
	/* remove mappings covered entirely, trim the one overlapping the end */
	size_t j = i;

	while (j < p->nr_maps && p->maps[j].end <= m->end)
		j++;
	if (j < p->nr_maps && p->maps[j].start < m->end) {
		p->maps[j].pgoff += m->end - p->maps[j].start;
		p->maps[j].start = m->end;
	}
	/* replace [i, j) with m */
	memmove(&p->maps[i + 1], &p->maps[j], (p->nr_maps - j) * sizeof(*p->maps));
	p->nr_maps = p->nr_maps - (j - i) + 1;
	p->maps[i] = *m;
	return 0;
}

int opd_proc_mmap(struct opd_procs *t, const struct dp_raw_mmap *m, const char *path, size_t len)
{
	struct opd_proc *p;
	struct opd_map map;

	if (!m->len || m->start + m->len < m->start)
		return 0;
	p = opd_proc_get(t, m->pid);
	if (!p)
		return -ENOMEM;
	map.start = m->start;
	map.end = m->start + m->len;
	map.pgoff = m->pgoff;
	map.image = opd_image_for_path(t->images, path, len);
	if (!map.image)
		return -ENOMEM;
	t->st->mmaps++;
	/* The first file mapping after creation or exec is the main binary:
	 * the kernel maps it before the interpreter, and the perf collector's
	 * /proc synthesis lists it first. */
	if (!p->main && map.image->kind == SFN_ROOT)
		p->main = map.image;
	return proc_add_map(p, &map);
}

int opd_proc_comm(struct opd_procs *t, uint32_t pid, uint32_t tid, uint32_t flags,
		  const char *comm, size_t len)
{
	struct opd_proc *p;
	int freed = 0;

	/* A thread renaming itself says nothing about the process. */
	if (tid != pid && !(flags & DP_RAW_COMM_EXEC))
		return 0;
	p = opd_proc_find(t, pid);
	if (p && p->exited) {
		/* pid reused without our seeing the fork */
		proc_remove(t, p);
		p = NULL;
		freed = 1;
	}
	if (!p)
		p = opd_proc_get(t, pid);
	if (!p)
		return -ENOMEM;
	if (flags & DP_RAW_COMM_EXEC)
		proc_drop_maps(p);
	memset(p->comm, 0, sizeof(p->comm));
	memcpy(p->comm, comm, strnlen(comm, len < 15 ? len : 15));
	return freed;
}

int opd_proc_fork(struct opd_procs *t, const struct dp_raw_task_ev *ev)
{
	struct opd_proc *parent, *child;
	int freed = 0;

	if (ev->pid == ev->ppid)
		return 0;	/* a new thread */
	child = opd_proc_find(t, ev->pid);
	if (child) {
		/* pid reuse: the old process is over whatever its state */
		proc_remove(t, child);
		freed = 1;
	}
	child = opd_proc_get(t, ev->pid);
	if (!child)
		return -ENOMEM;
	parent = opd_proc_find(t, ev->ppid);
	if (parent) {
		if (maps_reserve(child, parent->nr_maps + 1))
			return -ENOMEM;
		memcpy(child->maps, parent->maps, parent->nr_maps * sizeof(*parent->maps));
		child->nr_maps = parent->nr_maps;
		child->main = parent->main;
		memcpy(child->comm, parent->comm, sizeof(child->comm));
	}
	return freed;
}

int opd_proc_exit(struct opd_procs *t, const struct dp_raw_task_ev *ev, uint64_t now_ns)
{
	struct opd_proc *p;

	if (ev->tid != ev->pid)
		return 0;	/* a thread ended, the process goes on */
	p = opd_proc_find(t, ev->pid);
	if (!p || p->exited)
		return 0;
	p->exited = true;
	p->exit_ns = now_ns;
	p->xprev = t->xtail;
	p->xnext = NULL;
	if (t->xtail)
		t->xtail->xnext = p;
	else
		t->xhead = p;
	t->xtail = p;
	t->nr_exited++;
	t->st->processes_exited++;
	return opd_procs_reap(t, now_ns) > 0;
}

int opd_procs_reap(struct opd_procs *t, uint64_t now_ns)
{
	int n = 0;

	while (t->xhead) {
		struct opd_proc *p = t->xhead;
		bool old = now_ns >= p->exit_ns && now_ns - p->exit_ns >= t->conf->exit_linger_ns;

		if (!old && t->nr_exited <= t->conf->exit_linger_max)
			break;
		proc_remove(t, p);
		n++;
	}
	return n;
}

const struct opd_map *opd_proc_find_map(const struct opd_proc *p, uint64_t pc,
					uint64_t *gap_start, uint64_t *gap_end)
{
	size_t lo = maps_first_end_after(p, pc);

	if (lo < p->nr_maps && p->maps[lo].start <= pc)
		return &p->maps[lo];
	if (gap_start)
		*gap_start = lo ? p->maps[lo - 1].end : 0;
	if (gap_end)
		*gap_end = lo < p->nr_maps ? p->maps[lo].start : UINT64_MAX;
	return NULL;
}

struct opd_image *opd_proc_main_image(const struct opd_proc *p)
{
	return p->main;
}

size_t opd_proc_nr_maps(const struct opd_proc *p)
{
	return p->nr_maps;
}

struct live_ctx {
	struct opd_procs *t;
	struct opd_proc *p;
};

static int live_map(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t len)
{
	struct live_ctx *lc = ctx;
	struct dp_raw_mmap mm = *m;

	mm.pid = lc->p->tgid;
	return opd_proc_mmap(lc->t, &mm, path, len) < 0 ? -ENOMEM : 0;
}

/* @src's context when the source is a proc root */
static int from_procfs(void *ctx, pid_t pid, uint64_t pc, char comm[16], opd_map_fn fn,
		       void *fctx)
{
	(void)pc;	/* this process may read what it reads */
	if (!comm[0])
		opd_procfs_comm(ctx, pid, comm);
	return opd_procfs_maps(ctx, pid, fn, fctx);
}

int opd_proc_lookup_via(struct opd_procs *t, struct opd_proc *p, uint64_t pc, opd_maps_src_fn src,
			void *ctx)
{
	struct live_ctx lc = { t, p };
	int ret;

	if (p->lookup_tried)
		return 0;
	p->lookup_tried = true;
	t->st->processes_proc_lookups++;
	ret = src(ctx, (pid_t)p->tgid, pc, p->comm, live_map, &lc);
	if (ret == -EPERM)	/* the monitor's scope: pc in none of its mappings */
		t->st->privsep_maps_refused++;
	if (ret)
		du_debug("no mappings for pid %u: %s", p->tgid, strerror(-ret));
	return ret;
}

int opd_proc_lookup_live(struct opd_procs *t, struct opd_proc *p, const char *proc_root)
{
	return opd_proc_lookup_via(t, p, 0, from_procfs, (void *)proc_root);
}
