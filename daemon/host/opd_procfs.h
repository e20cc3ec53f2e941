/*
 * Reading the live system's /proc: executable mappings of a process, its
 * main binary, and the kernel's text range.  A process that exits while we
 * read it is normal: the functions return -ENOENT/-ESRCH and callers skip it.
 */
#ifndef OPD_PROCFS_H
#define OPD_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "domprof/raw.h"

typedef int (*opd_map_fn)(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t path_len);

/*
 * Call @fn for each named executable mapping (files, [vdso]) of @pid (from
 * @proc_root/PID/maps; @proc_root is "/proc" outside tests), the mappings
 * of the main binary (/proc/PID/exe) first so a consumer that takes the
 * first mapping as the main binary gets it right.  0, -errno, or @fn's
 * nonzero return.
 */
int opd_procfs_maps(const char *proc_root, pid_t pid, opd_map_fn fn, void *ctx);

/*
 * Where a process's comm and mappings come from: opd_procfs_comm and
 * opd_procfs_maps' contracts in one (@comm may be left empty), for a
 * process that may not read /proc itself (the privsep worker asks its
 * monitor).  @pc is the user pc of the sample that made the caller ask:
 * the monitor answers for a host process only when @pc lies in one of its
 * executable mappings (the process ran there), else -EPERM.
 */
typedef int (*opd_maps_src_fn)(void *ctx, pid_t pid, uint64_t pc, char comm[16], opd_map_fn fn,
			       void *fctx);

/* Read @proc_root/PID/comm into @comm[16] (NUL-padded). 0 or -errno. */
int opd_procfs_comm(const char *proc_root, pid_t pid, char comm[16]);

/*
 * The kernel text range from a kallsyms file: start = `_text`,
 * end = `_etext`.  0, -ENOENT if a symbol is missing or all addresses
 * read as 0 (kptr_restrict), or -errno.
 */
int opd_procfs_kernel_range(const char *kallsyms, uint64_t *start, uint64_t *end);

typedef int (*opd_kmod_fn)(void *ctx, uint64_t start, uint64_t size, const char *name, size_t name_len);

/* Call @fn for each module in a /proc/modules-format file with a nonzero
 * address.  0, -errno, or @fn's nonzero return. */
int opd_procfs_modules(const char *modules, opd_kmod_fn fn, void *ctx);

/* The CPUs in a cpu list file such as /sys/devices/system/cpu/online
 * ("0-3,5").  Fills @cpus up to @max; returns the count or -errno. */
int opd_procfs_cpu_list(const char *path, int *cpus, int max);

#endif
