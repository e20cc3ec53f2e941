#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect_xen.h"
#include "domprof/raw.h"
#include "opd_agent.h"
#include "opd_daemon.h"
#include "opd_domain.h"
#include "opd_privsep.h"
#include "util/du_log.h"

/* ---- messages ------------------------------------------------------------ */

static uint32_t body_len(unsigned int type)
{
	switch (type) {
	case OPD_PS_REFRESH:
	case OPD_PS_TRACE_OPEN:
		return 0;
	case OPD_PS_CONNECT:
	case OPD_PS_CONNECTED:
		return sizeof(struct opd_ps_conn);
	case OPD_PS_MAPS:
		return sizeof(struct opd_ps_mapsreq);
	case OPD_PS_TRACE_CPU:
		return sizeof(struct opd_ps_tcpu);
	case OPD_PS_TASK_LAYOUT:
		return sizeof(struct opd_ps_layout);
	case OPD_PS_MAP:
		return sizeof(struct opd_ps_map);
	case OPD_PS_ADDED:
	case OPD_PS_CHANGED:
		return sizeof(struct opd_ps_dom);
	case OPD_PS_REMOVED:
		return sizeof(uint64_t);
	case OPD_PS_VCPUS:
		return sizeof(struct opd_ps_vcpus);
	case OPD_PS_REFUSED:
		return sizeof(struct opd_ps_refused);
	case OPD_PS_END:
	case OPD_PS_COLLECT:
	case OPD_PS_SAMPLES:
	case OPD_PS_SAMPLES_DIR:
		return sizeof(int32_t);
	default:
		return UINT32_MAX;
	}
}

void opd_ps_msg_init(struct opd_ps_msg *m, enum opd_ps_type type)
{
	memset(m, 0, sizeof(*m));
	m->magic = OPD_PS_MAGIC;
	m->type = (uint16_t)type;
	m->len = body_len(type);
}

/* A string field: NUL inside, nothing but NULs after it. */
static bool str_ok(const char *s, size_t size, bool nonempty)
{
	const char *nul = memchr(s, '\0', size);

	if (!nul || (nonempty && nul == s))
		return false;
	for (const char *p = nul; p < s + size; p++)
		if (*p)
			return false;
	return true;
}

static bool helpers_ok(const struct opd_ps_dom *d)
{
	if (d->nr_helpers > DOM_HELPER_MAX || d->reserved || d->pad[0] || d->pad[1] || d->pad[2])
		return false;
	for (uint32_t i = 0; i < DOM_HELPER_MAX; i++) {
		if ((i < d->nr_helpers) != (d->helpers[i] > 0) || d->helpers[i] < 0)
			return false;
		if (i && i < d->nr_helpers && d->helpers[i] <= d->helpers[i - 1])
			return false;
	}
	return true;
}

static bool dom_ok(const struct opd_ps_dom *d)
{
	return helpers_ok(d) && d->handle && d->pid >= 0 && d->state <= DOM_STATE_STOPPED &&
	       d->nr_vcpus <= DOM_VCPU_MAX && d->selected <= 1 && d->has_uuid <= 1 && d->xen <= 1 &&
	       d->has_path <= 1 && d->vcpus_exact <= 1 &&
	       (d->id_ns == DOM_ID_NS_NONE || d->id_ns == DP_DOMKEY_XEN_DOMID) &&
	       str_ok(d->uuid, sizeof(d->uuid), false) &&
	       strlen(d->uuid) <= DOM_UUID_STRLEN && str_ok(d->name, sizeof(d->name), true) &&
	       strlen(d->name) <= DOM_NAME_MAX && str_ok(d->path, sizeof(d->path), d->has_path) &&
	       (d->has_path || !d->path[0]);
}

static bool vcpus_ok(const struct opd_ps_vcpus *v)
{
	if (!v->handle || !v->nr || v->nr > DOM_VCPU_MAX || !v->count || v->count > OPD_PS_VCPU_CHUNK ||
	    v->first >= v->nr || v->count > v->nr - v->first)
		return false;
	for (uint32_t i = v->count; i < OPD_PS_VCPU_CHUNK; i++)
		if (v->tids[i])
			return false;
	for (uint32_t i = 0; i < v->count; i++)
		if (v->tids[i] < -1 || v->tids[i] == 0)
			return false;
	return true;
}

static bool tcpu_ok(const struct opd_ps_tcpu *t)
{
	if (!t->nr || t->nr > OPD_KVMTSC_MAX_CPUS || t->cpu < 0 || (uint32_t)t->cpu >= t->nr ||
	    t->err > 0 || t->err <= -4096)
		return false;
	if (t->err)	/* no layout with a failure */
		return !t->vcpu_off && !t->prev_off && !t->next_off && !t->vcpu_size;
	return t->vcpu_off < 4096 && t->prev_off < 4096 && t->next_off < 4096 &&
	       (t->vcpu_size == 4 || t->vcpu_size == 8);
}

static bool map_ok(const struct opd_ps_map *m)
{
	return m->pid > 0 && str_ok(m->comm, sizeof(m->comm), false) &&
	       str_ok(m->path, sizeof(m->path), true) && m->path_len == strlen(m->path) &&
	       m->len && m->start + m->len > m->start;
}

static bool body_ok(const struct opd_ps_msg *m)
{
	switch (m->type) {
	case OPD_PS_CONNECT:
		return m->u.conn.pid > 0 && m->u.conn.err == 0;
	case OPD_PS_MAPS:
		return m->u.mreq.pid > 0 && m->u.mreq.zero == 0;
	case OPD_PS_TRACE_CPU:
		return tcpu_ok(&m->u.tcpu);
	case OPD_PS_MAP:
		return map_ok(&m->u.map);
	case OPD_PS_CONNECTED:
		return m->u.conn.pid > 0 && m->u.conn.err <= 0 && m->u.conn.err > -4096;
	case OPD_PS_ADDED:
	case OPD_PS_CHANGED:
		return dom_ok(&m->u.dom);
	case OPD_PS_REMOVED:
		return m->u.handle != 0;
	case OPD_PS_VCPUS:
		return vcpus_ok(&m->u.vcpus);
	case OPD_PS_REFUSED:
		return m->u.refused.pid > 0 &&
		       str_ok(m->u.refused.name, sizeof(m->u.refused.name), false) &&
		       str_ok(m->u.refused.why, sizeof(m->u.refused.why), true);
	case OPD_PS_END:
	case OPD_PS_SAMPLES_DIR:
		return m->u.end <= 0 && m->u.end > -4096;
	case OPD_PS_SAMPLES:
		return m->u.end == 0;
	case OPD_PS_COLLECT:
		return m->u.end == 0 || m->u.end == 1;
	case OPD_PS_TASK_LAYOUT:
		return m->u.layout.key_ns == DP_DOMKEY_XEN_DOMID && m->u.layout.key <= UINT32_MAX &&
		       cx_layout_plausible(m->u.layout.current, m->u.layout.tgid_off);
	default:
		return true;	/* REFRESH, TRACE_OPEN: no body */
	}
}

int opd_ps_check(const struct opd_ps_msg *m, size_t n, bool from_monitor, int nfds)
{
	bool to_monitor;

	if (n != sizeof(*m) || m->magic != OPD_PS_MAGIC || m->zero || m->zero2 ||
	    m->type < OPD_PS_REFRESH || m->type >= OPD_PS_TYPE_MAX || m->len != body_len(m->type))
		return -EBADMSG;
	to_monitor = OPD_PS_TO_MONITOR(m->type);
	if (to_monitor == from_monitor)
		return -EBADMSG;
	for (size_t i = m->len; i < sizeof(m->u.raw); i++)
		if (m->u.raw[i])
			return -EBADMSG;
	if (nfds != (((m->type == OPD_PS_CONNECTED && m->u.conn.err == 0) ||
		      (m->type == OPD_PS_TRACE_CPU && m->u.tcpu.err == 0) ||
		      (m->type == OPD_PS_SAMPLES_DIR && m->u.end == 0)) ? 1 : 0))
		return -EBADMSG;
	return body_ok(m) ? 0 : -EBADMSG;
}

int opd_ps_send(int sock, const struct opd_ps_msg *m, int pass_fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	/* the worker never sends what the monitor would take for an attack
	 * (and stop it for): a request it cannot make is refused here */
	if (OPD_PS_TO_MONITOR(m->type) && opd_ps_check(m, sizeof(*m), false, pass_fd >= 0))
		return -EINVAL;
	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		memset(&c, 0, sizeof(c));
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	return n == (ssize_t)sizeof(*m) ? 0 : -EIO;
}

/* The descriptors that came in @mh, at most one kept in *@fd (the rest,
 * and all when there are several, closed).  Returns how many came. */
static int take_fds(struct msghdr *mh, int *fd)
{
	int count = 0;

	*fd = -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t k;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;

			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*fd < 0 && !count)
				*fd = f;
			else
				close(f);
			count++;
		}
	}
	if (count > 1 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return count;
}

int opd_ps_recv(int sock, struct opd_ps_msg *m, bool from_monitor, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} c;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = c.buf, .msg_controllen = sizeof(c.buf) };
	int nfds, got, ret;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	if (n == 0)
		return -EPIPE;
	nfds = take_fds(&mh, &got);
	/* cut (larger than a message) or with cut control data: refused */
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		n = -1;
	ret = opd_ps_check(m, n < 0 ? 0 : (size_t)n, from_monitor, nfds);
	if (ret || !fd) {
		if (got >= 0)
			close(got);
		got = -1;
	}
	if (fd)
		*fd = got;
	return ret;
}

/* ---- the worker's mirror backend ----------------------------------------- */

struct mdom {
	struct mdom *next;
	uint64_t handle;
	struct dom_domain *d;
	bool announced;			/* added was said */
	pid_t *map;			/* vCPU map being received */
	uint32_t map_nr, map_got;
};

struct mirror {
	int sock;
	int wake;		/* -1: asked about once a second */
	struct mdom *list;
};

static int mirror_open(const struct dom_config *cfg, void **state)
{
	const struct opd_ps_chan *ch = cfg ? cfg->backend_arg : NULL;
	struct mirror *m;

	if (!ch || ch->sock < 0)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->sock = ch->sock;
	m->wake = ch->wake;
	*state = m;
	return 0;
}

static int mirror_fd(void *state)
{
	const struct mirror *m = state;

	return m->wake;	/* -1: asked about once a second */
}

static struct mdom *mirror_find(struct mirror *m, uint64_t handle)
{
	for (struct mdom *e = m->list; e; e = e->next)
		if (e->handle == handle)
			return e;
	return NULL;
}

static void mdom_free(struct mdom *e)
{
	dom_domain_free(e->d);
	free(e->map);
	free(e);
}

/* Copy what the monitor said of a domain into @d.  0 or -errno. */
static int apply_dom(struct dom_domain *d, const struct opd_ps_dom *pd)
{
	dom_domain_set_pid(d, pd->pid);
	dom_domain_set_id(d, pd->id);
	dom_domain_set_id_ns(d, pd->id_ns);
	dom_domain_set_vcpus_exact(d, pd->vcpus_exact);
	dom_domain_set_hypervisor(d, pd->xen ? "xen" : "qemu");
	dom_domain_set_state(d, (enum dom_state)pd->state);
	if (pd->has_uuid && dom_domain_set_uuid(d, pd->uuid))
		return -EBADMSG;
	dom_domain_select(d, pd->selected ? NULL : (const char *const[]){ NULL });
	{
		pid_t tids[DOM_HELPER_MAX];

		for (uint32_t i = 0; i < pd->nr_helpers; i++)
			tids[i] = pd->helpers[i];
		dom_domain_set_helpers(d, tids, pd->nr_helpers);
	}
	return dom_domain_set_agent_path(d, pd->has_path ? pd->path : NULL);
}

static int on_added(struct mirror *m, const struct opd_ps_dom *pd, const struct dom_ops *ops,
		    void *ctx)
{
	struct mdom *e;

	if (mirror_find(m, pd->handle))
		return -EBADMSG;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->handle = pd->handle;
	e->d = dom_domain_new(pd->name);
	if (!e->d || apply_dom(e->d, pd)) {
		mdom_free(e);
		return -ENOMEM;
	}
	e->next = m->list;
	m->list = e;
	if (pd->nr_vcpus) {
		e->map_nr = pd->nr_vcpus;	/* announced once the map is in */
		return 0;
	}
	e->announced = true;
	if (ops && ops->added)
		ops->added(ctx, e->d);
	return 0;
}

static int on_removed(struct mirror *m, uint64_t handle, const struct dom_ops *ops, void *ctx)
{
	for (struct mdom **pp = &m->list; *pp; pp = &(*pp)->next) {
		struct mdom *e = *pp;

		if (e->handle != handle)
			continue;
		*pp = e->next;
		if (e->announced && ops && ops->removed)
			ops->removed(ctx, e->d);
		mdom_free(e);
		return 0;
	}
	return -EBADMSG;
}

static int on_vcpus(struct mirror *m, const struct opd_ps_vcpus *v, const struct dom_ops *ops,
		    void *ctx)
{
	struct mdom *e = mirror_find(m, v->handle);

	if (!e)
		return -EBADMSG;
	if (v->first == 0) {
		free(e->map);
		e->map = calloc(v->nr, sizeof(*e->map));
		if (!e->map)
			return -ENOMEM;
		e->map_nr = v->nr;
		e->map_got = 0;
	}
	/* chunks in order, of one map */
	if (!e->map || v->nr != e->map_nr || v->first != e->map_got)
		return -EBADMSG;
	for (uint32_t i = 0; i < v->count; i++)
		e->map[v->first + i] = v->tids[i];
	e->map_got += v->count;
	if (e->map_got < e->map_nr)
		return 0;
	if (dom_domain_set_vcpus(e->d, e->map, e->map_nr))
		return -EBADMSG;
	free(e->map);
	e->map = NULL;
	if (!e->announced) {
		e->announced = true;
		if (ops && ops->added)
			ops->added(ctx, e->d);
	} else if (ops && ops->vcpus_changed) {
		ops->vcpus_changed(ctx, e->d);
	}
	return 0;
}

static int mirror_apply(struct mirror *m, const struct opd_ps_msg *msg, const struct dom_ops *ops,
			void *ctx)
{
	struct mdom *e;

	switch (msg->type) {
	case OPD_PS_ADDED:
		return on_added(m, &msg->u.dom, ops, ctx);
	case OPD_PS_REMOVED:
		return on_removed(m, msg->u.handle, ops, ctx);
	case OPD_PS_VCPUS:
		return on_vcpus(m, &msg->u.vcpus, ops, ctx);
	case OPD_PS_CHANGED:
		e = mirror_find(m, msg->u.dom.handle);
		if (!e || apply_dom(e->d, &msg->u.dom))
			return -EBADMSG;
		if (e->announced && ops && ops->changed)
			ops->changed(ctx, e->d);
		return 0;
	case OPD_PS_REFUSED:
		if (ops && ops->refused)
			ops->refused(ctx, msg->u.refused.pid, msg->u.refused.name, msg->u.refused.why);
		return 0;
	default:
		return -EBADMSG;
	}
}

static int mirror_refresh(void *state, const struct dom_ops *ops, void *ctx)
{
	struct mirror *m = state;
	struct opd_ps_msg msg;
	int ret;

	/* the wake-ups so far are answered by this refresh */
	if (m->wake >= 0) {
		char buf[64];

		while (read(m->wake, buf, sizeof(buf)) > 0)
			;
	}
	opd_ps_msg_init(&msg, OPD_PS_REFRESH);
	ret = opd_ps_send(m->sock, &msg, -1);
	while (!ret) {
		ret = opd_ps_recv(m->sock, &msg, true, NULL);
		if (ret)
			break;
		if (msg.type == OPD_PS_END)
			return msg.u.end;
		ret = mirror_apply(m, &msg, ops, ctx);
	}
	if (ret == -EBADMSG)
		du_err("privsep: a malformed message from the monitor");
	return ret;
}

static void mirror_close(void *state)
{
	struct mirror *m = state;
	struct mdom *e, *n;

	if (!m)
		return;
	for (e = m->list; e; e = n) {
		n = e->next;
		mdom_free(e);
	}
	free(m);
}

const struct dom_backend_ops opd_ps_backend = {
	.name = "privsep",
	.open = mirror_open,
	.fd = mirror_fd,
	.refresh = mirror_refresh,
	.close = mirror_close,
};

int opd_ps_connect(void *chan, pid_t pid, const char *path, int *fd)
{
	const struct opd_ps_chan *ch = chan;
	struct opd_ps_msg m;
	int ret;

	(void)path;	/* the monitor connects to the path it knows */
	*fd = -1;
	opd_ps_msg_init(&m, OPD_PS_CONNECT);
	m.u.conn.pid = pid;
	ret = opd_ps_send(ch->sock, &m, -1);
	if (!ret)
		ret = opd_ps_recv(ch->sock, &m, true, fd);
	if (!ret && (m.type != OPD_PS_CONNECTED || m.u.conn.pid != pid)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		ret = -EBADMSG;
	}
	if (ret)
		return ret;
	return m.u.conn.err;
}

int opd_ps_samples_dir(void *chan, int *fd)
{
	const struct opd_ps_chan *ch = chan;
	struct opd_ps_msg m;
	int ret;

	*fd = -1;
	opd_ps_msg_init(&m, OPD_PS_SAMPLES);
	ret = opd_ps_send(ch->sock, &m, -1);
	if (!ret)
		ret = opd_ps_recv(ch->sock, &m, true, fd);
	if (!ret && m.type != OPD_PS_SAMPLES_DIR) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		ret = -EBADMSG;
	}
	return ret ? ret : m.u.end;
}

int opd_ps_recv_end(int sock)
{
	struct opd_ps_msg m;
	int ret = opd_ps_recv(sock, &m, true, NULL);

	if (!ret && m.type != OPD_PS_END)
		ret = -EBADMSG;
	return ret ? ret : m.u.end;
}

int opd_ps_task_layout(const struct opd_ps_chan *ch, uint32_t key_ns, uint64_t key,
		       uint64_t current, uint32_t tgid_off)
{
	struct opd_ps_msg m;
	int ret;

	opd_ps_msg_init(&m, OPD_PS_TASK_LAYOUT);
	m.u.layout = (struct opd_ps_layout){
		.key_ns = key_ns, .tgid_off = tgid_off, .key = key, .current = current,
	};
	ret = opd_ps_send(ch->sock, &m, -1);
	return ret ? ret : opd_ps_recv_end(ch->sock);
}

int opd_ps_tsc_open(void *chan, struct opd_kvmtsc_fmt *f, int *fds, int max, char *why,
		    size_t whylen)
{
	const struct opd_ps_chan *ch = chan;
	struct opd_ps_msg m;
	uint32_t nr = 0;
	int ret, fd, got = 0;

	for (int i = 0; i < max; i++)
		fds[i] = -1;
	memset(f, 0, sizeof(*f));
	opd_ps_msg_init(&m, OPD_PS_TRACE_OPEN);
	ret = opd_ps_send(ch->sock, &m, -1);
	while (!ret) {
		ret = opd_ps_recv(ch->sock, &m, true, &fd);
		if (ret)
			break;
		if (m.type == OPD_PS_END) {
			ret = m.u.end;
			break;
		}
		/* one layout, one CPU count, each CPU once, within @max */
		if (m.type != OPD_PS_TRACE_CPU || (nr && m.u.tcpu.nr != nr) || m.u.tcpu.cpu >= max ||
		    (fd >= 0 && fds[m.u.tcpu.cpu] >= 0) ||
		    (got && fd >= 0 && (f->vcpu_off != m.u.tcpu.vcpu_off ||
					f->prev_off != m.u.tcpu.prev_off ||
					f->next_off != m.u.tcpu.next_off ||
					f->vcpu_size != m.u.tcpu.vcpu_size))) {
			if (fd >= 0)
				close(fd);
			ret = -EBADMSG;
			break;
		}
		nr = m.u.tcpu.nr;
		if (fd < 0)
			continue;
		fds[m.u.tcpu.cpu] = fd;
		f->vcpu_off = m.u.tcpu.vcpu_off;
		f->prev_off = m.u.tcpu.prev_off;
		f->next_off = m.u.tcpu.next_off;
		f->vcpu_size = m.u.tcpu.vcpu_size;
		got++;
	}
	if (!ret && !got)
		ret = -ENODEV;
	if (ret) {
		for (int i = 0; i < max; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}
		if (ret == -EBADMSG)
			du_err("privsep: a malformed tracepoint answer from the monitor");
		snprintf(why, whylen, "the monitor did not open kvm:kvm_write_tsc_offset: %s",
			 strerror(-ret));
		return ret;
	}
	return (int)(nr < (uint32_t)max ? nr : (uint32_t)max);
}

int opd_ps_maps(void *chan, pid_t pid, uint64_t pc, char comm[16], opd_map_fn fn, void *fctx)
{
	const struct opd_ps_chan *ch = chan;
	struct opd_ps_msg m;
	int ret, cb = 0;

	opd_ps_msg_init(&m, OPD_PS_MAPS);
	m.u.mreq.pid = pid;
	m.u.mreq.pc = pc;
	ret = opd_ps_send(ch->sock, &m, -1);
	while (!ret) {
		struct dp_raw_mmap mm;

		ret = opd_ps_recv(ch->sock, &m, true, NULL);
		if (ret)
			break;
		if (m.type == OPD_PS_END) {
			ret = m.u.end;
			break;
		}
		if (m.type != OPD_PS_MAP || m.u.map.pid != pid) {
			ret = -EBADMSG;
			break;
		}
		if (!comm[0])
			memcpy(comm, m.u.map.comm, 16);
		if (cb)
			continue;	/* read to the END all the same */
		memset(&mm, 0, sizeof(mm));
		mm.pid = mm.tid = (uint32_t)pid;
		mm.start = m.u.map.start;
		mm.len = m.u.map.len;
		mm.pgoff = m.u.map.pgoff;
		mm.ino = m.u.map.ino;
		mm.maj = m.u.map.maj;
		mm.min = m.u.map.min;
		mm.prot = PROT_READ | PROT_EXEC;
		mm.path_len = (uint16_t)m.u.map.path_len;
		cb = fn(fctx, &mm, m.u.map.path, m.u.map.path_len);
	}
	if (ret == -EBADMSG)
		du_err("privsep: a malformed mappings answer from the monitor");
	return ret ? ret : cb;
}
