/*
 * The session's record of host images' identities (doc/sample-files.md,
 * "Image identities"): SESSION/samples/current/{images}, one text line per
 * identity a host image had while it was profiled, so that the report
 * tools can tell a binary that was rebuilt or upgraded since from the one
 * that ran.  An identity is the file's GNU build id (read with the bounded
 * reader of lib/util/du_elfid.h) and, always, its size and mtime (the
 * check for images without a build id).
 *
 * Written by whichever process files the samples (the privsep worker by
 * default): once per image, when its first sample file opens, never per
 * sample; and again for an image whose file changed (new inode, size or
 * mtime) when the files are synced at a dump or the stop.
 */
#ifndef OPD_IMGID_H
#define OPD_IMGID_H

#include <stddef.h>

#include "opd_image.h"

struct opd_imgids;

/* The record at @path (SESSION/samples/current/{images}), opened for
 * appending on first use.  NULL with errno set. */
struct opd_imgids *opd_imgids_new(const char *path);
void opd_imgids_free(struct opd_imgids *r);	/* NULL accepted */

/*
 * Record the identity of host image @img (SFN_ROOT; others are ignored)
 * unless it was recorded already.  1 when a line was written, 0 when
 * there was nothing to do, -errno when the record could not be written
 * (said once in the log).  A file that cannot be opened (a root-only
 * binary under the worker's user) is recorded by size and mtime with
 * build id "?"; one that cannot be stat()ed is not recorded.
 */
int opd_imgids_note(struct opd_imgids *r, struct opd_image *img);

/*
 * stat() every recorded image again and record the new identity of each
 * whose file changed since (a rebuilt or upgraded binary; the old line
 * stays).  The number of identities written, or -errno.
 */
int opd_imgids_recheck(struct opd_imgids *r);

/* Let every image @r recorded be noted again, in a new record (the old
 * one was set aside with its samples: opd_sfiles_restart). */
void opd_imgids_unnote(struct opd_imgids *r);

/* How @path is written in a record line: bytes outside '!'..'~' and '\'
 * as \xHH.  Its length, or -ENAMETOOLONG when @size is too small. */
int opd_imgids_escape(const char *path, char *out, size_t size);

#endif
