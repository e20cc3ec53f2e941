/*
 * Kernel symbols from a session's copies of /proc/kallsyms and
 * /proc/modules.  Sample keys of {kern}/vmlinux are offsets from _text;
 * keys of a module are offsets from the module's load address.
 */
#ifndef REP_KERNEL_H
#define REP_KERNEL_H

#include <stddef.h>

struct rep_bin;
struct rep_kernel;

/*
 * Parse @kallsyms (required) and @modules (NULL or a missing file: module
 * bases are then guessed from their lowest symbol).  Lines that do not
 * parse are skipped.  NULL with errno set and a reason in @err; a file
 * whose addresses are all zero (read without privilege) is -ENODATA.
 */
struct rep_kernel *rep_kernel_load(const char *kallsyms, const char *modules,
				   char *err, size_t errlen);
void rep_kernel_free(struct rep_kernel *k);	/* NULL accepted */

/*
 * The symbols of kernel image @name ("vmlinux" or a module name), built on
 * first use and owned by @k; NULL when nothing is known about @name.
 */
const struct rep_bin *rep_kernel_image(struct rep_kernel *k, const char *name);

#endif
