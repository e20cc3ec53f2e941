#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_flame.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_stacks.h"
#include "rep_sym.h"
#include "rep_view.h"
#include "util/du_log.h"

/* Geometry of the picture, in SVG user units (pixels). */
#define FG_WIDTH 1200
#define FG_PAD 10
#define FG_FRAME_H 17
#define FG_TOP 56		/* title, buttons, legend */
#define FG_BOTTOM 30		/* details line */
#define FG_CHAR_W 7		/* average glyph width at 12px */

struct fnode {
	char *name;
	enum rep_frame_kind kind;
	uint64_t n;
	uint64_t below;		/* of n, what add_below hung under it */
	uint64_t x;		/* samples to the left of the frame, at its depth */
	unsigned int depth;
	size_t parent;
	size_t first, next;	/* children list; 0 ends it (0 is the root) */
};

struct rep_flame {
	struct fnode *v;
	size_t nv, cap;
	struct rep_strmap *child;	/* "parent\x01name" -> index */
	unsigned int maxdepth;
};

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

/* --- layout and SVG ----------------------------------------------------- */

static struct fnode *sort_base;

static int cmp_child(const void *a, const void *b)
{
	const struct fnode *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Children by count, largest left; x offsets from the parent's.  Iterative:
 * call stacks may one day be deep. */
static int layout(struct rep_flame *f)
{
	size_t *stack = malloc(f->nv * sizeof(*stack)), *kids = malloc(f->nv * sizeof(*kids));
	size_t sp = 0;

	if (!stack || !kids) {
		free(stack);
		free(kids);
		return -ENOMEM;
	}
	sort_base = f->v;
	stack[sp++] = 0;
	while (sp) {
		size_t at = stack[--sp], nk = 0;
		uint64_t x = f->v[at].x;

		for (size_t c = f->v[at].first; c; c = f->v[c].next)
			kids[nk++] = c;
		qsort(kids, nk, sizeof(*kids), cmp_child);
		f->v[at].first = nk ? kids[0] : 0;
		for (size_t i = 0; i < nk; i++) {
			f->v[kids[i]].next = i + 1 < nk ? kids[i + 1] : 0;
			f->v[kids[i]].x = x;
			x += f->v[kids[i]].n;
			stack[sp++] = kids[i];
		}
	}
	free(stack);
	free(kids);
	return 0;
}

static void put_escaped(FILE *out, const char *s, size_t max)
{
	for (size_t i = 0; s[i] && i < max; i++) {
		switch (s[i]) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			/* Control bytes are not allowed in XML 1.0 at all. */
			fputc((unsigned char)s[i] < 0x20 ? '?' : s[i], out);
		}
	}
}

static const char *kind_class(enum rep_frame_kind k)
{
	static const char *const names[] = {
		[REP_FRAME_ROOT] = "root", [REP_FRAME_DOMAIN] = "domain", [REP_FRAME_HOST] = "host",
		[REP_FRAME_GUEST_KERNEL] = "gkern", [REP_FRAME_GUEST_USER] = "guser",
		[REP_FRAME_VMM] = "vmm",
	};
	return names[k];
}

/* A colour of the kind's family, varied by name so neighbours differ. */
static void frame_colour(const struct fnode *n, char *buf, size_t size)
{
	unsigned int h = 2166136261u;
	int v;

	for (const char *s = n->name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	v = (int)(h % 60);
	switch (n->kind) {
	case REP_FRAME_HOST:		/* warm: red to orange */
		snprintf(buf, size, "rgb(%d,%d,%d)", 225 + v % 30, 90 + v * 2, 50 + v / 2);
		break;
	case REP_FRAME_GUEST_KERNEL:	/* blue */
		snprintf(buf, size, "rgb(%d,%d,%d)", 70 + v, 130 + v, 230);
		break;
	case REP_FRAME_GUEST_USER:	/* green */
		snprintf(buf, size, "rgb(%d,%d,%d)", 80 + v, 190 + v / 2, 90 + v / 2);
		break;
	case REP_FRAME_VMM:		/* violet */
		snprintf(buf, size, "rgb(%d,%d,%d)", 170 + v, 110 + v / 2, 215);
		break;
	default:			/* grey */
		snprintf(buf, size, "rgb(%d,%d,%d)", 190 + v / 3, 190 + v / 3, 190 + v / 3);
	}
}

/* The script: hover details, click to zoom, search.  Written for this
 * file; frame geometry comes from data-x (samples left of the frame at
 * its depth), data-n (samples) and data-d (depth). */
static const char fg_script[] =
	"var W = " "1200" ", PAD = 10, total = 0, frames = [], zoomed = null;\n"
	"function fitWindow() {\n"
	"  var svg = document.documentElement, w = Math.floor(window.innerWidth || 0);\n"
	"  if (w < 600 || w === W) return;\n"
	"  W = w;\n"
	"  svg.setAttribute('width', W);\n"
	"  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + svg.getAttribute('height'));\n"
	"  document.getElementById('bg').setAttribute('width', W);\n"
	"  document.getElementById('title').setAttribute('x', W / 2);\n"
	"  document.getElementById('search').setAttribute('x', W - PAD - 60);\n"
	"  document.getElementById('matched').setAttribute('x', W - PAD);\n"
	"  if (zoomed) zoom(zoomed); else unzoom();\n"
	"}\n"
	"function nameOf(g) { return g.getAttribute('data-name'); }\n"
	"function fit(g, w) {\n"
	"  var t = g.querySelector('text'), s = nameOf(g), m = Math.floor((w - 6) / 7);\n"
	"  t.textContent = m < 3 ? '' : (s.length <= m ? s : s.substring(0, m - 2) + '..');\n"
	"}\n"
	"function place(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  r.setAttribute('x', x.toFixed(2)); r.setAttribute('width', Math.max(w, 0).toFixed(2));\n"
	"  t.setAttribute('x', (x + 3).toFixed(2)); fit(g, w);\n"
	"}\n"
	"function pct(n) { return total ? (100 * n / total).toFixed(2) : '0.00'; }\n"
	"function details(g) {\n"
	"  var n = +g.getAttribute('data-n');\n"
	"  return nameOf(g) + ' (' + n + ' samples, ' + pct(n) + '%)';\n"
	"}\n"
	"function zoom(g) {\n"
	"  var x0 = +g.getAttribute('data-x'), n0 = +g.getAttribute('data-n'), d0 = +g.getAttribute('data-d');\n"
	"  var scale = (W - 2 * PAD) / n0;\n"
	"  zoomed = g;\n"
	"  frames.forEach(function (f) {\n"
	"    var x = +f.getAttribute('data-x'), n = +f.getAttribute('data-n'), d = +f.getAttribute('data-d');\n"
	"    var show = d < d0 ? (x <= x0 && x + n >= x0 + n0) : (x >= x0 && x + n <= x0 + n0);\n"
	"    f.style.display = show ? '' : 'none';\n"
	"    f.classList.toggle('parent', show && d < d0);\n"
	"    if (show) place(f, d < d0 ? PAD : PAD + (x - x0) * scale, d < d0 ? W - 2 * PAD : n * scale);\n"
	"  });\n"
	"  document.getElementById('unzoom').style.opacity = 1;\n"
	"}\n"
	"function unzoom() { zoom(frames[0]); zoomed = null; document.getElementById('unzoom').style.opacity = 0.3; }\n"
	"function search(term) {\n"
	"  var re, spans = [], matched = 0, end = -1;\n"
	"  try { re = new RegExp(term); } catch (e) { return -1; }\n"
	"  frames.forEach(function (f) {\n"
	"    var hit = term !== '' && re.test(nameOf(f));\n"
	"    f.classList.toggle('match', hit);\n"
	"    if (hit) spans.push([+f.getAttribute('data-x'), +f.getAttribute('data-n')]);\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"  spans.forEach(function (s) {\n"
	"    var lo = Math.max(s[0], end), hi = s[0] + s[1];\n"
	"    if (hi > lo) { matched += hi - lo; end = hi; }\n"
	"  });\n"
	"  var m = document.getElementById('matched');\n"
	"  m.textContent = spans.length ? 'Matched: ' + matched + ' samples, ' + pct(matched) + '%' : '';\n"
	"  m.setAttribute('data-matched', matched);\n"
	"  return matched;\n"
	"}\n"
	"function init() {\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  total = +frames[0].getAttribute('data-n');\n"
	"  var det = document.getElementById('details');\n"
	"  frames.forEach(function (f) {\n"
	"    f.addEventListener('mouseover', function () { det.textContent = details(f); });\n"
	"    f.addEventListener('mouseout', function () { det.textContent = ' '; });\n"
	"    f.addEventListener('click', function () { zoom(f); });\n"
	"  });\n"
	"  document.getElementById('unzoom').addEventListener('click', unzoom);\n"
	"  document.getElementById('search').addEventListener('click', function () {\n"
	"    var t = prompt('Search frames (regular expression); empty clears', '');\n"
	"    if (t !== null) search(t);\n"
	"  });\n"
	"  fitWindow();\n"
	"  window.addEventListener('resize', fitWindow);\n"
	"  var h = /[#&]search=([^&]*)/.exec(location.hash);\n"
	"  if (h) search(decodeURIComponent(h[1]));\n"
	"  var z = /[#&]zoom=([^&]*)/.exec(location.hash);\n"
	"  if (z) { var zn = decodeURIComponent(z[1]);\n"
	"    frames.some(function (f) { if (nameOf(f) === zn) { zoom(f); return true; } return false; }); }\n"
	"}\n"
	"window.addEventListener('load', init);\n";

/* The SVG's head: styles, script, background, title, buttons, legend and
 * the two status lines, for a picture @height pixels high. */
static void write_head(FILE *out, const char *title, unsigned int height)
{
	static const struct {
		enum rep_frame_kind k;
		const char *label;
	} legend[] = {
		{ REP_FRAME_HOST, "host" }, { REP_FRAME_GUEST_KERNEL, "guest kernel" },
		{ REP_FRAME_GUEST_USER, "guest user" }, { REP_FRAME_VMM, "vmm (host work for a guest)" },
	};

	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%u\" "
		"viewBox=\"0 0 %d %u\">\n", FG_WIDTH, height, FG_WIDTH, height);
	fputs("<style type=\"text/css\">\n"
	      "text { font-family: monospace; font-size: 12px; fill: #000; }\n"
	      "#title { font-size: 17px; }\n"
	      ".btn { cursor: pointer; fill: #0645ad; }\n"
	      "g.f { cursor: pointer; }\n"
	      "g.f rect { stroke: #fff; stroke-width: 0.5; }\n"
	      "g.f:hover rect { stroke: #000; }\n"
	      "g.f.parent rect { opacity: 0.5; }\n"
	      "g.f.match rect { fill: rgb(230,0,230); }\n"
	      "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n", out);
	fputs(fg_script, out);
	fputs("]]></script>\n", out);
	fprintf(out, "<rect id=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%u\" fill=\"#f6f6f2\"/>\n",
		FG_WIDTH, height);
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"22\" text-anchor=\"middle\">", FG_WIDTH / 2);
	put_escaped(out, title, 300);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"22\" style=\"opacity:0.3\">"
		"Reset zoom</text>\n", FG_PAD);
	fprintf(out, "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"22\">Search</text>\n",
		FG_WIDTH - FG_PAD - 60);
	for (size_t i = 0; i < sizeof(legend) / sizeof(legend[0]); i++) {
		struct fnode probe = { .name = (char *)"", .kind = legend[i].k };
		char col[32];

		frame_colour(&probe, col, sizeof(col));
		fprintf(out, "<rect x=\"%zu\" y=\"32\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%zu\" y=\"43\">%s</text>\n", FG_PAD + i * 240, col,
			FG_PAD + i * 240 + 16, legend[i].label);
	}
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", FG_PAD, height - 10);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"></text>\n",
		FG_WIDTH - FG_PAD, height - 10);
}

/* Frame @n as a <g>; false when it is left out (with its callers, which
 * are no wider): recorded callers narrower than half a pixel, as
 * flamegraph.pl's minwidth does, for a whole system's stacks are hundreds
 * of thousands. */
static bool write_frame(const struct rep_flame *f, FILE *out, const struct fnode *n,
			double scale, unsigned int flags)
{
	double x = FG_PAD + (double)n->x * scale, w = (double)n->n * scale;
	/* flamegraph.pl's way: the root at the bottom */
	unsigned int y = FG_TOP + (flags & REP_FLAME_ICICLE ? n->depth :
				   f->maxdepth - n->depth) * FG_FRAME_H;
	int chars = (int)((w - 6) / FG_CHAR_W);
	char col[32], pct[32];

	if (n->depth > 4 && w < 0.5)
		return false;
	frame_colour(n, col, sizeof(col));
	snprintf(pct, sizeof(pct), "%.2f",
		 f->v[0].n ? 100.0 * (double)n->n / (double)f->v[0].n : 0.0);
	fprintf(out, "<g class=\"f k-%s\" data-n=\"%" PRIu64 "\" data-x=\"%" PRIu64
		"\" data-d=\"%u\" data-name=\"", kind_class(n->kind), n->n, n->x, n->depth);
	put_escaped(out, n->name, SIZE_MAX);
	fputs("\"><title>", out);
	put_escaped(out, n->name, SIZE_MAX);
	fprintf(out, " (%" PRIu64 " samples, %s%%)</title>", n->n, pct);
	fprintf(out, "<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		"rx=\"2\"/><text x=\"%.2f\" y=\"%u\">", x, y, w, FG_FRAME_H - 1, col,
		x + 3, y + 12);
	if (chars >= 3) {
		size_t len = strlen(n->name);

		if (len <= (size_t)chars) {
			put_escaped(out, n->name, len);
		} else {
			put_escaped(out, n->name, (size_t)chars - 2);
			fputs("..", out);
		}
	}
	fputs("</text></g>\n", out);
	return true;
}

/* Every frame, pre-order, so a parent always comes before its children. */
static int write_frames(const struct rep_flame *f, FILE *out, double scale, unsigned int flags)
{
	size_t *stack = malloc(f->nv * sizeof(*stack)), sp = 0;

	if (!stack)
		return -ENOMEM;
	stack[sp++] = 0;
	while (sp) {
		size_t at = stack[--sp], nk = 0;
		const struct fnode *n = &f->v[at];

		if (!write_frame(f, out, n, scale, flags))
			continue;
		/* Push children right to left so the leftmost comes out first. */
		for (size_t c = n->first; c; c = f->v[c].next)
			nk++;
		sp += nk;
		for (size_t c = n->first, i = 0; c; c = f->v[c].next, i++)
			stack[sp - 1 - i] = c;
	}
	free(stack);
	return 0;
}

int rep_flame_write_svg(struct rep_flame *f, FILE *out, const char *title, unsigned int flags)
{
	unsigned int height = FG_TOP + (f->maxdepth + 1) * FG_FRAME_H + FG_BOTTOM;
	double scale = f->v[0].n ? (double)(FG_WIDTH - 2 * FG_PAD) / (double)f->v[0].n : 0;
	int rc = layout(f);

	if (rc)
		return rc;
	write_head(out, title, height);
	fputs("<g id=\"frames\">\n", out);
	rc = write_frames(f, out, scale, flags);
	if (rc)
		return rc;
	fputs("</g>\n</svg>\n", out);
	if (fflush(out) || ferror(out))
		return -EIO;
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
