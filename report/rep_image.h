/*
 * Finding and caching the binaries behind sample files' images: each binary
 * is located and read once per report, whatever number of sample files
 * name it.
 */
#ifndef REP_IMAGE_H
#define REP_IMAGE_H

#include <stdbool.h>

#include "sfname/sfname.h"

struct rep_bin;
struct rep_images;
struct rep_opts;

/* NULL with errno set.  @o is borrowed for the life of the cache. */
struct rep_images *rep_images_new(const struct rep_opts *o);
void rep_images_free(struct rep_images *c);	/* NULL accepted */

/*
 * Where the binary at @path lives for a sample file of @domain (NULL: host)
 * and @vmm.  Candidates: copies by the image's recorded build id
 * (SESSION/archive/.build-id/NN/REST from oparchive, the session's image
 * cache SESSION/images/b<HEX>/), the -p directories by basename, --root
 * as a prefix, SESSION/archive/@path (oparchive's copy), @path itself
 * (host and vmm work only: a guest's path names a file inside the guest),
 * then for a guest the session's image cache through
 * SESSION/domains/<escaped domain>/images (lines "images/<id>/<name>\t
 * <guest path, \xHH escaped>").  With an identity recorded for the image
 * (rep_verify.h) the first candidate that has it wins; else the first
 * that exists, and the image is unverified: warned about once (and noted
 * for the report's header, rep_vstore_notes).  malloc'd path of an
 * existing regular file, or NULL.
 */
char *rep_images_locate(struct rep_images *c, const char *domain, bool vmm, const char *path);

/* Whether the rows of @img (from @domain, @vmm) must be marked: the file
 * read for it is not the profiled binary, or the path had several
 * during the run.  Locates it if that was not done yet. */
bool rep_images_unverified(struct rep_images *c, const char *domain, bool vmm,
			   const struct sfn_image *img);

/* The verification state of @c (rep_verify.h): its notes, its hook. */
struct rep_vstore *rep_images_vstore(struct rep_images *c);

/*
 * The symbol table for @img as seen from (@domain, @vmm), or NULL when
 * there is none (binary missing or unreadable, anonymous memory, no
 * kallsyms): a one-line warning is logged the first time.  Owned by @c.
 * An ELF binary is read, with its debug info (rep_debug.h), in a confined
 * child (rep_child.h), host and guest binaries alike; an image named
 * without debug info is said once, with the reasons.
 */
const struct rep_bin *rep_images_get(struct rep_images *c, const char *domain, bool vmm,
				     const struct sfn_image *img);

/*
 * What @img's parser child found (loading it first if need be): its
 * build-id as hex and the debug file its names came from, each NULL when
 * none.  Owned by @c.
 */
void rep_images_info(struct rep_images *c, const char *domain, bool vmm,
		     const struct sfn_image *img, const char **build_id, const char **debug_file);

#endif
