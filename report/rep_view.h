/*
 * Helpers shared by the views built on opreport's library (opannotate,
 * oparchive, the flame graph and pprof exports): command-line pieces,
 * progress on a terminal, and facts about ELF files that the symbol table
 * does not keep (build ids, separate debug files).
 */
#ifndef REP_VIEW_H
#define REP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rep_opts;

/* Add the comma-separated directories of @list to @o->image_path (-p). */
int rep_view_add_image_path(struct rep_opts *o, const char *list);

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
 * The GNU build id of the ELF file @path as lowercase hex in @buf, or
 * "" when it has none or cannot be read.  Returns @buf.
 */
char *rep_view_build_id(const char *path, char *buf, size_t size);

/*
 * The separate debug file of the ELF file @path, looked for below @dir
 * (NULL: the system's /usr/lib/debug) by build id, then by debug link.
 * malloc'd path, or NULL when there is none.
 */
char *rep_view_debug_file(const char *path, const char *dir);

/*
 * Where binaries that oparchive copied into a session live: SESSION/archive
 * followed by the binary's absolute path.  opreport's image lookup tries
 * it before the path itself.
 */
#define REP_ARCHIVE_DIR "archive"

#endif
