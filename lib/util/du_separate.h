/*
 * The one parser of --separate lists, shared by opcontrol (which checks the
 * list before starting the daemon) and oprofiled (which acts on it), so the
 * two can never disagree on a spelling.
 */
#ifndef DU_SEPARATE_H
#define DU_SEPARATE_H

#include <stddef.h>

/* What --separate keeps apart (OProfile's semantics). */
#define DU_SEP_LIB	0x1	/* libraries: per application */
#define DU_SEP_KERNEL	0x2	/* kernel and modules: per application; implies DU_SEP_LIB */
#define DU_SEP_THREAD	0x4	/* per process and thread */
#define DU_SEP_CPU	0x8	/* per CPU */
#define DU_SEP_ALL	(DU_SEP_LIB | DU_SEP_KERNEL | DU_SEP_THREAD | DU_SEP_CPU)

/* The words accepted, for usage and error messages. */
#define DU_SEP_WORDS	"none,lib,library,kernel,thread,cpu,all"

/*
 * Parse a comma list of OProfile's --separate words into DU_SEP_* bits:
 * none, lib or library, kernel (implies lib), thread, cpu, all.  The bits
 * of every word are or-ed, so "none" only means something alone.  Case
 * matters; no spaces.  An empty list, an empty item ("lib,") or an unknown
 * word: -EINVAL, @bits untouched, and a one-line message naming the
 * offending word in @err (when @err is not NULL).  0 on success.
 */
int du_separate_parse(const char *list, unsigned int *bits, char *err, size_t errlen);

#endif
