/*
 * The libvirt backend's state, shared by its files: dom_libvirt.c (the
 * domain table: open, refresh, accessors, the backend ops), dom_lvconn.c
 * (the connection to libvirtd, its event thread and callbacks) and
 * dom_lvproc.c (a domain's QEMU process and vCPU threads in /proc).  Not
 * an interface: dom_libvirt.h is.
 */
#ifndef DOM_LIBVIRT_INT_H
#define DOM_LIBVIRT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include <libvirt/libvirt.h>

#include "dom.h"
#include "dom_libvirt.h"
#include "dom_lvxml.h"

#define DLV_RETRY_MS 2000
#define DLV_PIDFILE_MAX 32
/* Domains whose change is queued before "list everything" is cheaper. */
#define DLV_QUEUE_MAX 64

/* ---- the part the event thread shares ------------------------------------ */

struct dlv_shared {
	atomic_int refs;
	pthread_mutex_t lock;
	int efd;			/* eventfd: the event thread wakes the daemon */
	/* under lock */
	bool lost;			/* the connection closed */
	bool resync;			/* list every domain again */
	size_t n_queued;
	char queued[DLV_QUEUE_MAX][VIR_UUID_STRING_BUFLEN];
};

/* ---- domains ---------------------------------------------------------------- */

struct lvdom {
	char uuid[DOM_UUID_STRLEN + 1];
	char *name;
	int id;				/* libvirt id: a new one for every start */
	int state;			/* VIR_DOMAIN_RUNNING, _PAUSED, ... */
	pid_t pid;			/* QEMU, 0 if not found */
	unsigned int nr_vcpus;
	pid_t *vcpu_tid;		/* nr_vcpus entries, -1 for gaps */
	char *agent_path;
	enum dom_lv_profile profile;
	bool selected;
	bool seen;			/* in the last listing (resync) */
	struct dom_domain *dd;		/* what the daemon sees (dom.h) */
	struct lvdom *next;
};

struct dom_lv {
	char *uri;
	char *proc_root;
	char *pid_dir;
	char **names;			/* --domains, NULL-terminated; NULL: none */
	bool select_all;
	bool identity;			/* check the QEMU's uids (dom_lv_config) */
	uid_t vm_uids[8];
	size_t nr_vm_uids;
	struct dlv_shared *sh;
	int epfd, tfd;
	virConnectPtr conn;
	int cb_ids[4];
	bool cb_close;
	bool retrying;			/* tfd armed */
	bool said_lost;
	struct lvdom *list;
};

/* ---- dom_lvconn.c ---- */

/* Sets libvirt up once per process (error handler, event loop thread);
 * 0 or -errno, the same for every call. */
int dlv_global_init(void);
/* A reference to @s more (the callbacks hold one each). */
struct dlv_shared *dlv_shared_get(struct dlv_shared *s);
/* Drops a reference to @s (a void * for libvirt's free callbacks); the
 * last frees it. */
void dlv_shared_put(void *p);
/* Wakes the daemon's thread (@s's eventfd). */
void dlv_shared_wake(struct dlv_shared *s);
/* Open the connection and subscribe; 0 or -errno (ECONNREFUSED: no
 * libvirtd answers there). */
int dlv_connect(struct dom_lv *lv);
/* Unsubscribes and closes the connection, if any. */
void dlv_disconnect(struct dom_lv *lv);
/* Arms (@on) or stops the reconnect timer. */
void dlv_arm_retry(struct dom_lv *lv, bool on);
/* libvirt's last error message, never NULL. */
const char *dlv_errmsg(void);

/* ---- dom_lvproc.c ---- */

/* True when /proc/PID/cmdline is a QEMU with -uuid @uuid, run by root or
 * the hypervisor's user. */
bool dlv_pid_has_uuid(const struct dom_lv *lv, pid_t pid, const char *uuid);
/* The pid of the QEMU of domain @name, @uuid: its pid file, else a search
 * of /proc; 0 if not found. */
pid_t dlv_find_qemu_pid(const struct dom_lv *lv, const char *name, const char *uuid);
/* Read the vCPU map of @d->pid from its thread names.  True if it changed. */
bool dlv_read_vcpus(const struct dom_lv *lv, struct lvdom *d);

#endif
