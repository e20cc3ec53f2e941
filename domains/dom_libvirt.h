/*
 * The libvirt domain backend's own interface (dom_libvirt.c; what it reads
 * from where is explained there and in doc/libvirt.md).  The daemon uses
 * it through the domain-backend ops; this header is what those ops wrap.
 *
 * Ownership: a struct dom_lv owns its domains.  A domain pointer stays
 * valid until the ops->removed callback for it returns or dom_lv_close().
 * Not thread-safe: one thread calls everything here (libvirt's event
 * thread, which the backend starts once per process, never touches the
 * table).
 */
#ifndef DOM_LIBVIRT_H
#define DOM_LIBVIRT_H

#include <stdbool.h>
#include <sys/types.h>

#define DOM_LV_DEFAULT_URI "qemu:///system"
/* Where libvirtd's system QEMU driver writes NAME.pid. */
#define DOM_LV_DEFAULT_PID_DIR "/run/libvirt/qemu"

struct dom_lv;
struct lvdom;

struct dom_lv_config {
	const char *uri;		/* NULL: DOM_LV_DEFAULT_URI */
	const char *proc_root;		/* NULL: "/proc" */
	const char *pid_dir;		/* NULL: DOM_LV_DEFAULT_PID_DIR */
	/* Selected besides the domains whose metadata enables profiling:
	 * these names or UUIDs (NULL-terminated, may be NULL), or all. */
	const char *const *names;
	bool select_all;
	/* the QEMU of a domain must run as root or one of @vm_uids (all its
	 * uids), as dom.h's check_identity says: checked on the real /proc,
	 * or with @check_identity on @proc_root */
	bool check_identity;
	const uid_t *vm_uids;		/* borrowed for open only */
	size_t nr_vm_uids;
};

/* What changed of a known domain (bits of dom_lv_ops.changed's @what). */
#define DOM_LV_CHANGED_VCPUS	1u
#define DOM_LV_CHANGED_AGENT	2u	/* agent channel appeared, went or moved */
#define DOM_LV_CHANGED_SELECTED	4u	/* metadata turned profiling on or off */
#define DOM_LV_CHANGED_STATE	8u	/* paused, resumed, ... */
#define DOM_LV_CHANGED_PID	16u	/* its QEMU process found (late), or another */

struct dom_lv_ops {
	/* @d became active (started, or found when (re)connecting). */
	void (*added)(void *ctx, const struct lvdom *d);
	/* @d stopped, crashed, or vanished while libvirtd was away; freed when
	 * this returns.  A restart is a removed then an added. */
	void (*removed)(void *ctx, const struct lvdom *d);
	void (*changed)(void *ctx, const struct lvdom *d, unsigned int what);
};

/*
 * Connect to cfg->uri and subscribe to its lifecycle, metadata-change and
 * device events.  0, or -ECONNREFUSED when no libvirtd answers there (the
 * caller may use another backend), -ENOMEM, -EIO.  No domain is listed
 * before the first dom_lv_refresh().
 */
int dom_lv_open(const struct dom_lv_config *cfg, struct dom_lv **out);
/* Disconnect and free.  NULL accepted. */
void dom_lv_close(struct dom_lv *lv);

/* An fd that becomes readable when dom_lv_refresh() has work: an event
 * came, or it is time to try reconnecting.  Owned by @lv. */
int dom_lv_fd(const struct dom_lv *lv);

/*
 * Act on what the events said (or list everything, after a (re)connect),
 * calling @ops for the differences.  Never fails for libvirtd's sake: a
 * lost connection keeps the domains and is retried.  Returns the number
 * of changes reported, or -ENOMEM.
 */
int dom_lv_refresh(struct dom_lv *lv, const struct dom_lv_ops *ops, void *ctx);

const char *dom_lv_dom_name(const struct lvdom *d);
const char *dom_lv_dom_uuid(const struct lvdom *d);	/* lowercase */
const char *dom_lv_dom_state(const struct lvdom *d);
pid_t dom_lv_dom_pid(const struct lvdom *d);		/* 0: QEMU not found */
unsigned int dom_lv_dom_nr_vcpus(const struct lvdom *d);
bool dom_lv_dom_selected(const struct lvdom *d);

#endif
