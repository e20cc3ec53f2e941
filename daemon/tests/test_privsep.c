/*
 * Privsep channel messages (opd_privsep.h): every message is refused
 * unless it is exactly what its type says, in its direction; and the
 * worker's mirror follows what the monitor reports.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include "collect_xen.h"
#include "dom_testproc.h"
#include "domprof/kmod.h"
#include "opd_kvmtsc.h"
#include "opd_privsep.h"
#include "opd_privsep_scope.h"
#include "opd_pub.h"
#include "opd_relay.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_sdir.h"
#include "util/du_test.h"

static void quiet_log(enum du_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	(void)fmt;
	(void)ap;
}

static void good_dom(struct opd_ps_msg *m, enum opd_ps_type t)
{
	opd_ps_msg_init(m, t);
	m->u.dom.handle = 7;
	m->u.dom.pid = 1234;
	m->u.dom.selected = 1;
	m->u.dom.has_path = 1;
	m->u.dom.id_ns = DOM_ID_NS_NONE;
	strcpy(m->u.dom.name, "web");
	strcpy(m->u.dom.uuid, "6e0d3ac2-5f1b-4c9e-9a7d-0b1c2d3e4f50");
	strcpy(m->u.dom.path, "/run/web.agent");
}

/* A domain's declared keys: a namespace no record has, or the host
 * pid's (the pid field says that one); a flag not 0 or 1; the padding. */
static void test_malformed_keys(void)
{
	struct opd_ps_msg m;

	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.id_ns = DP_DOMKEY_XEN_DOMID;
	m.u.dom.vcpus_exact = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	m.u.dom.id_ns = 7;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.id_ns = DP_DOMKEY_HOST_PID;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.vcpus_exact = 2;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.pad[1] = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
}

/* Each case: a change to a good ADDED message that must be refused. */
static void test_malformed(void)
{
	struct opd_ps_msg m;

	good_dom(&m, OPD_PS_ADDED);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	/* short, oversized (as recvmsg reports a cut one: not the size) */
	CU_ASSERT(opd_ps_check(&m, sizeof(m) - 1, true, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, 16, true, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, sizeof(m) + 1, true, 0) == -EBADMSG);
	/* wrong direction, an fd where none goes */
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	m.magic ^= 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.type = OPD_PS_TYPE_MAX;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.type = 0;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.len++;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.zero = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	/* trailing bytes after the body */
	good_dom(&m, OPD_PS_ADDED);
	m.u.raw[sizeof(m.u.raw) - 1] = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	/* a name without its NUL, an empty name, bytes after the NUL */
	good_dom(&m, OPD_PS_ADDED);
	memset(m.u.dom.name, 'a', sizeof(m.u.dom.name));
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.name[0] = '\0';
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.path[100] = 'x';
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	/* out of range fields */
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.nr_vcpus = DOM_VCPU_MAX + 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.handle = 0;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.selected = 2;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	/* helper threads: a count over the array, a hole, one past the count,
	 * a negative tid */
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.nr_helpers = DOM_HELPER_MAX + 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.nr_helpers = 2;
	m.u.dom.helpers[0] = 300;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	m.u.dom.helpers[1] = 301;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	m.u.dom.helpers[2] = 302;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	m.u.dom.helpers[2] = -5;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	/* out of order or twice; the reserved word not zero */
	m.u.dom.helpers[2] = 0;
	m.u.dom.helpers[1] = 300;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	m.u.dom.helpers[1] = 299;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	m.u.dom.helpers[1] = 301;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	m.u.dom.reserved = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
}

/* The other types: vCPU chunks, requests and answers. */
static void test_malformed_more(void)
{
	struct opd_ps_msg m;

	/* vCPU chunks out of their map */
	opd_ps_msg_init(&m, OPD_PS_VCPUS);
	m.u.vcpus.handle = 7;
	m.u.vcpus.nr = 4;
	m.u.vcpus.count = 4;
	for (int i = 0; i < 4; i++)
		m.u.vcpus.tids[i] = 100 + i;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	m.u.vcpus.first = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	m.u.vcpus.first = 0;
	m.u.vcpus.tids[5] = 9;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	/* requests: CONNECT carries a pid and no error; CONNECTED an fd
	 * exactly when it succeeded */
	opd_ps_msg_init(&m, OPD_PS_CONNECT);
	m.u.conn.pid = 5;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	m.u.conn.pid = 0;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == -EBADMSG);
	opd_ps_msg_init(&m, OPD_PS_CONNECTED);
	m.u.conn.pid = 5;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	m.u.conn.err = -EPERM;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	m.u.conn.err = 3;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	/* opcontrol --save: SAMPLES asks with a zero body; SAMPLES_DIR
	 * answers with the directory's fd exactly when it succeeded */
	opd_ps_msg_init(&m, OPD_PS_SAMPLES);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 1) == -EBADMSG);
	m.u.end = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == -EBADMSG);
	opd_ps_msg_init(&m, OPD_PS_SAMPLES_DIR);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 1) == -EBADMSG);
	m.u.end = -EACCES;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	m.u.end = 2;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
}

static void good_tcpu(struct opd_ps_msg *m, int cpu)
{
	opd_ps_msg_init(m, OPD_PS_TRACE_CPU);
	m->u.tcpu.cpu = cpu;
	m->u.tcpu.nr = 2;
	m->u.tcpu.vcpu_off = 8;
	m->u.tcpu.prev_off = 16;
	m->u.tcpu.next_off = 24;
	m->u.tcpu.vcpu_size = 4;
}

static void good_map(struct opd_ps_msg *m, const char *path)
{
	opd_ps_msg_init(m, OPD_PS_MAP);
	m->u.map.pid = 42;
	m->u.map.start = 0x400000;
	m->u.map.len = 0x1000;
	m->u.map.pgoff = 0x2000;
	m->u.map.ino = 77;
	m->u.map.maj = 8;
	m->u.map.min = 1;
	strcpy(m->u.map.comm, "daemon");
	strcpy(m->u.map.path, path);
	m->u.map.path_len = (uint32_t)strlen(path);
}

/* The tracepoint and mappings requests and their answers. */
static void test_malformed_trace_maps(void)
{
	struct opd_ps_msg m;

	/* TRACE_OPEN and MAPS go to the monitor only; MAPS with a pid */
	opd_ps_msg_init(&m, OPD_PS_TRACE_OPEN);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 1) == -EBADMSG);
	opd_ps_msg_init(&m, OPD_PS_MAPS);
	m.u.mreq.pid = 42;
	m.u.mreq.pc = 0x401000;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == 0);
	m.u.mreq.zero = 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == -EBADMSG);
	m.u.mreq.zero = 0;
	m.u.mreq.pid = -1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == -EBADMSG);
	/* TRACE_CPU: an fd exactly when it succeeded, a CPU below the count,
	 * a layout within a record, none with an error */
	good_tcpu(&m, 1);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 1) == -EBADMSG);
	m.u.tcpu.cpu = 2;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	good_tcpu(&m, 0);
	m.u.tcpu.nr = OPD_KVMTSC_MAX_CPUS + 1;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	good_tcpu(&m, 0);
	m.u.tcpu.next_off = 4096;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	good_tcpu(&m, 0);
	m.u.tcpu.vcpu_size = 2;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	good_tcpu(&m, 0);
	m.u.tcpu.err = -ENODEV;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	memset(&m.u.tcpu.vcpu_off, 0, 4 * sizeof(uint32_t));
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	/* MAP: a path with its length, no wrap, a comm with its NUL */
	good_map(&m, "/usr/sbin/x");
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == 0);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), false, 0) == -EBADMSG);
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 1) == -EBADMSG);
	m.u.map.path_len = 3;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_map(&m, "");
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_map(&m, "/x");
	m.u.map.start = UINT64_MAX - 10;
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
	good_map(&m, "/x");
	memset(m.u.map.comm, 'c', sizeof(m.u.map.comm));
	CU_ASSERT(opd_ps_check(&m, sizeof(m), true, 0) == -EBADMSG);
}

struct maps_seen {
	int n;
	struct dp_raw_mmap last;
	char path[64];
};

static int maps_cb(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t len)
{
	struct maps_seen *ms = ctx;

	ms->n++;
	ms->last = *m;
	snprintf(ms->path, sizeof(ms->path), "%.*s", (int)len, path);
	return 0;
}

/*
 * The worker's side of both requests, the answers queued beforehand on
 * the socketpair: the tracepoint's fds land at their CPUs with the layout;
 * a CPU twice, or a layout that changes, is refused with every fd closed;
 * mappings reach the callback as raw MMAP records, the comm filled.
 */
static void test_worker_requests(void)
{
	struct opd_ps_chan ch;
	struct opd_ps_msg m;
	struct opd_kvmtsc_fmt f;
	struct maps_seen ms = { 0 };
	char why[128], comm[16] = "";
	int sv[2], fds[4], devnull;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(devnull >= 0);
	ch.sock = sv[1];
	ch.wake = -1;
	good_tcpu(&m, 1);
	CU_ASSERT(opd_ps_send(sv[0], &m, devnull) == 0);
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_tsc_open(&ch, &f, fds, 4, why, sizeof(why)) == 2);
	CU_ASSERT(fds[0] == -1 && fds[1] >= 0 && fds[2] == -1);
	CU_ASSERT(f.vcpu_off == 8 && f.prev_off == 16 && f.next_off == 24 && f.vcpu_size == 4);
	if (fds[1] >= 0)
		close(fds[1]);
	/* the same CPU twice */
	good_tcpu(&m, 0);
	CU_ASSERT(opd_ps_send(sv[0], &m, devnull) == 0);
	CU_ASSERT(opd_ps_send(sv[0], &m, devnull) == 0);
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_tsc_open(&ch, &f, fds, 4, why, sizeof(why)) == -EBADMSG);
	CU_ASSERT(fds[0] == -1 && fds[1] == -1);
	CU_ASSERT(recv(sv[1], &m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m));	/* its END */
	/* a layout that changes between CPUs */
	good_tcpu(&m, 0);
	CU_ASSERT(opd_ps_send(sv[0], &m, devnull) == 0);
	good_tcpu(&m, 1);
	m.u.tcpu.prev_off = 32;
	CU_ASSERT(opd_ps_send(sv[0], &m, devnull) == 0);
	CU_ASSERT(opd_ps_tsc_open(&ch, &f, fds, 4, why, sizeof(why)) == -EBADMSG);
	CU_ASSERT(fds[0] == -1 && fds[1] == -1);
	/* a failure: no fd, the monitor's error */
	opd_ps_msg_init(&m, OPD_PS_END);
	m.u.end = -ENOENT;
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_tsc_open(&ch, &f, fds, 4, why, sizeof(why)) == -ENOENT);
	/* mappings */
	good_map(&m, "/usr/lib/a.so");
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	good_map(&m, "/usr/sbin/x");
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_maps(&ch, 42, 0x400000, comm, maps_cb, &ms) == 0);
	CU_ASSERT(ms.n == 2 && !strcmp(ms.path, "/usr/sbin/x") && !strcmp(comm, "daemon"));
	CU_ASSERT(ms.last.pid == 42 && ms.last.start == 0x400000 && ms.last.len == 0x1000 &&
		  ms.last.pgoff == 0x2000 && ms.last.ino == 77 && ms.last.path_len == 11);
	/* another process's mapping in the answer: refused */
	good_map(&m, "/x");
	m.u.map.pid = 43;
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_maps(&ch, 42, 0x400000, comm, maps_cb, &ms) == -EBADMSG);
	close(sv[0]);
	close(sv[1]);
	close(devnull);
}

/* A request the monitor would take for an attack (and stop the worker
 * for) is refused by the worker's own send, nothing on the wire: a
 * domain libvirt still lists between a destroy and its end has pid 0
 * (the lab's kmod-all once lost its worker so). */
static void test_worker_bad_request_unsent(void)
{
	struct opd_ps_chan ch = { .wake = -1 };
	struct opd_ps_msg m;
	char comm[16] = "";
	struct maps_seen ms = { 0 };
	struct timeval tmo = { .tv_sec = 1 };	/* sent after all: fail, not hang */
	int sv[2], fd = 7;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	CU_ASSERT_FATAL(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)) == 0);
	ch.sock = sv[1];
	CU_ASSERT(opd_ps_connect(&ch, 0, "/run/x.agent", &fd) == -EINVAL);
	CU_ASSERT(fd == -1);
	CU_ASSERT(opd_ps_maps(&ch, 0, 0x400000, comm, maps_cb, &ms) == -EINVAL);
	CU_ASSERT(opd_ps_maps(&ch, -3, 0x400000, comm, maps_cb, &ms) == -EINVAL);
	/* task layouts: only a Xen domid's, within the bounds */
	CU_ASSERT(opd_ps_task_layout(&ch, DP_DOMKEY_HOST_PID, 42, 0x2000, 0x9c4) == -EINVAL);
	CU_ASSERT(opd_ps_task_layout(&ch, DP_DOMKEY_XEN_DOMID, 1ull << 32, 0x2000, 0x9c4) ==
		  -EINVAL);
	CU_ASSERT(opd_ps_task_layout(&ch, DP_DOMKEY_XEN_DOMID, 3, CX_LAYOUT_MAX_CURRENT,
				     0x9c4) == -EINVAL);
	CU_ASSERT(opd_ps_task_layout(&ch, DP_DOMKEY_XEN_DOMID, 3, 0x2000, 0x9c6) == -EINVAL);
	CU_ASSERT(opd_ps_task_layout(&ch, DP_DOMKEY_XEN_DOMID, 3, 0x2000,
				     CX_LAYOUT_MAX_OFF) == -EINVAL);
	CU_ASSERT(recv(sv[0], &m, sizeof(m), MSG_DONTWAIT) < 0 && errno == EAGAIN);
	/* a good layout is what the monitor takes */
	opd_ps_msg_init(&m, OPD_PS_TASK_LAYOUT);
	m.u.layout = (struct opd_ps_layout){ .key_ns = DP_DOMKEY_XEN_DOMID, .key = 3,
					     .current = 0x2000, .tgid_off = 0x9c4 };
	CU_ASSERT(opd_ps_send(sv[1], &m, -1) == 0);
	CU_ASSERT(opd_ps_recv(sv[0], &m, false, NULL) == 0 && m.u.layout.key == 3);
	/* a good one goes out, and is what the monitor accepts */
	opd_ps_msg_init(&m, OPD_PS_CONNECT);
	m.u.conn.pid = 42;
	CU_ASSERT(opd_ps_send(sv[1], &m, -1) == 0);
	CU_ASSERT(opd_ps_recv(sv[0], &m, false, NULL) == 0 && m.u.conn.pid == 42);
	/* the monitor's own messages are not its to judge here */
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	close(sv[0]);
	close(sv[1]);
}

/* Over a real socketpair: a whole message and its fd pass; a short or
 * an oversized datagram is refused and any fd that came with it closed. */
static void test_wire(void)
{
	struct opd_ps_msg m, r;
	char big[OPD_PS_MSG_SIZE + 64];
	int sv[2], fd = -2, devnull;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CU_ASSERT_FATAL(devnull >= 0);
	opd_ps_msg_init(&m, OPD_PS_CONNECTED);
	m.u.conn.pid = 5;
	CU_ASSERT(opd_ps_send(sv[0], &m, devnull) == 0);
	CU_ASSERT(opd_ps_recv(sv[1], &r, true, &fd) == 0);
	CU_ASSERT(fd >= 0 && fd != devnull);
	CU_ASSERT(!memcmp(&m, &r, sizeof(m)));
	if (fd >= 0)
		close(fd);
	/* short */
	CU_ASSERT(send(sv[0], &m, 100, 0) == 100);
	CU_ASSERT(opd_ps_recv(sv[1], &r, true, &fd) == -EBADMSG && fd == -1);
	/* oversized: a valid message with bytes after it */
	memset(big, 0, sizeof(big));
	memcpy(big, &m, sizeof(m));
	CU_ASSERT(send(sv[0], big, sizeof(big), 0) == (ssize_t)sizeof(big));
	CU_ASSERT(opd_ps_recv(sv[1], &r, true, &fd) == -EBADMSG && fd == -1);
	/* an fd with a message that has none: refused */
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, devnull) == 0);
	CU_ASSERT(opd_ps_recv(sv[1], &r, true, &fd) == -EBADMSG && fd == -1);
	/* the other side gone */
	close(sv[0]);
	CU_ASSERT(opd_ps_recv(sv[1], &r, true, &fd) == -EPIPE);
	close(sv[1]);
	close(devnull);
}

struct seen {
	int added, removed, vcpus, changed, refused;
	const struct dom_domain *last;
	const struct dom_domain *all[8];	/* in the order added */
};

static void s_added(void *ctx, const struct dom_domain *d)
{
	struct seen *s = ctx;

	if (s->added < 8)
		s->all[s->added] = d;
	s->added++;
	s->last = d;
}

static void s_removed(void *ctx, const struct dom_domain *d) { (void)d; ((struct seen *)ctx)->removed++; }
static void s_vcpus(void *ctx, const struct dom_domain *d) { (void)d; ((struct seen *)ctx)->vcpus++; }
static void s_changed(void *ctx, const struct dom_domain *d) { (void)d; ((struct seen *)ctx)->changed++; }
static void s_refused(void *ctx, pid_t pid, const char *name, const char *why)
{
	(void)pid;
	(void)name;
	(void)why;
	((struct seen *)ctx)->refused++;
}

static const struct dom_ops seen_ops = {
	.added = s_added, .removed = s_removed, .vcpus_changed = s_vcpus,
	.changed = s_changed, .refused = s_refused,
};

/* The mirror backend over a socketpair: the scripted monitor writes to
 * sv[0]. */
static void *mirror_open(struct opd_ps_chan *ch, int sv[2])
{
	struct dom_config cfg = { .backend_arg = ch };
	void *st = NULL;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	ch->sock = sv[1];
	ch->wake = -1;
	CU_ASSERT_FATAL(opd_ps_backend.open(&cfg, &st) == 0);
	return st;
}

/* The mirror backend against a scripted monitor: the answer to one
 * REFRESH is queued before the refresh reads it. */
static void test_mirror(void)
{
	struct opd_ps_chan ch;
	struct opd_ps_msg m;
	struct seen s = { 0 };
	void *st;
	int sv[2];

	st = mirror_open(&ch, sv);
	good_dom(&m, OPD_PS_ADDED);
	m.u.dom.nr_vcpus = 2;
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	opd_ps_msg_init(&m, OPD_PS_VCPUS);
	m.u.vcpus.handle = 7;
	m.u.vcpus.nr = 2;
	m.u.vcpus.count = 2;
	m.u.vcpus.tids[0] = 1235;
	m.u.vcpus.tids[1] = 1236;
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	opd_ps_msg_init(&m, OPD_PS_REFUSED);
	m.u.refused.pid = 99;
	strcpy(m.u.refused.name, "victim");
	strcpy(m.u.refused.why, "holds no KVM VM");
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) == 0);
	CU_ASSERT(s.added == 1 && s.refused == 1);
	CU_ASSERT_FATAL(s.last != NULL);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(s.last), "web");
	CU_ASSERT_STRING_EQUAL(dom_domain_agent_path(s.last), "/run/web.agent");
	CU_ASSERT(dom_domain_pid(s.last) == 1234 && dom_domain_vcpu_of_tid(s.last, 1236) == 1);
	CU_ASSERT(dom_domain_id_ns(s.last) == DOM_ID_NS_NONE && !dom_domain_vcpus_exact(s.last));
	/* a monitor that says nonsense: the refresh fails */
	opd_ps_msg_init(&m, OPD_PS_REMOVED);
	m.u.handle = 8;		/* unknown */
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) == -EBADMSG);
	/* removed */
	m.u.handle = 7;
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) == 0);
	CU_ASSERT(s.removed == 1);
	/* the monitor gone */
	close(sv[0]);
	CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) < 0);
	opd_ps_backend.close(st);
	close(sv[1]);
}

/* Xen domains keyed by their domid, with a device model (a QEMU pid) or
 * not, and the vCPU count Xen says (the registry bounds a recorded vCPU
 * by it); a KVM domain's id keys nothing.  The mirror carries each fact. */
static void test_mirror_xen_keys(void)
{
	struct opd_ps_chan ch;
	const struct dom_domain *d;
	struct opd_ps_msg m;
	struct seen s = { 0 };
	void *st;
	int sv[2], vcpu;

	st = mirror_open(&ch, sv);
	for (int k = 0; k < 3; k++) {
		good_dom(&m, OPD_PS_ADDED);
		m.u.dom.handle = 20 + (uint64_t)k;
		m.u.dom.id = 5 + (uint64_t)k;
		m.u.dom.xen = k < 2;
		m.u.dom.id_ns = k < 2 ? DP_DOMKEY_XEN_DOMID : DOM_ID_NS_NONE;
		m.u.dom.vcpus_exact = k < 2;
		m.u.dom.nr_vcpus = 2;
		m.u.dom.pid = k == 1 ? 0 : 4321 + k;
		snprintf(m.u.dom.name, sizeof(m.u.dom.name), "x%d", k);
		CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
		opd_ps_msg_init(&m, OPD_PS_VCPUS);
		m.u.vcpus.handle = 20 + (uint64_t)k;
		m.u.vcpus.nr = 2;
		m.u.vcpus.count = 2;
		m.u.vcpus.tids[0] = m.u.vcpus.tids[1] = -1;
		CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	}
	opd_ps_msg_init(&m, OPD_PS_END);
	CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
	CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) == 0);
	CU_ASSERT_FATAL(s.added == 3);
	for (int k = 0; k < 3; k++) {
		d = s.all[k];
		CU_ASSERT(!strcmp(dom_domain_name(d), k == 0 ? "x0" : k == 1 ? "x1" : "x2"));
		CU_ASSERT(dom_domain_id(d) == 5 + (uint64_t)k);
		CU_ASSERT(dom_domain_id_ns(d) == (k < 2 ? DP_DOMKEY_XEN_DOMID : DOM_ID_NS_NONE));
		CU_ASSERT(dom_domain_pid(d) == (k == 1 ? 0 : 4321 + k));
		vcpu = -1;
		dom_vcpu_recorded(3, dom_vcpu_limit(d), &vcpu);
		CU_ASSERT(vcpu == (k < 2 ? -1 : 3));
	}
	opd_ps_backend.close(st);
	close(sv[0]);
	close(sv[1]);
}

/* A Xen domain's back-end threads in dom0 (dom_domain_set_helpers) come
 * with its facts (the registry looks them up as its {vmm}); gone from the
 * facts, gone from the mirrored domain. */
static void test_mirror_helpers(void)
{
	struct opd_ps_chan ch;
	struct opd_ps_msg m;
	struct seen s = { 0 };
	void *st;
	int sv[2];

	st = mirror_open(&ch, sv);
	for (int k = 0; k < 2; k++) {
		const pid_t *tids;
		unsigned int n;

		good_dom(&m, k ? OPD_PS_CHANGED : OPD_PS_ADDED);
		m.u.dom.id = 6;
		m.u.dom.xen = 1;
		m.u.dom.pid = 0;
		m.u.dom.nr_helpers = k ? 0 : 2;
		m.u.dom.helpers[0] = k ? 0 : 700;
		m.u.dom.helpers[1] = k ? 0 : 702;
		CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
		opd_ps_msg_init(&m, OPD_PS_END);
		CU_ASSERT(opd_ps_send(sv[0], &m, -1) == 0);
		CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) == 0);
		CU_ASSERT_FATAL(s.last != NULL);
		CU_ASSERT(!strcmp(dom_domain_name(s.last), "web") && s.added == 1 &&
			  s.changed == k);
		/* the helpers it declares, sorted: 700 and 702, then none */
		n = dom_domain_helpers(s.last, &tids);
		CU_ASSERT_FATAL(n == (k ? 0u : 2u));
		CU_ASSERT(k || (tids[0] == 700 && tids[1] == 702));
	}
	opd_ps_backend.close(st);
	close(sv[0]);
	close(sv[1]);
}

/* ---- the monitor, against a fake proc tree -------------------------------- */

static char tree[64];

/* One executable file mapping among others */
#define MAPS_TEXT \
	"55550000-55553000 r-xp 00001000 08:01 1234 /usr/bin/qemu-system-x86_64\n" \
	"55553000-55554000 rw-p 00004000 08:01 1234 /usr/bin/qemu-system-x86_64\n" \
	"7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"

/* A QEMU @pid called @name whose agent socket is @sock. */
static void fake_qemu(int pid, const char *name, const char *sock)
{
	char p[256], chr[256], cmd[1024];
	const char *argv[] = { "/usr/bin/qemu-system-x86_64", "-enable-kvm", "-name", name,
			       "-chardev", chr, "-device",
			       "virtserialport,chardev=c1,name=" DOM_AGENT_PORT, NULL };
	size_t n = 0;

	tp_pathf(chr, sizeof(chr), "socket,id=c1,path=%s,server=on,wait=off", sock);
	for (const char **a = argv; *a; a++) {
		size_t l = strlen(*a) + 1;

		memcpy(cmd + n, *a, l);
		n += l;
	}
	tp_pathf(p, sizeof(p), "%s/%d", tree, pid);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	tp_pathf(p, sizeof(p), "%s/%d/task", tree, pid);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	tp_pathf(p, sizeof(p), "%s/%d/cmdline", tree, pid);
	tp_write_file(p, cmd, n);
	tp_pathf(p, sizeof(p), "%s/%d/comm", tree, pid);
	tp_write_file(p, "qemu-system-x86\n", 16);
	tp_thread(tree, pid, pid, "qemu-system-x86");
	tp_pathf(p, sizeof(p), "%s/%d/maps", tree, pid);
	tp_write_file(p, MAPS_TEXT, strlen(MAPS_TEXT));
}

/* A host process @pid (no QEMU) with MAPS_TEXT's mappings. */
static void fake_host(int pid)
{
	char p[256];

	tp_pathf(p, sizeof(p), "%s/%d", tree, pid);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	tp_pathf(p, sizeof(p), "%s/%d/cmdline", tree, pid);
	tp_write_file(p, "/usr/sbin/sshd\0", 15);
	tp_pathf(p, sizeof(p), "%s/%d/comm", tree, pid);
	tp_write_file(p, "sshd\n", 5);
	tp_pathf(p, sizeof(p), "%s/%d/maps", tree, pid);
	tp_write_file(p, MAPS_TEXT, strlen(MAPS_TEXT));
}

/*
 * The monitor's scope (opd_privsep_scope.h): no agent socket for a pid of
 * no domain; a host process's mappings only for a pc inside one of them;
 * wrong pcs spend a budget, past which even a right one is refused.
 */
static void scope_checks(struct opd_ps_chan *ch)
{
	struct maps_seen ms = { 0 };
	char comm[16] = "";
	int fd = -1, refused = 0;

	CU_ASSERT(opd_ps_connect(ch, 4000, NULL, &fd) == -ENOENT && fd == -1);
	CU_ASSERT(opd_ps_maps(ch, 4000, 0x401000, comm, maps_cb, &ms) == -EPERM);
	CU_ASSERT(ms.n == 0);
	CU_ASSERT(opd_ps_maps(ch, 4000, 0x55551234, comm, maps_cb, &ms) == 0);
	CU_ASSERT(ms.n == 1 && !strcmp(ms.path, "/usr/bin/qemu-system-x86_64"));
	CU_ASSERT(!strcmp(comm, "sshd"));
	for (int i = 0; i < OPD_PS_SCOPE_BURST + 4; i++)
		refused += opd_ps_maps(ch, 4000, 0x10000 + (uint64_t)i * 4096, comm, maps_cb,
				       &ms) == -EPERM;
	CU_ASSERT(refused == OPD_PS_SCOPE_BURST + 4);
	CU_ASSERT(opd_ps_maps(ch, 4000, 0x55551234, comm, maps_cb, &ms) == -EPERM);
	CU_ASSERT(ms.n == 1);
	/* a domain's process is answered all the same */
	CU_ASSERT(opd_ps_maps(ch, getpid(), 0, comm, maps_cb, &ms) == 0);
	CU_ASSERT(ms.n == 2);
}

/*
 * A monitor (a child process running opd_ps_monitor over a fake tree)
 * connects the agent socket of the domain whose QEMU is its listener, and
 * refuses the one whose claimed QEMU is another process; the fd arrives
 * through the socketpair.  When the worker's end closes, the monitor ends.
 */
static void test_monitor(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct opd_conf conf;
	struct opd_ps_chan ch;
	struct dom_config cfg = { .backend_arg = &ch };
	struct seen s = { 0 };
	struct maps_seen ms = { 0 };
	struct opd_kvmtsc_trace *tr;
	char sock[128], comm[16] = "", why[300];
	int sv[2], lfd, fd = -1, status = -1, acc;
	pid_t mon;
	void *st;

	strcpy(tree, "/tmp/test_privsep.XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(tree) != NULL);
	tp_pathf(sock, sizeof(sock), "%s/web.agent", tree);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strcpy(sa.sun_path, sock);
	CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(lfd, 4) == 0);
	fake_qemu(getpid(), "web", sock);	/* this process listens */
	fake_qemu(1, "impostor", sock);		/* claims the same socket */
	fake_host(4000);
	opd_conf_defaults(&conf);
	conf.domains_proc_root = tree;
	conf.domain_backend = "procfs";
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	mon = fork();
	CU_ASSERT_FATAL(mon >= 0);
	if (mon == 0) {
		close(sv[1]);
		_exit(opd_ps_monitor(sv[0], &conf, getppid()) ? 3 : 0);
	}
	close(sv[0]);
	ch.sock = sv[1];
	ch.wake = -1;
	CU_ASSERT_FATAL(opd_ps_backend.open(&cfg, &st) == 0);
	CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) == 0);
	CU_ASSERT(s.added == 2);
	CU_ASSERT(opd_ps_connect(&ch, getpid(), NULL, &fd) == 0);
	CU_ASSERT(fd >= 0);
	acc = accept(lfd, NULL, NULL);
	CU_ASSERT(acc >= 0);
	if (fd >= 0 && acc >= 0) {
		CU_ASSERT(write(fd, "x", 1) == 1);
		CU_ASSERT(read(acc, sock, 1) == 1 && sock[0] == 'x');
	}
	if (acc >= 0)
		close(acc);
	if (fd >= 0)
		close(fd);
	CU_ASSERT(opd_ps_connect(&ch, 1, NULL, &fd) == -EPERM && fd == -1);
	CU_ASSERT(opd_ps_connect(&ch, 999999, NULL, &fd) == -ENOENT && fd == -1);
	/* a live lookup: the monitor reads the maps, the worker gets records */
	CU_ASSERT(opd_ps_maps(&ch, getpid(), 0, comm, maps_cb, &ms) == 0);
	CU_ASSERT(ms.n == 1 && !strcmp(ms.path, "/usr/bin/qemu-system-x86_64") &&
		  ms.last.start == 0x55550000 && ms.last.len == 0x3000 && ms.last.pgoff == 0x1000);
	CU_ASSERT(!strcmp(comm, "qemu-system-x86"));
	CU_ASSERT(opd_ps_maps(&ch, 999999, 0, comm, maps_cb, &ms) == -ENOENT);
	scope_checks(&ch);
	/* KVM's TSC tracepoint: opened by the monitor, mapped here; where the
	 * kernel has it and this is root, a trace; else the monitor's error */
	tr = opd_kvmtsc_trace_open_via(opd_ps_tsc_open, &ch, why, sizeof(why));
	if (geteuid() == 0 && !access("/sys/kernel/tracing/events/kvm/kvm_write_tsc_offset", F_OK))
		CU_ASSERT(tr != NULL);
	opd_kvmtsc_trace_close(tr);
	/* and the channel still answers after it */
	CU_ASSERT(opd_ps_connect(&ch, 1, NULL, &fd) == -EPERM && fd == -1);
	opd_ps_backend.close(st);
	close(sv[1]);
	CU_ASSERT(waitpid(mon, &status, 0) == mon);
	CU_ASSERT(WIFEXITED(status));
	close(lfd);
	du_rm_tree(tree);
}

/* A backend whose fd is a pipe the test writes: "something changed". */
static int fake_fd = -1;

static int fake_open(const struct dom_config *cfg, void **state)
{
	(void)cfg;
	*state = NULL;
	return 0;
}

static int fake_fdfn(void *state)
{
	(void)state;
	return fake_fd;
}

static int fake_refresh(void *state, const struct dom_ops *ops, void *ctx)
{
	char buf[16];

	(void)state;
	(void)ops;
	(void)ctx;
	while (read(fake_fd, buf, sizeof(buf)) > 0)
		;
	return 0;
}

static void fake_close(void *state)
{
	(void)state;
}

static const struct dom_backend_ops fake_backend = {
	.name = "fake", .open = fake_open, .fd = fake_fdfn, .refresh = fake_refresh,
	.close = fake_close,
};

/*
 * The wake-up: when the monitor's backend fd says something changed, the
 * worker's mirror fd becomes readable at once (no data: it then asks);
 * its REFRESH drains it; no new wake-up until the backend speaks again.
 */
static void test_wake(void)
{
	struct opd_conf conf;
	struct opd_ps_chan ch;
	struct dom_config cfg = { .backend_arg = &ch };
	struct seen s = { 0 };
	int sv[2], wake[2], be[2], status = -1;
	struct pollfd p;
	pid_t mon;
	void *st;

	opd_conf_defaults(&conf);
	conf.domain_backend_ops = &fake_backend;
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	CU_ASSERT_FATAL(pipe2(wake, O_CLOEXEC | O_NONBLOCK) == 0);
	CU_ASSERT_FATAL(pipe2(be, O_CLOEXEC | O_NONBLOCK) == 0);
	fake_fd = be[0];
	mon = fork();
	CU_ASSERT_FATAL(mon >= 0);
	if (mon == 0) {
		close(sv[1]);
		close(wake[0]);
		_exit(opd_ps_monitor_wake(sv[0], wake[1], -1, &conf, getppid(), NULL) ? 3 : 0);
	}
	close(sv[0]);
	close(wake[1]);
	ch.sock = sv[1];
	ch.wake = wake[0];
	CU_ASSERT_FATAL(opd_ps_backend.open(&cfg, &st) == 0);
	CU_ASSERT(opd_ps_backend.fd(st) == wake[0]);
	p = (struct pollfd){ .fd = wake[0], .events = POLLIN };
	CU_ASSERT(poll(&p, 1, 300) == 0);	/* nothing said yet */
	CU_ASSERT(write(be[1], "e", 1) == 1);
	CU_ASSERT(poll(&p, 1, 2000) == 1);	/* the monitor woke the worker */
	CU_ASSERT(opd_ps_backend.refresh(st, &seen_ops, &s) == 0);
	p.revents = 0;
	CU_ASSERT(poll(&p, 1, 700) == 0);	/* drained; the backend is quiet */
	CU_ASSERT(write(be[1], "e", 1) == 1);
	CU_ASSERT(poll(&p, 1, 2000) == 1);	/* and again */
	opd_ps_backend.close(st);
	close(sv[1]);
	close(wake[0]);
	CU_ASSERT(waitpid(mon, &status, 0) == mon);
	close(be[0]);
	close(be[1]);
	fake_fd = -1;
}

/* ---- the relay: a collector run by the monitor ---- */

/* A collector in the monitor: each byte on its tick pipe makes it deliver
 * RELAY_CHUNK bytes (a counter in each), start and stop deliver markers. */
#define RELAY_CHUNK (40 * 1024)
static int relay_tick = -1;
static unsigned int relay_n;
static bool relay_open_fails;
static const struct opd_raw_sink *relay_sink;

static int rf_open(const struct opd_collector_args *a, void **state)
{
	if (relay_open_fails)
		return -ENODEV;
	relay_sink = a->sink;
	*state = &relay_n;
	return 0;
}

static size_t rf_pollfds(void *state, struct pollfd *pfd, size_t max)
{
	(void)state;
	if (max < 1)
		return 0;
	pfd[0] = (struct pollfd){ .fd = relay_tick, .events = POLLIN };
	return 1;
}

static int rf_start(void *state)
{
	(void)state;
	return relay_sink->feed(relay_sink->ctx, "HDR", 3);
}

static void relay_chunk(unsigned int k, char *buf)
{
	memset(buf, 'a' + (int)(k % 26), RELAY_CHUNK);
	memcpy(buf, &k, sizeof(k));
}

static int rf_read(void *state, const struct pollfd *pfd, size_t n)
{
	static char buf[RELAY_CHUNK];
	char t[64];
	ssize_t got;
	int ret = 0;

	(void)state;
	if (n < 1 || !(pfd[0].revents & POLLIN))
		return 0;
	got = read(relay_tick, t, sizeof(t));
	for (ssize_t i = 0; i < got && !ret; i++) {
		relay_chunk(relay_n++, buf);
		ret = relay_sink->feed(relay_sink->ctx, buf, RELAY_CHUNK);
	}
	return ret;
}

/* at stop more than the pipe holds: the monitor must write it all out */
#define RELAY_TAIL (2u << 20)

static int rf_stop(void *state)
{
	static char tail[RELAY_TAIL];
	int ret;

	(void)state;
	memset(tail, 'z', sizeof(tail));
	ret = relay_sink->feed(relay_sink->ctx, "END!", 4);
	return ret ? ret : relay_sink->feed(relay_sink->ctx, tail, sizeof(tail));
}

static void rf_close(void *state)
{
	(void)state;
}

static const struct opd_collector_ops relay_fake = {
	.name = "fake", .caps = OPD_CAP_LIVE | OPD_CAP_MONITOR, .open = rf_open,
	.pollfds = rf_pollfds, .start = rf_start, .read = rf_read, .stop = rf_stop,
	.close = rf_close,
};

/* What the worker's daemon would decode: the bytes, in order. */
struct got {
	char *p;
	size_t len, cap;
};

static int got_feed(void *ctx, const void *buf, size_t len)
{
	struct got *g = ctx;

	if (g->len + len > g->cap) {
		g->cap = (g->len + len) * 2;
		g->p = realloc(g->p, g->cap);
		if (!g->p)
			return -ENOMEM;
	}
	memcpy(g->p + g->len, buf, len);
	g->len += len;
	return 0;
}

struct relay_run {
	pid_t mon;
	int sv, tick;
	struct opd_ps_chan ch;
	struct opd_collector_ops ops;
	struct opd_collector_args args;
	struct opd_raw_sink sink;
	struct got got;
	void *state;
};

/* A monitor running relay_fake for us; our end of it opened. */
static void relay_begin(struct relay_run *r)
{
	static struct opd_conf conf;
	int sv[2], stream[2], tick[2];

	memset(r, 0, sizeof(*r));
	opd_conf_defaults(&conf);
	conf.domain_backend_ops = &fake_backend;
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	CU_ASSERT_FATAL(pipe2(stream, O_CLOEXEC) == 0);
	CU_ASSERT_FATAL(pipe2(tick, O_CLOEXEC) == 0);
	r->mon = fork();
	CU_ASSERT_FATAL(r->mon >= 0);
	if (r->mon == 0) {
		struct opd_relay_mon *rm;

		close(sv[1]);
		close(stream[0]);
		close(tick[1]);
		relay_tick = tick[0];
		rm = opd_relay_mon_open(&relay_fake, &conf, NULL, stream[1]);
		_exit(opd_ps_monitor_wake(sv[0], -1, -1, &conf, getppid(), rm) ? 3 : 0);
	}
	close(sv[0]);
	close(stream[1]);
	close(tick[0]);
	r->sv = sv[1];
	r->tick = tick[1];
	r->ch = (struct opd_ps_chan){ .sock = sv[1], .wake = -1 };
	opd_relay_worker_ops(&relay_fake, &r->ops);
	CU_ASSERT(!strcmp(r->ops.name, "fake") && r->ops.caps == relay_fake.caps);
	r->sink = (struct opd_raw_sink){ .ctx = &r->got, .feed = got_feed };
	r->args = (struct opd_collector_args){ .sink = &r->sink, .relay_fd = stream[0],
					       .relay_chan = &r->ch };
	CU_ASSERT_FATAL(r->ops.open(&r->args, &r->state) == 0);
}

static void relay_end(struct relay_run *r)
{
	int status = -1;

	r->ops.close(r->state);
	close(r->sv);
	close(r->tick);
	CU_ASSERT(waitpid(r->mon, &status, 0) == r->mon);
	free(r->got.p);
}

/* One turn of the worker's loop on the relay; its read()'s return. */
static int relay_turn(struct relay_run *r, int ms)
{
	struct pollfd p[4];
	size_t n = r->ops.pollfds(r->state, p, 4);

	if (poll(p, n, ms) <= 0)
		return 0;
	return r->ops.read(r->state, p, n);
}

/*
 * The worker gets the monitor's collector's bytes whole and in order:
 * the start marker, 200 chunks of 40 KiB (more than the pipe holds: the
 * monitor keeps the rest and writes it as the pipe drains), and at stop
 * the collector's last bytes (more than the pipe holds) before the end
 * of the stream.
 */
static void test_relay(void)
{
	struct relay_run r;
	char want[RELAY_CHUNK];
	size_t total = 3 + 200 * (size_t)RELAY_CHUNK;
	bool same = true;

	relay_begin(&r);
	CU_ASSERT_EQUAL_FATAL(r.ops.start(r.state), 0);
	for (int i = 0; i < 200; i++)
		CU_ASSERT(write(r.tick, "t", 1) == 1);
	for (int k = 0; k < 2000 && r.got.len < total; k++)
		CU_ASSERT(relay_turn(&r, 1000) == 0);
	CU_ASSERT_EQUAL(r.got.len, total);
	CU_ASSERT_EQUAL(r.ops.stop(r.state), 0);
	CU_ASSERT_EQUAL_FATAL(r.got.len, total + 4 + RELAY_TAIL);
	CU_ASSERT(!memcmp(r.got.p, "HDR", 3));
	for (unsigned int k = 0; k < 200 && same; k++) {
		relay_chunk(k, want);
		same = !memcmp(r.got.p + 3 + (size_t)k * RELAY_CHUNK, want, RELAY_CHUNK);
	}
	CU_ASSERT(same);
	CU_ASSERT(!memcmp(r.got.p + total, "END!", 4));
	CU_ASSERT(r.got.p[total + 4] == 'z' && r.got.p[total + 3 + RELAY_TAIL] == 'z');
	relay_end(&r);
}

/*
 * A worker that reads nothing: the monitor keeps up to
 * OPD_RELAY_MAX_PENDING bytes, then stops the collector and ends the
 * stream rather than leave a hole in it; the worker's read says so.
 * A collector that cannot open: the worker's start is refused.
 */
static void test_relay_stalled(void)
{
	struct relay_run r;
	int chunks = (int)(OPD_RELAY_MAX_PENDING / RELAY_CHUNK) + 64, ret = 0;

	relay_begin(&r);
	CU_ASSERT_EQUAL_FATAL(r.ops.start(r.state), 0);
	for (int i = 0; i < chunks; i++)
		CU_ASSERT(write(r.tick, "t", 1) == 1);
	sleep(1);
	for (int k = 0; k < 5000 && !ret; k++)
		ret = relay_turn(&r, 2000);
	CU_ASSERT_EQUAL(ret, -EPIPE);
	CU_ASSERT(r.got.len < (size_t)chunks * RELAY_CHUNK);
	CU_ASSERT(r.got.len >= 3 && !memcmp(r.got.p, "HDR", 3));	/* a prefix */
	CU_ASSERT_EQUAL(r.ops.stop(r.state), 0);	/* the stream had ended */
	relay_end(&r);

	relay_open_fails = true;
	relay_begin(&r);
	CU_ASSERT_EQUAL(r.ops.start(r.state), -ENODEV);
	relay_end(&r);
	relay_open_fails = false;
}

/* The worker's session files go through the monitor: the text whole,
 * under the name the monitor picks, nothing malformed written. */
static void test_publish(void)
{
	char top[] = "/tmp/test_pub.XXXXXX", path[128], buf[64];
	struct stat st;
	int sv[2];

	CU_ASSERT_FATAL(mkdtemp(top) != NULL);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	CU_ASSERT_EQUAL(opd_pub_serve(sv[1], top), -EAGAIN);
	CU_ASSERT_EQUAL(opd_pub_write(sv[0], top, OPD_PUB_STATS, "dumps 3\n", 8), 0);
	CU_ASSERT_EQUAL(opd_pub_serve(sv[1], top), 0);
	tp_pathf(path, sizeof(path), "%s/stats", top);
	CU_ASSERT(du_read_small(path, buf, sizeof(buf)) == 8 && !memcmp(buf, "dumps 3\n", 8));
	CU_ASSERT(!stat(path, &st) && (st.st_mode & 07777) == DU_SDIR_FILE_MODE);
	/* a name of the worker's choosing, a NUL inside: nothing written */
	CU_ASSERT(send(sv[0], "x../../etc/passwd", 17, 0) == 17);
	CU_ASSERT_EQUAL(opd_pub_serve(sv[1], top), -EBADMSG);
	CU_ASSERT(send(sv[0], "cab\0cd", 6, 0) == 6);
	CU_ASSERT_EQUAL(opd_pub_serve(sv[1], top), -EBADMSG);
	tp_pathf(path, sizeof(path), "%s/session.conf", top);
	CU_ASSERT(access(path, F_OK) != 0);
	/* too long for a file of the session */
	{
		static char big[OPD_PUB_MAX + 16];

		memset(big, 'a', sizeof(big));
		big[0] = OPD_PUB_CONF;
		CU_ASSERT_EQUAL(opd_pub_write(sv[0], top, OPD_PUB_CONF, big, sizeof(big)),
				-EMSGSIZE);
	}
	/* without a monitor, written here */
	CU_ASSERT_EQUAL(opd_pub_write(-1, top, OPD_PUB_CONF, "collector perf\n", 15), 0);
	CU_ASSERT(du_read_small(path, buf, sizeof(buf)) == 15);
	close(sv[0]);
	CU_ASSERT_EQUAL(opd_pub_serve(sv[1], top), -EPIPE);
	close(sv[1]);
	tp_pathf(path, sizeof(path), "rm -rf %s", top);
	CU_ASSERT(system(path) == 0);
}

/* A child that installs the worker's filter and runs @what: its status. */
static int filtered_child(int what)
{
	int status = -1, devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid_t c = fork();

	if (c == 0) {
		int fl = 0;

		/* case 4 wants a debugfs with no kvm/ in it: an empty one
		 * in a mount namespace of its own (root only) */
		if (what == 4 && (geteuid() != 0 || unshare(CLONE_NEWNS) ||
				  mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
				  mount("tmpfs", "/sys/kernel/debug", "tmpfs", 0, "size=16k")))
			_exit(5);
		/* the worker is never root (a test run as root drops first) */
		if (geteuid() == 0 && (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
			_exit(2);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || opd_ps_seccomp_install())
			_exit(2);
		/* allowed: perf's and the module's stop, the tty check
		 * (refused by /dev/null's driver, not by the filter) */
		if (ioctl(devnull, PERF_EVENT_IOC_DISABLE, 0) != -1 ||
		    ioctl(devnull, DP_KMOD_IOC_DISABLE) != -1 || isatty(devnull))
			_exit(3);
		if (what == 1)
			ioctl(devnull, FIONREAD, &fl);	/* not used: killed */
		if (what == 2)
			ioctl(devnull, PERF_EVENT_IOC_SET_OUTPUT, -1);	/* pre-drop only */
		if (what == 3)
			socket(AF_UNIX, SOCK_STREAM, 0);	/* not in the list */
		if (what == 4)	/* a dom0 or host without KVM: no mount(2) tried */
			(void)opd_kvmtsc_have_kvm_dir(NULL);
		_exit(0);
	}
	if (c > 0)
		waitpid(c, &status, 0);
	close(devnull);
	return status;
}

/* The worker's seccomp filter kills on a call it does not allow, ioctl
 * commands included; the ioctls the worker makes pass. */
static void test_seccomp(void)
{
	struct sock_filter f[OPD_PS_SECCOMP_MAX];
	int st;

	if (opd_ps_seccomp_filter(f, OPD_PS_SECCOMP_MAX) == -ENOTSUP)
		return;
	st = filtered_child(0);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int what = 1; what <= 3; what++) {
		st = filtered_child(what);
		CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
	}
	/* the KVM clock's debugfs check, where there is no kvm/ (Xen's dom0):
	 * the worker asks, and must not try to mount debugfs */
	st = filtered_child(4);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 5)	/* 5: not root, not tried */
		CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "session files published through the monitor", test_publish },
		{ "malformed messages refused", test_malformed },
		{ "malformed keys of a domain refused", test_malformed_keys },
		{ "seccomp kills a forbidden call, ioctl commands too", test_seccomp },
		{ "malformed chunks, requests and answers refused", test_malformed_more },
		{ "messages and fds over the socketpair", test_wire },
		{ "tracepoint and mappings messages checked", test_malformed_trace_maps },
		{ "the worker's tracepoint and mappings requests", test_worker_requests },
		{ "a request the monitor would refuse is not sent", test_worker_bad_request_unsent },
		{ "the worker's mirror of the domains", test_mirror },
		{ "Xen keys and vCPU counts in the mirror", test_mirror_xen_keys },
		{ "back-end threads in the mirror", test_mirror_helpers },
		{ "the monitor connects the real listener only", test_monitor },
		{ "the monitor wakes the worker when its backend speaks", test_wake },
		{ "the monitor's collector reaches the worker whole, in order", test_relay },
		{ "a stalled worker ends the relayed stream, not the monitor", test_relay_stalled },
	};

	du_log_set(quiet_log);
	return du_test_main("privsep", tests, DU_TEST_N(tests), NULL, NULL);
}
