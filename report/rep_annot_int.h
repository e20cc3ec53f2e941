/*
 * opannotate's state, shared by its two halves: rep_annotate.c (options,
 * images, the disassembly) and rep_annot_src.c (source files: found,
 * listed, interleaved with the disassembly, or written as an annotated
 * tree below --output-dir).  Not a library interface.
 */
#ifndef REP_ANNOT_INT_H
#define REP_ANNOT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rep_child.h"
#include "rep_opts.h"
#include "sfname/sfname.h"

struct rep_annot_res;
struct rep_images;
struct rep_profile;
struct rep_u64map;
struct rep_asrc_cache;
struct rep_asrc_tree;

/* One sampled address of an image, with a count per class. */
struct addr {
	uint64_t vma;
	long sym;
	uint64_t *counts;
};

/* One binary as seen from one owner (host and vmm share binaries). */
struct img {
	const struct rep_bin *bin;
	char *domain;		/* NULL: host */
	bool vmm;
	struct sfn_image dep;
	struct rep_u64map *byvma;
	struct addr *a;
	size_t na;
	uint64_t *total;
};

/* Where source files are looked for (see rep_asrc_open()). */
struct rep_asrc_opts {
	const char *source_dir;	/* --source-dir: a guest's sources, below it only */
	char **search_dirs;	/* --search-dirs: a host binary's, tried first */
	size_t nsearch;
	char **base_dirs;	/* --base-dirs: prefixes taken off absolute names */
	size_t nbase;
};

struct annot {
	struct rep_opts o;
	bool assembly, source;	/* both: mixed mode */
	struct rep_images *images;
	const struct rep_profile *p;
	size_t nclasses;
	struct img *imgs;
	size_t nimgs;
	long last;		/* the image of the previous key */
	uint64_t *zero;		/* [nclasses] zeros */
	FILE *out;
	struct rep_asrc_opts so;
	const char *output_dir;	/* --output-dir: an annotated source tree */
	int out_dfd;		/* it, open */
	struct rep_asrc_tree *tree;	/* with --output-dir: every image's lines */
	struct rep_asrc_cache *texts;	/* mixed mode: source files read */
	char *cmdline;		/* for the tree's files */
	struct rep_child_cfg cfg;	/* how parser children run */
	char *archive_debug;	/* SESSION/archive/usr/lib/debug */
	bool dbgd_gave_up;	/* a debuginfod server let an image wait its bound */
};

/* "  samples %" columns for @c (blank when all zero); true when hot in @block. */
bool rep_annot_counts(FILE *f, const struct annot *a, const uint64_t *c, const uint64_t *block);
/* Above --threshold in some class. */
bool rep_annot_above(const struct annot *a, const uint64_t *c);

/* --source of @m from its parser child's table @res (addresses in m->a's
 * order): printed now, or with --output-dir added to the tree.  0 or
 * -ENOMEM. */
int rep_asrc_annotate(struct annot *a, const struct img *m, const struct rep_annot_res *res);
/* Mixed mode: @res's disassembly with the source line of each mark
 * printed before it. */
void rep_asrc_print_mixed(struct annot *a, const struct img *m, const struct rep_annot_res *res);
/* --output-dir: open (made when missing) and the tree begun.  0, or -errno
 * said on standard error. */
int rep_asrc_tree_begin(struct annot *a);
/* --output-dir: every source file of the tree written below it, a line
 * on a->out for each.  0 or -errno (a file that could not be written is
 * said on standard error and does not stop the others). */
int rep_asrc_tree_write(struct annot *a);
/* Everything the source half holds. */
void rep_asrc_release(struct annot *a);


#endif
