/*
 * Finding the sample files of a session that match a specification, and
 * aggregating them: per group (domain, application image, dependent image,
 * tgid/tid/cpu as --merge leaves them) and, for -l, per symbol.  Counts are
 * kept per class (event, count, unit mask), the columns of the report.
 * The structs below are plain results, read by rep_output.
 */
#ifndef REP_COLLECT_H
#define REP_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sfname/sfname.h"

struct rep_images;
struct rep_opts;

struct rep_class {
	char *event;
	uint64_t count;
	uint32_t unit_mask;
};

struct rep_group {
	char *domain;			/* NULL: host */
	bool vmm;
	struct sfn_image app;		/* dep itself under --merge=lib */
	struct sfn_image dep;
	int64_t tgid, tid, cpu;		/* SFN_ALL when merged or not separated */
	size_t counts;			/* offset of [nclasses] in the arena */
	/* dep's binary is not (or not only) the profiled one: its rows are
	 * marked (rep_images_unverified) */
	bool unverified;
};

struct rep_symrow {
	size_t group;
	long sym;			/* index in the group's bin, -1: no symbols */
	const struct rep_bin *bin;	/* NULL: no symbols */
	size_t counts;			/* offset of [nclasses] in the arena */
};

/* A call-graph arc (-c): samples where row @from called row @to. */
struct rep_arc {
	size_t from, to;		/* indexes in rows */
	size_t counts;			/* offset of [nclasses] in the arena */
};

struct rep_profile {
	struct rep_class *classes;
	size_t nclasses;
	struct rep_group *groups;
	size_t ngroups;
	struct rep_symrow *rows;	/* -l only */
	size_t nrows;
	struct rep_arc *arcs;		/* -c only: from the {cg} files */
	size_t narcs;
	size_t ncgfiles;		/* {cg} files read */
	uint64_t *totals;		/* [nclasses] */
	bool has_domain;		/* some matched file belongs to a domain */
	bool separate_lib;		/* some group has app != dep */
	size_t nfiles;			/* sample files read */
	size_t npreread;		/* files counted during the walk */
	size_t nbad;			/* skipped: unparsable or unreadable */
	char **notes;			/* warnings for the header (images unverified) */
	size_t nnotes;
	/* private */
	uint64_t *arena;
	size_t arena_used, arena_cap;
};

/*
 * Read SESSION/samples/current as @o says (spec, merge, -l), symbolizing
 * through @images when @o->symbols.  Unreadable files are warned about
 * (du_warn) and skipped (nbad), files with no samples yet (being made)
 * skipped; corrupt ones (lib/odb's checks) are each named with what is
 * wrong, and then the whole collection fails.  0 and *@out; -ENOENT (no
 * session or samples directory), -ENODATA (no matching sample file),
 * -EBADMSG (corrupt sample files), -ENOMEM; the message is logged.
 */
/* The count array at arena offset @off. */
static inline uint64_t *rep_counts(const struct rep_profile *p, size_t off)
{
	return p->arena + off;
}

int rep_collect(const struct rep_opts *o, struct rep_images *images, struct rep_profile **out);

/*
 * For views finer than a symbol (opannotate): rep_collect that also hands
 * every sample key of every file read to @sink->key, with the group and
 * class it was counted in, its binary (NULL: no symbols) and symbol (-1:
 * none).  Needs @o->symbols.  A non-zero return of the callback stops the
 * collection with that error.  @p is the profile being built: its groups
 * and classes are valid, its totals are not yet complete.
 */
struct rep_key_sink {
	int (*key)(void *ctx, const struct rep_profile *p, size_t group, size_t cls,
		   const struct rep_bin *bin, long sym, uint64_t key, uint64_t count);
	void *ctx;
};
int rep_collect_keys(const struct rep_opts *o, struct rep_images *images,
		     const struct rep_key_sink *sink, struct rep_profile **out);
void rep_profile_free(struct rep_profile *p);	/* NULL accepted */
/* Room for one more count array (nclasses counts, zeroed) in @p's
 * arena, for the collection that builds @p: its offset, or SIZE_MAX. */
size_t rep_profile_arena_alloc(struct rep_profile *p);

#endif
