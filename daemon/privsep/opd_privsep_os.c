/*
 * The system side of privilege separation (opd_privsep.h): the worker's
 * drop (user, groups, capabilities, no_new_privs, seccomp) and the
 * monitor's loop.
 */
#include "config.h"

#define _GNU_SOURCE 1
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "domprof/kmod.h"
#include "opd_agent.h"
#include "opd_daemon.h"
#include "opd_domain.h"
#include "opd_kvmtsc.h"
#include "opd_privsep.h"
#include "opd_privsep_scope.h"
#include "opd_pub.h"
#include "opd_relay.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

/* ---- seccomp ------------------------------------------------------------- */

#if defined(__x86_64__)
#define PS_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PS_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* What the loop needs: files under the session, memory, time, polling,
 * the sockets it was handed, perf ioctls, signals to itself.  No exec, no
 * fork, no socket or connect, no ptrace, no mount, no kill of others. */
static const int allowed[] = {
#define A(name) SYS_##name,
	A(read) A(write) A(readv) A(writev) A(pread64) A(pwrite64) A(lseek) A(close)
	A(openat) A(fstat) A(newfstatat) A(statx) A(fstatfs) A(statfs) A(faccessat)
	A(getdents64) A(mkdirat) A(renameat) A(renameat2) A(unlinkat) A(readlinkat)
	A(ftruncate) A(fallocate) A(fsync) A(fdatasync) A(syncfs) A(msync) A(fadvise64)
	A(sync_file_range)
	A(fchmod) A(fcntl) A(dup) A(dup3) A(umask)
	A(mmap) A(munmap) A(mremap) A(mprotect) A(madvise) A(brk)
	A(ppoll) A(pselect6) A(recvfrom) A(recvmsg) A(sendto) A(sendmsg) A(shutdown)
	A(clock_gettime) A(clock_getres) A(clock_nanosleep) A(nanosleep) A(gettimeofday)
	A(getpid) A(gettid) A(getppid) A(getuid) A(geteuid) A(getgid) A(getegid)
	A(rt_sigaction) A(rt_sigprocmask) A(rt_sigreturn) A(sigaltstack) A(tgkill)
	A(exit) A(exit_group) A(restart_syscall) A(futex) A(set_robust_list)
	A(sched_yield) A(sched_getaffinity) A(prlimit64) A(getrusage) A(sysinfo) A(uname)
	A(getrandom)
#ifdef SYS_rseq
	A(rseq)
#endif
#ifdef SYS_faccessat2
	A(faccessat2)
#endif
#ifdef SYS_openat2
	A(openat2)	/* du_sdir.c: a session path in one call */
#endif
#if defined(__x86_64__)
	A(open) A(stat) A(lstat) A(access) A(getdents) A(mkdir) A(rename) A(unlink)
	A(rmdir) A(readlink) A(dup2) A(poll) A(select) A(time) A(arch_prctl)
#endif
#undef A
};

/* The ioctl commands the worker makes once it dropped (found in the code
 * and under strace): stopping its collector (perf's counters, the kernel
 * module's device), and the tty check glibc's stdio makes on a character
 * device (stderr on /dev/null).  Nothing that configures or redirects. */
static const unsigned int allowed_ioctls[] = {
	PERF_EVENT_IOC_ENABLE, PERF_EVENT_IOC_DISABLE,
	DP_KMOD_IOC_ENABLE, DP_KMOD_IOC_DISABLE,
	TCGETS,
};

int opd_ps_seccomp_filter(struct sock_filter *f, size_t max)
{
#ifdef PS_AUDIT_ARCH
	enum { N = sizeof(allowed) / sizeof(allowed[0]),
	       NI = sizeof(allowed_ioctls) / sizeof(allowed_ioctls[0]) };
	size_t k = 0;

	if (max < OPD_PS_SECCOMP_MAX || 8 + 2 * N + 2 * NI + 2 > OPD_PS_SECCOMP_MAX)
		return -ENOSPC;
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PS_AUDIT_ARCH, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	/* x32 numbers on x86_64 are another table: killed below */
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 2 * N + 1, 0);
	/* ioctl: to its commands, past the list and its kill */
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 2 * N + 1, 0);
	for (size_t i = 0; i < N; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned int)allowed[i], 0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	/* anything else kills the worker: a compromised worker gets no
	 * second try, and the monitor reports the signal it died of */
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	/* ioctl: its command (the kernel reads an unsigned int) */
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, args[1]) +
					      (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4 : 0));
	for (size_t i = 0; i < NI; i++) {
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, allowed_ioctls[i],
						      0, 1);
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	return (int)k;
#else
	(void)f;
	(void)max;
	return -ENOTSUP;
#endif
}

int opd_ps_seccomp_install(void)
{
	struct sock_filter f[OPD_PS_SECCOMP_MAX];
	struct sock_fprog prog = { .filter = f };
	int n = opd_ps_seccomp_filter(f, OPD_PS_SECCOMP_MAX);

	if (n < 0)
		return n;
	prog.len = (unsigned short)n;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) &&
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0))
		return -errno;
	return 0;
}

/*
 * KVM's TSC offsets (opd_kvmtsc) sit in debugfs, whose top directory only
 * root may enter; the files under kvm/ are world-readable.  In a mount
 * namespace of its own, the worker puts an empty tmpfs over the debugfs
 * mount point and binds only kvm/ into it: the exact clock keeps working
 * and the rest of debugfs is out of its sight.  Best effort.
 */
static void expose_kvm_debugfs(void)
{
	char self[64];
	int fd;

	if (!opd_kvmtsc_have_kvm_dir(NULL))
		return;
	/* the directory is opened in the new namespace: a bind mount's
	 * source must be a mount of the caller's own (else EINVAL) */
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		du_info("privsep: KVM's debugfs not shown to the worker (%s): guest clocks by "
			"the tracepoint or ping/pong", strerror(errno));
		return;
	}
	fd = open("/sys/kernel/debug/kvm", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (mount("tmpfs", "/sys/kernel/debug", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=16k") ||
	    mkdir("/sys/kernel/debug/kvm", 0755) ||
	    mount(self, "/sys/kernel/debug/kvm", NULL, MS_BIND, NULL))
		du_info("privsep: KVM's debugfs not shown to the worker (%s): guest clocks by "
			"the tracepoint or ping/pong", strerror(errno));
	close(fd);
}

int opd_ps_drop(uid_t uid, gid_t gid, pid_t monitor)
{
	int ret;

	expose_kvm_debugfs();
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) {
		ret = -errno;
		du_err("privsep: cannot become uid %u: %s", (unsigned int)uid, strerror(errno));
		return ret;
	}
	/* root cannot come back, and the change cleared every capability */
	if (setresuid(0, 0, 0) == 0) {
		du_err("privsep: root came back after the drop");
		return -EPERM;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) ||
	    prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0)) {
		ret = -errno;
		du_err("privsep: prctl: %s", strerror(errno));
		return ret;
	}
	if (getppid() != monitor)
		raise(SIGTERM);	/* the monitor died before PDEATHSIG was set */
	ret = opd_ps_seccomp_install();
	if (ret) {
		du_err("privsep: cannot install the seccomp filter: %s", strerror(-ret));
		return ret;
	}
	du_info("privsep: worker %d runs as uid %u, gid %u, under seccomp", (int)getpid(),
		(unsigned int)uid, (unsigned int)gid);
	return 0;
}

/* ---- monitor --------------------------------------------------------------- */

struct handle {
	const struct dom_domain *d;
	uint64_t h;
};

struct mon {
	int sock;
	const struct opd_conf *conf;
	const struct dom_backend_ops *be;
	void *bs;
	bool root_listener;		/* the backend's daemon may listen */
	struct handle *hs;
	size_t nh, cap;
	uint64_t next_handle;
	int err;			/* first send error in a refresh */
	const char *proc_root;		/* "/proc" (tests: a fake tree) */
	/* the rings of the last TRACE_OPEN, mapped here until the worker's
	 * next request (by then it mapped them too): a second mapping of a
	 * perf ring is not charged, so its locked memory is root's */
	void *ring[OPD_KVMTSC_MAX_CPUS];
	int nr_ring;
	bool served_refresh;		/* the last request was a REFRESH */
	struct opd_relay_mon *relay;	/* a collector run here, or NULL */
	struct opd_ps_scope scope;	/* MAPS and CONNECT: domains' pids */
	int fds[OPD_KVMTSC_MAX_CPUS];	/* (room for opd_kvmtsc_trace_open_cpus) */
};

static void release_rings(struct mon *m)
{
	size_t len = opd_kvmtsc_trace_map_len();

	for (int i = 0; i < m->nr_ring; i++)
		if (m->ring[i])
			munmap(m->ring[i], len);
	m->nr_ring = 0;
}

/* TRACE_OPEN: open the tracepoint on each CPU and hand the fds over. */
static int mon_trace(struct mon *m)
{
	int *fds = m->fds;
	struct opd_kvmtsc_fmt f;
	struct opd_ps_msg msg;
	size_t len = opd_kvmtsc_trace_map_len();
	char why[300] = "";
	int n, ret = 0;

	n = opd_kvmtsc_trace_open_cpus(NULL, &f, fds, OPD_KVMTSC_MAX_CPUS, why, sizeof(why));
	if (n < 0)
		du_debug("privsep: no TSC offset tracepoint for the worker: %s", why);
	for (int i = 0; i < n; i++) {
		void *r;

		if (fds[i] < 0)
			continue;
		r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
		m->ring[m->nr_ring++] = r == MAP_FAILED ? NULL : r;
		opd_ps_msg_init(&msg, OPD_PS_TRACE_CPU);
		msg.u.tcpu.cpu = i;
		msg.u.tcpu.nr = (uint32_t)n;
		msg.u.tcpu.vcpu_off = f.vcpu_off;
		msg.u.tcpu.prev_off = f.prev_off;
		msg.u.tcpu.next_off = f.next_off;
		msg.u.tcpu.vcpu_size = f.vcpu_size;
		if (!ret)
			ret = opd_ps_send(m->sock, &msg, fds[i]);
		close(fds[i]);
	}
	opd_ps_msg_init(&msg, OPD_PS_END);
	msg.u.end = n < 0 ? n : 0;
	return ret ? ret : opd_ps_send(m->sock, &msg, -1);
}

struct map_ctx {
	struct mon *m;
	pid_t pid;
	char comm[16];
	int err;
};

static int send_map(void *ctx, const struct dp_raw_mmap *mm, const char *path, size_t len)
{
	struct map_ctx *mc = ctx;
	struct opd_ps_msg msg;

	if (!len || len >= OPD_PS_MAP_PATH || !mm->len || memchr(path, '\0', len))
		return 0;	/* (not sent: a path this long is not filed) */
	opd_ps_msg_init(&msg, OPD_PS_MAP);
	msg.u.map.pid = mc->pid;
	msg.u.map.path_len = (uint32_t)len;
	msg.u.map.start = mm->start;
	msg.u.map.len = mm->start + mm->len > mm->start ? mm->len : UINT64_MAX - mm->start;
	msg.u.map.pgoff = mm->pgoff;
	msg.u.map.ino = mm->ino;
	msg.u.map.maj = mm->maj;
	msg.u.map.min = mm->min;
	memcpy(msg.u.map.comm, mc->comm, 15);
	memcpy(msg.u.map.path, path, len);
	mc->err = opd_ps_send(mc->m->sock, &msg, -1);
	return mc->err;
}

static uint64_t mon_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The domain the backend verified whose process is @pid, or NULL. */
static const struct dom_domain *mon_domain(const struct mon *m, pid_t pid)
{
	for (size_t i = 0; i < m->nh; i++)
		if (dom_domain_pid(m->hs[i].d) == pid)
			return m->hs[i].d;
	return NULL;
}

/* MAPS: a process's executable mappings from /proc, as records: a
 * domain's process, or a host process that ran at @pc (scope.h). */
static int mon_maps(struct mon *m, pid_t pid, uint64_t pc)
{
	struct map_ctx mc = { .m = m, .pid = pid };
	struct opd_ps_msg msg;
	int ret = 0;

	if (!mon_domain(m, pid))
		ret = opd_ps_scope_host_maps(&m->scope, m->proc_root, pid, pc, mon_now());
	if (!ret) {
		opd_procfs_comm(m->proc_root, pid, mc.comm);
		mc.comm[15] = 0;
		ret = opd_procfs_maps(m->proc_root, pid, send_map, &mc);
	}
	if (mc.err)
		return mc.err;
	opd_ps_msg_init(&msg, OPD_PS_END);
	msg.u.end = ret < 0 && ret > -4096 ? ret : (ret ? -EIO : 0);
	return opd_ps_send(m->sock, &msg, -1);
}

static void mon_send(struct mon *m, const struct opd_ps_msg *msg, int fd)
{
	int ret = m->err ? 0 : opd_ps_send(m->sock, msg, fd);

	if (ret)
		m->err = ret;
}

static struct handle *mon_find(struct mon *m, const struct dom_domain *d)
{
	for (size_t i = 0; i < m->nh; i++)
		if (m->hs[i].d == d)
			return &m->hs[i];
	return NULL;
}

static void fill_dom(struct opd_ps_msg *msg, enum opd_ps_type type, const struct dom_domain *d,
		     uint64_t h)
{
	struct opd_ps_dom *pd = &msg->u.dom;
	const char *path = dom_domain_agent_path(d);

	opd_ps_msg_init(msg, type);
	pd->handle = h;
	pd->id = dom_domain_id(d);
	pd->id_ns = dom_domain_id_ns(d);
	pd->vcpus_exact = dom_domain_vcpus_exact(d);
	pd->pid = dom_domain_pid(d) > 0 ? dom_domain_pid(d) : 0;
	pd->state = (uint32_t)dom_domain_state(d);
	pd->nr_vcpus = dom_domain_nr_vcpus(d);
	pd->selected = dom_domain_selected(d);
	pd->has_uuid = dom_domain_has_uuid(d);
	pd->xen = !strcmp(dom_domain_hypervisor(d), "xen");
	pd->has_path = path && *path;
	snprintf(pd->uuid, sizeof(pd->uuid), "%s", dom_domain_uuid(d));
	snprintf(pd->name, sizeof(pd->name), "%s", dom_domain_name(d));
	if (pd->has_path)
		snprintf(pd->path, sizeof(pd->path), "%s", path);
	{
		const pid_t *tids;

		pd->nr_helpers = dom_domain_helpers(d, &tids);
		for (uint32_t i = 0; i < pd->nr_helpers; i++)
			pd->helpers[i] = tids[i];
	}
}

static void send_vcpus(struct mon *m, const struct dom_domain *d, uint64_t h)
{
	uint32_t nr = dom_domain_nr_vcpus(d);
	struct opd_ps_msg msg;

	for (uint32_t first = 0; first < nr; first += OPD_PS_VCPU_CHUNK) {
		uint32_t count = nr - first < OPD_PS_VCPU_CHUNK ? nr - first : OPD_PS_VCPU_CHUNK;

		opd_ps_msg_init(&msg, OPD_PS_VCPUS);
		msg.u.vcpus.handle = h;
		msg.u.vcpus.nr = nr;
		msg.u.vcpus.first = first;
		msg.u.vcpus.count = count;
		for (uint32_t i = 0; i < count; i++) {
			pid_t t = dom_domain_vcpu_tid(d, first + i);

			msg.u.vcpus.tids[i] = t > 0 ? t : -1;
		}
		mon_send(m, &msg, -1);
	}
}

static void mon_added(void *ctx, const struct dom_domain *d)
{
	struct mon *m = ctx;
	struct opd_ps_msg msg;

	if (m->nh == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct handle *n = realloc(m->hs, cap * sizeof(*n));

		if (!n) {
			du_err("privsep: out of memory for domain %s", dom_domain_name(d));
			return;
		}
		m->hs = n;
		m->cap = cap;
	}
	m->hs[m->nh].d = d;
	m->hs[m->nh].h = ++m->next_handle;
	fill_dom(&msg, OPD_PS_ADDED, d, m->hs[m->nh].h);
	m->nh++;
	mon_send(m, &msg, -1);
	if (msg.u.dom.nr_vcpus)
		send_vcpus(m, d, m->next_handle);
}

static void mon_removed(void *ctx, const struct dom_domain *d)
{
	struct mon *m = ctx;
	struct handle *e = mon_find(m, d);
	struct opd_ps_msg msg;

	if (!e)
		return;
	opd_ps_msg_init(&msg, OPD_PS_REMOVED);
	msg.u.handle = e->h;
	mon_send(m, &msg, -1);
	*e = m->hs[--m->nh];
}

static void mon_vcpus(void *ctx, const struct dom_domain *d)
{
	struct mon *m = ctx;
	struct handle *e = mon_find(m, d);

	if (e && dom_domain_nr_vcpus(d))
		send_vcpus(m, d, e->h);
}

static void mon_changed(void *ctx, const struct dom_domain *d)
{
	struct mon *m = ctx;
	struct handle *e = mon_find(m, d);
	struct opd_ps_msg msg;

	if (!e)
		return;
	fill_dom(&msg, OPD_PS_CHANGED, d, e->h);
	mon_send(m, &msg, -1);
}

static void mon_refused(void *ctx, pid_t pid, const char *name, const char *why)
{
	struct mon *m = ctx;
	struct opd_ps_msg msg;

	opd_ps_msg_init(&msg, OPD_PS_REFUSED);
	msg.u.refused.pid = pid;
	snprintf(msg.u.refused.name, sizeof(msg.u.refused.name), "%s", name);
	snprintf(msg.u.refused.why, sizeof(msg.u.refused.why), "%s", why && *why ? why : "?");
	mon_send(m, &msg, -1);
}

static const struct dom_ops mon_ops = {
	.added = mon_added,
	.removed = mon_removed,
	.vcpus_changed = mon_vcpus,
	.changed = mon_changed,
	.refused = mon_refused,
};

/* Connect to the agent socket of the domain whose QEMU is @pid, the path
 * as the backend knows it, if its listener is that process.  -errno. */
static int mon_connect(struct mon *m, pid_t pid, int *fd)
{
	const struct dom_domain *d = mon_domain(m, pid);
	const char *path = d ? dom_domain_agent_path(d) : NULL;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s;

	if (!d)
		opd_ps_scope_refused(&m->scope, "CONNECT: no verified domain's process", pid,
				     mon_now());
	if (!path)
		return -ENOENT;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		int ret = -errno;

		close(s);
		return ret;
	}
	if (!opd_agent_peer_ok(s, pid, m->root_listener)) {
		close(s);
		return -EPERM;
	}
	*fd = s;
	return 0;
}

/* SAMPLES: a fresh samples/current for the worker, whose own was set
 * aside (opcontrol --save): made as at the start (hand_dir in
 * opd_main.c), given to the worker's user, opened, sent. */
static int mon_samples(struct mon *m)
{
	struct opd_ps_msg msg;
	char path[PATH_MAX];
	uid_t uid;
	gid_t gid;
	int fd = -1, ret = -ENAMETOOLONG;

	if (snprintf(path, sizeof(path), "%s/samples/current", m->conf->session_dir) <
	    (int)sizeof(path))
		ret = du_sdir_worker_user(m->conf->privsep_user, &uid, &gid);
	if (!ret)
		ret = du_nf_mkdirs(path);
	if (!ret)
		ret = du_sdir_chown_tree(path, uid, gid);
	if (!ret) {
		fd = du_nf_open(path, O_RDONLY | O_DIRECTORY, 0, false);
		ret = fd < 0 ? fd : 0;
	}
	if (ret)
		du_err("privsep: no fresh %s for the worker: %s", path, strerror(-ret));
	opd_ps_msg_init(&msg, OPD_PS_SAMPLES_DIR);
	msg.u.end = ret;
	ret = opd_ps_send(m->sock, &msg, fd);
	if (fd >= 0)
		close(fd);
	return ret;
}

/* Answer a request with END carrying @ret (an errno out of range as
 * -EIO): 0 or the send's -errno. */
static int mon_end(struct mon *m, int ret)
{
	struct opd_ps_msg msg;

	opd_ps_msg_init(&msg, OPD_PS_END);
	msg.u.end = ret < 0 && ret > -4096 ? ret : (ret ? -EIO : 0);
	return opd_ps_send(m->sock, &msg, -1);
}

/* One request from the worker: 0, or -errno to stop. */
static int mon_serve(struct mon *m)
{
	struct opd_ps_msg msg;
	int ret = opd_ps_recv(m->sock, &msg, false, NULL);
	int fd = -1;
	pid_t pid;

	if (ret)
		return ret;
	release_rings(m);
	if (msg.type == OPD_PS_TRACE_OPEN)
		return mon_trace(m);
	if (msg.type == OPD_PS_MAPS)
		return mon_maps(m, msg.u.mreq.pid, msg.u.mreq.pc);
	if (msg.type == OPD_PS_SAMPLES)
		return mon_samples(m);
	if (msg.type == OPD_PS_TASK_LAYOUT)
		return mon_end(m, opd_relay_mon_task_layout(m->relay, &msg.u.layout));
	if (msg.type == OPD_PS_COLLECT)
		return mon_end(m, opd_relay_mon_collect(m->relay, msg.u.end == 1));
	if (msg.type == OPD_PS_REFRESH) {
		m->served_refresh = true;
		m->err = 0;
		ret = m->be ? m->be->refresh(m->bs, &mon_ops, m) : -ENOENT;
		opd_ps_msg_init(&msg, OPD_PS_END);
		msg.u.end = ret;
		mon_send(m, &msg, -1);
		return m->err;
	}
	/* OPD_PS_CONNECT: the only other type a worker may send */
	pid = msg.u.conn.pid;
	ret = mon_connect(m, pid, &fd);
	opd_ps_msg_init(&msg, OPD_PS_CONNECTED);
	msg.u.conn.pid = pid;
	msg.u.conn.err = ret;
	ret = opd_ps_send(m->sock, &msg, fd);
	if (fd >= 0)
		close(fd);
	return ret;
}

static void forward_signals(pid_t worker)
{
	if (opd_sig.stop) {
		opd_sig.stop = 0;
		kill(worker, SIGTERM);
	}
	if (opd_sig.dump) {
		opd_sig.dump = 0;
		kill(worker, SIGUSR1);
	}
	if (opd_sig.hup) {
		opd_sig.hup = 0;
		kill(worker, SIGHUP);
	}
	if (opd_sig.save) {
		opd_sig.save = 0;
		kill(worker, SIGUSR2);
	}
}

int opd_ps_monitor(int sock, const struct opd_conf *conf, pid_t worker)
{
	return opd_ps_monitor_wake(sock, -1, -1, conf, worker, NULL);
}

/* The pollfds past the channel's and the backend's: the relayed collector's. */
#define MON_POLL_MAX 64

/* The worker's published files waiting on @pub, written (opd_pub.h).
 * @pub, or -1 once closed: when the worker closed its end, or @last. */
static int mon_publish(int pub, const char *session, bool last)
{
	int ret = -EAGAIN;

	while (pub >= 0 && (ret = opd_pub_serve(pub, session)) != -EAGAIN && ret != -EPIPE)
		if (ret)
			du_warn("privsep: a session file from the worker not written: %s",
				strerror(-ret));
	if (pub >= 0 && (last || ret == -EPIPE)) {
		close(pub);
		pub = -1;
	}
	return pub;
}

/* The monitor's scope and its own domain backend (none: said, and the
 * worker's requests for domains are refused). */
static void mon_open_backend(struct mon *mp, const struct opd_conf *conf, pid_t worker)
{
	int ret;

	opd_ps_scope_init(&mp->scope, mon_now());
	mp->proc_root = conf->domains_proc_root ? conf->domains_proc_root : "/proc";
	ret = opd_domains_open_backend(conf, &mp->be, &mp->bs);
	if (ret) {
		du_err("privsep monitor: no domain backend: %s", strerror(-ret));
		mp->be = NULL;
		return;
	}
	mp->root_listener = mp->be->agent_root_listener;
	du_info("privsep: monitor %d (root) runs the %s backend for worker %d", (int)getpid(),
		mp->be->name, (int)worker);
}

int opd_ps_monitor_wake(int sock, int wake, int pub, const struct opd_conf *conf, pid_t worker,
			struct opd_relay_mon *relay)
{
	bool woken = false;	/* a wake-up not yet answered by a REFRESH */
	struct mon *mp = calloc(1, sizeof(*mp));	/* large: its rings' tables */
	int ret, status = 0;

	if (!mp) {
		du_err("privsep monitor: out of memory");
		kill(worker, SIGKILL);
		waitpid(worker, &status, 0);
		close(sock);
		return 1;
	}
	mp->sock = sock;
	mp->conf = conf;
	mp->relay = relay;
	mon_open_backend(mp, conf, worker);
	for (;;) {
		struct pollfd p[3 + MON_POLL_MAX] = { { .fd = sock, .events = POLLIN }, { .fd = -1 },
						      { .fd = pub, .events = POLLIN } };
		int bfd = mp->be && mp->be->fd ? mp->be->fd(mp->bs) : -1;
		size_t nr = opd_relay_mon_pollfds(relay, p + 3, MON_POLL_MAX);

		/* the backend's fd is the worker's to have read (its REFRESH
		 * does): looked at again only once that came */
		if (wake >= 0 && bfd >= 0 && !woken)
			p[1] = (struct pollfd){ .fd = bfd, .events = POLLIN };
		forward_signals(worker);
		if (poll(p, 3 + nr, 500) < 0) {
			if (errno != EINTR)
				break;
			continue;
		}
		/* a collector that fails ends its stream; the worker then stops */
		if (nr)
			opd_relay_mon_service(relay, p + 3, nr);
		pub = p[2].revents ? mon_publish(pub, conf->session_dir, false) : pub;
		if (p[1].revents) {
			woken = true;
			if (write(wake, "w", 1) < 0 && errno != EAGAIN)
				du_debug("privsep: wake-up: %s", strerror(errno));
		}
		if (!p[0].revents)
			continue;
		ret = mon_serve(mp);
		if (mp->served_refresh) {
			mp->served_refresh = false;
			woken = false;
		}
		if (ret == -EPIPE)
			break;		/* the worker is gone */
		if (ret == -EBADMSG) {
			du_err("privsep: a malformed request from the worker; stopping it");
			kill(worker, SIGKILL);
			break;
		}
	}
	while (waitpid(worker, &status, 0) < 0 && errno == EINTR)
		forward_signals(worker);
	mon_publish(pub, conf->session_dir, true);	/* its last stats */
	release_rings(mp);
	if (wake >= 0)
		close(wake);
	if (mp->be)
		mp->be->close(mp->bs);
	free(mp->hs);
	free(mp);
	close(sock);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	du_err("privsep: the worker died of signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return 1;
}
