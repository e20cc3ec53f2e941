/*
 * Interned binary images: every path, kernel image and anonymous name the
 * daemon meets is stored once, so that mappings, kernel ranges and sample
 * file keys refer to images by pointer and compare them by pointer.
 * Images live until opd_images_free().
 */
#ifndef OPD_IMAGE_H
#define OPD_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "sfname/sfname.h"
#include "util/du_hash.h"

struct opd_image {
	enum sfn_kind kind;
	int64_t mtime;		/* of the file, for SFN_ROOT; 0 unknown */
	int mtime_known;
	/* SFN_ROOT: its identity was recorded (opd_imgid.h), and the file's
	 * stat() then, to see it change */
	int id_noted;
	uint64_t id_dev, id_ino, id_size;
	int64_t id_mtime_ns;
	struct du_hlink hl;	/* in opd_images */
	size_t len;
	char name[];		/* NUL-terminated */
};

struct opd_images;

struct opd_images *opd_images_new(void);
void opd_images_free(struct opd_images *t);	/* NULL accepted */

/* The image (@kind, @name[0..@len)) if it is interned already, else NULL. */
struct opd_image *opd_image_find(const struct opd_images *t, enum sfn_kind kind,
				 const char *name, size_t len);

/* The image (@kind, @name[0..@len)).  NULL with errno set (ENOMEM). */
struct opd_image *opd_image_get(struct opd_images *t, enum sfn_kind kind, const char *name, size_t len);

/*
 * The image for a mapping's path as collectors report it: an absolute path
 * is {root}; "[vdso]", "//anon" and other non-paths are {anon:NAME} with
 * brackets and slashes dropped.
 */
struct opd_image *opd_image_for_path(struct opd_images *t, const char *path, size_t len);

/* mtime of an SFN_ROOT image's file (stat once, 0 if it cannot be read). */
int64_t opd_image_mtime(struct opd_image *img);

#endif
