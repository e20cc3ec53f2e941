/*
 * Agent protocol codec (include/domprof/agent.h), shared by opagent and
 * the host daemon.
 *
 * ap_decode() is a pure function over bytes: it walks complete frames with
 * a bounds-checked cursor and hands each to a handler from a const ops
 * table.  It never allocates, never prints, and checks every length and
 * count against the payload before using it.  The encoder writes frames
 * into a caller's buffer.
 */
#ifndef AGENT_H
#define AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "domprof/agent.h"

/*
 * Handlers, one per frame type; NULL means ignore.  Structs are copies
 * (aligned, safe to keep); byte ranges (release, text, path, name, image
 * bytes) are borrowed from the input, not NUL-terminated, valid only
 * during the call.  A handler returns 0, or a negative errno to stop
 * decoding (ap_decode returns it).  By the time a handler runs the lengths
 * are checked: path_len <= DP_AG_MAX_PATH, name_len <= DP_AG_MAX_COMM,
 * build_id_size <= DP_AG_BUILD_ID_MAX, release_len <= DP_AG_MAX_RELEASE.
 * Values (pids, addresses, times, cookies, statuses) are NOT checked:
 * they are whatever the guest said.
 */
struct ap_ops {
	/* agent -> host */
	int (*hello)(void *ctx, const struct dp_ag_hello *h, const char *release, size_t len);
	int (*kallsyms)(void *ctx, const char *text, size_t len);
	int (*kallsyms_end)(void *ctx, const struct dp_ag_table_end *e);
	int (*modules)(void *ctx, const char *text, size_t len);
	int (*modules_end)(void *ctx, const struct dp_ag_table_end *e);
	/* Called once per switch record of a SWITCH frame, in order. */
	int (*task_switch)(void *ctx, uint32_t cpu, const struct dp_ag_switch *s);
	int (*mmap)(void *ctx, const struct dp_ag_mmap *m, const char *path, size_t len);
	int (*comm)(void *ctx, const struct dp_ag_comm *c, const char *name, size_t len);
	int (*fork)(void *ctx, const struct dp_ag_task *t);
	int (*exit)(void *ctx, const struct dp_ag_task *t);
	int (*lost)(void *ctx, const struct dp_ag_lost *l);
	int (*pong)(void *ctx, const struct dp_ag_pong *p);
	int (*image_data)(void *ctx, const struct dp_ag_image_data *d, const uint8_t *bytes, size_t len);
	int (*image_end)(void *ctx, const struct dp_ag_image_end *e);
	int (*state_end)(void *ctx, const struct dp_ag_state_end *e);
	int (*tsc)(void *ctx, const struct dp_ag_tsc *t);
	int (*task_layout)(void *ctx, const struct dp_ag_task_layout *l);
	/* host -> agent */
	int (*host_hello)(void *ctx, const struct dp_ag_host_hello *h);
	int (*ping)(void *ctx, const struct dp_ag_ping *p);
	int (*image_request)(void *ctx, const struct dp_ag_image_request *r);
	int (*config)(void *ctx, const struct dp_ag_config *c);
	int (*host_join)(void *ctx, const struct dp_ag_host_join *j);
	int (*host_ack)(void *ctx, const struct dp_ag_host_ack *a);
};

/* What the decoder saw.  Added to, never reset, by ap_decode. */
struct ap_stats {
	uint64_t frames;	/* complete frames walked, good or not */
	uint64_t bytes;		/* their bytes, headers included */
	uint64_t switches;	/* switch records handed on */
	uint64_t unknown_type;	/* skipped by length */
	uint64_t bad_payload;	/* known type, payload did not parse exactly */
	uint64_t by_type[DP_AG_TYPE_LAST + 1];	/* good frames per known type */
};

/*
 * Decode the frames in @buf, which starts at a frame boundary.  Complete
 * frames are handed to @ops; a frame cut off by the end of @buf is left
 * for the next call and *@consumed says how many bytes were used.
 * Returns 0; -EBADMSG when the bytes cannot be this protocol (wrong magic,
 * payload length over DP_AG_MAX_PAYLOAD): the caller closes the channel;
 * or a handler's error (*@consumed then includes that handler's frame).
 * Unknown types and malformed payloads of known types are skipped by their
 * length and counted in @st (which may be NULL).  Work is linear in @len.
 */
int ap_decode(const struct ap_ops *ops, void *ctx, const void *buf, size_t len,
	      size_t *consumed, struct ap_stats *st);

/*
 * Offset of the first HELLO frame header in @buf, for a reader that may
 * have joined mid-stream; @len if there is none (keep the last
 * sizeof(struct dp_ag_frame) - 1 bytes and search again when more come).
 */
size_t ap_find_hello(const void *buf, size_t len);

/*
 * Normalize a guest path into @out: absolute, no empty, "." or ".."
 * components (".." stops at "/"), no trailing '/', NUL bytes dropped,
 * every other byte kept (lib/sfname escapes them).  Empty input gives "/".
 * The result and every intermediate result must fit AP_PATH_MAX bytes;
 * @out needs AP_PATH_MAX + 1.  Returns the length, or -ENAMETOOLONG.
 * Pure: no allocation, linear in @len, any bytes accepted.
 */
#define AP_PATH_MAX DP_AG_MAX_PATH
ssize_t ap_sanitize_path(const char *in, size_t len, char *out);

/*
 * Encoder.  Each ap_put_* writes one whole frame at @buf (room @size) and
 * returns its size in bytes, -ENOSPC if it does not fit (nothing usable
 * written), or -EINVAL for arguments the format cannot carry (a payload
 * over DP_AG_MAX_PAYLOAD, a path over DP_AG_MAX_PATH, ...).  Length
 * fields inside structs (path_len, name_len, release_len, nr) are set
 * from the arguments; the caller fills the rest.
 */
ssize_t ap_put_frame(void *buf, size_t size, uint16_t type, const void *payload, size_t len);
ssize_t ap_put_hello(void *buf, size_t size, const struct dp_ag_hello *h, const char *release, size_t len);
/* KALLSYMS or MODULES chunk: @type is DP_AG_KALLSYMS or DP_AG_MODULES. */
ssize_t ap_put_text(void *buf, size_t size, uint16_t type, const char *text, size_t len);
/* @type is DP_AG_KALLSYMS_END or DP_AG_MODULES_END. */
ssize_t ap_put_table_end(void *buf, size_t size, uint16_t type, const struct dp_ag_table_end *e);
/* @nr <= DP_AG_MAX_SWITCH */
ssize_t ap_put_switches(void *buf, size_t size, uint32_t cpu, const struct dp_ag_switch *s, uint32_t nr);
ssize_t ap_put_mmap(void *buf, size_t size, const struct dp_ag_mmap *m, const char *path, size_t len);
ssize_t ap_put_comm(void *buf, size_t size, const struct dp_ag_comm *c, const char *name, size_t len);
/* @type is DP_AG_FORK or DP_AG_EXIT. */
ssize_t ap_put_task(void *buf, size_t size, uint16_t type, const struct dp_ag_task *t);
ssize_t ap_put_lost(void *buf, size_t size, const struct dp_ag_lost *l);
ssize_t ap_put_pong(void *buf, size_t size, const struct dp_ag_pong *p);
/* @len <= DP_AG_MAX_PAYLOAD - sizeof(struct dp_ag_image_data) */
ssize_t ap_put_image_data(void *buf, size_t size, const struct dp_ag_image_data *d, const void *bytes, size_t len);
ssize_t ap_put_image_end(void *buf, size_t size, const struct dp_ag_image_end *e);
ssize_t ap_put_state_end(void *buf, size_t size, const struct dp_ag_state_end *e);
ssize_t ap_put_tsc(void *buf, size_t size, const struct dp_ag_tsc *t);
ssize_t ap_put_task_layout(void *buf, size_t size, const struct dp_ag_task_layout *l);
ssize_t ap_put_host_hello(void *buf, size_t size, const struct dp_ag_host_hello *h);
ssize_t ap_put_ping(void *buf, size_t size, uint64_t token);
ssize_t ap_put_image_request(void *buf, size_t size, uint32_t cookie);
ssize_t ap_put_config(void *buf, size_t size, const struct dp_ag_config *c);
ssize_t ap_put_host_join(void *buf, size_t size, uint64_t token);
ssize_t ap_put_host_ack(void *buf, size_t size, uint64_t bytes);

/* Name of a frame type ("MMAP"), "?" for an unknown one. */
const char *ap_type_name(uint32_t type);

#endif
