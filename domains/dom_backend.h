/*
 * The domain-backend interface: who tells the daemon which domains run
 * here, follows their lifecycle, and maps a sample's domain key and vCPU
 * to a domain (perf's machines { host; guests }, with the guests found by
 * a pluggable source).
 *
 * A backend builds backend-neutral struct dom_domain objects (dom.h,
 * constructor and setters in dom_domain.c) and reports changes through
 * struct dom_ops.  Adding a backend is one file (domains/dom_NAME.c
 * defining dom_backend_NAME) and one entry in the table of dom_backend.c.
 *
 * Domain keys (the DOMAIN record's key_ns and key, include/domprof/raw.h):
 *   DP_DOMKEY_HOST_PID   key = host pid of the hypervisor process (KVM/QEMU)
 *   DP_DOMKEY_XEN_DOMID  key = Xen domain id
 * A backend answers -ENOENT for a namespace it does not know.
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
	/*
	 * The domain of a guest sample: its DOMAIN record's @key_ns and @key,
	 * @vcpu as recorded (DP_RAW_VCPU_UNKNOWN when the collector could not
	 * tell) and the host thread @tid it was taken in.  On success *@d is
	 * the domain and *@vcpu_out its vCPU index (the recorded one when
	 * known, else found from @tid; -1 when neither tells).  -ENOENT when
	 * the key is no known domain (*@d = NULL, *@vcpu_out = -1).
	 */
	int (*lookup)(void *state, uint32_t key_ns, uint64_t key, uint32_t vcpu, pid_t tid,
		      const struct dom_domain **d, int *vcpu_out);
	/*
	 * The domain whose host process @pid is (its {vmm} work: QEMU, a Xen
	 * device model), *@vcpu_out the vCPU thread @tid runs or -1.  -ENOENT
	 * when @pid belongs to no domain.
	 */
	int (*lookup_pid)(void *state, pid_t pid, pid_t tid, const struct dom_domain **d,
			  int *vcpu_out);
	/* Iterate the known domains: NULL gives the first, NULL after the last. */
	const struct dom_domain *(*next)(void *state, const struct dom_domain *prev);
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
