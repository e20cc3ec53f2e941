/*
 * Flame graphs of a collected profile: a tree of frames (domain, then
 * {vmm} or the guest process, binary, symbol; for the host: host, process,
 * binary, symbol) written as one self-contained interactive SVG.  The tree
 * is built callers-of first: recorded call stacks (--callgraph) hang below
 * each symbol frame, its callers innermost first (rep_flame_add_stacks),
 * so that the symbol frames keep exactly opreport's counts; that is the
 * --reverse view.  The default view (flamegraph.pl's) is made from it by
 * rep_flame_callers_first(): domain, process, binary, then the callers
 * outermost first and the sampled function on top, the root drawn at the
 * bottom (REP_FLAME_ICICLE: at the top).
 */
#ifndef REP_FLAME_H
#define REP_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rep_profile;

/* What a frame belongs to; it picks the colour. */
enum rep_frame_kind {
	REP_FRAME_ROOT,
	REP_FRAME_DOMAIN,	/* a domain's own frame (or "host") */
	REP_FRAME_HOST,
	REP_FRAME_GUEST_KERNEL,
	REP_FRAME_GUEST_USER,
	REP_FRAME_VMM,
};

struct rep_flame;

struct rep_flame *rep_flame_new(void);		/* NULL, errno set */
void rep_flame_free(struct rep_flame *f);	/* NULL accepted */

/* Add @count samples along the path @names[0..n) (root excluded), each
 * frame of kind @kinds[i].  0 or -ENOMEM. */
int rep_flame_add(struct rep_flame *f, const char *const *names,
		  const enum rep_frame_kind *kinds, size_t n, uint64_t count);

/* The frames of @p's class @cls, as described above.  0 or -ENOMEM. */
int rep_flame_from_profile(struct rep_flame *f, const struct rep_profile *p, size_t cls);

/* The session's recorded stacks (rep_stacks.h) of @p's class @cls under
 * the symbol frames rep_flame_from_profile made.  0 or -ENOMEM. */
struct rep_opts;
struct rep_images;
int rep_flame_add_stacks(struct rep_flame *f, const struct rep_opts *o,
			 struct rep_images *images, const struct rep_profile *p, size_t cls);

/* How a flame graph is drawn: the root at the top instead of the bottom;
 * the callers-of tree as built instead of rep_flame_callers_first()'s. */
#define REP_FLAME_ICICLE	1u
#define REP_FLAME_REVERSE	2u

/*
 * The flamegraph.pl order of @rev (a tree built by rep_flame_from_profile
 * and rep_flame_add_stacks): each recorded stack as domain, process,
 * binary, its callers outermost first, then the sampled symbol; samples
 * without a stack as domain, process, binary, symbol.  *@out is new (free
 * it).  0 or -ENOMEM.
 */
int rep_flame_callers_first(const struct rep_flame *rev, struct rep_flame **out);

/* Write the SVG, titled @title (escaped here), drawn as @flags says
 * (REP_FLAME_ICICLE).  0 or -errno. */
int rep_flame_write_svg(struct rep_flame *f, FILE *out, const char *title, unsigned int flags);

/* The whole of opflame's output for @p's class @cls (stacks included)
 * into @path ("-": stdout), drawn as @flags says; opreport
 * --flamegraph=FILE.  0 or -errno (logged). */
int rep_flame_write_file(const struct rep_opts *o, struct rep_images *images,
			 const struct rep_profile *p, size_t cls, const char *path,
			 unsigned int flags);

/* Run opflame with @argv; returns the exit status. */
int rep_flame_main(int argc, char **argv);

#endif
