/*
 * The libvirt backend's connection to libvirtd: the process-wide event
 * thread, the callbacks it runs (they only queue a domain's UUID and wake
 * the daemon), and connecting, disconnecting and the reconnect timer.
 * Why it is built this way: dom_libvirt.c's opening comment.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "dom_libvirt_int.h"
#include "util/du_log.h"

struct dlv_shared *dlv_shared_get(struct dlv_shared *s)
{
	atomic_fetch_add(&s->refs, 1);
	return s;
}

void dlv_shared_put(void *p)
{
	struct dlv_shared *s = p;

	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&s->lock);
	if (s->efd >= 0)
		close(s->efd);
	free(s);
}

void dlv_shared_wake(struct dlv_shared *s)
{
	uint64_t one = 1;

	if (write(s->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already non-zero, the daemon will wake */
	}
}

static void queue_domain(struct dlv_shared *s, virDomainPtr dom)
{
	char uuid[VIR_UUID_STRING_BUFLEN];

	if (virDomainGetUUIDString(dom, uuid) < 0) {
		uuid[0] = '\0';
	}
	pthread_mutex_lock(&s->lock);
	if (!uuid[0] || s->n_queued == DLV_QUEUE_MAX) {
		s->resync = true;
	} else {
		bool dup = false;

		for (size_t i = 0; i < s->n_queued; i++)
			dup |= !strcmp(s->queued[i], uuid);
		if (!dup)
			memcpy(s->queued[s->n_queued++], uuid, sizeof(uuid));
	}
	pthread_mutex_unlock(&s->lock);
	dlv_shared_wake(s);
}

/* ---- event callbacks (event thread: no logging, no table access) --------- */

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail,
			void *opaque)
{
	(void)conn;
	(void)event;
	(void)detail;
	queue_domain(opaque, dom);
	return 0;
}

static void on_metadata(virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri,
			void *opaque)
{
	(void)conn;
	if (type == VIR_DOMAIN_METADATA_ELEMENT && nsuri && strcmp(nsuri, DOM_LV_NS_URI))
		return;		/* another tool's element */
	queue_domain(opaque, dom);
}

static void on_device(virConnectPtr conn, virDomainPtr dom, const char *alias, void *opaque)
{
	(void)conn;
	(void)alias;
	queue_domain(opaque, dom);
}

static void on_close(virConnectPtr conn, int reason, void *opaque)
{
	struct dlv_shared *s = opaque;

	(void)conn;
	(void)reason;
	pthread_mutex_lock(&s->lock);
	s->lost = true;
	pthread_mutex_unlock(&s->lock);
	dlv_shared_wake(s);
}

/* ---- process-wide libvirt setup ------------------------------------------- */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_err;

/* libvirt prints every error on stderr unless told otherwise; the backend
 * reports what matters itself. */
static void quiet_errors(void *opaque, virErrorPtr err)
{
	(void)opaque;
	(void)err;
}

static void *event_loop(void *arg)
{
	(void)arg;
	for (;;) {
		if (virEventRunDefaultImpl() < 0)
			usleep(100 * 1000);	/* never spin */
	}
	return NULL;
}

static void global_init(void)
{
	pthread_attr_t attr;
	pthread_t tid;

	virSetErrorFunc(NULL, quiet_errors);
	if (virInitialize() < 0 || virEventRegisterDefaultImpl() < 0) {
		global_err = -EIO;
		return;
	}
	/* Detached and never stopped: libvirt's default loop has no way to
	 * end it, and it sleeps in poll() when there is nothing to do. */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	global_err = -pthread_create(&tid, &attr, event_loop, NULL);
	pthread_attr_destroy(&attr);
}

int dlv_global_init(void)
{
	pthread_once(&global_once, global_init);
	return global_err;
}

/* ---- connection --------------------------------------------------------------- */

void dlv_disconnect(struct dom_lv *lv)
{
	if (!lv->conn)
		return;
	for (size_t i = 0; i < sizeof(lv->cb_ids) / sizeof(lv->cb_ids[0]); i++) {
		if (lv->cb_ids[i] >= 0)
			virConnectDomainEventDeregisterAny(lv->conn, lv->cb_ids[i]);
		lv->cb_ids[i] = -1;
	}
	if (lv->cb_close)
		virConnectUnregisterCloseCallback(lv->conn, on_close);
	lv->cb_close = false;
	virConnectClose(lv->conn);
	lv->conn = NULL;
}

void dlv_arm_retry(struct dom_lv *lv, bool on)
{
	struct itimerspec its;

	if (lv->retrying == on)
		return;
	memset(&its, 0, sizeof(its));
	if (on) {
		its.it_value.tv_sec = DLV_RETRY_MS / 1000;
		its.it_value.tv_nsec = (DLV_RETRY_MS % 1000) * 1000000L;
		its.it_interval = its.it_value;
	}
	timerfd_settime(lv->tfd, 0, &its, NULL);
	lv->retrying = on;
}

const char *dlv_errmsg(void)
{
	const char *m = virGetLastErrorMessage();

	return m ? m : "unknown error";
}

int dlv_connect(struct dom_lv *lv)
{
	static const struct {
		int id;
		virConnectDomainEventGenericCallback cb;
	} evs[] = {
		{ VIR_DOMAIN_EVENT_ID_LIFECYCLE, VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle) },
		{ VIR_DOMAIN_EVENT_ID_METADATA_CHANGE, VIR_DOMAIN_EVENT_CALLBACK(on_metadata) },
		{ VIR_DOMAIN_EVENT_ID_DEVICE_ADDED, VIR_DOMAIN_EVENT_CALLBACK(on_device) },
		{ VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED, VIR_DOMAIN_EVENT_CALLBACK(on_device) },
	};

	_Static_assert(sizeof(evs) / sizeof(evs[0]) == sizeof(lv->cb_ids) / sizeof(lv->cb_ids[0]),
		       "one id per event");
	lv->conn = virConnectOpen(lv->uri);
	if (!lv->conn)
		return -ECONNREFUSED;
	if (virConnectRegisterCloseCallback(lv->conn, on_close, dlv_shared_get(lv->sh),
					    dlv_shared_put) < 0) {
		dlv_shared_put(lv->sh);
		du_warn("libvirt %s: no close callback (%s); a libvirtd restart will go unnoticed "
			"until a call fails", lv->uri, dlv_errmsg());
	} else {
		lv->cb_close = true;
	}
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		lv->cb_ids[i] = virConnectDomainEventRegisterAny(lv->conn, NULL, evs[i].id, evs[i].cb,
								 dlv_shared_get(lv->sh), dlv_shared_put);
		if (lv->cb_ids[i] < 0) {
			dlv_shared_put(lv->sh);
			if (evs[i].id == VIR_DOMAIN_EVENT_ID_LIFECYCLE) {
				du_warn("libvirt %s: cannot subscribe to lifecycle events: %s",
					lv->uri, dlv_errmsg());
				dlv_disconnect(lv);
				return -EIO;
			}
			du_warn("libvirt %s: no event %d: %s", lv->uri, evs[i].id, dlv_errmsg());
		}
	}
	/* keepalive notices a libvirtd that hangs rather than exits */
	virConnectSetKeepAlive(lv->conn, 5, 3);
	pthread_mutex_lock(&lv->sh->lock);
	lv->sh->lost = false;
	lv->sh->resync = true;
	lv->sh->n_queued = 0;
	pthread_mutex_unlock(&lv->sh->lock);
	return 0;
}
