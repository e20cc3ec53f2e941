/*
 * oppprof: source files and lines from the profiled binaries, read in
 * opannotate's confined parser child, for pprof's -list, -lines and
 * -disasm.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "rep_annot_child.h"
#include "rep_debug.h"
#include "rep_opts.h"
#include "rep_pprof_int.h"

/* A binary with more addresses than this gets no source lines (a parse
 * has its limits). */
#define LINES_MAX_VMAS 200000u

/*
 * Location @loc's lines from the chain @f[0..@nf) its address has
 * (innermost first): the last entry stays its function, at the line the
 * chain gives; each frame inlined into it becomes an entry before it,
 * the function whose code it is, in its own source file.  A lone frame
 * in another file than its function's (no inline info) changes nothing.
 */
static int set_lines(struct builder *b, Location *loc, const struct rep_annot_frame *f,
		     unsigned int nf)
{
	Line *own = loc->line[0], **lines;
	const Function *fn = b->function.v[own->function_id - 1];

	if (!nf || !f[nf - 1].line)
		return 0;
	if (nf == 1) {
		if (f[0].file && pp_str_id(b, f[0].file) == fn->filename)
			own->line = f[0].line;
		return 0;
	}
	lines = calloc(nf, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (unsigned int k = 0; k + 1 < nf; k++) {
		int64_t file = f[k].file ? pp_str_id(b, f[k].file) : 0;
		int64_t fid = file < 0 ? file
				       : pp_function_id(b, f[k].func ? f[k].func : "(inlined)", file, 0);

		lines[k] = malloc(sizeof(**lines));
		if (fid < 0 || !lines[k]) {
			for (unsigned int j = 0; j <= k; j++)
				free(lines[j]);
			free(lines);
			return -ENOMEM;
		}
		domprof__pprof__line__init(lines[k]);
		lines[k]->function_id = (uint64_t)fid;
		lines[k]->line = f[k].line;
	}
	own->line = f[nf - 1].line;
	lines[nf - 1] = own;
	free(loc->line);
	loc->line = lines;
	loc->n_line = nf;
	return 0;
}

/*
 * Function @f's source file and first line from the chain at its start:
 * the outermost frame's (code inlined at a function's first instruction
 * is not where the function stands).
 */
static void set_function(struct builder *b, Function *f, const struct rep_annot_frame *fr,
			 unsigned int nf)
{
	int64_t file;

	if (!nf || !fr[nf - 1].file || !fr[nf - 1].line)
		return;
	file = pp_str_id(b, fr[nf - 1].file);
	if (file < 0)
		return;
	f->filename = file;
	f->start_line = fr[nf - 1].line;
}

/*
 * Source files and lines from a mapping's binary: its functions' starts
 * and its locations' addresses, in one confined parser child (the same as
 * opannotate's: this process reads no ELF).  Each function gets its
 * source file and first line, so that pprof -list shows its source; each
 * location its own line and the frames inlined there, so that -list,
 * -lines and -disasm give counts per line and inlined code its own
 * function.
 */
static void fill_mapping(struct builder *b, uint64_t mid, const struct rep_debug_opts *dopts)
{
	struct rep_annot_req r = { .file = b->ml[mid - 1].located, .dopts = dopts, .fd = -1,
				   .inlines = true };
	size_t cap = b->function.n + b->location.n, n = 0, nf = 0;
	void **at = calloc(cap ? cap : 1, sizeof(*at));
	uint64_t *vmas = calloc(cap ? cap : 1, sizeof(*vmas));
	struct rep_annot_res res;
	char err[256];

	for (size_t i = 0; at && vmas && i < b->function.n && i < b->fsym_cap; i++) {
		if (b->fsym[i].mid == mid) {
			at[n] = b->function.v[i];
			vmas[n++] = b->fsym[i].start;
		}
	}
	nf = n;
	for (size_t i = 0; at && vmas && i < b->location.n; i++) {
		Location *loc = b->location.v[i];

		if (loc->mapping_id == mid && loc->address) {
			at[n] = loc;
			vmas[n++] = loc->address;
		}
	}
	if (n && n <= LINES_MAX_VMAS)
		r.fd = open(r.file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	r.vmas = vmas;
	r.nvmas = n;
	if (r.fd >= 0 && !rep_annot_run(&b->cfg, &r, &res, err, sizeof(err))) {
		/* the functions first: a location's lone line is kept only in
		 * its function's file */
		for (size_t j = 0; res.have_lines && res.frames && j < nf; j++)
			set_function(b, at[j], res.frames[j], res.nframes[j]);
		for (size_t j = nf; res.have_lines && res.frames && j < n; j++)
			if (set_lines(b, at[j], res.frames[j], res.nframes[j]))
				break;
		rep_annot_res_free(&res, n);
	}
	if (r.fd >= 0)
		close(r.fd);
	free(at);
	free(vmas);
}

void pp_fill_lines(struct builder *b)
{
	struct rep_debug_opts dopts = { .debug_dir = b->o->debug_dir, .need_lines = true };

	if (getenv("DEBUGINFOD_URLS"))
		dopts.debuginfod_ms = 15000;
	if (!b->cfg_ready && rep_child_cfg_init(&b->cfg))
		return;
	b->cfg_ready = true;
	for (size_t m = 0; m < b->mapping.n; m++)
		if (b->ml[m].located)
			fill_mapping(b, m + 1, &dopts);
}
