/*
 * A flame graph's tree, shared by its two files: rep_flame.c (the tree
 * built from a profile and its recorded stacks; opflame) and
 * rep_flame_svg.c (the tree laid out and drawn as an SVG).  Not an
 * interface: rep_flame.h is.
 */
#ifndef REP_FLAME_INT_H
#define REP_FLAME_INT_H

#include <stddef.h>
#include <stdint.h>

#include "rep_flame.h"

struct rep_strmap;

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

#endif
