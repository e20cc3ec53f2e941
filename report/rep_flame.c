/*
 * Flame graphs (rep_flame.h): the tree of frames built from a profile and
 * its recorded stacks, turned callers-first, written to a file; opflame.
 * Drawing it is rep_flame_svg.c's.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_flame.h"
#include "rep_flame_int.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_stacks.h"
#include "rep_sym.h"
#include "rep_view.h"
#include "util/du_log.h"

struct rep_flame *rep_flame_new(void)
{
	struct rep_flame *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->child = rep_strmap_new();
	f->v = calloc(64, sizeof(*f->v));
	f->cap = 64;
	if (!f->child || !f->v || !(f->v[0].name = strdup("all"))) {
		rep_flame_free(f);
		errno = ENOMEM;
		return NULL;
	}
	f->nv = 1;
	return f;
}

void rep_flame_free(struct rep_flame *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nv; i++)
		free(f->v[i].name);
	free(f->v);
	rep_strmap_free(f->child);
	free(f);
}

static long child_of(struct rep_flame *f, size_t parent, const char *name, enum rep_frame_kind kind)
{
	char *key = NULL;
	long i;

	if (asprintf(&key, "%zu\x01%s", parent, name) < 0)
		return -ENOMEM;
	i = rep_strmap_get(f->child, key);
	if (i >= 0)
		goto out;
	if (f->nv == f->cap) {
		struct fnode *nv = realloc(f->v, 2 * f->cap * sizeof(*nv));

		if (!nv)
			goto out_oom;
		f->v = nv;
		f->cap *= 2;
	}
	memset(&f->v[f->nv], 0, sizeof(f->v[f->nv]));
	f->v[f->nv].name = strdup(name);
	if (!f->v[f->nv].name)
		goto out_oom;
	f->v[f->nv].kind = kind;
	f->v[f->nv].depth = f->v[parent].depth + 1;
	f->v[f->nv].parent = parent;
	if (f->v[f->nv].depth > f->maxdepth)
		f->maxdepth = f->v[f->nv].depth;
	f->v[f->nv].next = f->v[parent].first;
	f->v[parent].first = f->nv;
	i = (long)f->nv++;
	if (rep_strmap_put(f->child, key, (size_t)i))
		goto out_oom;
out:
	free(key);
	return i;
out_oom:
	free(key);
	return -ENOMEM;
}

int rep_flame_add(struct rep_flame *f, const char *const *names,
		  const enum rep_frame_kind *kinds, size_t n, uint64_t count)
{
	size_t at = 0;

	f->v[0].n += count;
	for (size_t i = 0; i < n; i++) {
		long c = child_of(f, at, names[i], kinds[i]);

		if (c < 0)
			return (int)c;
		at = (size_t)c;
		f->v[at].n += count;
	}
	return 0;
}

/*
 * The path of a symbol of group @g: domain (or host), {vmm} or process,
 * binary, symbol.  *@app and *@img are malloc'd labels the names point
 * to (free them); -ENOMEM.
 */
static int symbol_path(const struct rep_group *g, const char *symname, const char **names,
		       enum rep_frame_kind *kinds, char **app, char **img)
{
	enum rep_frame_kind k;

	*app = NULL;
	*img = rep_view_dep_label(g, &g->dep);	/* marked as opreport marks it */
	if (!g->domain) {
		*app = rep_view_app_label(g);
		k = REP_FRAME_HOST;
		names[0] = "host";
		names[1] = *app;
	} else if (g->vmm) {
		k = REP_FRAME_VMM;
		names[0] = g->domain;
		names[1] = "{vmm}";
	} else {
		*app = rep_view_app_label(g);
		k = rep_view_is_guest_kernel(&g->dep) ? REP_FRAME_GUEST_KERNEL :
							REP_FRAME_GUEST_USER;
		names[0] = g->domain;
		names[1] = *app;
	}
	names[2] = *img;
	names[3] = symname;
	kinds[0] = g->domain ? REP_FRAME_DOMAIN : REP_FRAME_HOST;
	kinds[1] = g->vmm ? REP_FRAME_VMM : g->domain ? REP_FRAME_GUEST_USER : REP_FRAME_HOST;
	kinds[2] = kinds[3] = k;
	return *img && names[1] ? 0 : -ENOMEM;
}

int rep_flame_from_profile(struct rep_flame *f, const struct rep_profile *p, size_t cls)
{
	int rc = 0;

	for (size_t i = 0; i < p->nrows && !rc; i++) {
		const struct rep_symrow *r = &p->rows[i];
		const struct rep_group *g = &p->groups[r->group];
		const struct rep_sym *sym = r->sym >= 0 ? rep_bin_sym(r->bin, (size_t)r->sym) : NULL;
		uint64_t n = rep_counts(p, r->counts)[cls];
		char *app, *img;
		const char *names[4];
		enum rep_frame_kind kinds[4];

		if (!n)
			continue;
		rc = symbol_path(g, sym ? sym->name : "(no symbols)", names, kinds, &app, &img);
		if (!rc)
			rc = rep_flame_add(f, names, kinds, 4, n);
		free(app);
		free(img);
	}
	return rc;
}

/*
 * Add @count along @names[@nprefix..n) below the existing frame
 * @names[0..nprefix), whose own count stays as it is (its samples were
 * added with it).  Nothing when that frame does not exist; never more
 * below a frame than the frame holds.
 */
static int add_below(struct rep_flame *f, const char *const *names,
		     const enum rep_frame_kind *kinds, size_t nprefix, size_t n, uint64_t count)
{
	size_t at = 0;
	char *key = NULL;

	for (size_t i = 0; i < nprefix; i++) {
		long c;

		if (asprintf(&key, "%zu\x01%s", at, names[i]) < 0)
			return -ENOMEM;
		c = rep_strmap_get(f->child, key);
		free(key);
		if (c < 0)
			return 0;
		at = (size_t)c;
	}
	if (count > f->v[at].n - f->v[at].below)
		count = f->v[at].n - f->v[at].below;
	f->v[at].below += count;
	for (size_t i = nprefix; i < n && count; i++) {
		long c = child_of(f, at, names[i], kinds[i]);

		if (c < 0)
			return (int)c;
		at = (size_t)c;
		f->v[at].n += count;
	}
	return 0;
}

struct stacks_ctx {
	struct rep_flame *f;
	const struct rep_opts *o;
	const struct rep_profile *p;
	struct rep_images *images;
	size_t cls;
};

/* One recorded stack: its callers hang below its symbol's frame. */
static int add_stack(void *vctx, const struct rep_stack *s)
{
	struct stacks_ctx *c = vctx;
	const struct rep_class *k = &c->p->classes[c->cls];
	const struct sfn_name *l = s->leaf;
	unsigned merge = c->o->merge;
	struct rep_group g = {
		.domain = l->domain, .vmm = l->vmm, .dep = l->dep,
		.app = merge & REP_MERGE_LIB ? l->dep : l->image,
		.tgid = merge & REP_MERGE_TGID ? SFN_ALL : l->tgid,
		.tid = merge & REP_MERGE_TID ? SFN_ALL : l->tid,
		.cpu = merge & REP_MERGE_CPU ? SFN_ALL : l->cpu,
	};
	const char *names[4 + 128];
	enum rep_frame_kind kinds[4 + 128];
	char bufs[128][64], leafbuf[64], *app, *img;
	size_t n = 4;
	int rc;

	if (strcmp(k->event, l->event) || k->count != l->count ||
	    (!(merge & REP_MERGE_UNITMASK) && k->unit_mask != l->unit_mask))
		return 0;
	g.unverified = c->images && rep_images_unverified(c->images, l->domain, l->vmm, &l->dep);
	rc = symbol_path(&g, rep_stack_symbol(c->images, l, &l->dep, s->leaf_key, leafbuf,
					      sizeof(leafbuf)), names, kinds, &app, &img);
	for (size_t i = 0; !rc && i < s->n && n < 4 + 128; i++, n++) {
		names[n] = rep_stack_symbol(c->images, l, s->img[i], s->key[i], bufs[i],
					    sizeof(bufs[i]));
		kinds[n] = !l->domain ? REP_FRAME_HOST : l->vmm ? REP_FRAME_VMM :
			   rep_view_is_guest_kernel(s->img[i]) ? REP_FRAME_GUEST_KERNEL :
								  REP_FRAME_GUEST_USER;
	}
	if (!rc)
		rc = add_below(c->f, names, kinds, 4, n, s->count);
	free(app);
	free(img);
	return rc;
}

int rep_flame_add_stacks(struct rep_flame *f, const struct rep_opts *o,
			 struct rep_images *images, const struct rep_profile *p, size_t cls)
{
	struct stacks_ctx c = { .f = f, .o = o, .p = p, .images = images, .cls = cls };

	return rep_stacks_foreach(o, add_stack, &c, NULL);
}

/* Depth of the symbol frames: all, domain, process or {vmm}, binary, symbol. */
#define SYM_DEPTH 4

/*
 * One path of the callers-first tree: the symbol frame @sym's prefix
 * (domain, process, binary), then the callers from @top (the outermost
 * recorded one, @top == @sym for none) down to the first, then the symbol.
 */
static int add_reversed_path(struct rep_flame *out, const struct rep_flame *rev, size_t sym,
			     size_t top, uint64_t count)
{
	const char *names[SYM_DEPTH + 128];
	enum rep_frame_kind kinds[SYM_DEPTH + 128];
	size_t n = 0, chain[SYM_DEPTH];

	for (size_t at = sym, i = SYM_DEPTH; i-- > 0; at = rev->v[at].parent)
		chain[i] = at;
	for (size_t i = 0; i + 1 < SYM_DEPTH; i++, n++) {
		names[n] = rev->v[chain[i]].name;
		kinds[n] = rev->v[chain[i]].kind;
	}
	for (size_t at = top; at != sym && n < SYM_DEPTH + 127; at = rev->v[at].parent, n++) {
		names[n] = rev->v[at].name;
		kinds[n] = rev->v[at].kind;
	}
	names[n] = rev->v[sym].name;
	kinds[n] = rev->v[sym].kind;
	return rep_flame_add(out, names, kinds, n + 1, count);
}

int rep_flame_callers_first(const struct rep_flame *rev, struct rep_flame **out)
{
	struct rep_flame *f = rep_flame_new();
	int rc = 0;

	if (!f)
		return -ENOMEM;
	/* Nodes come after their parents: one pass finds each frame's own
	 * (exclusive) count, what no deeper caller took. */
	for (size_t i = 1; i < rev->nv && !rc; i++) {
		const struct fnode *v = &rev->v[i];
		uint64_t kids = 0;
		size_t sym = i;

		if (v->depth < SYM_DEPTH)
			continue;
		for (size_t c = v->first; c; c = rev->v[c].next)
			kids += rev->v[c].n;
		while (rev->v[sym].depth > SYM_DEPTH)
			sym = rev->v[sym].parent;
		if (v->n > kids)
			rc = add_reversed_path(f, rev, sym, i, v->n - kids);
	}
	if (rc) {
		rep_flame_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

int rep_flame_write_file(const struct rep_opts *o, struct rep_images *images,
			 const struct rep_profile *p, size_t cls, const char *path, unsigned int flags)
{
	struct rep_flame *fg = rep_flame_new(), *drawn = NULL;
	char *title = NULL;
	FILE *out;
	int rc = -ENOMEM;

	if (!fg || rep_flame_from_profile(fg, p, cls) ||
	    rep_flame_add_stacks(fg, o, images, p, cls) ||
	    (!(flags & REP_FLAME_REVERSE) && rep_flame_callers_first(fg, &drawn)) ||
	    asprintf(&title, "domprof: %s (%s, count %" PRIu64 ", %" PRIu64 " samples%s)",
		     o->session_dir, p->classes[cls].event, p->classes[cls].count,
		     p->totals[cls], flags & REP_FLAME_REVERSE ? ", callers of each function" : "") < 0) {
		title = NULL;
		du_err("out of memory");
		goto out;
	}
	out = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!out) {
		rc = -errno;
		du_err("cannot create %s: %s", path, strerror(errno));
		goto out;
	}
	rc = rep_flame_write_svg(drawn ? drawn : fg, out, title, flags);
	if (out != stdout && fclose(out) && !rc)
		rc = -errno;
	if (rc)
		du_err("cannot write %s: %s", path, strerror(-rc));
out:
	free(title);
	rep_flame_free(drawn);
	rep_flame_free(fg);
	return rc;
}

/* --- opflame ------------------------------------------------------------ */

struct flame_args {
	const char *output;
	const char *event;
	unsigned int flags;
};

static void usage(FILE *f)
{
	fputs("Usage: opflame -o FILE.svg [OPTION]... [PROFILE SPECIFICATION]...\n"
	      "Write the samples of a domprof session as an interactive flame graph (SVG),\n"
	      "the root at the bottom: domain, then {vmm} or process, the sampled binary,\n"
	      "then the recorded callers, outermost first (opcontrol --callgraph), and the\n"
	      "sampled function on top.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output=FILE       the SVG file to write (\"-\": standard output)\n"
	      "  -e, --event=NAME        the event to draw when the session has several\n"
	      "                          (default: the first)\n"
	      "      --icicle            the root at the top, frames hanging down\n"
	      "      --reverse           callers of each function: the sampled function\n"
	      "                          right above its binary, then its callers, innermost\n"
	      "                          first (each function's frame holds opreport's count)\n", f);
	fputs(rep_view_common_usage, f);
}

static int flame_opt(void *ctx, int c, const char *arg, char *err, size_t errlen)
{
	struct flame_args *a = ctx;

	switch (c) {
	case 'o':
		a->output = arg;
		return 0;
	case 'e':
		a->event = arg;
		return 0;
	case 'I':
		a->flags |= REP_FLAME_ICICLE;
		return 0;
	case 'R':
		a->flags |= REP_FLAME_REVERSE;
		return 0;
	case 0:
		if (a->output)
			return 0;
		snprintf(err, errlen, "give the output file with -o FILE.svg");
		return -EINVAL;
	default:
		snprintf(err, errlen, "unknown option");
		return -EINVAL;
	}
}

int rep_flame_main(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "icicle", no_argument, NULL, 'I' },
		{ "reverse", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct flame_args args = { 0 };
	struct rep_profile *p = NULL;
	struct rep_images *images = NULL;
	struct rep_opts o;
	size_t cls = 0;
	int rc, status = 1;

	du_log_set_prog("opflame");
	rc = rep_view_parse("opflame", &o, argc, argv, extra, "o:e:", flame_opt, &args, usage);
	if (rc) {
		status = rc == 1 ? 0 : 1;
		goto out;
	}
	if (rep_view_load(&o, &images, &p))
		goto out;
	if (args.event) {
		for (cls = 0; cls < p->nclasses && strcmp(p->classes[cls].event, args.event); cls++)
			;
		if (cls == p->nclasses) {
			du_err("no samples of event %s in the report", args.event);
			goto out;
		}
	}
	status = rep_flame_write_file(&o, images, p, cls, args.output, args.flags) ? 1 : 0;
	goto out;
out:
	rep_profile_free(p);
	rep_images_free(images);
	rep_opts_release(&o);
	return status;
}

