#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opd_imgid.h"
#include "opd_sfile.h"
#include "sfname/sfname.h"
#include "util/du_fs.h"
#include "util/du_hash.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

struct sfile {
	struct opd_sfile_key key;
	struct du_hlink hl;	/* in opd_sfiles.tab */
	struct odb *db;		/* NULL: closed (evicted) or failed */
	bool failed;
	uint32_t id;		/* index in opd_sfiles.by_id */
	struct sfile *lprev, *lnext;	/* LRU of open files, most recent first */
};

/*
 * The directories of sample files known there (made, or a file opened in
 * them, since the session began), as 64-bit hashes of their paths in an
 * open-addressed table (0: an empty slot).  Only a hint: a file's own
 * directory gone since costs one failed open, and empties the set; a
 * parent gone costs du_nf_open_made a failed open before its whole walk.
 */
struct dirset {
	uint64_t *slot;
	size_t mask;		/* slots - 1; 0: none allocated */
	size_t count;
};

/* The most slots a set has before it starts over (4 MiB; at most half
 * full, so 16 to 32 bytes a directory, and 6 MiB while the last grow
 * copies): far more than the directories of the open files. */
#define DIRSET_MAX_SLOTS	(1u << 19)
/* The directories of a path a new file looks through (its depth below the
 * samples directory); a deeper file goes by the whole walk. */
#define DIRSET_DEPTH	64

struct opd_sfiles {
	const struct opd_conf *conf;
	struct opd_stats *st;
	struct opd_event_desc ev[DP_RAW_MAX_EVENTS];
	unsigned int nr_ev;
	struct du_htab tab;
	struct sfile **by_id;	/* [next_id], by sfile.id; NULL: released */
	size_t by_id_cap;
	uint32_t next_id;	/* ids are never reused */
	void (*close_hook)(void *ctx);
	void *close_ctx;
	struct sfile *lru_head, *lru_tail;
	size_t nr_open;
	/* the files the system's limits (descriptors, mappings) let stay
	 * open, where they were met below the cap; 0: not met */
	size_t sys_cap;
	uint64_t evictions;
	uint64_t releases;	/* entries freed (their ids dropped) */
	struct opd_imgids *ids;	/* host images' identities (opd_imgid.h) */
	struct dirset dirs;
	char base[PATH_MAX];
	size_t base_len;
};

struct opd_sfiles *opd_sfiles_new(const struct opd_conf *conf, struct opd_stats *st)
{
	struct opd_sfiles *t = calloc(1, sizeof(*t));
	int n;

	if (!t)
		return NULL;
	t->conf = conf;
	t->st = st;
	n = snprintf(t->base, sizeof(t->base), "%s/samples/current/", conf->session_dir);
	if (n < 0 || n >= (int)sizeof(t->base) - SFN_MAX_PATH / 4) {
		free(t);
		errno = ENAMETOOLONG;
		return NULL;
	}
	t->base_len = (size_t)n;
	memcpy(t->base + n, OPD_SFILES_IMAGES, sizeof(OPD_SFILES_IMAGES));
	t->ids = opd_imgids_new(t->base);
	t->base[n] = '\0';
	if (!t->ids || du_htab_init(&t->tab, 1024)) {
		opd_imgids_free(t->ids);
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static void sfile_free(struct du_hlink *l)
{
	struct sfile *sf = du_container_of(l, struct sfile, hl);

	odb_close(sf->db);
	free(sf);
}

void opd_sfiles_free(struct opd_sfiles *t)
{
	if (!t)
		return;
	du_htab_fini(&t->tab, sfile_free);
	opd_imgids_free(t->ids);
	free(t->by_id);
	free(t->dirs.slot);
	free(t);
}

void opd_sfiles_free_exiting(struct opd_sfiles *t)
{
	if (!t)
		return;
	for (uint32_t id = 0; id < t->next_id; id++) {
		struct sfile *sf = t->by_id[id];

		if (sf && sf->db) {
			odb_close_exiting(sf->db);
			sf->db = NULL;
		}
	}
	opd_sfiles_free(t);
}

void opd_sfiles_set_close_hook(struct opd_sfiles *t, void (*fn)(void *ctx), void *ctx)
{
	t->close_hook = fn;
	t->close_ctx = ctx;
}

int opd_sfiles_set_events(struct opd_sfiles *t, const struct opd_event_desc *ev, unsigned int nr)
{
	if (nr > DP_RAW_MAX_EVENTS)
		return -EINVAL;
	memcpy(t->ev, ev, nr * sizeof(*ev));
	t->nr_ev = nr;
	return 0;
}

const struct opd_event_desc *opd_sfiles_event(const struct opd_sfiles *t, uint32_t i)
{
	return i < t->nr_ev ? &t->ev[i] : NULL;
}

uint64_t opd_sfiles_evictions(const struct opd_sfiles *t)
{
	return t->evictions;
}

uint64_t opd_sfiles_releases(const struct opd_sfiles *t)
{
	return t->releases;
}

bool opd_sfile_is_arcs(const struct opd_sfiles *t, uint32_t id)
{
	return id < t->next_id && t->by_id[id] && t->by_id[id]->key.cg;
}

bool opd_sfile_is_open(const struct opd_sfiles *t, uint32_t id)
{
	return id < t->next_id && t->by_id[id] && t->by_id[id]->db;
}

static uint32_t key_hash(const struct opd_sfile_key *k)
{
	uint64_t h = (uintptr_t)k->image * 31 + (uintptr_t)k->dep;

	h = h * 31 + (uintptr_t)k->domain + k->vmm + (uintptr_t)k->cg;
	h = h * 31 + k->event;
	h = h * 31 + (uint64_t)k->tgid;
	h = h * 31 + (uint64_t)k->tid;
	h = h * 31 + (uint64_t)k->cpu;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return (uint32_t)h;
}

static bool key_eq(const struct opd_sfile_key *a, const struct opd_sfile_key *b)
{
	return a->image == b->image && a->dep == b->dep && a->cg == b->cg && a->domain == b->domain &&
	       a->vmm == b->vmm && a->event == b->event && a->tgid == b->tgid &&
	       a->tid == b->tid && a->cpu == b->cpu;
}

int opd_sfile_name(const struct opd_sfile_key *key, const struct opd_event_desc *ev,
		   char *buf, size_t size)
{
	struct sfn_name n = {
		.domain = key->domain ? key->domain->name : NULL,
		.vmm = key->vmm,
		.image = { key->image->kind, key->image->name },
		.dep = { key->dep->kind, key->dep->name },
		.cg = { key->cg ? key->cg->kind : SFN_ROOT, key->cg ? key->cg->name : NULL },
		.event = (char *)ev->name,
		.count = ev->count,
		.unit_mask = ev->unit_mask,
		.tgid = key->tgid,
		.tid = key->tid,
		.cpu = key->cpu,
	};

	return sfn_mangle(&n, buf, size);
}

static void lru_unlink(struct opd_sfiles *t, struct sfile *sf)
{
	if (sf->lprev)
		sf->lprev->lnext = sf->lnext;
	else
		t->lru_head = sf->lnext;
	if (sf->lnext)
		sf->lnext->lprev = sf->lprev;
	else
		t->lru_tail = sf->lprev;
	sf->lprev = sf->lnext = NULL;
}

static void lru_push(struct opd_sfiles *t, struct sfile *sf)
{
	sf->lprev = NULL;
	sf->lnext = t->lru_head;
	if (t->lru_head)
		t->lru_head->lprev = sf;
	else
		t->lru_tail = sf;
	t->lru_head = sf;
}

/* The directories of sample file @path below its first @from bytes (the
 * samples directory, made at start): by the walk that refuses symlinks
 * (util/du_sdir.h) for an absolute path, by mkdir -p for a test's relative
 * one.  0 or -errno. */
static int make_parents(char *path, size_t from)
{
	const char *base;
	int fd;

	if (path[0] != '/')
		return du_mkdir_parents(path, from - 1, DU_SDIR_DIR_MODE);
	fd = du_nf_open_parent(path, true, &base);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* The files that may be open at once: the cap, or fewer where the
 * system's limits were met first. */
static size_t open_cap(const struct opd_sfiles *t)
{
	size_t cap = t->conf->max_open_files ? t->conf->max_open_files : 1;

	return t->sys_cap && t->sys_cap < cap ? t->sys_cap : cap;
}

/* Close the least recently used files until at most @keep are open. */
static void evict_to(struct opd_sfiles *t, size_t keep)
{
	while (t->nr_open > keep && t->lru_tail) {
		struct sfile *old = t->lru_tail;

		lru_unlink(t, old);
		odb_close(old->db);
		old->db = NULL;
		t->nr_open--;
		t->evictions++;
		t->st->sample_files_evicted++;
	}
}

static void dirset_clear(struct dirset *d)
{
	if (d->slot)
		memset(d->slot, 0, (d->mask + 1) * sizeof(*d->slot));
	d->count = 0;
}

/* The slot of @h in @d's table (one there is): where it is, else the
 * empty one that ends its probe. */
static uint64_t *dirset_slot(const struct dirset *d, uint64_t h)
{
	size_t i = h & d->mask;

	while (d->slot[i] && d->slot[i] != h)
		i = (i + 1) & d->mask;
	return &d->slot[i];
}

static bool dirset_has(const struct dirset *d, uint64_t h)
{
	return d->count && *dirset_slot(d, h) == h;
}

/* @h into @d's table, which has room for it and does not hold it. */
static void dirset_put(struct dirset *d, uint64_t h)
{
	*dirset_slot(d, h) = h;
	d->count++;
}

/* Twice the slots (1,024 at first), every hash kept.  0 or -ENOMEM (past
 * DIRSET_MAX_SLOTS too), @d unchanged. */
static int dirset_grow(struct dirset *d)
{
	size_t n = d->mask ? 2 * (d->mask + 1) : 1024;
	struct dirset nd = { NULL, n - 1, 0 };

	if (n > DIRSET_MAX_SLOTS || !(nd.slot = calloc(n, sizeof(*nd.slot))))
		return -ENOMEM;
	for (size_t i = 0; d->slot && i <= d->mask; i++)
		if (d->slot[i])
			dirset_put(&nd, d->slot[i]);
	free(d->slot);
	*d = nd;
	return 0;
}

/* Note directory @h (never 0) known there.  The set is kept at most half
 * full; where it cannot grow it starts over. */
static void dirset_add(struct dirset *d, uint64_t h)
{
	if (dirset_has(d, h))
		return;
	if ((!d->mask || 2 * (d->count + 1) > d->mask + 1) && dirset_grow(d)) {
		if (!d->mask)
			return;		/* no set: every new file takes the walk */
		dirset_clear(d);
	}
	dirset_put(d, h);
}

/* The directories sample file @path lies in, from the samples directory
 * down (@at[i]: the length of the i-th one's path, @h[i] its hash).
 * Their number; 0 where there are more than DIRSET_DEPTH. */
static size_t dir_prefixes(const struct opd_sfiles *t, const char *path,
			   size_t at[DIRSET_DEPTH], uint64_t h[DIRSET_DEPTH])
{
	uint64_t hash = du_fnv1a64(DU_FNV64_BASIS, path, t->base_len - 1);
	size_t n = 0, i = t->base_len - 1;

	for (const char *s; (s = strchr(path + i + 1, '/')); i = (size_t)(s - path)) {
		if (n == DIRSET_DEPTH)
			return 0;
		at[n] = i;
		h[n++] = hash ? hash : 1;
		hash = du_fnv1a64(hash, path + i, (size_t)(s - path) - i);
	}
	if (n == DIRSET_DEPTH)
		return 0;
	at[n] = i;
	h[n++] = hash ? hash : 1;
	return n;
}

/*
 * Open (or create, with its directories) the file of @sf at @path.  Its
 * directories are made from the deepest one known there (dirset), and
 * noted once it is open; a file whose directory is known is opened as
 * is.  (Creating a session's files, each new directory cost a failed
 * open of the file, of the directory and of each missing parent.)
 */
static int open_db(struct opd_sfiles *t, struct sfile *sf, char *path,
		   const struct odb_desc *desc)
{
	size_t at[DIRSET_DEPTH], n, k, there = 0;
	uint64_t h[DIRSET_DEPTH];
	int ret;

	if (path[0] != '/') {
		/* a test's relative path: mkdir -p where it is missing */
		ret = odb_open(&sf->db, path, ODB_RDWR, desc);
		if (ret == -ENOENT)
			ret = make_parents(path, t->base_len);
		if (!ret && !sf->db)
			ret = odb_open(&sf->db, path, ODB_RDWR, desc);
		return ret;
	}
	n = dir_prefixes(t, path, at, h);
	for (k = n; k-- > 0;) {
		if (dirset_has(&t->dirs, h[k])) {
			there = at[k];
			break;
		}
	}
	ret = -ENOENT;
	if (n && there == at[n - 1]) {
		ret = odb_open(&sf->db, path, ODB_RDWR, desc);
		if (ret == -ENOENT) {
			/* the tree changed under the set (a session saved) */
			dirset_clear(&t->dirs);
			there = 0;
		}
	}
	if (ret == -ENOENT)
		ret = odb_open_made(&sf->db, path, there, desc);
	for (k = 0; !ret && k < n; k++)
		dirset_add(&t->dirs, h[k]);
	return ret;
}

static int sfile_open(struct opd_sfiles *t, struct sfile *sf)
{
	const struct opd_event_desc *ev = &t->ev[sf->key.event];
	struct odb_desc desc;
	char path[PATH_MAX];
	int ret;

	memcpy(path, t->base, t->base_len);
	ret = opd_sfile_name(&sf->key, ev, path + t->base_len, sizeof(path) - t->base_len);
	if (ret < 0)
		return ret;
	memset(&desc, 0, sizeof(desc));
	memcpy(desc.event, ev->name, sizeof(desc.event));
	desc.event[sizeof(desc.event) - 1] = '\0';
	desc.count = ev->count;
	desc.unit_mask = ev->unit_mask;
	if (sf->key.dep->kind == SFN_KERN)
		desc.flags |= ODB_F_KERNEL;
	/* A guest's path names a file in the guest: never stat()ed on the host
	 * (as root it could reach an automount or a dead NFS mount, and tell
	 * the guest what the host has).  Its mtime is left unknown. */
	if (!sf->key.domain || sf->key.vmm) {
		desc.mtime = opd_image_mtime(sf->key.dep);
		/* once per image: later files of the same image cost a flag test */
		opd_imgids_note(t->ids, sf->key.dep);
		opd_imgids_note(t->ids, sf->key.image);
		if (sf->key.cg)
			opd_imgids_note(t->ids, sf->key.cg);
	}

	/* (a file closed here keeps its index: samples queued for it in a
	 * batch reopen it once at its flush, so no flush is forced here) */
	evict_to(t, open_cap(t) - 1);
	ret = open_db(t, sf, path, &desc);
	/* the system's limits met below the cap: fewer files stay open from
	 * now on, with room left for the daemon's other files (its stats,
	 * /proc), and this one opens in the room the evictions make */
	while ((ret == -EMFILE || ret == -ENFILE || ret == -ENOMEM) && t->lru_tail) {
		size_t room = t->nr_open / 8 > 16 ? t->nr_open / 8 : 16;

		t->sys_cap = t->nr_open > room ? t->nr_open - room : 1;
		if (!t->st->sample_files_sys_capped)
			du_warn("the system's limits (descriptors, vm.max_map_count) let %zu sample "
				"files stay open, not %u: %zu are kept, closed and reopened sooner",
				t->nr_open, t->conf->max_open_files, t->sys_cap);
		t->st->sample_files_sys_capped++;
		evict_to(t, t->sys_cap - 1);
		ret = open_db(t, sf, path, &desc);
	}
	if (ret) {
		du_err("cannot open sample file %s: %s", path, strerror(-ret));
		sf->db = NULL;
		return ret;
	}
	t->nr_open++;
	lru_push(t, sf);
	return 0;
}

struct odb *opd_sfile_get(struct opd_sfiles *t, const struct opd_sfile_key *key)
{
	uint32_t id;

	return opd_sfile_get_id(t, key, &id);
}

struct odb *opd_sfile_by_id(struct opd_sfiles *t, uint32_t id)
{
	struct sfile *sf;

	if (id >= t->next_id || !(sf = t->by_id[id]))
		return NULL;
	if (sf->db) {
		if (t->lru_head != sf) {
			lru_unlink(t, sf);
			lru_push(t, sf);
		}
		return sf->db;
	}
	if (!sf->failed)
		sfile_open(t, sf);
	return sf->db;
}

static struct sfile *sfile_find(const struct opd_sfiles *t, const struct opd_sfile_key *key,
			       uint32_t h)
{
	for (struct du_hlink *l = du_htab_chain(&t->tab, h); l; l = l->next) {
		struct sfile *sf = du_container_of(l, struct sfile, hl);

		if (l->hash == h && key_eq(&sf->key, key))
			return sf;
	}
	return NULL;
}

/* A new entry for @key, its file opened (created); NULL: no memory (the
 * entry of a file that fails to open is kept, marked failed). */
static struct sfile *sfile_new(struct opd_sfiles *t, const struct opd_sfile_key *key, uint32_t h)
{
	struct sfile *sf;

	if (t->tab.count > t->tab.mask && du_htab_grow(&t->tab))
		return NULL;
	if (t->next_id == t->by_id_cap) {
		size_t cap = t->by_id_cap ? t->by_id_cap * 2 : 1024;
		struct sfile **n = cap <= UINT32_MAX ? realloc(t->by_id, cap * sizeof(*n)) : NULL;

		if (!n)
			return NULL;
		t->by_id = n;
		t->by_id_cap = cap;
	}
	sf = calloc(1, sizeof(*sf));
	if (!sf)
		return NULL;
	sf->key = *key;
	sf->id = t->next_id++;
	t->by_id[sf->id] = sf;
	du_htab_add(&t->tab, &sf->hl, h);
	t->st->sample_files++;
	if (sfile_open(t, sf)) {
		sf->failed = true;
		t->st->sample_file_errors++;
	}
	return sf;
}

/* The entry of @key, made (and its file opened) if there is none yet;
 * NULL for a bad event or no memory. */
static struct sfile *sfile_entry(struct opd_sfiles *t, const struct opd_sfile_key *key)
{
	uint32_t h = key_hash(key);
	struct sfile *sf;

	if (key->event >= t->nr_ev)
		return NULL;
	sf = sfile_find(t, key, h);
	return sf ? sf : sfile_new(t, key, h);
}

struct odb *opd_sfile_get_id(struct opd_sfiles *t, const struct opd_sfile_key *key, uint32_t *id)
{
	struct sfile *sf = sfile_entry(t, key);

	if (!sf)
		return NULL;
	*id = sf->id;
	if (sf->db) {
		if (t->lru_head != sf) {
			lru_unlink(t, sf);
			lru_push(t, sf);
		}
		return sf->db;
	}
	if (!sf->failed)
		sfile_open(t, sf);
	return sf->db;
}

bool opd_sfile_id(struct opd_sfiles *t, const struct opd_sfile_key *key, uint32_t *id)
{
	struct sfile *sf = sfile_entry(t, key);

	if (!sf || sf->failed)
		return false;
	*id = sf->id;
	return true;
}

/* Sync, close and free every entry of @domain (@all: every entry). */
static size_t close_entries(struct opd_sfiles *t, bool all, const struct opd_image *domain)
{
	size_t n = 0, freed = 0;

	if (t->close_hook)	/* (what is queued goes in first) */
		t->close_hook(t->close_ctx);
	for (uint32_t id = 0; id < t->next_id; id++) {
		struct sfile *sf = t->by_id[id];

		if (!sf || (!all && sf->key.domain != domain))
			continue;
		if (sf->db) {
			lru_unlink(t, sf);
			if (odb_sync(sf->db))
				t->st->sample_file_errors++;
			odb_close(sf->db);
			sf->db = NULL;
			t->nr_open--;
			n++;
		}
		du_htab_del(&t->tab, &sf->hl);
		t->by_id[id] = NULL;
		free(sf);
		freed++;
	}
	t->st->sample_files_released += freed;
	/* also drops cached odb pointers and ids (opd_trans) */
	if (freed) {
		t->evictions++;
		t->releases++;
	}
	return n;
}

size_t opd_sfiles_close_domain(struct opd_sfiles *t, const struct opd_image *domain)
{
	/* every entry of the domain, open or not: a stopped domain costs
	 * nothing; if it comes back, its files are found again by name and
	 * appended to */
	return close_entries(t, false, domain);
}

int opd_sfiles_restart(struct opd_sfiles *t)
{
	struct opd_imgids *ids;

	close_entries(t, true, NULL);
	dirset_clear(&t->dirs);	/* a new samples directory, maybe */
	/* a new {images} record: the next file of an image notes it there */
	memcpy(t->base + t->base_len, OPD_SFILES_IMAGES, sizeof(OPD_SFILES_IMAGES));
	ids = opd_imgids_new(t->base);
	t->base[t->base_len] = '\0';
	if (!ids)
		return -ENOMEM;
	opd_imgids_unnote(t->ids);
	opd_imgids_free(t->ids);
	t->ids = ids;
	return 0;
}

int opd_sfiles_recheck_images(struct opd_sfiles *t)
{
	return opd_imgids_recheck(t->ids);
}

int opd_sfiles_sync(struct opd_sfiles *t)
{
	int ret = 0;

	/* queue every file's writeback first: one file at a time, each
	 * sync waits for its own few writes */
	for (struct sfile *sf = t->lru_head; sf; sf = sf->lnext)
		odb_sync_start(sf->db);

	for (struct sfile *sf = t->lru_head; sf; sf = sf->lnext) {
		int r = odb_sync(sf->db);

		if (r && !ret)
			ret = r;
	}
	return ret;
}
