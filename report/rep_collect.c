#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odb/odb.h"
#include "rep_collect.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_verify.h"
#include "rep_opts.h"
#include "rep_spec.h"
#include "rep_sym.h"
#include "rep_view.h"
#include "rep_walk.h"
#include "util/du_array.h"
#include "util/du_fs.h"
#include "util/du_log.h"

/* A matching sample file, before it is read. */
struct sfile {
	char *path;		/* absolute */
	size_t rel;		/* where its part below the sample directory starts */
	struct sfn_name name;
	size_t cls;
	uint64_t total;		/* counted: its samples */
	bool counted;		/* its total taken during the walk (preread) */
	bool skipped;		/* the walk's read passed it over (said why) */
};

struct collector {
	const struct rep_opts *o;
	struct rep_images *images;
	struct rep_profile *p;
	struct sfile *files;
	size_t nfiles, cap;
	struct rep_progress *progress;	/* the walk's: files seen */
	int dir_fd;			/* the sample directory, for reads by path */
	struct sfile *cgfiles;		/* {cg} files, read for -c only */
	size_t ncgfiles, cgcap;
	struct rep_u64map *arcmap;
	/* the {cg} file being read: caller's and callee's group and binary */
	size_t cg_from_group, cg_to_group;
	const struct rep_bin *cg_from_bin, *cg_to_bin;
	size_t nseen;		/* regular files under the sample directory */
	size_t npruned;		/* trees not walked: no file of theirs can match */
	size_t ncorrupt;	/* sample files refused as corrupt */
	struct rep_strmap *groups;
	struct rep_u64map *rowmap;
	const struct rep_key_sink *sink;	/* NULL: symbols only */
	/* the file being read (odb_foreach callback state) */
	size_t cur_group, cur_cls;
	const struct rep_bin *cur_bin;
	uint64_t last_key;
	long last_sym;
	bool have_last;
};

static void free_list(struct sfile *files, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(files[i].path);
		sfn_name_release(&files[i].name);
	}
	free(files);
}

static void free_files(struct collector *c)
{
	free_list(c->files, c->nfiles);
	free_list(c->cgfiles, c->ncgfiles);
}

static int add_file(struct sfile **files, size_t *n, size_t *cap, const char *path,
		    size_t rel, struct sfn_name *name)
{
	if (DU_GROW(*files, *cap, *n + 1, 256))
		return -ENOMEM;
	(*files)[*n] = (struct sfile){ .path = strdup(path), .rel = rel, .name = *name };
	if (!(*files)[*n].path)
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int open_sample(struct collector *c, const struct sfile *f, int dirfd, const char *rel,
		       struct odb **db);

/*
 * A report of totals alone (no -l, no key sink) takes @f's total now,
 * @f being entry @name of the directory the walk holds open as @dirfd:
 * opened from its directory, its path is not looked up again (a summary
 * of 1,000 domains opens 30,000 files eight directories deep).  A
 * report of keys reads them in the file's turn: holding every file's
 * keys until then cost more in page faults than the lookups saved.
 * 0, or -ENOMEM.
 */
static int preread(struct collector *c, struct sfile *f, int dirfd, const char *name)
{
	struct odb *db;
	int rc;

	if (c->o->symbols || c->sink)
		return 0;
	rc = open_sample(c, f, dirfd, name, &db);
	if (rc < 0)
		return rc;
	f->skipped = rc > 0;
	if (!rc) {
		f->total = odb_total(db);
		f->counted = true;
		c->p->npreread++;
		odb_close(db);
	}
	return 0;
}

/* A flat sample file joins the report (its total taken now when that is
 * all the report wants: preread); a {cg} file only the call graph.  @n
 * is the list's, or released. */
static int keep_file(struct collector *c, const char *path, size_t rel, struct sfn_name *n,
		     int dirfd, const char *name)
{
	int rc;

	if (n->cg.name) {
		if (!c->o->callgraph) {
			sfn_name_release(n);
			return 0;
		}
		rc = add_file(&c->cgfiles, &c->ncgfiles, &c->cgcap, path, rel, n);
	} else {
		rc = add_file(&c->files, &c->nfiles, &c->cap, path, rel, n);
		if (!rc)
			return preread(c, &c->files[c->nfiles - 1], dirfd, name);
	}
	if (rc)
		sfn_name_release(n);
	return rc;
}

/*
 * Does directory @name (of @parent, @level below the sample directory)
 * hold files --domain lets through?  With domains named, the host's trees
 * (every top directory but {domain}) and the other domains'
 * ({domain}/NAME) are not walked: a report of one domain among a thousand
 * reads its own directories, not the session's.
 */
static bool tree_wanted(const struct collector *c, unsigned int level, const char *parent,
			const char *name)
{
	if (level == 1)
		return !strcmp(name, "{domain}") || rep_spec_domain_ok(c->o->spec, NULL);
	if (level == 2 && !strcmp(parent, "{domain}"))
		return rep_spec_domain_dir_ok(c->o->spec, name);
	return true;
}

/* Directory @name at @level, in @parent: walked?  (rep_walk_ops) */
static bool walk_dir_ok(void *ctx, unsigned int level, const char *parent, const char *name)
{
	struct collector *c = ctx;

	/* the daemon's stacks (doc/sample-files.md): for the views */
	if (level == 1 && !strcmp(name, "{stacks}"))
		return false;
	if (!tree_wanted(c, level, parent, name)) {
		c->npruned++;
		return false;
	}
	return true;
}

/* Regular file @path, @rel below the sample directory (rep_walk_ops). */
static int walk_file(void *ctx, const char *path, const char *rel, unsigned int level,
		     int dirfd, const char *name)
{
	struct collector *c = ctx;
	struct sfn_name n;

	/* the daemon's image identities (rep_verify.h), not samples */
	if (level == 1 && !strcmp(name, "{images}"))
		return 0;
	c->nseen++;
	rep_progress_step(c->progress, c->nseen);
	if (sfn_parse(rel, &n)) {
		du_warn("skipping %s: not a sample file name", path);
		c->p->nbad++;
		return 0;
	}
	if (!rep_spec_match(c->o->spec, &n)) {
		sfn_name_release(&n);
		return 0;
	}
	return keep_file(c, path, (size_t)(rel - path), &n, dirfd, name);
}

static int find_files(struct collector *c, const char *dir)
{
	static const struct rep_walk_ops ops = { .dir_ok = walk_dir_ok, .file = walk_file };

	return rep_walk(dir, &ops, c);
}

static int cmp_class(const void *a, const void *b)
{
	const struct rep_class *x = a, *y = b;
	int r = strcmp(x->event, y->event);

	if (r)
		return r;
	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	return x->unit_mask < y->unit_mask ? -1 : x->unit_mask > y->unit_mask;
}

static uint32_t file_um(const struct collector *c, const struct sfile *f)
{
	return c->o->merge & REP_MERGE_UNITMASK ? 0 : f->name.unit_mask;
}

/* The classes, sorted so columns come out the same on every run. */
static int make_classes(struct collector *c)
{
	struct rep_profile *p = c->p;
	struct rep_strmap *m = rep_strmap_new();
	char key[128];
	int rc = -ENOMEM;

	if (!m)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < c->nfiles; i++) {
			struct sfile *f = &c->files[i];
			struct rep_class *nc;
			long k;

			snprintf(key, sizeof(key), "%s.%llu.%u", f->name.event,
				 (unsigned long long)f->name.count, file_um(c, f));
			k = rep_strmap_get(m, key);
			if (pass == 1) {
				f->cls = (size_t)k;
				continue;
			}
			if (k >= 0)
				continue;
			nc = realloc(p->classes, (p->nclasses + 1) * sizeof(*nc));
			if (!nc)
				goto out_free;
			p->classes = nc;
			nc[p->nclasses].event = strdup(f->name.event);
			if (!nc[p->nclasses].event)
				goto out_free;
			nc[p->nclasses].count = f->name.count;
			nc[p->nclasses].unit_mask = file_um(c, f);
			p->nclasses++;
			if (rep_strmap_put(m, key, 0))
				goto out_free;
		}
		if (pass == 0) {
			qsort(p->classes, p->nclasses, sizeof(*p->classes), cmp_class);
			for (size_t i = 0; i < p->nclasses; i++) {
				snprintf(key, sizeof(key), "%s.%llu.%u", p->classes[i].event,
					 (unsigned long long)p->classes[i].count,
					 p->classes[i].unit_mask);
				if (rep_strmap_put(m, key, i))
					goto out_free;
			}
		}
	}
	rc = 0;
out_free:
	rep_strmap_free(m);
	return rc;
}

static bool same_image(const struct sfn_image *a, const struct sfn_image *b)
{
	return a->kind == b->kind && !strcmp(a->name, b->name);
}

static int copy_image(struct sfn_image *dst, const struct sfn_image *src)
{
	dst->kind = src->kind;
	dst->name = strdup(src->name);
	return dst->name ? 0 : -ENOMEM;
}

static char *group_key(const struct sfn_name *n, const struct sfn_image *app, int64_t tgid,
		       int64_t tid, int64_t cpu)
{
	char *key = NULL;

	if (asprintf(&key, "%s%c%d%c%d%c%s%c%d%c%s%c%lld.%lld.%lld", n->domain ? n->domain : "",
		     1, n->vmm, 1, (int)app->kind, 1, app->name, 1, (int)n->dep.kind, 1,
		     n->dep.name, 1, (long long)tgid, (long long)tid, (long long)cpu) < 0)
		return NULL;
	return key;
}

/* Whether @n's group (under --merge) exists already. */
static bool group_exists(const struct collector *c, const struct sfn_name *n)
{
	unsigned merge = c->o->merge;
	char *key = group_key(n, merge & REP_MERGE_LIB ? &n->dep : &n->image,
			      merge & REP_MERGE_TGID ? SFN_ALL : n->tgid,
			      merge & REP_MERGE_TID ? SFN_ALL : n->tid,
			      merge & REP_MERGE_CPU ? SFN_ALL : n->cpu);
	bool found = key && rep_strmap_get(c->groups, key) >= 0;

	free(key);
	return found;
}

/* The group of @f under --merge; created on first use.  Index or -errno. */
static long file_group(struct collector *c, const struct sfile *f)
{
	const struct sfn_name *n = &f->name;
	unsigned merge = c->o->merge;
	const struct sfn_image *app = merge & REP_MERGE_LIB ? &n->dep : &n->image;
	int64_t tgid = merge & REP_MERGE_TGID ? SFN_ALL : n->tgid;
	int64_t tid = merge & REP_MERGE_TID ? SFN_ALL : n->tid;
	int64_t cpu = merge & REP_MERGE_CPU ? SFN_ALL : n->cpu;
	struct rep_profile *p = c->p;
	struct rep_group *g;
	char *key = NULL;
	long idx;

	key = group_key(n, app, tgid, tid, cpu);
	if (!key)
		return -ENOMEM;
	idx = rep_strmap_get(c->groups, key);
	if (idx >= 0)
		goto out_free;
	g = realloc(p->groups, (p->ngroups + 1) * sizeof(*g));
	if (!g)
		goto out_oom;
	p->groups = g;
	g = &p->groups[p->ngroups];
	memset(g, 0, sizeof(*g));
	g->counts = rep_profile_arena_alloc(p);
	if (g->counts == SIZE_MAX)
		goto out_oom;
	g->vmm = n->vmm;
	g->tgid = tgid;
	g->tid = tid;
	g->cpu = cpu;
	if ((n->domain && !(g->domain = strdup(n->domain))) || copy_image(&g->app, app) ||
	    copy_image(&g->dep, &n->dep)) {
		free(g->domain);
		free(g->app.name);
		free(g->dep.name);
		goto out_oom;
	}
	/* checked once per image (rep_verify.h), whatever -l says */
	g->unverified = c->images && rep_images_unverified(c->images, n->domain, n->vmm, &n->dep);
	idx = (long)p->ngroups++;
	if (!same_image(app, &n->dep))
		p->separate_lib = true;
	if (rep_strmap_put(c->groups, key, (size_t)idx))
		goto out_oom;
out_free:
	free(key);
	return idx;
out_oom:
	free(key);
	return -ENOMEM;
}

/* The row of symbol @sym (-1: none) of @bin in group @group, created
 * with zero counts on first use.  Its index or -ENOMEM. */
static long row_get(struct collector *c, size_t group, const struct rep_bin *bin, long sym)
{
	struct rep_profile *p = c->p;
	struct rep_symrow *r;
	int created;
	long row = rep_u64map_get_or_put(c->rowmap, ((uint64_t)group << 32) | (uint64_t)(sym + 1),
					 p->nrows, &created);

	if (row < 0 || !created)
		return row;
	r = realloc(p->rows, (p->nrows + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	p->rows = r;
	r = &p->rows[p->nrows];
	r->group = group;
	r->sym = sym;
	r->bin = bin;
	r->counts = rep_profile_arena_alloc(p);
	if (r->counts == SIZE_MAX)
		return -ENOMEM;
	p->nrows++;
	return row;
}

static int add_key(void *ctx, uint64_t key, uint64_t count)
{
	struct collector *c = ctx;
	struct rep_profile *p = c->p;
	long sym, row;

	/* Files are mostly in key order only by accident; still cheap to try. */
	if (c->have_last && c->last_key == key)
		sym = c->last_sym;
	else
		sym = c->cur_bin ? rep_bin_lookup_key(c->cur_bin, key) : -1;
	c->last_key = key;
	c->last_sym = sym;
	c->have_last = true;
	row = row_get(c, c->cur_group, c->cur_bin, sym);
	if (row < 0)
		return -ENOMEM;
	rep_counts(p, p->rows[row].counts)[c->cur_cls] += count;
	if (c->sink)
		return c->sink->key(c->sink->ctx, p, c->cur_group, c->cur_cls, c->cur_bin, sym, key,
				    count);
	return 0;
}

/*
 * Open the sample file @f for reading, @rel below directory @dirfd (the
 * walk's directory and the file's name, or the sample directory and the
 * file's path below it), no link followed on the way: the tree is the
 * daemon's worker's, which could swap a directory for a link between the
 * walk and the read.  0 and *@db; 1 when it is skipped
 * (unreadable, or no samples yet: a file the daemon is making now); or
 * -errno.  A corrupt file is named with what is wrong and counted: it
 * ends the command once every file has been looked at (rep_collect_keys),
 * since a report that silently leaves out some samples, or counts the
 * garbage, would be wrong with no one knowing.
 */
static int open_sample(struct collector *c, const struct sfile *f, int dirfd, const char *rel,
		       struct odb **db)
{
	char why[128];
	int rc = du_open_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK);

	if (rc < 0)
		snprintf(why, sizeof(why), "%s", strerror(-rc));
	else
		rc = odb_open_read_fd(db, rc, why, sizeof(why));

	switch (rc) {
	case 0:
		return 0;
	case -ENOMEM:
		return rc;
	case -ENODATA:
		du_debug("skipping %s: no samples in it yet", f->path);
		return 1;
	case -EBADMSG:
		du_err("corrupt sample file %s: %s", f->path, why);
		c->ncorrupt++;
		return 1;
	default:
		du_warn("skipping %s: %s", f->path, why);
		c->p->nbad++;
		return 1;
	}
}

static int read_file(struct collector *c, struct sfile *f)
{
	struct rep_profile *p = c->p;
	struct odb *db = NULL;	/* none when counted by the walk */
	uint64_t total = f->total;
	long g;
	int rc = 0;

	if (f->skipped)
		return 0;
	if (!f->counted) {
		rc = open_sample(c, f, c->dir_fd, f->path + f->rel, &db);
		if (rc)
			return rc < 0 ? rc : 0;
		total = odb_total(db);
	}
	/* each file is within its bound; many such files must not wrap the
	 * totals (every other sum is part of a total) */
	if (total > UINT64_MAX - p->totals[f->cls]) {
		du_err("corrupt sample file %s: its counts overflow the total", f->path);
		c->ncorrupt++;
		goto out_close;
	}
	g = file_group(c, f);
	if (g < 0) {
		rc = (int)g;
		goto out_close;
	}
	rep_counts(p, p->groups[g].counts)[f->cls] += total;
	p->totals[f->cls] += total;
	if (f->name.domain)
		p->has_domain = true;
	p->nfiles++;
	if (c->o->symbols && db) {
		c->cur_group = (size_t)g;
		c->cur_cls = f->cls;
		c->cur_bin = rep_images_get(c->images, f->name.domain, f->name.vmm, &f->name.dep);
		c->have_last = false;
		rc = odb_foreach(db, add_key, c);
	}
out_close:
	odb_close(db);
	return rc;
}

/* ---- call graph (-c): the {cg} files' arcs between symbol rows ---- */

static int add_arc(void *ctx, uint64_t key, uint64_t count)
{
	struct collector *c = ctx;
	struct rep_profile *p = c->p;
	long from, to, a;
	int created;

	from = row_get(c, c->cg_from_group, c->cg_from_bin,
		       c->cg_from_bin ? rep_bin_lookup_key(c->cg_from_bin, key >> 32) : -1);
	if (from < 0)
		return -ENOMEM;
	to = row_get(c, c->cg_to_group, c->cg_to_bin,
		     c->cg_to_bin ? rep_bin_lookup_key(c->cg_to_bin, key & 0xffffffffULL) : -1);
	if (to < 0)
		return -ENOMEM;
	a = rep_u64map_get_or_put(c->arcmap, (uint64_t)from << 32 | (uint64_t)to, p->narcs,
				  &created);
	if (a < 0)
		return -ENOMEM;
	if (created) {
		struct rep_arc *na = realloc(p->arcs, (p->narcs + 1) * sizeof(*na));

		if (!na)
			return -ENOMEM;
		p->arcs = na;
		na[p->narcs].from = (size_t)from;
		na[p->narcs].to = (size_t)to;
		na[p->narcs].counts = rep_profile_arena_alloc(p);
		if (na[p->narcs].counts == SIZE_MAX)
			return -ENOMEM;
		p->narcs++;
	}
	rep_counts(p, p->arcs[a].counts)[c->cur_cls] += count;
	return 0;
}

/* The class of a {cg} file; false when no flat file has it. */
static bool cg_class(const struct collector *c, const struct sfile *f, size_t *cls)
{
	for (size_t i = 0; i < c->p->nclasses; i++) {
		const struct rep_class *k = &c->p->classes[i];

		if (!strcmp(k->event, f->name.event) && k->count == f->name.count &&
		    k->unit_mask == file_um(c, f)) {
			*cls = i;
			return true;
		}
	}
	return false;
}

static int read_cg_file(struct collector *c, struct sfile *f)
{
	struct sfile callee = *f;
	struct odb *db;
	long g1, g2;
	int rc;

	if (!cg_class(c, f, &c->cur_cls))
		return 0;
	rc = open_sample(c, f, c->dir_fd, f->path + f->rel, &db);
	if (rc)
		return rc < 0 ? rc : 0;
	/*
	 * The callee's group: the same name with the {cg} image as its dep
	 * (borrowed strings, not released).  Its application is the file's
	 * when the session separated libraries (such a group exists once the
	 * callee has samples of its own), else the callee's binary itself.
	 */
	callee.name.dep = f->name.cg;
	if (!group_exists(c, &callee.name)) {
		struct sfile alone = callee;

		alone.name.image = f->name.cg;
		if (group_exists(c, &alone.name) || same_image(&f->name.image, &f->name.dep))
			callee = alone;
	}
	g1 = file_group(c, f);
	g2 = g1 < 0 ? g1 : file_group(c, &callee);
	rc = g2 < 0 ? (int)g2 : 0;
	if (!rc) {
		c->cg_from_group = (size_t)g1;
		c->cg_to_group = (size_t)g2;
		c->cg_from_bin = rep_images_get(c->images, f->name.domain, f->name.vmm, &f->name.dep);
		c->cg_to_bin = rep_images_get(c->images, f->name.domain, f->name.vmm, &f->name.cg);
		rc = odb_foreach(db, add_arc, c);
		c->p->ncgfiles++;
	}
	odb_close(db);
	return rc;
}

static int read_cg_files(struct collector *c)
{
	int rc = 0;

	c->arcmap = rep_u64map_new();
	if (!c->arcmap)
		return -ENOMEM;
	for (size_t i = 0; i < c->ncgfiles && !rc; i++)
		rc = read_cg_file(c, &c->cgfiles[i]);
	rep_u64map_free(c->arcmap);
	c->arcmap = NULL;
	return rc;
}

/* The verification's warnings, for the report's header.  0 or -ENOMEM. */
static int copy_notes(struct rep_profile *p, const struct rep_vstore *v)
{
	size_t n;
	char *const *notes = rep_vstore_notes(v, &n);

	if (!n)
		return 0;
	p->notes = calloc(n, sizeof(*p->notes));
	if (!p->notes)
		return -ENOMEM;
	for (; p->nnotes < n; p->nnotes++) {
		p->notes[p->nnotes] = strdup(notes[p->nnotes]);
		if (!p->notes[p->nnotes])
			return -ENOMEM;
	}
	return 0;
}

int rep_collect(const struct rep_opts *o, struct rep_images *images, struct rep_profile **out)
{
	return rep_collect_keys(o, images, NULL, out);
}

/* The sample files below @dir that the profile specification selects,
 * into @c (a report of totals reads them there: preread), and @dir open
 * for the reads after; 0, or -errno after saying why there are none. */
static int list_files(struct collector *c, const char *dir, struct rep_progress *progress)
{
	int rc;

	rep_progress_begin(progress, "listing sample files", 0);
	c->progress = progress;
	rc = find_files(c, dir);
	rep_progress_end(progress);
	if (rc) {
		du_err("cannot list %s: %s", dir, strerror(-rc));
		return rc;
	}
	if (!c->nfiles) {
		if (c->nseen || c->npruned)
			du_err("no sample file in %s matches the profile specification", dir);
		else
			du_err("no sample files in %s", dir);
		return -ENODATA;
	}
	c->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->dir_fd < 0) {
		rc = -errno;
		du_err("cannot read %s: %s", dir, strerror(errno));
	}
	return rc;
}

int rep_collect_keys(const struct rep_opts *o, struct rep_images *images,
		     const struct rep_key_sink *sink, struct rep_profile **out)
{
	struct collector c = { .o = o, .images = images, .sink = sink, .dir_fd = -1 };
	struct rep_progress progress = { 0 };	/* silent until begun */
	char *dir = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	c.p = calloc(1, sizeof(*c.p));
	c.groups = rep_strmap_new();
	c.rowmap = rep_u64map_new();
	if (c.p && c.groups && c.rowmap)
		dir = rep_samples_path(o, NULL);
	if (!dir) {
		du_err("out of memory");
		goto out_free;
	}
	rc = rep_samples_check(o);
	if (rc)
		goto out_free;
	rc = list_files(&c, dir, &progress);
	if (rc)
		goto out_free;
	rc = make_classes(&c);
	if (rc)
		goto out_oom;
	c.p->totals = calloc(c.p->nclasses, sizeof(*c.p->totals));
	if (!c.p->totals)
		goto out_oom;
	rep_progress_begin(&progress, "reading sample files", c.nfiles);
	for (size_t i = 0; i < c.nfiles; i++) {
		rep_progress_step(&progress, i);
		rc = read_file(&c, &c.files[i]);
		if (rc == -ENOMEM)
			goto out_oom;
		if (rc)
			goto out_free;	/* a key sink's error, reported by it */
	}
	if (c.ncorrupt)
		goto out_corrupt;
	if (!c.p->nfiles) {
		du_err("no readable sample files in %s", dir);
		rc = -ENODATA;
		goto out_free;
	}
	if (o->callgraph && o->symbols) {
		rc = read_cg_files(&c);
		if (rc == -ENOMEM)
			goto out_oom;
		if (rc)
			goto out_free;
		if (c.ncorrupt)
			goto out_corrupt;
	}
	if (c.images && copy_notes(c.p, rep_images_vstore(c.images)))
		goto out_oom;
	*out = c.p;
	c.p = NULL;
	rc = 0;
	goto out_free;
out_corrupt:
	du_err("corrupt sample files: %zu; no report (move them out of %s to report the rest)",
	       c.ncorrupt, dir);
	rc = -EBADMSG;
	goto out_free;
out_oom:
	du_err("out of memory while reading samples");
	rc = -ENOMEM;
out_free:
	rep_progress_end(&progress);
	if (c.dir_fd >= 0)
		close(c.dir_fd);
	free_files(&c);
	rep_strmap_free(c.groups);
	rep_u64map_free(c.rowmap);
	rep_profile_free(c.p);
	free(dir);
	return rc;
}
