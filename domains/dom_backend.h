/*
 * The domain-backend interface: who tells the daemon which domains run
 * here and follows their lifecycle (perf's machines { host; guests }, with
 * the guests found by a pluggable source).
 *
 * A backend only discovers and reports: it builds backend-neutral struct
 * dom_domain objects (dom.h, constructor and setters in dom_domain.c) and
 * reports changes through struct dom_ops.  The daemon's registry
 * (daemon/registry/opd_domain.h) alone keeps the table samples are looked up in,
 * by the keys each domain declares (DOMAIN records' key_ns and key,
 * include/domprof/raw.h):
 *   DP_DOMKEY_HOST_PID   key = host pid of the hypervisor process
 *                        (dom_domain_set_pid: KVM's QEMU, a Xen device model)
 *   DP_DOMKEY_XEN_DOMID  key = Xen domain id (dom_domain_set_id with
 *                        dom_domain_set_id_ns)
 * Adding a backend is one file (domains/dom_NAME.c defining
 * dom_backend_NAME) and one entry in the table of dom_backend.c.
 *
 * Ownership and lifetime as in dom.h: a domain handed out stays valid
 * until the removed callback for it returns, or until close().  Not
 * thread-safe.
 */
#ifndef DOM_BACKEND_H
#define DOM_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dom.h"

struct dom_backend_ops {
	const char *name;	/* --domain-backend=NAME: "procfs", "libvirt", "xenctrl" */
	/*
	 * Who may listen on a domain's agent socket: its own process always
	 * (SO_PEERCRED), and with this set a root process too, for a backend
	 * whose management daemon (libvirt's, root for any URI the daemon can
	 * reach) binds the socket and hands it to QEMU.  A listener of any
	 * other user is refused.  Nothing is trusted by the backend's name.
	 */
	bool agent_root_listener;
	/*
	 * Connect; nothing is reported before the first refresh().  0 with
	 * *@state set, or -errno: -ENOENT/-ECONNREFUSED/-EACCES/-ENOTSUP mean
	 * "not on this host" (the auto choice then tries the next backend).
	 */
	int (*open)(const struct dom_config *cfg, void **state);
	/* An fd that becomes readable when refresh() has news (lifecycle
	 * events), or -1: the daemon then calls refresh() about once a second. */
	int (*fd)(void *state);
	/*
	 * Bring the domain set up to date and report the differences through
	 * @ops (each callback optional; @ops may be NULL): every removed, then
	 * every added, then changed.  0 or -errno (the set is then unchanged).
	 */
	int (*refresh)(void *state, const struct dom_ops *ops, void *ctx);
	void (*close)(void *state);	/* NULL state accepted */
};

extern const struct dom_backend_ops dom_backend_procfs;
extern const struct dom_backend_ops dom_backend_libvirt;	/* HAVE_LIBVIRT */

/* The backend called @name, NULL if none. */
const struct dom_backend_ops *dom_backend_find(const char *name);

/* The backend names in "auto" order, '|'-separated, into @buf
 * (NUL-terminated, cut to @size), for usage and messages. */
void dom_backend_names(char *buf, size_t size);

/*
 * Open the backend @name, or with "auto" (or NULL) the first in the table
 * whose open() succeeds.  On success *@ops and *@state are set.  -errno
 * otherwise: -EINVAL for an unknown name, else the last open()'s error.
 */
int dom_backend_open(const char *name, const struct dom_config *cfg,
		     const struct dom_backend_ops **ops, void **state);

#endif
