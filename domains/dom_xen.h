/*
 * The xenctrl domain backend (dom_backend_xenctrl, dom_backend.h): the
 * domains of a Xen host as dom0 sees them.  The domain list and CPU
 * accounting come from the hypervisor (xc_domain_getinfolist), names,
 * device-model pids and agent channels from xenstore, and starts and
 * stops from the xenstore watches @introduceDomain and @releaseDomain.
 *
 * The backend reads Xen through a small source interface so its logic
 * (diffing the domain list, lookups, the agent channel) is tested without
 * a hypervisor: dom_xen.c has the real source (libxenctrl, libxenstore),
 * the unit test a fake one.
 *
 * Domain keys: DP_DOMKEY_XEN_DOMID, key = domid.  dom0 is the host, not a
 * domain: it is never reported.
 */
#ifndef DOM_XEN_H
#define DOM_XEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dom_backend.h"

/* The backend; open() says -ENOENT off Xen's dom0, -ENOTSUP when built
 * without libxen (configure --without-xen). */
extern const struct dom_backend_ops dom_backend_xenctrl;

/* What the hypervisor says about one domain. */
struct dom_xen_info {
	uint32_t domid;
	uint8_t handle[16];	/* the domain's UUID, as xl create set it */
	unsigned int nr_vcpus;	/* max_vcpu_id + 1 */
	unsigned int flags;	/* DOM_XEN_F_* */
};
#define DOM_XEN_F_DYING		1u
#define DOM_XEN_F_PAUSED	2u
#define DOM_XEN_F_SHUTDOWN	4u
#define DOM_XEN_F_HVM		8u

/* Where the backend reads Xen from. */
struct dom_xen_src_ops {
	/* Fill @out with up to @max domains, domid order.  Count or -errno. */
	int (*list)(void *src, struct dom_xen_info *out, size_t max);
	/* The xenstore value at @path, malloc'd and NUL-terminated; NULL when
	 * absent or unreadable. */
	char *(*read)(void *src, const char *path);
	/* Consume pending watch events: 1 if any fired, 0 if none, -errno. */
	int (*events)(void *src);
	/* fd readable when a watch fired, or -1. */
	int (*fd)(void *src);
	void (*close)(void *src);	/* NULL accepted */
};

/* Most domains followed; more are ignored (and counted). */
#define DOM_XEN_MAX_DOMS 1024

/*
 * The backend over the source @sops/@src (taken over: closed by
 * dom_xen_close(), also when this fails).  0 with *@state set, or -errno.
 */
int dom_xen_open_src(const struct dom_xen_src_ops *sops, void *src,
		     const struct dom_config *cfg, void **state);

/*
 * dom0's back-end kernel threads (dom_xenback.c): Linux's blkback and
 * netback run threads named for the domain they serve ("DOMID.DEV-N", or
 * "blkback.DOMID.DEV" before, and "vifDOMID.HANDLE-..."); their work is
 * that domain's {vmm}
 * (dom_domain_set_helpers).  Only kernel threads count (PF_KTHREAD in
 * their stat): a process cannot name itself into a domain.
 *
 * dom_xenback_domid: the domain a thread named @comm serves (true, and
 * *@domid), or false.
 * dom_xenback_scan: every such thread under @proc_root (NULL: /proc),
 * @fn called for each; their number, or -errno when the tree cannot be
 * read.
 */
bool dom_xenback_domid(const char *comm, uint32_t *domid);
int dom_xenback_scan(const char *proc_root, void (*fn)(void *arg, uint32_t domid, pid_t tid),
		     void *arg);

/* The UUID string of a domain handle, lowercase 8-4-4-4-12. */
void dom_xen_uuid_str(const uint8_t handle[16], char out[DOM_UUID_STRLEN + 1]);

#endif
