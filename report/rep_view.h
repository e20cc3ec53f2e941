/*
 * Helpers shared by the views built on opreport's library (opannotate,
 * oparchive, the flame graph and pprof exports): command-line pieces,
 * progress on a terminal.  (Facts about ELF files come from the parser
 * children: rep_images_info.)
 */
#ifndef REP_VIEW_H
#define REP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rep_opts;

/* Add the comma-separated directories of @list to @o->image_path (-p). */
int rep_view_add_image_path(struct rep_opts *o, const char *list);
/* Append each non-empty comma-separated item of @list to the array @v of
 * @n strings (both owned by the caller).  0 or -ENOMEM. */
int rep_view_add_list(char ***v, size_t *n, const char *list);

/* getopt ids of the long options every report tool shares; a tool's own
 * long-only options start at REP_OPT_FREE. */
enum {
	REP_OPT_SESSION_DIR = 0x1000, REP_OPT_ROOT, REP_OPT_DOMAIN, REP_OPT_DEBUG_DIR, REP_OPT_FREE
};

/*
 * The options every report tool reads the same way: --session-dir,
 * -p/--image-path, --root and --domain.  0 when @c is one of them and it
 * was applied to @o; 1 when @c is another option (the caller's own);
 * -ENOMEM; -EINVAL with the reason in @msg.  @arg is borrowed for @o's
 * lifetime (it is optarg, from argv).
 */
int rep_view_common_opt(struct rep_opts *o, int c, const char *arg, char *msg, size_t msglen);

/*
 * Progress for long work: printed on stderr, overwriting one line, only
 * when stderr is a terminal; nothing at all otherwise.  @what is borrowed
 * until rep_progress_end.  Updates are rate-limited, so calling
 * rep_progress_step for every item is cheap.
 */
struct rep_progress {
	const char *what;
	size_t total;
	bool tty;
	uint64_t last_ns;
	bool shown;
};
void rep_progress_begin(struct rep_progress *pr, const char *what, size_t total);
void rep_progress_step(struct rep_progress *pr, size_t done);
void rep_progress_end(struct rep_progress *pr);

/*
 * Where binaries that oparchive copied into a session live: SESSION/archive
 * followed by the binary's absolute path.  opreport's image lookup tries
 * it before the path itself.
 */
#define REP_ARCHIVE_DIR "archive"

#endif

/*
 * The command line of a view program: the options every view shares
 * (--session-dir, -p/--image-path, --root, --domain, -h/--help and profile
 * specifications, as opreport takes them) plus @extra (getopt_long entries,
 * ended by a zeroed one; @extra_short their short letters with ':' as
 * getopt wants), which go to @cb.  @cb returns 0, or -EINVAL with a message
 * in @err.  @o is filled with opreport's defaults and -l.  0: run; 1: help
 * printed, exit 0; -EINVAL: message and usage printed, exit 1; -ENOMEM.
 * Release @o with rep_opts_release after any return.
 */
struct option;
int rep_view_parse(const char *prog, struct rep_opts *o, int argc, char **argv,
		   const struct option *extra, const char *extra_short,
		   int (*cb)(void *ctx, int c, const char *arg, char *err, size_t errlen),
		   void *ctx, void (*usage)(FILE *f));

/* The binaries table and the profile @o selects (rep_collect), for a view
 * or opreport: 0, or -1 with the reason already said.  Free *@p and
 * *@images (either may be set on failure) with rep_profile_free and
 * rep_images_free. */
struct rep_images;
struct rep_profile;
int rep_view_load(const struct rep_opts *o, struct rep_images **images,
		  struct rep_profile **p);

/* The usage lines of the shared options, for a view's usage(). */
extern const char rep_view_common_usage[];

/* Labels as opreport prints them (malloc'd, NULL when out of memory): an
 * image's basename, "{anon:NAME}" or the kernel image name; an
 * application with " (tgid:N tid:N cpu:N)" where the session separated
 * them. */
struct sfn_image;
struct rep_group;
char *rep_view_image_label(const struct sfn_image *img);
char *rep_view_app_label(const struct rep_group *g);
/* @img's label (@g's dep, or its app when that is the dep), with
 * " (unverified)" when @g is marked (rep_collect.h). */
char *rep_view_dep_label(const struct rep_group *g, const struct sfn_image *img);
/* The same with whole paths instead of basenames when @full (opreport -f). */
char *rep_view_image_name(const struct sfn_image *img, bool full);
char *rep_view_app_name(const struct rep_group *g, bool full);
char *rep_view_dep_name(const struct rep_group *g, const struct sfn_image *img, bool full);

/* A domain's own sample is guest kernel work when it fell in a guest
 * kernel image or the {anon:guest-kernel} bucket (as opreport counts). */
bool rep_view_is_guest_kernel(const struct sfn_image *dep);
