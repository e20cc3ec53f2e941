/*
 * Reading and writing the raw stream (include/domprof/raw.h).
 *
 * Decoding is a pure function over a byte buffer: raw_decode() walks the
 * records with a bounds-checked cursor and calls one handler per record
 * type from a const ops table (perf's struct perf_tool style).  It never
 * allocates, never prints, and never trusts a length it has not checked.
 */
#ifndef RAW_STREAM_H
#define RAW_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domprof/raw.h"

/* Parsed view of a header; events are copied out with names NUL-terminated. */
struct raw_header {
	uint32_t version;
	uint32_t flags;
	uint32_t collector;
	uint64_t start_ns;
	uint32_t nr_events;
	struct {
		char name[DP_RAW_EVENT_NAME + 1];
		uint64_t count;
		uint32_t unit_mask;
		uint32_t flags;
	} events[DP_RAW_MAX_EVENTS];
};

/*
 * Parse the header at the start of @buf.  Returns the header size in bytes
 * (> 0), -EAGAIN if @len is too short to hold it yet, or -EBADMSG (bad magic,
 * version, sizes or event count).
 */
int raw_header_parse(const void *buf, size_t len, struct raw_header *out);

/*
 * Handlers, one per record type.  A NULL handler means "ignore".  Strings
 * (path, name, comm) are borrowed from the input buffer, not NUL-terminated
 * beyond their given length, and only valid during the call.  A handler
 * returns 0, or a negative errno to stop decoding (raw_decode returns it).
 */
struct raw_ops {
	int (*sample)(void *ctx, uint64_t pc, uint32_t event);
	int (*cpu)(void *ctx, uint32_t cpu);
	int (*task)(void *ctx, uint32_t pid, uint32_t tid);
	int (*mode)(void *ctx, uint32_t mode);
	/* key_ns: enum dp_domkey_ns, passed through unchecked */
	int (*domain)(void *ctx, uint64_t key, uint32_t vcpu, uint32_t key_ns);
	int (*lost)(void *ctx, uint64_t count);
	int (*time)(void *ctx, uint64_t ns);
	int (*mmap)(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t path_len);
	int (*comm)(void *ctx, uint32_t pid, uint32_t tid, uint32_t flags, const char *comm, size_t comm_len);
	int (*fork)(void *ctx, const struct dp_raw_task_ev *t);
	int (*exit)(void *ctx, const struct dp_raw_task_ev *t);
	int (*kmod)(void *ctx, uint64_t start, uint64_t size, const char *name, size_t name_len);
	int (*asid)(void *ctx, uint64_t asid);	/* guest address space, 0: unknown */
	/*
	 * The call chain of the next sample: @nr (1..DP_RAW_CC_MAX) frames,
	 * the first @nr_kernel (<= nr) kernel ones; @frames is a borrowed,
	 * possibly unaligned little-endian array: read it with memcpy
	 * (raw_cc_frame).  @flags DP_RAW_CC_*, unknown bits passed through.
	 */
	int (*callchain)(void *ctx, uint32_t nr, uint32_t nr_kernel, uint32_t flags,
			 const uint8_t *frames);
	/* A domain's TSC on the host clock (khz > 0; not context). */
	int (*guest_tsc)(void *ctx, const struct dp_raw_guest_tsc *g);
	/* How exact the following samples' TIME is, +- ns (context). */
	int (*time_spread)(void *ctx, uint64_t ns);
	/* The guest process running at the look (@tgid > 0; not context). */
	int (*guest_task)(void *ctx, uint32_t tgid);
};

/* Frame @i of a callchain handler's @frames. */
static inline uint64_t raw_cc_frame(const uint8_t *frames, uint32_t i)
{
	uint64_t v;

	__builtin_memcpy(&v, frames + (size_t)i * 8, sizeof(v));
	return v;
}

/* What the decoder saw that was not a well-formed known record. */
struct raw_decode_stats {
	uint64_t records;		/* records decoded, samples included */
	uint64_t samples;
	uint64_t unknown_type;		/* skipped by length */
	uint64_t bad_payload;		/* known type, wrong payload; skipped */
};

/*
 * Decode the records in @buf (which starts at a record boundary, after the
 * header).  Complete records are handed to @ops; a record cut off by the end
 * of @buf is left for the next call, and *@consumed says how many bytes were
 * used.  Returns 0, -EBADMSG for input that cannot be a stream (payload
 * length over DP_RAW_MAX_PAYLOAD or not word-aligned input), or a handler's
 * error.  Unknown types and malformed payloads of known types are skipped by
 * their length and counted in @st.
 *
 * Input arrives in arbitrary pieces (a pipe read may end mid-word): a
 * trailing partial word is a cut-off record like any other, and @buf need
 * not be aligned.  @st is added to, not reset, so decoding a stream in
 * pieces counts the same as decoding it whole; it may be NULL.  On a
 * handler's error *@consumed includes the record that handler was given;
 * on -EBADMSG it stops at the bad record.  A sample whose event word does
 * not fit 32 bits is malformed (counted in bad_payload).
 */
int raw_decode(const struct raw_ops *ops, void *ctx, const void *buf, size_t len,
	       size_t *consumed, struct raw_decode_stats *st);

/*
 * Encoder.  A raw_writer appends records to a growable memory buffer and
 * hands full chunks to a sink (a file, a pipe, or the daemon's decoder).
 * raw_writer_new returns NULL with errno set.  The sink returns 0 or -errno;
 * the writer passes the error back from the call that flushed.
 */
typedef int (*raw_sink_fn)(void *sink_ctx, const void *buf, size_t len);

struct raw_writer;

struct raw_writer *raw_writer_new(raw_sink_fn sink, void *sink_ctx, size_t chunk_bytes);
/* Flushes what is buffered, then frees.  NULL is accepted. */
int raw_writer_close(struct raw_writer *w);
int raw_writer_flush(struct raw_writer *w);

/* Emit the stream header. @events has @nr entries. */
int raw_put_header(struct raw_writer *w, uint32_t flags, uint32_t collector, uint64_t start_ns,
		   const struct dp_raw_event *events, uint32_t nr);
/* A pc equal to DP_RAW_ESCAPE is written as a DP_RAW_SAMPLE record. */
int raw_put_sample(struct raw_writer *w, uint64_t pc, uint32_t event);
int raw_put_cpu(struct raw_writer *w, uint32_t cpu);
int raw_put_task(struct raw_writer *w, uint32_t pid, uint32_t tid);
int raw_put_mode(struct raw_writer *w, uint32_t mode);
/* A DOMAIN record keyed by host pid (DP_DOMKEY_HOST_PID). */
int raw_put_domain(struct raw_writer *w, uint64_t key, uint32_t vcpu);
int raw_put_domain_ns(struct raw_writer *w, uint32_t key_ns, uint64_t key, uint32_t vcpu);
/* Guest address space of the guest samples that follow (DP_RAW_ASID). */
int raw_put_asid(struct raw_writer *w, uint64_t asid);
int raw_put_lost(struct raw_writer *w, uint64_t count);
int raw_put_time(struct raw_writer *w, uint64_t ns);
/* path_len <= DP_RAW_MAX_PATH, else -ENAMETOOLONG */
int raw_put_mmap(struct raw_writer *w, const struct dp_raw_mmap *m, const char *path, size_t path_len);
int raw_put_comm(struct raw_writer *w, uint32_t pid, uint32_t tid, uint32_t flags, const char *comm);
int raw_put_fork(struct raw_writer *w, const struct dp_raw_task_ev *t);
int raw_put_exit(struct raw_writer *w, const struct dp_raw_task_ev *t);
int raw_put_kmod(struct raw_writer *w, uint64_t start, uint64_t size, const char *name, size_t name_len);
/* The call chain of the next sample (DP_RAW_CALLCHAIN): 1 <= @nr <=
 * DP_RAW_CC_MAX and @nr_kernel <= @nr, else -EINVAL. */
int raw_put_callchain(struct raw_writer *w, uint32_t nr, uint32_t nr_kernel, uint32_t flags,
		      const uint64_t *frames);
/* A domain's guest TSC on the host clock (DP_RAW_GUEST_TSC): @khz > 0,
 * else -EINVAL. */
int raw_put_guest_tsc(struct raw_writer *w, const struct dp_raw_guest_tsc *g);
/* How exact TIME is for the samples that follow (DP_RAW_TIME_SPREAD). */
int raw_put_time_spread(struct raw_writer *w, uint64_t ns);
/* The guest process running at the look (DP_RAW_GUEST_TASK): @tgid > 0,
 * else -EINVAL. */
int raw_put_guest_task(struct raw_writer *w, uint32_t tgid);
/* Any record, for tests and forward compatibility. */
int raw_put_record(struct raw_writer *w, uint32_t type, const void *payload, size_t len);

#endif
