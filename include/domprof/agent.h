/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * domprof agent protocol: the frames opagent (in a guest) and oprofiled (on
 * the host) exchange over the virtio-serial port org.domprof.agent.0.  This
 * header is the single source of the format; doc/agent-protocol.md
 * explains it.
 *
 * All values are little-endian.  The channel is a byte stream of frames:
 *
 *   struct dp_ag_frame (12 bytes: magic, type, flags, payload length)
 *   payload (length bytes, 0..DP_AG_MAX_PAYLOAD, no padding)
 *
 * Every frame carries the magic, so a reader that joins a stream in the
 * middle (host reconnecting to a port with stale bytes) can find the next
 * HELLO.  A payload is a fixed struct below, followed for some types by a
 * variable part whose length the struct states; the two must add up to
 * the payload length exactly.  Types are append-only and never reused; a
 * reader skips a type it does not know (its length says how far).
 * Everything a guest sends is hostile to the host (doc/trust.md).
 */
#ifndef DOMPROF_AGENT_H
#define DOMPROF_AGENT_H

#include <stdint.h>

#define DP_AG_MAGIC		0x47415044U	/* "DPAG" */
/* Newest version this header describes.  2 added TSC (and HELLO's TSC
 * flag); a version-2 host still accepts agents that speak only 1. */
#define DP_AG_PROTO_VERSION	2
#define DP_AG_PROTO_MIN		1
/* Largest payload either side sends or accepts; more is a broken channel. */
#define DP_AG_MAX_PAYLOAD	65536
#define DP_AG_MAX_PATH		4096	/* bytes of a path in MMAP */
#define DP_AG_MAX_COMM		64	/* bytes of a task name in COMM */
#define DP_AG_MAX_RELEASE	256	/* bytes of the kernel release in HELLO */
/* The host's CPU budget for one domain's frames, in ms of daemon CPU a
 * second (oprofiled --guest-cpu): its default and largest value. */
#define DP_AG_GUEST_CPU_MS	200
#define DP_AG_GUEST_CPU_MS_MAX	1000
/* daemon CPU a second all domains' frames may take together (ms) */
#define DP_AG_GUEST_CPU_TOTAL_MS	500
#define DP_AG_BUILD_ID_MAX	20
/* Name of the virtio-serial port (libvirt <channel> target name), and of
 * the Xen PV console channel (xl channel=["name=..."]). */
#define DP_AG_PORT_NAME		"org.domprof.agent.0"

struct dp_ag_frame {
	uint32_t magic;		/* DP_AG_MAGIC */
	uint16_t type;		/* enum dp_ag_type */
	uint16_t flags;		/* none defined yet: sent 0, ignored */
	uint32_t len;		/* payload bytes, <= DP_AG_MAX_PAYLOAD */
};
_Static_assert(sizeof(struct dp_ag_frame) == 12, "dp_ag_frame");

/* Frame types.  Append only; never renumber. */
enum dp_ag_type {
	/* agent -> host */
	DP_AG_HELLO = 1,	/* dp_ag_hello + release */
	DP_AG_KALLSYMS = 2,	/* a chunk of /proc/kallsyms text */
	DP_AG_KALLSYMS_END = 3,	/* dp_ag_table_end */
	DP_AG_MODULES = 4,	/* a chunk of /proc/modules text */
	DP_AG_MODULES_END = 5,	/* dp_ag_table_end */
	DP_AG_SWITCH = 6,	/* dp_ag_switch_hdr + nr * dp_ag_switch */
	DP_AG_MMAP = 7,		/* dp_ag_mmap + path */
	DP_AG_COMM = 8,		/* dp_ag_comm + name */
	DP_AG_FORK = 9,		/* dp_ag_task */
	DP_AG_EXIT = 10,	/* dp_ag_task */
	DP_AG_LOST = 11,	/* dp_ag_lost */
	DP_AG_PONG = 12,	/* dp_ag_pong */
	DP_AG_IMAGE_DATA = 13,	/* dp_ag_image_data + bytes */
	DP_AG_IMAGE_END = 14,	/* dp_ag_image_end */
	DP_AG_STATE_END = 15,	/* dp_ag_state_end: initial snapshot complete */
	DP_AG_TSC = 16,		/* dp_ag_tsc: guest clock against guest TSC (v2) */
	DP_AG_TASK_LAYOUT = 17,	/* dp_ag_task_layout: where the running task is */

	/* host -> agent */
	DP_AG_HOST_HELLO = 64,	/* dp_ag_host_hello */
	DP_AG_PING = 65,	/* dp_ag_ping */
	DP_AG_IMAGE_REQUEST = 66, /* dp_ag_image_request */
	DP_AG_CONFIG = 67,	/* dp_ag_config */
	DP_AG_HOST_JOIN = 68,	/* dp_ag_host_join: a host connected (the first frame) */
	DP_AG_HOST_ACK = 69,	/* dp_ag_host_ack: bytes taken off the channel */
};
/* Highest type this header defines (tables indexed by type). */
#define DP_AG_TYPE_LAST		DP_AG_HOST_ACK

/* HELLO: first frame of every connection. */
struct dp_ag_hello {
	uint32_t proto_min;	/* oldest protocol version the agent speaks */
	uint32_t proto_max;	/* newest; the host picks one in between */
	uint32_t agent_version;	/* major << 16 | minor << 8 | patch */
	uint32_t flags;		/* DP_AG_HELLO_F_* */
	uint32_t nr_cpus;	/* configured CPUs (= vCPUs) */
	uint32_t page_size;
	uint32_t clock_id;	/* clock of every time_ns: CLOCK_MONOTONIC (1) */
	uint16_t release_len;	/* bytes of uname -r after the struct */
	uint16_t reserved;
	uint64_t now_ns;	/* agent clock when HELLO was written */
	uint64_t instance;	/* random per agent process: restarts vs reconnects */
	uint8_t boot_id[16];	/* /proc/sys/kernel/random/boot_id, binary */
};
_Static_assert(sizeof(struct dp_ag_hello) == 64, "dp_ag_hello");
#define DP_AG_HELLO_F_PERF	0x1	/* perf sideband is streamed (switch, mmap, ...) */
#define DP_AG_HELLO_F_SWITCH	0x2	/* context switch records are streamed */
#define DP_AG_HELLO_F_IMAGES	0x4	/* IMAGE_REQUEST is served */
#define DP_AG_HELLO_F_TSC	0x8	/* TSC frames follow (v2; doc/clock.md) */

/* KALLSYMS_END and MODULES_END: what the chunks before it added up to. */
struct dp_ag_table_end {
	uint64_t total_bytes;	/* sum of the chunks' payload bytes */
	uint32_t chunks;
	uint32_t status;	/* enum dp_ag_table_status */
};
_Static_assert(sizeof(struct dp_ag_table_end) == 16, "dp_ag_table_end");
enum dp_ag_table_status {
	DP_AG_TABLE_OK = 0,
	DP_AG_TABLE_UNREADABLE = 1,	/* could not be read: nothing sent */
	DP_AG_TABLE_NO_ADDRS = 2,	/* read, but addresses hidden (kptr_restrict) */
	DP_AG_TABLE_TRUNCATED = 3,	/* a read error part way */
};

/* SWITCH: a batch of context switches on one CPU, in time order. */
struct dp_ag_switch_hdr {
	uint32_t cpu;
	uint32_t nr;		/* nr * sizeof(dp_ag_switch) == rest of payload */
};
_Static_assert(sizeof(struct dp_ag_switch_hdr) == 8, "dp_ag_switch_hdr");
struct dp_ag_switch {
	uint64_t time_ns;	/* when next started running */
	uint32_t prev_pid, prev_tid;
	uint32_t next_pid, next_tid;
};
_Static_assert(sizeof(struct dp_ag_switch) == 24, "dp_ag_switch");
#define DP_AG_MAX_SWITCH \
	((DP_AG_MAX_PAYLOAD - sizeof(struct dp_ag_switch_hdr)) / sizeof(struct dp_ag_switch))

/* MMAP: an executable mapping.  Followed by path_len bytes of path. */
struct dp_ag_mmap {
	uint64_t time_ns;	/* snapshot records: when /proc was read */
	uint32_t cpu;		/* ~0 when unknown (snapshot) */
	uint32_t pid, tid;
	uint32_t cookie;	/* the file's id for IMAGE_REQUEST; 0 = none */
	uint64_t start, len, pgoff;
	uint32_t prot;		/* PROT_* */
	uint32_t flags;		/* MAP_* as perf reports them */
	uint16_t path_len;	/* <= DP_AG_MAX_PATH */
	uint8_t build_id_size;	/* 0 = unknown, else <= DP_AG_BUILD_ID_MAX */
	uint8_t reserved;
	uint8_t build_id[DP_AG_BUILD_ID_MAX];
};
_Static_assert(sizeof(struct dp_ag_mmap) == 80, "dp_ag_mmap");
#define DP_AG_CPU_UNKNOWN	0xffffffffU

/* COMM: a task's name.  Followed by name_len bytes (no NUL). */
struct dp_ag_comm {
	uint64_t time_ns;
	uint32_t pid, tid;
	uint32_t flags;		/* DP_AG_COMM_EXEC */
	uint16_t name_len;	/* <= DP_AG_MAX_COMM */
	uint16_t reserved;
};
_Static_assert(sizeof(struct dp_ag_comm) == 24, "dp_ag_comm");
#define DP_AG_COMM_EXEC		0x1	/* the name changed because of exec() */

/* FORK and EXIT. */
struct dp_ag_task {
	uint64_t time_ns;
	uint32_t pid, ppid;
	uint32_t tid, ptid;
};
_Static_assert(sizeof(struct dp_ag_task) == 24, "dp_ag_task");

/* LOST: records that never made it. */
struct dp_ag_lost {
	uint64_t time_ns;
	uint32_t cpu;
	uint32_t source;	/* enum dp_ag_lost_source */
	uint64_t count;
};
_Static_assert(sizeof(struct dp_ag_lost) == 24, "dp_ag_lost");
enum dp_ag_lost_source {
	DP_AG_LOST_KERNEL = 0,	/* the perf ring was full */
	DP_AG_LOST_AGENT = 1,	/* the agent dropped them (channel too slow) */
};

/* PONG: the answer to PING, for clock correlation (doc/clock.md). */
struct dp_ag_pong {
	uint64_t token;		/* the PING's token */
	uint64_t recv_ns;	/* agent clock when the PING was read */
	uint64_t send_ns;	/* agent clock just before the PONG was written */
};
_Static_assert(sizeof(struct dp_ag_pong) == 24, "dp_ag_pong");

/*
 * TSC (v2): the guest's clock (the clock of every time_ns, HELLO.clock_id)
 * read between two reads of the guest's time stamp counter on one CPU:
 * time_ns was read at TSC tsc (the middle of the two), and the two TSC
 * reads were window_tsc ticks apart, which bounds the error.  Sent after
 * HELLO and then about once a second; the host relates the guest TSC to
 * its own through KVM's per-vCPU offset and scaling (doc/clock.md).
 */
struct dp_ag_tsc {
	uint64_t time_ns;
	uint64_t tsc;
	uint32_t cpu;		/* guest CPU (vCPU index) the reads ran on */
	uint32_t window_tsc;	/* ticks between the two TSC reads */
};
_Static_assert(sizeof(struct dp_ag_tsc) == 24, "dp_ag_tsc");

/*
 * TASK_LAYOUT: where a host that reads the guest's memory at a look (the
 * xen collector, its vCPU paused) finds the process that runs on that
 * vCPU, so that it states which process an address space belongs to as a
 * fact instead of learning it from the clock (doc/guest-asid.md,
 * "Witnessed").  From the guest kernel's own symbols and BTF; sent once in
 * the state, before STATE_END, by an agent that could learn both (an
 * older host skips it by its length).  Guest-chosen numbers: the host
 * only reads the guest's own memory at them, and a wrong answer misfiles
 * only that guest's samples.
 */
struct dp_ag_task_layout {
	/* the per-CPU offset of the pointer to the running task (x86-64:
	 * added to the CPU's kernel GS base; current_task, or since 6.2
	 * pcpu_hot plus its current_task member) */
	uint64_t current;
	uint32_t tgid_off;	/* offset of task_struct.tgid (a 32-bit pid_t) */
	uint32_t flags;		/* none defined: sent 0, ignored */
};
_Static_assert(sizeof(struct dp_ag_task_layout) == 16, "dp_ag_task_layout");

/* IMAGE_DATA: a piece of a requested file.  Followed by the bytes. */
struct dp_ag_image_data {
	uint32_t cookie;
	uint32_t reserved;
	uint64_t offset;	/* of the bytes in the file */
};
_Static_assert(sizeof(struct dp_ag_image_data) == 16, "dp_ag_image_data");

/* IMAGE_END: the last frame of every answer to IMAGE_REQUEST. */
struct dp_ag_image_end {
	uint32_t cookie;
	uint32_t status;	/* enum dp_ag_image_status */
	uint64_t size;		/* the file's size (bytes sent when SENT) */
	uint8_t build_id_size;
	uint8_t reserved[3];
	uint8_t build_id[DP_AG_BUILD_ID_MAX];
};
_Static_assert(sizeof(struct dp_ag_image_end) == 40, "dp_ag_image_end");
enum dp_ag_image_status {
	DP_AG_IMAGE_SENT = 0,
	DP_AG_IMAGE_TOO_BIG = 1,	/* over the agent's per-file cap */
	DP_AG_IMAGE_UNREADABLE = 2,	/* gone, changed, or not openable */
	DP_AG_IMAGE_OVER_BUDGET = 3,	/* the session's byte budget is spent */
	DP_AG_IMAGE_UNKNOWN = 4,	/* no such cookie */
};

/* STATE_END: the snapshot of existing tasks (COMM + MMAP) is complete. */
struct dp_ag_state_end {
	uint64_t time_ns;
	uint32_t nr_tasks;
	uint32_t nr_mmaps;
};
_Static_assert(sizeof(struct dp_ag_state_end) == 16, "dp_ag_state_end");

/* HOST_HELLO: the version the host chose from HELLO's range. */
struct dp_ag_host_hello {
	uint32_t proto_version;
	uint32_t flags;
};
_Static_assert(sizeof(struct dp_ag_host_hello) == 8, "dp_ag_host_hello");

struct dp_ag_ping {
	uint64_t token;		/* echoed in PONG */
};
_Static_assert(sizeof(struct dp_ag_ping) == 8, "dp_ag_ping");

struct dp_ag_image_request {
	uint32_t cookie;
	uint32_t flags;		/* none defined */
};
_Static_assert(sizeof(struct dp_ag_image_request) == 8, "dp_ag_image_request");

/* CONFIG: limits the host asks for; the agent only ever lowers its own. */
struct dp_ag_config {
	uint64_t image_budget;	/* bytes of image data per connection */
	uint32_t image_rate;	/* bytes per second */
	uint32_t image_max;	/* largest file sent whole */
};
_Static_assert(sizeof(struct dp_ag_config) == 16, "dp_ag_config");

/*
 * HOST_JOIN: the first frame the host sends on every new connection.  A
 * channel that shows the agent no hang-up (a Xen PV console, /dev/hvcN)
 * cannot tell when a host connects: there the agent sends nothing until a
 * JOIN, and starts over (HELLO and the full state) on each one.  On
 * virtio-serial, where the port's hang-up says it, an agent that has sent
 * HELLO and not yet seen HOST_HELLO ignores the JOIN (its HELLO is on the
 * way to this host); otherwise it starts over too (a host that reconnected
 * between two of its looks at the port).  Older agents skip it.
 */
struct dp_ag_host_join {
	uint64_t token;		/* the host's connection: a JOIN with the token the
				 * agent already started over for is a repeat
				 * (the host says it until a HELLO comes) */
};
_Static_assert(sizeof(struct dp_ag_host_join) == 8, "dp_ag_host_join");

/*
 * HOST_ACK: how many bytes of this connection, counted from the first byte
 * of the agent's HELLO, the host has taken off the channel.  A Xen PV
 * console is lossy under backlog: dom0's back end keeps at most the
 * console's "limit" (1 MiB from libxl) of bytes the host has not read and
 * drops the middle of the rest.  An agent on such a channel that has seen
 * an ACK keeps its bulk transfers (the symbol table, binaries) within a
 * window of bytes not yet acknowledged; before the first ACK it sends no
 * bulk for a while, then, hearing none (an older host), sends as before.
 * The host says it when a HELLO starts the stream, every 32 KiB it reads
 * and with every PING.  Older agents skip it.
 */
struct dp_ag_host_ack {
	uint64_t bytes;
};
_Static_assert(sizeof(struct dp_ag_host_ack) == 8, "dp_ag_host_ack");

#endif
