/*
 * Domains (doc/architecture.md, "Domain backends"): the virtual machines
 * on this host as every domain backend (dom_backend.h) describes them: a
 * name, a UUID, the hypervisor kind, the backend's id for it, the host
 * process that runs it (if any), which host thread runs which vCPU, its
 * agent channel and its state.  struct dom_domain is backend-neutral:
 * backends build it with the constructor and setters below (dom_domain.c).
 *
 * What a backend reports may be forged (the procfs backend reads command
 * lines and thread names any local user controls): names and UUIDs are
 * claims, not identities; two domains may share a name or a UUID, and a
 * name may hold any byte but NUL.
 *
 * Ownership: a backend owns its domains.  A domain pointer handed out (by
 * a callback) stays valid until the removed callback for it returns, or
 * until the backend is closed.  Strings returned by accessors live as
 * long as their domain.
 *
 * Not thread-safe: one backend is used by one thread at a time.
 */
#ifndef DOM_H
#define DOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dom_domain;

/* Length of a UUID string "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
#define DOM_UUID_STRLEN 36
/* Longest domain name accepted from a command line, in bytes; a longer
 * -name is treated as absent (the domain is then called "qemu-PID"). */
#define DOM_NAME_MAX 1024
/* Bytes of /proc/PID/cmdline read; the rest is ignored. */
#define DOM_CMDLINE_MAX (64 * 1024)
/* Highest vCPU index + 1 that is accepted from a thread name. */
#define DOM_VCPU_MAX 4096
/* virtio-serial port name of the agent channel (doc/agent-protocol.md). */
#define DOM_AGENT_PORT "org.domprof.agent.0"

struct dom_config {
	/* procfs: root of the proc tree; NULL means "/proc".  Tests pass a
	 * fake tree.  Borrowed for the duration of open only. */
	const char *proc_root;
	/* NULL-terminated list of selected domains, each matched exactly
	 * against a domain's name or (case-insensitively) its UUID.  NULL
	 * selects every domain.  Copied by the backend's open. */
	const char *const *names;
	/* libvirt: the connection URI; NULL: $LIBVIRT_DEFAULT_URI, else
	 * qemu:///system.  Borrowed for the duration of open only. */
	const char *libvirt_uri;
	/* libvirt selects the domains whose metadata asks for profiling
	 * (doc/libvirt.md) plus those @names lists; @names NULL then means
	 * "none more" unless this says every domain was asked for
	 * (--domains=all).  Other backends ignore it. */
	bool names_all;
	/*
	 * procfs identity (doc/trust.md): a process whose command line
	 * says QEMU counts as a domain only if it holds a KVM VM file
	 * descriptor (a /proc/PID/fd link reading "anon_inode:kvm-vm") and
	 * its real, effective, saved and filesystem uids are all root or one
	 * of @vm_uids[0..@nr_vm_uids).  Always checked on the real /proc
	 * (@proc_root NULL); a fake tree opts in with @check_identity.
	 * @vm_uids is copied by open.
	 */
	bool check_identity;
	const uid_t *vm_uids;
	size_t nr_vm_uids;
	/* An injected backend's own argument (the daemon's privsep mirror:
	 * its channel to the monitor).  Borrowed; others ignore it. */
	void *backend_arg;
};

/*
 * Lifecycle callbacks, each optional (NULL).  A backend calls them from
 * its refresh once its set is consistent; they must not refresh or close
 * the same backend.
 */
struct dom_ops {
	/* @d appeared (a new hypervisor process). */
	void (*added)(void *ctx, const struct dom_domain *d);
	/* @d disappeared (its process exited or its pid was reused; it was
	 * destroyed); @d is freed when this returns.  A domain restarted under
	 * the same name is a removed followed by an added, never one domain
	 * with a new pid or id. */
	void (*removed)(void *ctx, const struct dom_domain *d);
	/* The vCPU-to-thread map of a known domain changed (threads still
	 * starting, or vCPU hotplug). */
	void (*vcpus_changed)(void *ctx, const struct dom_domain *d);
	/* Something else of a known domain changed: whether it is selected
	 * (libvirt metadata), its agent path (a channel hot-plugged), its
	 * state (paused, resumed). */
	void (*changed)(void *ctx, const struct dom_domain *d);
	/* A process claims to be a domain but is not one (@why: no KVM VM,
	 * wrong owner); said once per process, after a few scans so a QEMU
	 * still starting is not reported.  @name is its claimed name (any
	 * byte but NUL: escape it before logging). */
	void (*refused)(void *ctx, pid_t pid, const char *name, const char *why);
};

enum dom_state {
	DOM_STATE_RUNNING = 0,
	DOM_STATE_PAUSED,
	DOM_STATE_STOPPED,
};

/* ---- construction (backends) -------------------------------------------- */

/*
 * A new domain called @name (copied; any byte but NUL, at most
 * DOM_NAME_MAX bytes), hypervisor "qemu", id 0 keying no records, pid 0,
 * no vCPUs (not exact), no agent
 * path, running, selected, and the UUID derived from the name
 * (dom_uuid_from_name) until dom_domain_set_uuid().  NULL with errno set.
 */
struct dom_domain *dom_domain_new(const char *name);
void dom_domain_free(struct dom_domain *d);	/* NULL accepted */

/* Set the UUID from @uuid if it is a valid 8-4-4-4-12 hex string (stored
 * lowercase; has_uuid becomes true): 0, else -EINVAL and no change. */
int dom_domain_set_uuid(struct dom_domain *d, const char *uuid);
/* @hv is a static string ("qemu", "xen"), borrowed. */
void dom_domain_set_hypervisor(struct dom_domain *d, const char *hv);
/* The backend's id (libvirt id, Xen domid); 0 if none. */
void dom_domain_set_id(struct dom_domain *d, uint64_t id);
/*
 * The namespace in which that id also keys the domain's DOMAIN records
 * (include/domprof/raw.h): DP_DOMKEY_XEN_DOMID for a Xen domid, whose
 * collector keys samples by it; DOM_ID_NS_NONE (the default) when it
 * keys none (a libvirt id).  A host pid > 0 always keys its domain's
 * records (DP_DOMKEY_HOST_PID).
 */
#define DOM_ID_NS_NONE UINT32_MAX
void dom_domain_set_id_ns(struct dom_domain *d, uint32_t ns);
/*
 * Whether the vCPU map's length is the hypervisor's own vCPU count (Xen
 * says it), not only the vCPU threads seen so far (QEMU's threads may
 * still be starting): a recorded vCPU at or past an exact count is no
 * vCPU (dom_vcpu_limit).  Default false.
 */
void dom_domain_set_vcpus_exact(struct dom_domain *d, bool exact);
void dom_domain_set_pid(struct dom_domain *d, pid_t pid);
void dom_domain_set_state(struct dom_domain *d, enum dom_state s);
/* Copies @path; NULL clears it.  0 or -ENOMEM (then unchanged). */
int dom_domain_set_agent_path(struct dom_domain *d, const char *path);
/* Selected when @names is NULL or one entry equals the name exactly or
 * the UUID case-insensitively (call after the UUID is set). */
void dom_domain_select(struct dom_domain *d, const char *const *names);
/*
 * Replace the vCPU map: @tids[i] is the host thread of vCPU i, -1 for a
 * gap; @n <= DOM_VCPU_MAX.  Copies, and rebuilds the thread-to-vCPU hash.
 * 0, -EINVAL or -ENOMEM (then unchanged).
 */
int dom_domain_set_vcpus(struct dom_domain *d, const pid_t *tids, unsigned int n);
#define DOM_HELPER_MAX 64
/*
 * Host threads that work for the domain beside its QEMU process, such as
 * the back-end kernel threads of a Xen dom0 (blkback, netback): their
 * samples are the domain's {vmm} work.  @tids (> 0, at most
 * DOM_HELPER_MAX; more are left out) are copied and sorted.  Returns true
 * when the set changed.
 */
bool dom_domain_set_helpers(struct dom_domain *d, const pid_t *tids, unsigned int n);
/* @d's helpers, sorted: their number, the array in *@tids. */
unsigned int dom_domain_helpers(const struct dom_domain *d, const pid_t **tids);

/* ---- accessors ------------------------------------------------------------ */

/* The domain name: from -name (the guest= value), else "qemu-PID".  May
 * contain any byte but NUL (including '/'): escape it before using it in
 * a path (dom_domain_safe_name()). */
const char *dom_domain_name(const struct dom_domain *d);

/*
 * Write the name escaped for the {domain}/NAME/ part of a sample path by
 * sfn_escape_component() (lib/sfname/sfname.h: never "", "." or "..",
 * no unescaped '/'; a long name may be split into continued pieces, which
 * sfn_parse() joins back) into @buf, NUL-terminated.  Returns the length,
 * or -ENAMETOOLONG when @size is too small.  Programs using this link
 * lib/sfname/libsfname.a after libdomains.a.
 */
int dom_domain_safe_name(const struct dom_domain *d, char *buf, size_t size);

/*
 * The domain's stable key as a lowercase UUID string: the -uuid value if
 * the command line has a valid one (8-4-4-4-12 hex digits), else a key
 * derived from the name by dom_uuid_from_name().  Never NULL.
 */
const char *dom_domain_uuid(const struct dom_domain *d);

/* True when dom_domain_uuid() came from -uuid, false when derived. */
bool dom_domain_has_uuid(const struct dom_domain *d);

/* Host pid of the hypervisor (QEMU) process; 0 if none (Xen PV). */
pid_t dom_domain_pid(const struct dom_domain *d);

/* "qemu" or "xen". */
const char *dom_domain_hypervisor(const struct dom_domain *d);
/* The backend's id for the domain (libvirt id, Xen domid); 0 if none. */
uint64_t dom_domain_id(const struct dom_domain *d);
/* The namespace its id keys DOMAIN records in; DOM_ID_NS_NONE if none. */
uint32_t dom_domain_id_ns(const struct dom_domain *d);
bool dom_domain_vcpus_exact(const struct dom_domain *d);
enum dom_state dom_domain_state(const struct dom_domain *d);
/* "running", "paused", "stopped". */
const char *dom_state_name(enum dom_state s);

/* 1 + the highest vCPU index seen in a thread name ("CPU N/KVM"); 0 while
 * no vCPU thread is known.  Indices may have gaps (hotplug). */
unsigned int dom_domain_nr_vcpus(const struct dom_domain *d);

/* Host thread id of vCPU @idx, or -1 if unknown or @idx is out of range. */
pid_t dom_domain_vcpu_tid(const struct dom_domain *d, unsigned int idx);

/* The vCPU index host thread @tid runs, or -1.  O(1). */
int dom_domain_vcpu_of_tid(const struct dom_domain *d, pid_t tid);

/* The bound of a recorded vCPU of @d: its vCPU count where the
 * hypervisor says it (dom_domain_set_vcpus_exact), else DOM_VCPU_MAX. */
uint32_t dom_vcpu_limit(const struct dom_domain *d);

/*
 * A domain lookup ends with this: the vCPU a sample's record names
 * (@vcpu; DP_RAW_VCPU_UNKNOWN: none) replaces the one found from its host
 * thread in *@vcpu_out, and a recorded vCPU at or past @limit (the
 * domain's count where the hypervisor says it, else DOM_VCPU_MAX) is no
 * vCPU: -1, whatever the thread said.
 */
void dom_vcpu_recorded(uint32_t vcpu, uint32_t limit, int *vcpu_out);

/* Path of the agent channel's unix socket: the path= of the -chardev
 * socket that a virtserialport named DOM_AGENT_PORT uses; NULL if none. */
const char *dom_domain_agent_path(const struct dom_domain *d);

/* True when the domain is in the configured selection (or all are). */
bool dom_domain_selected(const struct dom_domain *d);

/*
 * The key of a domain without -uuid: a name-based UUID in the RFC 9562
 * version 8 (custom) layout, so it never equals a random (v4) UUID.  The
 * 128 bits are two 64-bit FNV-1a hashes of the bytes "domprof:" + @name,
 * the first with the standard FNV offset basis, the second with the basis
 * xor 0x5bd1e9955bd1e995; then the version nibble (byte 6, high) is set
 * to 8 and the variant bits (byte 8, two high) to 10.  Byte i of the
 * first hash is (h1 >> (56 - 8 * i)) & 0xff.  Writes DOM_UUID_STRLEN + 1
 * bytes (lowercase, NUL-terminated) to @out.
 */
void dom_uuid_from_name(const char *name, char out[DOM_UUID_STRLEN + 1]);

/* A well-mixed hash of a process or thread id, for the backends' open
 * addressing and bucket tables (take the low bits). */
size_t dom_hash_id(pid_t id);

/*
 * Record that thread @tid runs vCPU @v in the map being built, *@map of
 * *@cap slots (-1: no thread yet), grown as needed; *@nr becomes at least
 * @v + 1.  Two threads claiming one index: the lower tid is kept, so the
 * map does not depend on readdir order.  0, or -ENOMEM (map unchanged).
 */
int dom_vcpu_map_add(pid_t **map, unsigned int *cap, unsigned int *nr, unsigned int v,
		     pid_t tid);

#endif
