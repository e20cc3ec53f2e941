/*
 * opagent internals: the modules behind guest-agent/opagent.c.
 *
 *   ag_out.c     output buffer and the channel (port discovery, writes)
 *   ag_proc.c    HELLO, kallsyms/modules tables, /proc snapshot
 *   ag_perf.c    per-CPU perf dummy events and their rings -> frames
 *   ag_cookie.c  file cookies and build ids
 *   ag_image.c   answering IMAGE_REQUEST within budget and rate
 *   ag_tsc.c     guest clock against guest TSC (TSC frames)
 *   ag_layout.c  where the kernel keeps the running task (TASK_LAYOUT)
 *   ag_xen.c     the Xen PV console channel (xenstore through xenbus)
 */
#ifndef AG_H
#define AG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"

#define AG_VERSION	0x000100	/* 0.1.0 */

struct ag_opts {
	const char *port;	/* NULL: discover */
	const char *output;	/* write frames to this file instead */
	uint64_t budget;	/* image bytes per connection */
	uint64_t image_max;	/* largest file sent */
	uint32_t rate;		/* image bytes per second */
	unsigned int ring_pages;	/* per CPU, power of two */
	unsigned int duration;	/* seconds, 0 = until stopped */
	bool once;
	bool verbose;
	bool no_tsc;		/* send no TSC frames: the host falls back to ping/pong */
	bool no_task_layout;	/* send no TASK_LAYOUT: the host learns from the clock */
	uint32_t tty_window;	/* on a tty: bytes sent ahead of the host's ACK */
};

uint64_t ag_now_ns(void);

/* ---- ag_tsc.c ---------------------------------------------------------- */

struct ag_out;

/* The TSC may be read here (x86, not disabled by prctl). */
bool ag_tsc_usable(void);
/* One (CLOCK_MONOTONIC, TSC) pair, the tightest of a few tries on one CPU;
 * -EAGAIN if every try migrated, -ENOTSUP off x86. */
int ag_tsc_pair(struct dp_ag_tsc *t);
/* Queue a TSC frame (nothing when no pair could be taken). */
int ag_tsc_send(struct ag_out *o);

/* ---- ag_layout.c ------------------------------------------------------- */

/*
 * The byte offset of member @member of the struct named @strct in the raw
 * BTF blob @btf (@len bytes, borrowed; nothing is read outside it),
 * looking into anonymous struct and union members as C does.  0 with
 * *@off set; -EBADMSG when the blob is not BTF or a record runs past its
 * section (or is of a kind this reader does not know); -ENOENT when there
 * is no such struct or member; -EINVAL for a bit field; -ENOMEM.
 */
int ag_btf_member_off(const void *btf, size_t len, const char *strct, const char *member,
		      uint32_t *off);
/*
 * Learn TASK_LAYOUT from the kernel's BTF file @btf_path and kallsyms
 * file @ksyms_path: 0 with *@l filled (flags 0), or why the kernel does
 * not tell: -ENOENT no BTF file; -EFBIG or -EBADMSG a BTF file not read;
 * -ESRCH task_struct.tgid (or pcpu_hot.current_task) not in it; -ENXIO
 * neither pcpu_hot nor current_task in kallsyms (a kernel without
 * CONFIG_KALLSYMS_ALL); -EPERM addresses hidden (kptr_restrict);
 * -ERANGE an address no per-CPU variable has; another -errno.
 */
int ag_layout_learn_at(const char *btf_path, const char *ksyms_path, struct dp_ag_task_layout *l);
/* The same from this kernel's files; -ENOTSUP off x86-64. */
int ag_layout_learn(struct dp_ag_task_layout *l);
/* A few words for an error of ag_layout_learn (static). */
const char *ag_layout_why(int err);
/* Queue a TASK_LAYOUT frame. */
int ag_layout_send(struct ag_out *o, const struct dp_ag_task_layout *l);

/* ---- ag_out.c ---------------------------------------------------------- */

struct ag_out {
	int fd;
	bool is_file;
	bool is_tty;		/* a Xen PV console: no hang-up, raw mode */
	uint8_t *buf;
	size_t len, cap;
	uint64_t bytes;		/* written to fd */
	uint64_t frames;
	/* Called between the pieces of a long send (the snapshot, a process
	 * at a time): may wait for the host (a tty's window), 0 or -errno. */
	int (*pace)(void *ctx);
	void *pace_ctx;
};

static inline int ag_out_pace(struct ag_out *o)
{
	return o->pace ? o->pace(o->pace_ctx) : 0;
}

int ag_out_init(struct ag_out *o, size_t cap);
void ag_out_free(struct ag_out *o);
/* Write out everything buffered; -EPIPE when the host went away. */
int ag_out_flush(struct ag_out *o);

/* Run one ap_put_* into the buffer, flushing first if it is full. */
#define AG_PUT(o, fn, ...) ({						\
	ssize_t _n = fn((o)->buf + (o)->len, (o)->cap - (o)->len, __VA_ARGS__); \
	if (_n == -ENOSPC) {						\
		int _e = ag_out_flush(o);				\
		_n = _e ? _e : fn((o)->buf + (o)->len, (o)->cap - (o)->len, __VA_ARGS__); \
	}								\
	if (_n > 0) {							\
		(o)->len += (size_t)_n;					\
		(o)->frames++;						\
	}								\
	_n < 0 ? (int)_n : 0;						\
})

/* Find the agent's channel: the virtio-serial port first, then the Xen PV
 * console channel; a path, or NULL (errno ENOENT). */
char *ag_port_find(void);
/* Open @path for the channel, non-blocking, a tty in raw mode (no echo, no
 * CR/LF mapping: frames are binary); -errno.  *@is_tty says which. */
int ag_port_open(const char *path, bool *is_tty);
/* True when the host side of the port is connected. */
bool ag_port_connected(int fd);

/* ---- ag_xen.c ---------------------------------------------------------- */

/* The xenstore wire protocol (the header of every message, both ways). */
struct ag_xs_hdr {
	uint32_t type;
	uint32_t req_id;
	uint32_t tx_id;
	uint32_t len;		/* payload bytes after the header */
};
_Static_assert(sizeof(struct ag_xs_hdr) == 16, "ag_xs_hdr");
#define AG_XS_READ		2
#define AG_XS_ERROR		16
#define AG_XS_PAYLOAD_MAX	4096

/* A request of @type for @path (with its NUL) into @buf; its size, -ENOSPC,
 * -ENAMETOOLONG. */
ssize_t ag_xs_request(uint8_t *buf, size_t size, uint32_t type, uint32_t req_id, const char *path);
/*
 * The answer to XS_READ request @req_id in @buf[0..@len): the value's
 * length, copied NUL-terminated into @out (room @cap); -EAGAIN while
 * incomplete; -errno from an XS_ERROR answer (-ENOENT: no such node);
 * -EPROTO for an answer that is not this one (another id or type, a
 * length over AG_XS_PAYLOAD_MAX, bytes after it); -EMSGSIZE for a value
 * that does not fit @cap or holds a NUL.  Pure.
 */
ssize_t ag_xs_parse_read(const uint8_t *buf, size_t len, uint32_t req_id, char *out, size_t cap);
/* One XS_READ over the xenbus device @fd, within a bounded time. */
ssize_t ag_xs_read(int fd, uint32_t req_id, const char *path, char *out, size_t cap);
/* The hvc index of PV console @n: 1 + the consoles 1..n-1 that @bound. */
unsigned int ag_xen_hvc_index(unsigned int n, bool (*bound)(unsigned int k));
/* /dev/hvcM of the console channel named DP_AG_PORT_NAME, or NULL (errno). */
char *ag_xen_port_find(void);

/* ---- ag_cookie.c ------------------------------------------------------- */

struct ag_cookie {
	uint64_t dev, ino;
	char *path;
	uint32_t id;
	uint32_t pid;		/* a process that mapped it, to reach its root */
	uint8_t build_id_size;
	uint8_t build_id[DP_AG_BUILD_ID_MAX];
};

struct ag_cookies;
struct ag_cookies *ag_cookies_new(unsigned int max);
void ag_cookies_free(struct ag_cookies *t);
/* The cookie of (dev, ino, path), made on first sight (then the build id
 * is read); NULL for anonymous mappings or a full table. */
const struct ag_cookie *ag_cookie_get(struct ag_cookies *t, uint64_t dev, uint64_t ino,
				      const char *path, size_t len, uint32_t pid);
const struct ag_cookie *ag_cookie_find(const struct ag_cookies *t, uint32_t id);
/* Open the file a cookie names, checking it is still that file; -errno. */
int ag_cookie_open(const struct ag_cookie *c);
/* Read the GNU build id of an ELF file; its size, 0 if none, -errno. */
int ag_read_build_id(int fd, uint8_t out[DP_AG_BUILD_ID_MAX]);

/* ---- ag_proc.c --------------------------------------------------------- */

int ag_send_hello(struct ag_out *o, uint32_t flags, uint64_t instance);
/* A table (/proc/kallsyms, /proc/modules) sent as TYPE chunks and an
 * END_TYPE record, whole or a piece at a time between other work. */
struct ag_table {
	int fd;
	uint16_t type, end_type;
	bool pending;		/* END not sent yet */
	bool first;
	char *buf;		/* DP_AG_MAX_PAYLOAD bytes of text */
	size_t have;
	struct dp_ag_table_end end;
};

/* Open @path; an unreadable file still gets its END (status UNREADABLE). */
int ag_table_open(struct ag_table *t, const char *path, uint16_t type, uint16_t end_type);
/* Send chunks until about @max_bytes went out; 1 once END is sent, 0 while
 * more remains, -errno from the channel. */
int ag_table_send(struct ag_table *t, struct ag_out *o, size_t max_bytes);
void ag_table_close(struct ag_table *t);
/* The whole table at once. */
int ag_send_table(struct ag_out *o, const char *path, uint16_t type, uint16_t end_type);
/* COMM for every thread and MMAP for every executable mapping, then
 * STATE_END. */
int ag_send_snapshot(struct ag_out *o, struct ag_cookies *ck);
/* Fill an MMAP record's cookie and build id from the cookie table. */
void ag_fill_cookie(struct ag_cookies *ck, struct dp_ag_mmap *m, uint64_t dev, uint64_t ino,
		    const char *path, size_t len);

/* ---- ag_perf.c --------------------------------------------------------- */

struct ag_perf;
/* Open the per-CPU dummy events; NULL with errno when perf is unusable. */
struct ag_perf *ag_perf_open(unsigned int ring_pages);
void ag_perf_close(struct ag_perf *p);
unsigned int ag_perf_nfds(const struct ag_perf *p);
int ag_perf_fd(const struct ag_perf *p, unsigned int i);
/* Turn what the rings hold into frames; -errno from the channel. */
int ag_perf_drain(struct ag_perf *p, struct ag_out *o, struct ag_cookies *ck);

/* ---- ag_image.c -------------------------------------------------------- */

struct ag_images;
struct ag_images *ag_images_new(const struct ag_opts *opts);
void ag_images_free(struct ag_images *im);
/* New connection: the budget starts again, pending requests are dropped. */
void ag_images_reset(struct ag_images *im);
void ag_images_request(struct ag_images *im, uint32_t cookie);
void ag_images_config(struct ag_images *im, const struct dp_ag_config *c);
/* Send what the rate allows now; *@wait_ms says when to call again
 * (-1: nothing pending). */
int ag_images_work(struct ag_images *im, struct ag_out *o, struct ag_cookies *ck, int *wait_ms);

#endif
