/*
 * Is the binary the report reads the one that was profiled?  The daemon
 * records each host image's identity (SESSION/samples/current/{images},
 * doc/sample-files.md): its GNU build id, its size and its mtime.  A guest
 * image's build id is its image cache id (SESSION/domains/<d>/images).
 * Given those and the candidate files for an image, rep_verify_pick()
 * takes the first candidate whose identity is a recorded one; when none
 * is, the first candidate anyway, with a warning naming the image, and
 * the report marks its rows (doc/opreport.1, "Unverified images").
 *
 * A file's identity is read with the bounded note reader of
 * lib/util/du_elfid.h, and in a confined parser child (rep_child.h), not
 * by the report itself: root opens a candidate and reads none of its
 * bytes.
 */
#ifndef REP_VERIFY_H
#define REP_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/du_elfid.h"

struct rep_ident {
	char build_id[DU_BUILD_ID_HEX];	/* lowercase hex; "-" none; "?" unread */
	uint64_t size;
	int64_t mtime_ns;		/* -1: not known (a guest image) */
};

/* ---- the record ---- */

struct rep_idrec;

/*
 * Parse a record (lines "image\tPATH\tBUILDID\tSIZE\tSEC.NSEC" after the
 * line "domprof-images 1"; PATH with \xHH escapes; lines of other types
 * are skipped, for later versions).  NULL with errno EBADMSG and the
 * line and reason in @err, or ENOMEM.  Identical identities of a path
 * are kept once (every daemon run records its images again).
 */
struct rep_idrec *rep_idrec_parse(FILE *f, char *err, size_t errlen);
/* The same from file @rel below directory @dir, opened with no link
 * followed below @dir and only if a regular file (du_open_beneath_file:
 * the daemon's worker writes it); NULL with errno ENOENT when there is
 * none (a session of an older daemon: nothing to check against). */
struct rep_idrec *rep_idrec_load(const char *dir, const char *rel, char *err, size_t errlen);
struct rep_idrec *rep_idrec_new(void);		/* empty; NULL, errno */
void rep_idrec_free(struct rep_idrec *r);	/* NULL accepted */
/* Add an identity of @path (a copy; kept once).  0 or -ENOMEM. */
int rep_idrec_add(struct rep_idrec *r, const char *path, const struct rep_ident *id);
/* The identities recorded for @path, oldest first, in *@ids (owned by
 * @r): their number, 0 when none. */
size_t rep_idrec_find(const struct rep_idrec *r, const char *path, const struct rep_ident **ids);

/*
 * The build ids a guest's image cache holds for guest path @path: every
 * line of the domain's map file, @map below directory @dir and opened as
 * rep_idrec_load does ("images/b<HEX>/<name>\t<path>"), naming it, added
 * to @r under @key.  Content-hash ids ("images/h...") say no build id
 * and add nothing.  0, or -errno (-ENOENT: no map).
 */
int rep_idrec_add_guest(struct rep_idrec *r, const char *dir, const char *map, const char *path,
			const char *key);

/* ---- files ---- */

/* The identity of @file now: stat() and its build-id note.  0 or -errno. */
int rep_ident_of_file(const char *file, struct rep_ident *out);

/*
 * What the bounded reader finds in @fd, read in a confined parser child:
 * its build id as hex into @hex ("" none, "?" unreadable) and, when
 * @load is not NULL, its first code segment (*@has_load set to 1 when
 * there is one).  0 or -errno (no child could run: said once).
 */
int rep_elf_probe(int fd, char *hex, size_t hexlen, struct du_elf_load *load, int *has_load);

/* Whether @now is recorded identity @rec: the same build id where one was
 * recorded, else the same size and mtime. */
bool rep_ident_match(const struct rep_ident *rec, const struct rep_ident *now);

/* @dir/.build-id/NN/REST@suffix for build id @hex (the layout gdb, perf
 * and debuginfod use), malloc'd; NULL when @hex is no build id. */
char *rep_verify_bid_path(const char *dir, const char *hex, const char *suffix);

/* ---- the choice ---- */

enum rep_vstate {
	REP_V_UNCHECKED,	/* nothing recorded: read as found */
	REP_V_VERIFIED,		/* a candidate is the profiled binary */
	REP_V_MIXED,		/* it is one of several the path had during the run */
	REP_V_UNVERIFIED,	/* no candidate is: the first one, marked */
};

/*
 * Hook for a copy from elsewhere by build id (debuginfod's executable
 * lookup; report/rep_debug.c may provide it): a malloc'd path of a file
 * that should have build id @hex, or NULL.  The file is checked like any
 * other candidate.
 */
typedef char *(*rep_verify_fetch_fn)(void *ctx, const char *hex);

struct rep_vpick {
	char *file;		/* malloc'd; NULL: no candidate exists */
	enum rep_vstate state;
	char why[768];		/* UNVERIFIED, MIXED: the warning, naming @path */
};

/*
 * Choose among @cands (paths in order of preference; NULL or missing
 * entries skipped) for image @path with recorded identities @ids[@nids]:
 * the first that matches one (after @fetch's file, tried only when no
 * candidate matched and @fetch is not NULL), else the first that exists,
 * UNVERIFIED.  0 or -ENOMEM; free @out->file.
 */
int rep_verify_pick(const char *path, const struct rep_ident *ids, size_t nids,
		    char *const *cands, size_t ncands, rep_verify_fetch_fn fetch, void *fetch_ctx,
		    struct rep_vpick *out);


/* ---- a report's state: the session's records, the verdicts ---- */

struct rep_vstore;

/* @session_dir is borrowed, @samples_dir (the sample directory read,
 * holding {images}) copied.  NULL with errno set. */
struct rep_vstore *rep_vstore_new(const char *session_dir, const char *samples_dir);
void rep_vstore_free(struct rep_vstore *v);	/* NULL accepted */

/* The identities recorded for @path as seen from @domain (NULL: host) and
 * @vmm: the host record (read on first use; an unreadable one is said
 * once and checks nothing) or the guest's image cache map. */
size_t rep_vstore_recorded(struct rep_vstore *v, const char *domain, bool vmm, const char *path,
			   const struct rep_ident **ids);

/* rep_verify_pick() without a fetch hook. */
int rep_vstore_pick(struct rep_vstore *v, const char *path, const struct rep_ident *ids,
		    size_t nids, char *const *cands, size_t ncands, struct rep_vpick *out);

/* Keep @pick's state for (@domain, @vmm, @path); the first time an image
 * is unverified or mixed, warn (du_warn) and note it for the header. */
void rep_vstore_verdict(struct rep_vstore *v, const char *domain, bool vmm, const char *path,
			const struct rep_vpick *pick);

/* The kept state (enum rep_vstate), or -1 when none was kept yet. */
int rep_vstore_state(const struct rep_vstore *v, const char *domain, bool vmm, const char *path);

/* The header's warnings, in the order they arose; owned by @v. */
char *const *rep_vstore_notes(const struct rep_vstore *v, size_t *n);

#endif
