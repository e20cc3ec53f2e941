#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opd_guest_tasks.h"
#include "util/du_range.h"

int opd_gtasks_init(struct opd_gtasks *ts, size_t max_tasks, size_t max_maps,
		    struct opd_gbudget *budget, struct opd_stats *st)
{
	size_t nbuckets = OPD_GTASK_BUCKETS_MIN;
	int ret;

	memset(ts, 0, sizeof(*ts));
	while (nbuckets < max_tasks / 2 && nbuckets < OPD_GTASK_BUCKETS_MAX)
		nbuckets *= 2;
	ret = du_htab_init(&ts->tab, nbuckets);
	ts->max_tasks = max_tasks;
	ts->max_maps = max_maps;
	ts->max_task_maps = OPD_GTASK_MAX_TASK_MAPS;
	ts->budget = budget;
	ts->st = st;
	opd_ghkey_init(&ts->key);
	return ret;
}

/* Not pid % buckets: a guest chooses its pids (a fork loop gives it any
 * residue it likes), not the key.  The low bits pick the bucket. */
static uint32_t pid_hash(const struct opd_gtasks *ts, uint32_t pid)
{
	return (uint32_t)opd_ghash_u32(&ts->key, pid);
}

static struct opd_gtask *task_of(struct du_hlink *l)
{
	return du_container_of(l, struct opd_gtask, link);
}

static void task_free(struct opd_gtasks *ts, struct opd_gtask *t)
{
	ts->nr_maps -= t->nr;
	opd_gbudget_give(ts->budget, sizeof(*t) + t->cap * sizeof(struct opd_gmap));
	ts->nr_tasks--;
	free(t->base);
	free(t);
}

void opd_gtasks_fini(struct opd_gtasks *ts)
{
	if (ts->tab.buckets) {
		for (size_t i = 0; i <= ts->tab.mask && ts->nr_tasks; i++) {
			struct du_hlink *l, *n;

			for (l = ts->tab.buckets[i]; l; l = n) {
				n = l->next;
				task_free(ts, task_of(l));
			}
			ts->tab.buckets[i] = NULL;
		}
	}
	du_htab_fini(&ts->tab, NULL);
}

struct opd_gtask *opd_gtasks_find(const struct opd_gtasks *ts, uint32_t pid)
{
	uint32_t h;

	if (!ts->tab.buckets)
		return NULL;
	h = pid_hash(ts, pid);
	for (struct du_hlink *l = du_htab_chain(&ts->tab, h); l; l = l->next)
		if (l->hash == h && task_of(l)->pid == pid)
			return task_of(l);
	return NULL;
}

struct opd_gtask *opd_gtasks_get(struct opd_gtasks *ts, uint32_t pid)
{
	struct opd_gtask *t = opd_gtasks_find(ts, pid);

	if (t)
		return t;
	if (ts->nr_tasks >= ts->max_tasks || !ts->tab.buckets) {
		ts->st->guest_tasks_capped++;
		return NULL;
	}
	if (!opd_gbudget_take(ts->budget, sizeof(*t)))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t) {
		opd_gbudget_give(ts->budget, sizeof(*t));
		return NULL;
	}
	t->pid = pid;
	du_htab_add(&ts->tab, &t->link, pid_hash(ts, pid));
	ts->nr_tasks++;
	return t;
}

static void clear_maps(struct opd_gtasks *ts, struct opd_gtask *t)
{
	ts->nr_maps -= t->nr;
	t->nr = 0;
	t->front = 0;
	t->maps = t->base;
	t->main = NULL;
}

void opd_gtasks_exec(struct opd_gtasks *ts, uint32_t pid, uint64_t when)
{
	struct opd_gtask *t = opd_gtasks_find(ts, pid);
	size_t j = 0;

	if (!t)
		return;
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
	ts->nr_maps -= t->nr - j;
	t->nr = j;
	t->exited = false;
	t->asid = 0;	/* a new address space */
}

const struct opd_gmap *opd_gtask_find_map(const struct opd_gtask *t, uint64_t pc)
{
	size_t lo = DU_FIRST_END_AFTER(t->maps, t->nr, pc);

	if (lo < t->nr && t->maps[lo].start <= pc)
		return &t->maps[lo];
	return NULL;
}

/* Put @t's maps at @front in its array (the free slots around them). */
static void place(struct opd_gtask *t, size_t front)
{
	memmove(t->base + front, t->maps, t->nr * sizeof(*t->maps));
	t->front = front;
	t->maps = t->base + front;
}

/* Room for @want mappings in @t's array (budget taken); the maps then
 * lie in the middle of it. */
static int reserve(struct opd_gtasks *ts, struct opd_gtask *t, size_t want)
{
	size_t ncap = t->cap ? t->cap : 8;
	size_t more;
	struct opd_gmap *n;

	if (want <= t->cap)
		return 0;
	while (ncap < want)
		ncap *= 2;
	more = (ncap - t->cap) * sizeof(*t->maps);
	if (!opd_gbudget_take(ts->budget, more))
		return -ENOSPC;
	n = realloc(t->base, ncap * sizeof(*n));
	if (!n) {
		opd_gbudget_give(ts->budget, more);
		return -ENOMEM;
	}
	t->base = n;
	t->maps = n + t->front;
	t->cap = ncap;
	place(t, (ncap - t->nr) / 2);
	return 0;
}

/* A free slot at @i of @t's maps (room for one more is there), moving
 * the shorter side; when that side has no room, the maps are centred
 * first (which leaves half the free slots on each side: a run of inserts
 * at one end costs one move per half of them). */
static void open_slot(struct opd_gtask *t, size_t i)
{
	size_t back = t->cap - t->front - t->nr;

	if (i < t->nr - i ? !t->front : !back)
		place(t, (t->cap - t->nr) / 2);
	back = t->cap - t->front - t->nr;
	if (t->front && (i < t->nr - i || !back)) {
		memmove(t->maps - 1, t->maps, i * sizeof(*t->maps));
		t->front--;
		t->maps--;
	} else {
		memmove(t->maps + i + 1, t->maps + i, (t->nr - i) * sizeof(*t->maps));
	}
	t->nr++;
}

/* Room for one more mapping in @t. */
static int grow(struct opd_gtasks *ts, struct opd_gtask *t)
{
	if (ts->nr_maps >= ts->max_maps || t->nr >= ts->max_task_maps) {
		ts->st->guest_maps_capped++;
		return -ENOSPC;
	}
	return reserve(ts, t, t->nr + 1);
}

static int add_map(struct opd_gtasks *ts, struct opd_gtask *t, const struct opd_gmap *m)
{
	/* the first that ends above the new start: a binary search, so
	 * what a frame costs does not grow with the maps already there
	 * beyond the memmove below (bounded by max_task_maps) */
	size_t i = DU_FIRST_END_AFTER(t->maps, t->nr, m->start), j;
	int ret;

	j = i;
	while (j < t->nr && t->maps[j].start < m->end)
		j++;
	if (j == i + 1 && t->maps[i].start == m->start && t->maps[i].end == m->end) {
		t->maps[i] = *m;
		return 0;
	}
	if (j == i) {
		ret = grow(ts, t);
		if (ret)
			return ret;
		open_slot(t, i);
		ts->nr_maps++;
	} else {
		/* drop maps i+1..j-1, reuse slot i */
		memmove(t->maps + i + 1, t->maps + j, (t->nr - j) * sizeof(*m));
		ts->nr_maps -= j - i - 1;
		t->nr -= j - i - 1;
	}
	t->maps[i] = *m;
	return 0;
}

int opd_gtasks_map(struct opd_gtasks *ts, struct opd_gtask *t, const struct opd_gmap *m)
{
	int ret = add_map(ts, t, m);

	if (ret)
		return ret;
	/* the kernel maps the executable before the interpreter and
	 * libraries; the snapshot lists maps by address, main first */
	if (m->gi && (!t->main || m->t < t->main_t)) {
		t->main = m->gi;
		t->main_t = m->t;
	}
	return 0;
}

void opd_gtasks_fork(struct opd_gtasks *ts, uint32_t pid, uint32_t ppid)
{
	struct opd_gtask *p = opd_gtasks_find(ts, ppid), *c = opd_gtasks_get(ts, pid);
	size_t n;

	if (!c)
		return;
	clear_maps(ts, c);
	c->exited = false;
	c->asid = 0;	/* a new process, perhaps under a reused pid */
	if (!p || p == c)
		return;
	/* the parent's maps are sorted and disjoint already: one copy, not
	 * one sorted insert each (which made a FORK quadratic) */
	n = p->nr;
	if (n > ts->max_maps - ts->nr_maps) {
		n = ts->max_maps - ts->nr_maps;
		ts->st->guest_maps_capped++;
	}
	if (!n || reserve(ts, c, n))
		return;
	place(c, (c->cap - n) / 2);	/* c has none yet: no move */
	memcpy(c->maps, p->maps, n * sizeof(*c->maps));
	c->nr = n;
	ts->nr_maps += n;
	c->main = p->main;
	c->main_t = p->main_t;
}

static void reap(struct opd_gtasks *ts, uint64_t seen, uint64_t linger)
{
	for (size_t i = 0; ts->tab.buckets && i <= ts->tab.mask; i++) {
		struct du_hlink *l, *n;

		for (l = ts->tab.buckets[i]; l; l = n) {
			struct opd_gtask *t = task_of(l);

			n = l->next;
			if (t->exited && seen - t->exit_ns > linger) {
				du_htab_del(&ts->tab, l);
				task_free(ts, t);
			}
		}
	}
}

void opd_gtasks_exit(struct opd_gtasks *ts, uint32_t pid, uint64_t when, uint64_t seen,
		     uint64_t linger)
{
	struct opd_gtask *t = opd_gtasks_find(ts, pid);

	if (t) {
		t->exited = true;
		t->exit_ns = when;
		t->asid = 0;
	}
	if (seen - ts->last_reap < linger / 3)
		return;
	ts->last_reap = seen;
	reap(ts, seen, linger);
}

const struct opd_gtask *opd_gtasks_sole_owner(const struct opd_gtasks *ts, uint64_t pc,
					      const struct opd_gmap **mp)
{
	const struct opd_gtask *found = NULL;
	const struct opd_gmap *fm = NULL;

	for (size_t i = 0; ts->tab.buckets && i <= ts->tab.mask; i++) {
		for (const struct du_hlink *l = ts->tab.buckets[i]; l; l = l->next) {
			const struct opd_gtask *t = du_container_of(l, const struct opd_gtask, link);
			const struct opd_gmap *m = t->exited ? NULL : opd_gtask_find_map(t, pc);

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
