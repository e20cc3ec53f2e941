/*
 * The procfs domain backend (dom_backend_procfs): finds QEMU/KVM guests by
 * scanning a proc tree, without libvirt.  Everything it reports comes from
 * the guest's QEMU command line and thread names (dom_cmdline.h), which
 * any local user can forge.  Domain keys: DP_DOMKEY_HOST_PID only.
 *
 * The table API below is what its ops wrap; tests and domlist use it
 * directly.  A struct dom_table owns its domains (dom.h says how long a
 * domain pointer stays valid).
 */
#ifndef DOM_PROCFS_H
#define DOM_PROCFS_H

#include "dom.h"

struct dom_table;

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

/* Number of domains in the table. */
size_t dom_table_count(const struct dom_table *t);

#endif
