/*
 * The whole call stacks a session recorded with --callgraph
 * (SESSION/samples/current/{stacks}/START.PID, doc/sample-files.md), for the
 * views that draw stacks: opflame and oppprof.
 */
#ifndef REP_STACKS_H
#define REP_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "sfname/sfname.h"

struct rep_opts;
struct rep_images;

/* One recorded stack, borrowed for the callback's duration. */
struct rep_stack {
	const struct sfn_name *leaf;	/* the sample's flat file name */
	uint64_t leaf_key;		/* its key there */
	uint64_t count;
	size_t n;			/* callers, innermost first */
	const struct sfn_image *const *img;	/* [n] the binary of each */
	const uint64_t *key;		/* [n] its key in that binary */
};

typedef int (*rep_stack_fn)(void *ctx, const struct rep_stack *s);

/*
 * Call @fn for every stack of the session whose leaf file matches
 * @o->spec, in file order (the files of several daemon runs one after
 * the other: the same stack may come more than once).  Lines that do not
 * parse are skipped and counted in *@bad (may be NULL).  0 (also when the
 * session has no stacks), -ENOMEM, or what @fn returned.
 */
int rep_stacks_foreach(const struct rep_opts *o, rep_stack_fn fn, void *ctx, size_t *bad);

/*
 * The symbol name of @key in @img (as a frame of @leaf's domain), or
 * "[IMAGE]" when it has none: into @buf, returned.
 */
const char *rep_stack_symbol(struct rep_images *images, const struct sfn_name *leaf,
			     const struct sfn_image *img, uint64_t key, char *buf, size_t size);

#endif
