/*
 * One reader each for the kernel's two tables, as /proc/kallsyms and
 * /proc/modules give them (or a guest's agent sends them), for the daemon
 * and the report alike.  Both parse one line, never write to it, and hand
 * back pointers into it: the caller copies what it keeps.
 */
#ifndef DU_KSYM_H
#define DU_KSYM_H

#include <stddef.h>
#include <stdint.h>

/* A kallsyms line, "ADDR TYPE NAME[\t[MODULE]]". */
struct du_ksym {
	uint64_t addr;
	char type;
	const char *name;	/* into the line, name_len bytes */
	size_t name_len;
	const char *mod;	/* into the line, mod_len bytes; NULL: the kernel's */
	size_t mod_len;
};

/* Parse @line (NUL-terminated; a trailing newline is allowed): 0, or
 * -EINVAL when it is no kallsyms line. */
int du_ksym_parse(const char *line, struct du_ksym *s);

/*
 * A /proc/modules line, "NAME SIZE REFCOUNT DEPS STATE ADDR [TAINT]".  The
 * refcount is "-" on a kernel without module unloading and DEPS "-" when
 * there are none: both are read as words.
 */
struct du_kmod {
	const char *name;	/* into the line, name_len bytes */
	size_t name_len;
	uint64_t size;
	uint64_t addr;		/* 0 when hidden (kptr_restrict) */
};

/* Parse @line as du_ksym_parse does: 0 or -EINVAL. */
int du_kmod_parse(const char *line, struct du_kmod *m);

#endif
