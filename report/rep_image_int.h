/*
 * The image cache's state, shared by its two files: rep_image.c (the
 * cache: binaries loaded in parser children, kernels, debug info) and
 * rep_image_locate.c (which file holds an image's binary).  Not an
 * interface: rep_image.h is.
 */
#ifndef REP_IMAGE_INT_H
#define REP_IMAGE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "rep_child.h"

struct rep_bin;
struct rep_kernel;
struct rep_opts;
struct rep_strmap;
struct rep_vstore;

struct rep_images {
	const struct rep_opts *o;
	struct rep_strmap *by_key;	/* cache key -> index in bins (SIZE_MAX-free) */
	struct rep_strmap *by_bid;	/* owner, build-id -> index of the entry owning its table */
	struct cached {
		const struct rep_bin *bin;	/* NULL: tried, nothing found */
		struct rep_bin *owned;		/* kernel tables belong to kernel */
		char *build_id;			/* hex, as its parser child read it */
		char *debug_file;		/* where its debug info was found */
	} *bins;
	size_t nbins;
	struct rep_strmap *basenames;	/* -p: basename -> index in found */
	/* each (owner, vmm, path) located once: a candidate's identity is
	 * read once per report, whatever number of views ask */
	struct rep_strmap *located;	/* key -> index in locs */
	char **locs;			/* NULL: nothing found */
	size_t nlocs;
	char **found;
	size_t nfound;
	bool scanned;
	struct rep_kernel *kernel;
	bool kernel_tried;
	struct dom_kernel {
		char *domain;
		struct rep_kernel *kernel;	/* NULL: none found */
	} *dkern;
	size_t ndkern;
	struct rep_vstore *vs;		/* recorded identities, verdicts */
	struct rep_child_cfg cfg;	/* how parser children run */
	bool cfg_ready;
	char *archive_debug;		/* SESSION/archive/usr/lib/debug */
	bool dbgd_started;
	/* images without debug info: the first NODEBUG_SAID said each with
	 * where it was looked for, the others named in one line at the end */
	size_t nodebug;
	char nodebug_more[512];
	size_t nodebug_listed;		/* names in nodebug_more */
	unsigned int dbgd_left_ms;	/* debuginfod time left to this report */
	unsigned int dbgd_image_ms;	/* and for one image */
};

#endif
