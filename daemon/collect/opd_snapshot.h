/*
 * The host as it is when collection starts, for any live collector (perf,
 * kmod, xen): the kernel's symbol table and module list copied into the
 * session (SESSION/kallsyms, SESSION/modules: opreport symbolizes the
 * kernel from them), and the processes already running, with their
 * executable mappings, the kernel image and the modules synthesized as
 * raw records, so samples of code mapped before the start resolve.
 */
#ifndef OPD_SNAPSHOT_H
#define OPD_SNAPSHOT_H

#include "raw/raw_stream.h"

/*
 * Copy @proc_root/kallsyms and @proc_root/modules (@proc_root NULL:
 * "/proc") to @session_dir/kallsyms and @session_dir/modules, each
 * written aside and renamed.  A missing module list (a kernel without
 * modules) leaves an empty file.  Failures are logged as warnings: the
 * profile is still useful without kernel symbols.
 */
void opd_snapshot_copy_kernel(const char *proc_root, const char *session_dir);

/*
 * Write the present into @w: the kernel image range ("vmlinux", from
 * kallsyms' _text.._etext), one KMOD record per loaded module, then for
 * every process its COMM and its executable mappings.  The caller has put
 * a TIME record first if the stream has timestamps.  Processes that exit
 * while being read are skipped.  0 or -errno (a writer error, or the proc
 * root cannot be listed).
 */
int opd_snapshot_write(struct raw_writer *w, const char *proc_root);

#endif
