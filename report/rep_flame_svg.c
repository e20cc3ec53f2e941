/*
 * A flame graph drawn (rep_flame_write_svg): the frames laid out, children
 * by count, and written as one self-contained SVG with its script (zoom,
 * search), flamegraph.pl's look.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_flame_int.h"

/* Geometry of the picture, in SVG user units (pixels). */
#define FG_WIDTH 1200
#define FG_PAD 10
#define FG_FRAME_H 17
#define FG_TOP 56		/* title, buttons, legend */
#define FG_BOTTOM 30		/* details line */
#define FG_CHAR_W 7		/* average glyph width at 12px */

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
