/*
 * Privilege separation (doc/trust.md; chrony's privops and
 * OpenSMTPD's mproc are the models).  With --privsep, oprofiled splits
 * first; the worker opens and starts its collector (fds and mappings;
 * the xen collector stays with the monitor, which relays its stream)
 * while still root, is handed the session directories it writes, then
 * drops root (opd_main.c, worker_started):
 *
 *   monitor (root, the pid in SESSION/oprofiled.pid): runs the domain
 *     backend (procfs identity checks, libvirt), connects agent sockets
 *     after checking their listener, and hands the fds over; forwards
 *     SIGTERM, SIGUSR1 and SIGHUP to the worker and exits with it.
 *   worker (an unprivileged user, no supplementary groups, no
 *     capabilities, no_new_privs, not dumpable, a seccomp allow-list):
 *     the loop that reads sample buffers, parses agent frames and writes
 *     the session.  Its domain registry is the "privsep" backend, a
 *     mirror of the monitor's filled through the channel.
 *
 * The channel is a SOCK_SEQPACKET socketpair carrying fixed-size messages
 * (struct opd_ps_msg), each checked whole (opd_ps_check) before use: its
 * exact size, magic, a type allowed in its direction, the body length that
 * type has, zeros after the body, strings NUL-terminated in their fields,
 * and a file descriptor only on a CONNECTED or TRACE_CPU that reports
 * success.  The
 * worker asks (REFRESH, CONNECT, TRACE_OPEN, MAPS, COLLECT) and the monitor
 * answers; the monitor never speaks unasked.  A collector whose every read
 * needs root (OPD_CAP_MONITOR: xen) runs in the monitor, its raw stream
 * on a pipe of its own (opd_relay.h).  What the worker may not open once it
 * dropped (agent sockets, KVM's TSC tracepoint, /proc/PID/maps of root's
 * processes) the monitor opens and hands over, as fds or fixed records;
 * it parses no guest byte.
 */
#ifndef OPD_PRIVSEP_H
#define OPD_PRIVSEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "dom.h"
#include "dom_backend.h"
#include "opd_conf.h"
#include "opd_kvmtsc_trace.h"
#include "opd_procfs.h"

#define OPD_PS_MAGIC	0x64707370u	/* "dpsp" */
#define OPD_PS_MSG_SIZE	2048
#define OPD_PS_PATH_MAX	512		/* agent path (a unix socket's is shorter) */
#define OPD_PS_VCPU_CHUNK 256	/* vCPU tids per VCPUS message */
#define OPD_PS_WHY_MAX	128
#define OPD_PS_REFUSED_NAME 256

enum opd_ps_type {
	/* worker -> monitor */
	OPD_PS_REFRESH = 1,	/* no body */
	OPD_PS_CONNECT,		/* conn: pid */
	/* monitor -> worker */
	OPD_PS_ADDED,		/* dom; its VCPUS follow when nr_vcpus > 0 */
	OPD_PS_CHANGED,		/* dom */
	OPD_PS_REMOVED,		/* handle */
	OPD_PS_VCPUS,		/* vcpus: one chunk of a domain's map */
	OPD_PS_REFUSED,		/* refused */
	OPD_PS_END,		/* end: the refresh's return value */
	OPD_PS_CONNECTED,	/* conn: err, with the fd when err is 0 */
	/* worker -> monitor */
	OPD_PS_TRACE_OPEN,	/* no body: KVM's TSC offset tracepoint */
	OPD_PS_MAPS,		/* mreq: pid and the sampled pc */
	/* monitor -> worker */
	OPD_PS_TRACE_CPU,	/* tcpu, with the fd when err is 0; END closes */
	OPD_PS_MAP,		/* map: one executable mapping; END closes */
	/* worker -> monitor */
	OPD_PS_COLLECT,		/* end: 1 start, 0 stop the monitor's collector
				 * (opd_relay.h); END answers */
	OPD_PS_SAMPLES,		/* end: 0; a fresh samples/current, please
				 * (opcontrol --save); SAMPLES_DIR answers */
	/* monitor -> worker */
	OPD_PS_SAMPLES_DIR,	/* end: 0 with the directory's fd, or -errno */
	/* worker -> monitor */
	OPD_PS_TASK_LAYOUT,	/* layout: for the monitor's collector; END answers */
	OPD_PS_TYPE_MAX,
};

/* What a request of the worker's may be: whether the monitor answers it. */
#define OPD_PS_TO_MONITOR(t) \
	((t) == OPD_PS_REFRESH || (t) == OPD_PS_CONNECT || (t) == OPD_PS_TRACE_OPEN || \
	 (t) == OPD_PS_MAPS || (t) == OPD_PS_COLLECT || (t) == OPD_PS_SAMPLES || \
	 (t) == OPD_PS_TASK_LAYOUT)

struct opd_ps_dom {
	uint64_t handle;		/* the monitor's, never reused */
	uint64_t id;
	int32_t pid;
	uint32_t state;			/* enum dom_state */
	uint32_t nr_vcpus;		/* <= DOM_VCPU_MAX */
	uint8_t selected, has_uuid, xen, has_path;
	char uuid[40];			/* NUL-terminated */
	char name[DOM_NAME_MAX + 8];	/* NUL-terminated, not empty */
	char path[OPD_PS_PATH_MAX];	/* NUL-terminated; for messages only */
	/* host threads working for it (dom_domain_set_helpers): > 0,
	 * strictly increasing as the monitor's domain has them, zeros after */
	uint32_t nr_helpers;		/* <= DOM_HELPER_MAX */
	int32_t helpers[DOM_HELPER_MAX];
	uint32_t id_ns;			/* dom_domain_id_ns: DOM_ID_NS_NONE or DP_DOMKEY_XEN_DOMID */
	uint8_t vcpus_exact, pad[3];	/* dom_domain_vcpus_exact; pad 0 */
	uint32_t reserved;		/* 0: the struct has no padding to check */
};
_Static_assert(sizeof(struct opd_ps_dom) == offsetof(struct opd_ps_dom, reserved) + 4,
	       "struct opd_ps_dom has padding");

struct opd_ps_vcpus {
	uint64_t handle;
	uint32_t nr;			/* the whole map's length */
	uint32_t first, count;		/* this chunk: [first, first + count) */
	int32_t tids[OPD_PS_VCPU_CHUNK];
};

struct opd_ps_refused {
	int32_t pid;
	char name[OPD_PS_REFUSED_NAME];
	char why[OPD_PS_WHY_MAX];
};

struct opd_ps_conn {
	int32_t pid;
	int32_t err;			/* CONNECTED: 0 or -errno (-EPERM: wrong listener) */
};

/* One CPU of the tracepoint kvm:kvm_write_tsc_offset (opd_kvmtsc_trace.h),
 * opened by the monitor and mapped by it until the worker's next request,
 * so the ring's locked memory is charged to root, not to the worker. */
struct opd_ps_tcpu {
	int32_t cpu;			/* < nr */
	int32_t err;			/* 0: the fd came */
	uint32_t nr;			/* CPUs covered, <= OPD_KVMTSC_MAX_CPUS */
	uint32_t vcpu_off, prev_off, next_off, vcpu_size;	/* the layout */
};

/* MAPS: a process's executable mappings.  The monitor answers for a
 * known domain's process; for a host process only when @pc (the user pc
 * of the sample that made the worker ask) lies in one of them. */
struct opd_ps_mapsreq {
	int32_t pid;
	uint32_t zero;
	uint64_t pc;
};

/*
 * TASK_LAYOUT: a domain's agent said where its kernel keeps the running
 * task (opd_collector_ops.task_layout).  The monitor's collector then
 * reads, in that domain's paused memory, a pointer at the vCPU's per-CPU
 * base plus @current and a pid-sized number at it plus @tgid_off, and
 * streams the number when it is a plausible pid: bounded here by the
 * collector's own check (cx_layout_plausible), so that a worker that lies
 * learns no more than small numbers of one guest's kernel memory behind a
 * pointer near its per-CPU data (doc/trust.md says how near).
 */
struct opd_ps_layout {
	uint32_t key_ns;		/* DP_DOMKEY_XEN_DOMID, the one kind taken */
	uint32_t tgid_off;		/* with current: cx_layout_plausible */
	uint64_t key;			/* the domid, <= UINT32_MAX */
	uint64_t current;
};

#define OPD_PS_MAP_PATH	1536

/* One executable mapping of a process (opd_procfs_maps), read by the
 * monitor for a live lookup (the worker may not read root's /proc/PID). */
struct opd_ps_map {
	int32_t pid;
	uint32_t path_len;		/* strlen(path), > 0 */
	uint64_t start, len, pgoff, ino;
	uint32_t maj, min;
	char comm[16];			/* NUL-terminated, may be empty */
	char path[OPD_PS_MAP_PATH];	/* NUL-terminated */
};

struct opd_ps_msg {
	uint32_t magic;
	uint16_t type;
	uint16_t zero;
	uint32_t len;			/* body bytes, exactly what the type has */
	uint32_t zero2;
	union {
		struct opd_ps_dom dom;
		struct opd_ps_vcpus vcpus;
		struct opd_ps_refused refused;
		struct opd_ps_conn conn;
		struct opd_ps_tcpu tcpu;
		struct opd_ps_map map;
		struct opd_ps_mapsreq mreq;
		struct opd_ps_layout layout;
		uint64_t handle;
		int32_t end;
		uint8_t raw[OPD_PS_MSG_SIZE - 16];
	} u;
};
_Static_assert(sizeof(struct opd_ps_msg) == OPD_PS_MSG_SIZE, "privsep message size");

/* Start @m as an empty message of @type with its body length. */
void opd_ps_msg_init(struct opd_ps_msg *m, enum opd_ps_type type);

/*
 * Check a received message of @n bytes, @from_monitor telling its
 * direction, @nfds the descriptors that came with it.  0, or -EBADMSG.
 */
int opd_ps_check(const struct opd_ps_msg *m, size_t n, bool from_monitor, int nfds);

/* Send @m whole, with @pass_fd (-1: none).  0 or -errno; -EINVAL, nothing
 * sent, for a message to the monitor that opd_ps_check would refuse (a
 * request for pid 0, say: the monitor stops a worker that sends one). */
int opd_ps_send(int sock, const struct opd_ps_msg *m, int pass_fd);
/*
 * Receive one message and check it (opd_ps_check); *@fd is the descriptor
 * that came with it or -1 (@fd may be NULL only where none is allowed).
 * 0, -EPIPE when the other side is gone, -EBADMSG (any descriptor that
 * came is closed), or -errno.
 */
int opd_ps_recv(int sock, struct opd_ps_msg *m, bool from_monitor, int *fd);

/* ---- worker side --------------------------------------------------------- */

/* The mirror backend; its dom_config.backend_arg is the channel (an int
 * fd in a struct opd_ps_chan). */
extern const struct dom_backend_ops opd_ps_backend;

struct opd_ps_chan {
	int sock;
	/* read end of the monitor's wake-up pipe, -1: none.  The monitor
	 * writes a byte (no data: the worker then asks) when its domain
	 * backend's fd says something changed, so a libvirt event reaches
	 * the worker at once, not at its next once-a-second REFRESH. */
	int wake;
};

/* The monitor's END answer to the request just sent: its value (0 or
 * -errno), or -errno (-EBADMSG: another message). */
int opd_ps_recv_end(int sock);

/* A task layout (opd_collector_ops.task_layout) for the monitor's
 * collector: 0 or -errno (-EINVAL: out of the bounds it takes, not sent). */
int opd_ps_task_layout(const struct opd_ps_chan *ch, uint32_t key_ns, uint64_t key,
		       uint64_t current, uint32_t tgid_off);

/* An agent connector (opd_agents_set_connector) through the monitor. */
int opd_ps_connect(void *chan, pid_t pid, const char *path, int *fd);

/*
 * The worker's side of opd_daemon.samples_dir: ask the monitor for a
 * fresh SESSION/samples/current (made if missing, given to the worker's
 * user, opened) and return its descriptor in *@fd.  0 or -errno.
 */
int opd_ps_samples_dir(void *chan, int *fd);

/* KVM's TSC offset tracepoint opened by the monitor (an opd_kvmtsc_open_fn
 * for opd_agents_set_tsc_opener): @fds[cpu] its fds, mapped by the caller
 * before its next request. */
int opd_ps_tsc_open(void *chan, struct opd_kvmtsc_fmt *f, int *fds, int max, char *why,
		    size_t whylen);

/* A process's comm and executable mappings read by the monitor (an
 * opd_maps_src_fn for opd_trans_set_maps_source): -EPERM when the monitor
 * refused (a host process @pc is in no executable mapping of). */
int opd_ps_maps(void *chan, pid_t pid, uint64_t pc, char comm[16], opd_map_fn fn, void *fctx);

/*
 * Become @uid:@gid for good: no supplementary groups, no capabilities,
 * no_new_privs, not dumpable, the seccomp allow-list; and SIGTERM when the
 * parent (@monitor) dies.  0 or -errno (logged); the caller must then exit.
 */
int opd_ps_drop(uid_t uid, gid_t gid, pid_t monitor);

/*
 * The worker's seccomp filter: the system calls its loop makes, ioctl
 * only with the commands it uses (doc/trust.md), anything else killing
 * the process (SECCOMP_RET_KILL_PROCESS).  opd_ps_seccomp_filter writes
 * the program into @f (@max >= OPD_PS_SECCOMP_MAX) and returns its length
 * or -errno (-ENOTSUP: no filter for this architecture);
 * opd_ps_seccomp_install installs it on the calling process (tests call
 * it in a child): 0 or -errno.
 */
#define OPD_PS_SECCOMP_MAX 256
struct sock_filter;
int opd_ps_seccomp_filter(struct sock_filter *f, size_t max);
int opd_ps_seccomp_install(void);

/* ---- monitor side -------------------------------------------------------- */

/*
 * The monitor's life: open the domain backend as @conf says, answer the
 * worker @worker on @sock until it closes, forwarding the signal flags
 * (opd_sig).  Returns the exit status to give (the worker's).
 */
int opd_ps_monitor(int sock, const struct opd_conf *conf, pid_t worker);
/* The same with the write end of the wake-up pipe (-1: none), the
 * channel of the session files the worker publishes (opd_pub.h; -1:
 * none), and a collector the monitor runs for the worker (opd_relay.h;
 * NULL: none). */
struct opd_relay_mon;
int opd_ps_monitor_wake(int sock, int wake, int pub, const struct opd_conf *conf, pid_t worker,
			struct opd_relay_mon *relay);

#endif
