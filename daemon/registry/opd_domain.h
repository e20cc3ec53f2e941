/*
 * The daemon's view of the domains on a live host (doc/architecture.md,
 * "Domain backends"; doc/session.md): domains/ finds them (a backend
 * chosen by --domain-backend, dom_backend.h; this module talks only to its
 * ops), this module keeps what sample filing needs of each (its name as
 * the sample files' {domain} component, whether it is selected, its QEMU
 * pid) and the per-domain metadata file, and reacts to lifecycle changes:
 *
 *   started  SESSION/domains/<escaped NAME>/info written (state running);
 *            if that file names another command-line UUID, the old
 *            domain's trees (samples/current/{domain}/<escaped NAME> and
 *            domains/<escaped NAME>) are first renamed aside to
 *            <escaped NAME>.<first 8 hex digits of the old UUID>.
 *   stopped  its sample files are synced and closed, info updated (state
 *            stopped).  Its pid keeps resolving to it for a few seconds,
 *            so samples still in the collector's buffers are filed under
 *            it rather than as unknown.
 *
 * The info file holds "key value" lines: name (bytes outside printable
 * ASCII and '\' written as \xHH), uuid, uuid_source (cmdline|derived),
 * hypervisor (qemu|xen, from the backend), pid, vcpus, agent_path ("-" if none), first_seen,
 * last_seen (unix seconds), state (running|paused|stopped), selected (yes|no:
 * profiled per domain, by --domains or libvirt metadata; it may change
 * while the domain runs).
 *
 * A domain is known by its UUID: a stopped domain's entry goes when a
 * domain with its UUID (a restart) or its key (a reused pid) appears.
 *
 * Not used in replay: a recorded stream's pids are another time's.
 */
#ifndef OPD_DOMAIN_H
#define OPD_DOMAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "opd_conf.h"
#include "opd_image.h"
#include "opd_sfile.h"
#include "opd_stats.h"

/* What the sample path needs of a domain.  Borrowed from the registry:
 * valid until the next opd_domains_scan(). */
struct opd_dom {
	struct opd_image *name;	/* interned raw name: opd_sfile_key.domain */
	pid_t pid;		/* its QEMU process */
	bool selected;		/* by --domains or libvirt metadata (may change) */
	bool running;		/* false during the grace period after it stopped */
	const char *esc;	/* escaped name: SESSION/domains/<esc> */
	const char *agent_path;	/* agent channel socket, NULL if none */
	/* its listener may be root's besides the domain's own process: the
	 * backend's management daemon listens and hands the socket over
	 * (dom_backend_ops.agent_root_listener) */
	bool agent_root_listener;
	const char *uuid;	/* its UUID (derived from the name when QEMU
				 * was given none); NULL in tests */
	/* its id in the namespace the backend keys it by (a Xen domid:
	 * DP_DOMKEY_XEN_DOMID), DOM_ID_NS_NONE (then 0) for none */
	uint32_t id_ns;
	uint64_t id;
};

struct opd_domains;

/*
 * Registry over conf->domains_proc_root (NULL: /proc) with selection
 * conf->domains ("all", NULL, or a comma list of names or UUIDs).  Nothing
 * is scanned yet.  The other modules are borrowed.  NULL with errno set.
 */
struct opd_domains *opd_domains_new(const struct opd_conf *conf, struct opd_stats *st,
				    struct opd_images *images, struct opd_sfiles *sfiles);
/* Free without touching files.  NULL accepted. */
void opd_domains_free(struct opd_domains *ds);

/* The domain backend @conf asks for, opened as opd_domains_new would
 * (the privsep monitor runs it on the worker's behalf).  0 or -errno. */
struct dom_backend_ops;
int opd_domains_open_backend(const struct opd_conf *conf, const struct dom_backend_ops **be,
			     void **bstate);

/*
 * Rescan the proc tree and act on what changed (see above).  @mono_ns is
 * CLOCK_MONOTONIC now (for the grace period), @wall the unix time written
 * into info files.  Returns the number of changes; when positive, sample
 * files were closed or domains appeared or went away, and the caller must
 * drop cached resolutions (opd_trans_invalidate).  -errno if the proc
 * root cannot be listed.
 */
int opd_domains_scan(struct opd_domains *ds, uint64_t mono_ns, int64_t wall);

/*
 * The domain of a guest sample: its DOMAIN record's @key_ns and @key,
 * its recorded @vcpu (DP_RAW_VCPU_UNKNOWN: found from host thread @tid).
 * A running domain first, else one that stopped moments ago.  *@vcpu_out
 * is the vCPU index or -1.  NULL when the key is no domain.
 */
const struct opd_dom *opd_domains_lookup(struct opd_domains *ds, uint32_t key_ns, uint64_t key,
					 uint32_t vcpu, uint32_t tid, int *vcpu_out);

/*
 * The domain whose host process @pid is (its {vmm} work), as above; in
 * *@vcpu the vCPU thread @tid runs (-1: another thread, or unknown).
 */
const struct opd_dom *opd_domains_lookup_pid(struct opd_domains *ds, uint32_t pid, uint32_t tid,
					     int *vcpu);

/* Iterate the registry (running and recently stopped domains): NULL
 * gives the first, NULL after the last.  Do not scan while iterating. */
const struct opd_dom *opd_domains_next(struct opd_domains *ds, const struct opd_dom *prev);

/* A guest sample came from a pid that is no known domain: a domain may
 * have just started.  Makes opd_domains_scan_due() true sooner. */
void opd_domains_want_scan(struct opd_domains *ds);

/*
 * What @d's guest agent said in HELLO: its version (major<<16|minor<<8|
 * patch) and the guest kernel release (guest text, NUL-terminated; cut at
 * DP_AG_MAX_RELEASE bytes).  Kept for the domain's life and written to its
 * info file as agent_version and guest_release, which is rewritten now if
 * they changed.  0 or -errno from writing.
 */
int opd_domains_set_guest(struct opd_domains *ds, const struct opd_dom *d,
			  uint32_t agent_version, const char *release);

/* True when a scan is due: a second since the last one, or 200 ms when a
 * scan was wanted. */
bool opd_domains_scan_due(const struct opd_domains *ds, uint64_t mono_ns);

/* The domain backend's fd (readable when it has lifecycle news: then
 * call opd_domains_scan), or -1 if it has none. */
int opd_domains_fd(const struct opd_domains *ds);

/* Rewrite the running domains' info files with last_seen = @wall (the
 * daemon stops). */
void opd_domains_finish(struct opd_domains *ds, int64_t wall);

#endif
