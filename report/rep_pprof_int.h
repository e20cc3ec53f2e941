/*
 * oppprof's profile builder, shared by its three files: rep_pprof.c
 * (samples, recorded stacks, the message and the program), rep_pprof_table.c
 * (the string, mapping, function and location tables) and
 * rep_pprof_lines.c (source files and lines from the binaries).  Not a
 * library interface: rep_pprof.h is.
 */
#ifndef REP_PPROF_INT_H
#define REP_PPROF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pprof.pb-c.h"
#include "rep_child.h"
#include "rep_collect.h"

struct rep_addrs;
struct rep_bin;
struct rep_images;
struct rep_opts;
struct rep_strmap;

typedef Domprof__Pprof__Profile Profile;
typedef Domprof__Pprof__ValueType ValueType;
typedef Domprof__Pprof__Sample Sample;
typedef Domprof__Pprof__Label Label;
typedef Domprof__Pprof__Mapping Mapping;
typedef Domprof__Pprof__Location Location;
typedef Domprof__Pprof__Line Line;
typedef Domprof__Pprof__Function Function;

/* Pointer arrays that grow; every element is malloc'd on its own. */
struct vec {
	void **v;
	size_t n, cap;
};

struct builder {
	const struct rep_opts *o;
	struct rep_images *images;
	const struct rep_profile *p;
	struct rep_strmap *strs, *maps, *locs, *funcs;
	struct vec str, vt, sample, mapping, location, function;
	/* recorded stacks: each row's counts not yet given to a stack
	 * ([nrows][nclasses]), rows by identity */
	uint64_t *left;
	struct rep_strmap *rowids;
	struct rep_addrs *k;	/* NULL: a location per symbol, at its start */
	int64_t *comments;	/* the report's warnings (unverified images) */
	/* per mapping (by id - 1): where its binary is (NULL: no symbols
	 * to give lines to) */
	struct maplines {
		char *located;
	} *ml;
	/* per function (by id - 1) made for a symbol: its mapping id and
	 * start address, for its source file and first line (0: none) */
	struct fsym {
		uint64_t mid, start;
	} *fsym;
	size_t fsym_cap;
	struct rep_child_cfg cfg;
	bool cfg_ready;
};

/* Appends @x (malloc'd; freed here when it cannot be kept) to @v.
 * 0 or -ENOMEM (also for @x NULL). */
int pp_vec_push(struct vec *v, void *x);

/* Index of @s in the string table, added on first use; -1: no memory. */
int64_t pp_str_id(struct builder *b, const char *s);

/* The mapping id (1-based) of group @g's binary; -ENOMEM. */
int64_t pp_mapping_id(struct builder *b, const struct rep_group *g, bool has_syms);

/* The function @name of source file @filename (an inlined frame's); -ENOMEM. */
int64_t pp_function_id(struct builder *b, const char *name, int64_t filename,
		       uint32_t start_line);

/*
 * The location of sample key *@skey (NULL: of the symbol's start) in
 * symbol @sym (-1: none) of @bin in mapping @mid.  Its address is the
 * key's vma in @bin (the key itself, a file offset, without symbols).
 */
int64_t pp_location_id(struct builder *b, int64_t mid, const struct rep_bin *bin, long sym,
		       const uint64_t *skey);

/* Puts the mapping whose code took the most samples first (pprof's main
 * binary). */
void pp_main_mapping_first(struct builder *b);

/* Source files and lines for the functions and locations of every mapping
 * whose binary was found (rep_pprof_lines.c). */
void pp_fill_lines(struct builder *b);

#endif
