/*
 * The libvirt domain backend (doc/libvirt.md).
 *
 * What comes from where, and why:
 * - Identity, state, lifecycle: libvirt's API and its event API.  A
 *   domain here is an *active* libvirt domain (one with a QEMU process);
 *   inactive definitions are not domains the daemon can see samples of.
 * - Agent channel path and domprof's metadata element: the live XML
 *   (virDomainGetXMLDesc), re-read on lifecycle, metadata-change and
 *   device-added/removed events.
 * - QEMU pid: libvirt's pid file STATE_DIR/NAME.pid (root may read it; the
 *   daemon runs as root), checked against /proc/PID/cmdline's -uuid, which
 *   libvirt always passes.  If the file is missing or names another
 *   process, /proc is searched for the QEMU whose -uuid is the domain's.
 * - vCPU threads: the QEMU process's thread names "CPU N/KVM" (libvirt
 *   always starts QEMU with debug-threads=on).  Not QMP query-cpus-fast
 *   through virDomainQemuMonitorCommand: libvirt marks every domain that
 *   command touches as tainted ("custom-monitor") and logs a warning, and
 *   the names give the same map with nothing but /proc.
 *
 * Threads: libvirt delivers events only from a running event loop.  One
 * thread per process runs virEventRunDefaultImpl(); the callbacks it calls
 * do nothing but queue the domain's UUID (or "everything") under a mutex
 * and wake the daemon through an eventfd.  All calls into libvirt that
 * change the daemon's view are made by the daemon's own thread in
 * dom_lv_refresh(), so the table is single-threaded like procfs's.  The
 * queue lives in a reference-counted struct, since libvirt may still run a
 * callback while the daemon is deregistering it.
 *
 * libvirtd going away: the close callback marks the connection lost; the
 * next refresh drops it (the domains stay: their QEMUs keep running), and
 * a timerfd wakes the daemon every DLV_RETRY_MS to reconnect, after which
 * everything is listed again and compared with what is known.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "dom_backend.h"
#include "dom_cmdline.h"
#include "dom_libvirt_int.h"
#include "util/du_log.h"

/* ---- domains ---------------------------------------------------------------- */

static void lvdom_free(struct lvdom *d)
{
	if (!d)
		return;
	free(d->name);
	free(d->vcpu_tid);
	free(d->agent_path);
	dom_domain_free(d->dd);
	free(d);
}

/* Bring the backend-neutral domain up to date with @d. */
static int lvdom_sync(struct lvdom *d)
{
	static const char *const none[] = { NULL };

	if (!d->dd) {
		d->dd = dom_domain_new(d->name);
		if (!d->dd)
			return -errno;
		/* libvirt's UUID is the domain's, not a claim read off a
		 * command line; has_uuid says so */
		dom_domain_set_uuid(d->dd, d->uuid);
		dom_domain_set_hypervisor(d->dd, "qemu");
	}
	dom_domain_set_id(d->dd, d->id < 0 ? 0 : (uint64_t)d->id);
	dom_domain_set_pid(d->dd, d->pid);
	dom_domain_set_state(d->dd, d->state == VIR_DOMAIN_PAUSED ||
				    d->state == VIR_DOMAIN_PMSUSPENDED ? DOM_STATE_PAUSED
								       : DOM_STATE_RUNNING);
	if (dom_domain_set_agent_path(d->dd, d->agent_path) ||
	    dom_domain_set_vcpus(d->dd, d->vcpu_tid, d->nr_vcpus))
		return -ENOMEM;
	/* NULL selects, an empty list does not: the choice is made here */
	dom_domain_select(d->dd, d->selected ? NULL : none);
	return 0;
}

static bool name_selected(const struct dom_lv *lv, const char *name, const char *uuid)
{
	if (lv->select_all)
		return true;
	for (char **p = lv->names; p && *p; p++)
		if (!strcmp(*p, name) || !strcasecmp(*p, uuid))
			return true;
	return false;
}

/*
 * Read what libvirt and /proc say of active domain @dom into @d (new or
 * known: then the bits of what changed are returned in *@changes).
 * -ENOENT when it is not active (any more).
 */
static int lvdom_read(struct dom_lv *lv, virDomainPtr dom, struct lvdom *d, unsigned int *changes)
{
	struct dom_lvxml x;
	char *xml;
	int state = 0, reason, ret;
	bool sel;

	*changes = 0;
	if (virDomainGetState(dom, &state, &reason, 0) < 0)
		return -ENOENT;
	if (state == VIR_DOMAIN_SHUTOFF || state == VIR_DOMAIN_NOSTATE)
		return -ENOENT;
	if (state != d->state && d->name)
		*changes |= DOM_LV_CHANGED_STATE;
	d->state = state;
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml)
		return -ENOENT;
	ret = dom_lvxml_parse(xml, strlen(xml), &x);
	free(xml);
	if (ret)
		return ret;
	if (!d->name) {
		const char *n = virDomainGetName(dom);

		d->name = strdup(n ? n : x.name ? x.name : "");
		if (virDomainGetUUIDString(dom, d->uuid) < 0 || !dom_uuid_parse(d->uuid,
		    strlen(d->uuid), d->uuid))
			snprintf(d->uuid, sizeof(d->uuid), "%s", x.uuid);
		d->id = virDomainGetID(dom) == (unsigned int)-1 ? -1 : (int)virDomainGetID(dom);
		if (!d->name) {
			dom_lvxml_release(&x);
			return -ENOMEM;
		}
	}
	if ((x.agent_path == NULL) != (d->agent_path == NULL) ||
	    (x.agent_path && strcmp(x.agent_path, d->agent_path))) {
		free(d->agent_path);
		d->agent_path = x.agent_path;
		x.agent_path = NULL;
		*changes |= DOM_LV_CHANGED_AGENT;
	}
	d->profile = x.profile;
	dom_lvxml_release(&x);
	sel = d->profile == DOM_LV_PROFILE_ON || name_selected(lv, d->name, d->uuid);
	if (sel != d->selected)
		*changes |= DOM_LV_CHANGED_SELECTED;
	d->selected = sel;
	if (d->pid <= 0 || !dlv_pid_has_uuid(lv, d->pid, d->uuid)) {
		pid_t pid = dlv_find_qemu_pid(lv, d->name, d->uuid);

		/* the registry keys the domain's samples by it */
		if (pid != d->pid)
			*changes |= DOM_LV_CHANGED_PID;
		d->pid = pid;
		free(d->vcpu_tid);
		d->vcpu_tid = NULL;
		d->nr_vcpus = 0;
	}
	if (dlv_read_vcpus(lv, d))
		*changes |= DOM_LV_CHANGED_VCPUS;
	return lvdom_sync(d);
}

static void free_names(char **names)
{
	for (char **p = names; p && *p; p++)
		free(*p);
	free(names);
}

void dom_lv_close(struct dom_lv *lv)
{
	struct lvdom *d, *next;

	if (!lv)
		return;
	dlv_disconnect(lv);
	for (d = lv->list; d; d = next) {
		next = d->next;
		lvdom_free(d);
	}
	if (lv->epfd >= 0)
		close(lv->epfd);
	if (lv->tfd >= 0)
		close(lv->tfd);
	dlv_shared_put(lv->sh);
	free_names(lv->names);
	free(lv->uri);
	free(lv->proc_root);
	free(lv->pid_dir);
	free(lv);
}

int dom_lv_open(const struct dom_lv_config *cfg, struct dom_lv **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct dom_lv *lv;
	size_t n = 0;
	int ret;

	*out = NULL;
	ret = dlv_global_init();
	if (ret)
		return ret;
	lv = calloc(1, sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	lv->epfd = lv->tfd = -1;
	for (size_t i = 0; i < sizeof(lv->cb_ids) / sizeof(lv->cb_ids[0]); i++)
		lv->cb_ids[i] = -1;
	lv->sh = calloc(1, sizeof(*lv->sh));
	if (!lv->sh) {
		ret = -ENOMEM;
		goto out_close;
	}
	atomic_init(&lv->sh->refs, 1);
	pthread_mutex_init(&lv->sh->lock, NULL);
	lv->sh->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	lv->uri = strdup(cfg && cfg->uri ? cfg->uri : DOM_LV_DEFAULT_URI);
	lv->proc_root = strdup(cfg && cfg->proc_root ? cfg->proc_root : "/proc");
	lv->pid_dir = strdup(cfg && cfg->pid_dir ? cfg->pid_dir : DOM_LV_DEFAULT_PID_DIR);
	lv->select_all = cfg && cfg->select_all;
	lv->identity = !cfg || !cfg->proc_root || cfg->check_identity;
	for (size_t i = 0; cfg && i < cfg->nr_vm_uids && i < 8; i++)
		lv->vm_uids[lv->nr_vm_uids++] = cfg->vm_uids[i];
	for (; cfg && cfg->names && cfg->names[n]; n++)
		;
	if (n) {
		lv->names = calloc(n + 1, sizeof(*lv->names));
		for (size_t i = 0; lv->names && i < n; i++)
			if (!(lv->names[i] = strdup(cfg->names[i])))
				goto out_nomem;
		if (!lv->names)
			goto out_nomem;
	}
	if (!lv->uri || !lv->proc_root || !lv->pid_dir)
		goto out_nomem;
	lv->epfd = epoll_create1(EPOLL_CLOEXEC);
	lv->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (lv->sh->efd < 0 || lv->epfd < 0 || lv->tfd < 0) {
		ret = -errno;
		goto out_close;
	}
	ev.data.fd = lv->sh->efd;
	if (epoll_ctl(lv->epfd, EPOLL_CTL_ADD, lv->sh->efd, &ev) < 0) {
		ret = -errno;
		goto out_close;
	}
	ev.data.fd = lv->tfd;
	if (epoll_ctl(lv->epfd, EPOLL_CTL_ADD, lv->tfd, &ev) < 0) {
		ret = -errno;
		goto out_close;
	}
	ret = dlv_connect(lv);
	if (ret)
		goto out_close;
	du_info("libvirt: connected to %s", lv->uri);
	*out = lv;
	return 0;

out_nomem:
	ret = -ENOMEM;
out_close:
	dom_lv_close(lv);
	return ret;
}

int dom_lv_fd(const struct dom_lv *lv)
{
	return lv->epfd;
}

/* ---- bringing the table up to date ----------------------------------------------- */

static struct lvdom *find_uuid(struct dom_lv *lv, const char *uuid)
{
	for (struct lvdom *d = lv->list; d; d = d->next)
		if (!strcasecmp(d->uuid, uuid))
			return d;
	return NULL;
}

static void unlink_dom(struct dom_lv *lv, struct lvdom *d)
{
	for (struct lvdom **pp = &lv->list; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			return;
		}
	}
}

static void remove_dom(struct dom_lv *lv, struct lvdom *d, const struct dom_lv_ops *ops, void *ctx)
{
	unlink_dom(lv, d);
	if (ops && ops->removed)
		ops->removed(ctx, d);
	lvdom_free(d);
}

/*
 * Bring what is known of @dom (a libvirt domain, active or not) up to
 * date.  @uuid is its UUID.  Returns the number of changes reported.
 */
static int update_one(struct dom_lv *lv, virDomainPtr dom, const char *uuid,
		      const struct dom_lv_ops *ops, void *ctx)
{
	struct lvdom *d = find_uuid(lv, uuid);
	unsigned int id = dom ? virDomainGetID(dom) : (unsigned int)-1;
	unsigned int changes;
	int ret;

	/* stopped, or stopped and started again since we looked */
	if (d && (!dom || id == (unsigned int)-1 || (int)id != d->id)) {
		remove_dom(lv, d, ops, ctx);
		d = NULL;
		if (!dom || id == (unsigned int)-1)
			return 1;
	}
	if (!dom || id == (unsigned int)-1)
		return 0;
	if (d) {
		d->seen = true;
		ret = lvdom_read(lv, dom, d, &changes);
		if (ret == -ENOENT) {
			remove_dom(lv, d, ops, ctx);
			return 1;
		}
		if (ret || !changes)
			return 0;
		if (ops && ops->changed)
			ops->changed(ctx, d, changes);
		return 1;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = lvdom_read(lv, dom, d, &changes);
	if (ret) {
		lvdom_free(d);
		return ret == -ENOENT ? 0 : ret;
	}
	d->seen = true;
	d->next = lv->list;
	lv->list = d;
	if (ops && ops->added)
		ops->added(ctx, d);
	return 1;
}

static int resync(struct dom_lv *lv, const struct dom_lv_ops *ops, void *ctx)
{
	virDomainPtr *doms = NULL;
	struct lvdom *d, *next;
	int n, changes = 0;

	n = virConnectListAllDomains(lv->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0)
		return -EIO;
	for (d = lv->list; d; d = d->next)
		d->seen = false;
	for (int i = 0; i < n; i++) {
		char uuid[VIR_UUID_STRING_BUFLEN];

		if (virDomainGetUUIDString(doms[i], uuid) == 0) {
			int r = update_one(lv, doms[i], uuid, ops, ctx);

			if (r > 0)
				changes += r;
		}
		virDomainFree(doms[i]);
	}
	free(doms);
	for (d = lv->list; d; d = next) {
		next = d->next;
		if (!d->seen) {
			remove_dom(lv, d, ops, ctx);
			changes++;
		}
	}
	return changes;
}

int dom_lv_refresh(struct dom_lv *lv, const struct dom_lv_ops *ops, void *ctx)
{
	char queued[DLV_QUEUE_MAX][VIR_UUID_STRING_BUFLEN];
	size_t n_queued;
	bool lost, want_all;
	uint64_t v;
	int changes = 0, ret;

	/* drain both wake-ups; they only say "look" */
	if (read(lv->sh->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing queued */
	}
	if (read(lv->tfd, &v, sizeof(v)) < 0) {
		/* EAGAIN */
	}
	pthread_mutex_lock(&lv->sh->lock);
	lost = lv->sh->lost;
	lv->sh->lost = false;
	pthread_mutex_unlock(&lv->sh->lock);
	if (lost || (lv->conn && virConnectIsAlive(lv->conn) != 1)) {
		if (!lv->said_lost)
			du_warn("libvirt: lost the connection to %s; domains are kept, "
				"reconnecting every %d ms", lv->uri, DLV_RETRY_MS);
		lv->said_lost = true;
		dlv_disconnect(lv);
	}
	if (!lv->conn) {
		if (dlv_connect(lv)) {
			dlv_arm_retry(lv, true);
			return 0;
		}
		dlv_arm_retry(lv, false);
		du_info("libvirt: connected to %s again", lv->uri);
		lv->said_lost = false;
	}
	pthread_mutex_lock(&lv->sh->lock);
	want_all = lv->sh->resync;
	n_queued = lv->sh->n_queued;
	memcpy(queued, lv->sh->queued, n_queued * sizeof(queued[0]));
	lv->sh->resync = false;
	lv->sh->n_queued = 0;
	pthread_mutex_unlock(&lv->sh->lock);
	if (want_all) {
		ret = resync(lv, ops, ctx);
		if (ret < 0) {
			/* most likely the connection just went; retry soon */
			pthread_mutex_lock(&lv->sh->lock);
			lv->sh->resync = true;
			pthread_mutex_unlock(&lv->sh->lock);
			dlv_arm_retry(lv, true);
			return 0;
		}
		return ret;
	}
	for (size_t i = 0; i < n_queued; i++) {
		virDomainPtr dom = virDomainLookupByUUIDString(lv->conn, queued[i]);

		if (!dom && virGetLastErrorCode() != VIR_ERR_NO_DOMAIN) {
			/* not an answer about the domain: ask again, all of them */
			pthread_mutex_lock(&lv->sh->lock);
			lv->sh->resync = true;
			pthread_mutex_unlock(&lv->sh->lock);
			dlv_shared_wake(lv->sh);
			break;
		}
		ret = update_one(lv, dom, queued[i], ops, ctx);
		if (ret > 0)
			changes += ret;
		if (dom)
			virDomainFree(dom);
	}
	return changes;
}

/* ---- accessors --------------------------------------------------------------------- */

const char *dom_lv_dom_name(const struct lvdom *d) { return d->name; }
const char *dom_lv_dom_uuid(const struct lvdom *d) { return d->uuid; }
pid_t dom_lv_dom_pid(const struct lvdom *d) { return d->pid; }
unsigned int dom_lv_dom_nr_vcpus(const struct lvdom *d) { return d->nr_vcpus; }
bool dom_lv_dom_selected(const struct lvdom *d) { return d->selected; }

const char *dom_lv_dom_state(const struct lvdom *d)
{
	switch (d->state) {
	case VIR_DOMAIN_RUNNING:
		return "running";
	case VIR_DOMAIN_BLOCKED:
		return "blocked";
	case VIR_DOMAIN_PAUSED:
		return "paused";
	case VIR_DOMAIN_SHUTDOWN:
		return "shutting-down";
	case VIR_DOMAIN_CRASHED:
		return "crashed";
	case VIR_DOMAIN_PMSUSPENDED:
		return "pmsuspended";
	default:
		return "unknown";
	}
}

/* ---- the domain-backend ops (dom_backend.h) -------------------------------------------- */

struct lv_backend {
	struct dom_lv *lv;
	/* the refresh in progress */
	const struct dom_ops *ops;
	void *ctx;
};

static void be_added(void *ctx, const struct lvdom *d)
{
	struct lv_backend *b = ctx;

	if (d->dd && b->ops && b->ops->added)
		b->ops->added(b->ctx, d->dd);
}

static void be_removed(void *ctx, const struct lvdom *d)
{
	struct lv_backend *b = ctx;

	if (d->dd && b->ops && b->ops->removed)
		b->ops->removed(b->ctx, d->dd);
}

static void be_changed(void *ctx, const struct lvdom *d, unsigned int what)
{
	struct lv_backend *b = ctx;

	if (!d->dd || !b->ops)
		return;
	if ((what & DOM_LV_CHANGED_VCPUS) && b->ops->vcpus_changed)
		b->ops->vcpus_changed(b->ctx, d->dd);
	if ((what & ~DOM_LV_CHANGED_VCPUS) && b->ops->changed)
		b->ops->changed(b->ctx, d->dd);
}

static const struct dom_lv_ops be_lv_ops = {
	.added = be_added, .removed = be_removed, .changed = be_changed,
};

static int be_open(const struct dom_config *cfg, void **state)
{
	struct dom_lv_config lc;
	struct lv_backend *b;
	int ret;

	*state = NULL;
	memset(&lc, 0, sizeof(lc));
	if (cfg) {
		lc.uri = cfg->libvirt_uri;
		lc.proc_root = cfg->proc_root;
		lc.names = cfg->names;
		lc.select_all = cfg->names_all;
		lc.check_identity = cfg->check_identity;
		lc.vm_uids = cfg->vm_uids;
		lc.nr_vm_uids = cfg->nr_vm_uids;
	}
	if (!lc.uri)
		lc.uri = getenv("LIBVIRT_DEFAULT_URI");
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	ret = dom_lv_open(&lc, &b->lv);
	if (ret) {
		/* said once, at start: the daemon then tries the next backend */
		du_info("libvirt: no libvirtd at %s (%s)", lc.uri ? lc.uri : DOM_LV_DEFAULT_URI,
			dlv_errmsg());
		free(b);
		return ret;
	}
	*state = b;
	return 0;
}

static int be_fd(void *state)
{
	return dom_lv_fd(((struct lv_backend *)state)->lv);
}

static int be_refresh(void *state, const struct dom_ops *ops, void *ctx)
{
	struct lv_backend *b = state;
	int ret;

	b->ops = ops;
	b->ctx = ctx;
	ret = dom_lv_refresh(b->lv, &be_lv_ops, b);
	b->ops = NULL;
	b->ctx = NULL;
	return ret < 0 ? ret : 0;
}

static void be_close(void *state)
{
	struct lv_backend *b = state;

	if (!b)
		return;
	dom_lv_close(b->lv);
	free(b);
}

const struct dom_backend_ops dom_backend_libvirt = {
	.name = "libvirt",
	/* libvirt binds a channel's socket and passes it to QEMU */
	.agent_root_listener = true,
	.open = be_open,
	.fd = be_fd,
	.refresh = be_refresh,
	.close = be_close,
};
