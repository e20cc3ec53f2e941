/*
 * Feeding raw stream bytes into the transient context: the header first
 * (it carries the event table), then records.  Bytes may arrive in any
 * chunking (opd_stream_feed carries a partial record over), or a caller
 * holding the whole stream in memory hands it over in place
 * (opd_stream_decode).  Errors are logged with the stream's name and the
 * byte offset of the bad record.
 */
#ifndef OPD_STREAM_H
#define OPD_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "raw/raw_stream.h"
#include "opd_trans.h"

struct opd_stream;

/* Called once the header has been parsed; return 0 or -errno to stop. */
typedef int (*opd_header_fn)(void *ctx, const struct raw_header *h);

/* @t is borrowed; @name (for messages) is copied. */
struct opd_stream *opd_stream_new(struct opd_trans *t, const char *name, opd_header_fn hook,
				  void *hook_ctx);
void opd_stream_free(struct opd_stream *s);	/* NULL accepted */

/* Feed any number of bytes.  0, -EBADMSG (corrupt; logged), or -errno. */
int opd_stream_feed(struct opd_stream *s, const void *buf, size_t len);

/*
 * Decode in place: the bytes at @buf continue the stream (nothing may be
 * carried over from opd_stream_feed).  *@consumed says how much was used;
 * the rest is an incomplete record for the caller to extend.
 */
int opd_stream_decode(struct opd_stream *s, const void *buf, size_t len, size_t *consumed);

/* End of input: -EBADMSG if the header or a record was cut off. */
int opd_stream_finish(struct opd_stream *s);

/* Byte offset in the stream of the next byte expected. */
uint64_t opd_stream_offset(const struct opd_stream *s);

#endif
