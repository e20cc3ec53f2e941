/*
 * Domain discovery (DESIGN.md sections 1, 2 and 4): which virtual machines
 * run on this host, which host process is each one's hypervisor, which of
 * that process's threads runs which vCPU, and where its agent channel is.
 *
 * This is the procfs backend: it finds QEMU/KVM guests by scanning a proc
 * tree, without libvirt.  Everything it reports comes from the guest's
 * QEMU command line and thread names, which any local user can forge (a
 * process may call itself qemu-system-x86_64 and claim any -name or -uuid).
 * Names and UUIDs are therefore claims, not identities: two domains may
 * share a name or a UUID, and the name may hold any byte but NUL.
 *
 * Ownership: a struct dom_table owns its domains.  A domain pointer handed
 * out (by a callback, dom_lookup_task or iteration) stays valid until the
 * ops->removed callback for it returns, or until dom_table_free().  Strings
 * returned by accessors live as long as their domain.
 *
 * Not thread-safe: one table is used by one thread at a time.
 */
#ifndef DOM_H
#define DOM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct dom_table;
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
/* virtio-serial port name of the agent channel (DESIGN.md section 6). */
#define DOM_AGENT_PORT "org.domprof.agent.0"

struct dom_config {
	/* Root of the proc tree; NULL means "/proc".  Tests pass a fake tree.
	 * Borrowed for the duration of dom_table_new() only. */
	const char *proc_root;
	/* NULL-terminated list of selected domains, each matched exactly
	 * against a domain's name or (case-insensitively) its UUID.  NULL
	 * selects every domain.  Copied by dom_table_new(). */
	const char *const *names;
};

/*
 * Lifecycle callbacks, each optional (NULL).  They are called from
 * dom_scan() after the table is consistent; they must not call dom_scan()
 * or dom_table_free() on the same table.
 */
struct dom_ops {
	/* @d appeared (a new hypervisor process). */
	void (*added)(void *ctx, const struct dom_domain *d);
	/* @d disappeared (its process exited, or its pid was reused); @d is
	 * freed when this returns.  A domain restarted under the same name is
	 * a removed followed by an added, never one domain with a new pid. */
	void (*removed)(void *ctx, const struct dom_domain *d);
	/* The vCPU-to-thread map of a known domain changed (threads still
	 * starting, or vCPU hotplug). */
	void (*vcpus_changed)(void *ctx, const struct dom_domain *d);
};

/*
 * Create an empty table; nothing is scanned until dom_scan().  NULL @cfg
 * means the defaults (real /proc, all domains).  Returns NULL with errno
 * set (ENOMEM, or ENOENT/EACCES/ENOTDIR when the proc root cannot be
 * opened).
 */
struct dom_table *dom_table_new(const struct dom_config *cfg);

/* Free @t and every domain in it, without callbacks.  NULL is fine. */
void dom_table_free(struct dom_table *t);

/*
 * Rescan the proc root and bring the table up to date, calling @ops for
 * the differences since the last scan: first every removed, then every
 * added, then vcpus_changed for known domains whose vCPU map changed.
 * @ops may be NULL.  Cheap enough to call once a second: a pid already
 * known is only checked for liveness (its /proc/PID/stat start time, which
 * catches pid reuse), and its threads are re-read only while its thread
 * count changes and for a few scans after.  Unknown pids are probed (exe
 * link, comm, argv[0]) on every scan, since a process may exec QEMU later
 * (libvirt forks, then execs).
 * Processes that vanish mid-read, unreadable entries and hostile command
 * lines are skipped or parsed defensively, never fatal.
 * Returns 0, or -errno if the proc root itself cannot be listed (the table
 * is then unchanged).
 */
int dom_scan(struct dom_table *t, const struct dom_ops *ops, void *ctx);

/*
 * Map a sample's host @pid (thread group id) and @tid to a domain: on
 * success *@d is the domain whose hypervisor process is @pid, and *@vcpu
 * is the vCPU index that thread @tid runs, or -1 when @tid is another
 * thread of that process (I/O, main loop: the domain's {vmm} work).
 * Returns 0, or -ENOENT when @pid is no known domain (then *@d = NULL and
 * *@vcpu = -1).  O(1): hashes on pid and tid.  @d and @vcpu may be NULL.
 */
int dom_lookup_task(const struct dom_table *t, pid_t pid, pid_t tid,
		    const struct dom_domain **d, int *vcpu);

/* Number of domains in the table. */
size_t dom_table_count(const struct dom_table *t);

/* Iterate: dom_table_next(t, NULL) is the first domain, NULL after the
 * last.  Order is unspecified; do not scan while iterating. */
const struct dom_domain *dom_table_next(const struct dom_table *t,
					const struct dom_domain *prev);

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

/* Host pid of the hypervisor (QEMU) process. */
pid_t dom_domain_pid(const struct dom_domain *d);

/* 1 + the highest vCPU index seen in a thread name ("CPU N/KVM"); 0 while
 * no vCPU thread is known.  Indices may have gaps (hotplug). */
unsigned int dom_domain_nr_vcpus(const struct dom_domain *d);

/* Host thread id of vCPU @idx, or -1 if unknown or @idx is out of range. */
pid_t dom_domain_vcpu_tid(const struct dom_domain *d, unsigned int idx);

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

#endif
