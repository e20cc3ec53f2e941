/*
 * Sample file names (doc/sample-files.md).  A sample file's path below
 * samples/current/ says what it holds:
 *
 *   [{domain}/NAME/[{vmm}/]] IMAGE {dep}/ DEP [{cg}/ CG] EVENT.count.um.tgid.tid.cpu
 *
 * where IMAGE and DEP are each one of
 *   {root}/a/b/c     a file system path (components escaped)
 *   {kern}/NAME      a kernel image: vmlinux or a module name
 *   {anon:NAME}      anonymous or unresolved code (NAME escaped)
 *
 * Escaping makes every string representable and the parse exact:
 * sfn_parse(sfn_mangle(x)) == x for every x sfn_mangle accepts.  Bytes
 * outside printable ASCII, '%', '{', '}', '/' inside a component, and a
 * component that is "", "." or ".." are escaped with '%'; over-long
 * components are split with a continuation mark.  The result never
 * contains a ".." or "." or empty path component, so whatever the input,
 * a mangled name stays below the directory it is joined to.
 * A call-graph file (OProfile's {cg}) names a second image CG: it holds
 * arcs from a caller in DEP to a callee in CG (keys: from << 32 | to).
 * doc/sample-files.md gives the exact grammar.  The last component is
 * EVENT.count.um.tgid.tid.cpu: count decimal, um "0" or lowercase "0x41",
 * tgid/tid/cpu decimal or "all"; EVENT is [A-Za-z0-9_]{1,64}.
 */
#ifndef SFNAME_H
#define SFNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sfn_kind {
	SFN_ROOT = 0,	/* {root}: a file path, starts with '/' */
	SFN_KERN = 1,	/* {kern}: kernel image name */
	SFN_ANON = 2,	/* {anon:...}: anonymous or unresolved */
};

struct sfn_image {
	enum sfn_kind kind;
	char *name;	/* owned; for SFN_ROOT the absolute path */
};

#define SFN_ALL (-1)	/* the "all" value of tgid, tid, cpu */

struct sfn_name {
	char *domain;		/* owned; NULL for the host's own work */
	bool vmm;		/* {vmm}: host work done for domain */
	struct sfn_image image;	/* the binary the process runs */
	struct sfn_image dep;	/* the binary the sample fell in */
	/* {cg}: the callee's binary of a call-graph file's arcs (the caller
	 * is in dep); cg.name NULL: a flat sample file */
	struct sfn_image cg;
	char *event;		/* owned, e.g. "CPU_CLK_UNHALTED" */
	uint64_t count;
	uint32_t unit_mask;
	int64_t tgid, tid, cpu;	/* SFN_ALL where --separate made them irrelevant */
};

/* Longest relative name sfn_mangle produces. */
#define SFN_MAX_PATH 4000

/*
 * Write the path of @n relative to samples/current into @buf (NUL-terminated).
 * Returns the length, -ENAMETOOLONG if it does not fit @size or
 * SFN_MAX_PATH, -EINVAL for a name that cannot be represented (an SFN_ROOT
 * path not starting with '/', an empty event, vmm without domain).
 */
int sfn_mangle(const struct sfn_name *n, char *buf, size_t size);

/*
 * Parse a relative path (as sfn_mangle writes it) into @out, allocating its
 * strings; free them with sfn_name_release().  0, -EINVAL for anything that
 * is not a well-formed name, -ENOMEM.  On error @out holds nothing to free.
 */
int sfn_parse(const char *path, struct sfn_name *out);

/* Free the strings of @n (not @n itself); NULL and released names are fine. */
void sfn_name_release(struct sfn_name *n);

/*
 * One image alone, as it appears in a name ("{root}/usr/bin/x",
 * "{kern}/vmlinux", "{anon:x}"), for files that list images (the stacks
 * of a session, doc/sample-files.md).  Same conventions as sfn_mangle
 * and sfn_parse; sfn_parse_image allocates @out->name.
 */
int sfn_mangle_image(const struct sfn_image *im, char *buf, size_t size);
int sfn_parse_image(const char *s, struct sfn_image *out);

/* Escape one string as a single path component (for domain names, anon
 * names).  Same return convention as sfn_mangle; -EINVAL for a NUL byte
 * in s[0..len).  The result is exactly what sfn_mangle writes for a domain
 * or {kern} name: longer than 200 bytes, it is several directory levels
 * joined by "/%+" (doc/sample-files.md, "Splitting"). */
int sfn_escape_component(const char *s, size_t len, char *buf, size_t size);

#endif
