/*
 * Internal to domains/: pure parsers for what the procfs backend reads
 * from /proc/PID.  They take untrusted bytes (any local user can start a
 * process with any argv) and never read outside [buf, buf + len); they
 * are separate from the scanning code so that tests and a fuzz target can
 * call them directly.
 */
#ifndef DOM_CMDLINE_H
#define DOM_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "dom.h"

/* What a QEMU command line says about its domain. */
struct dom_cmdline {
	char *name;			/* owned; -name's guest value, NULL if absent */
	char uuid[DOM_UUID_STRLEN + 1];	/* lowercased valid -uuid, "" if absent */
	char *agent_path;		/* owned; agent chardev's path=, or NULL */
	int agent_fd;			/* agent chardev's fd= (libvirt passes
					 * pre-opened sockets), -1 if none */
};

/*
 * Parse a NUL-separated argv (/proc/PID/cmdline) of @len bytes into @out.
 * @truncated says the read stopped at its bound: the last argument may be
 * cut short, so one that is not NUL-terminated is ignored.  Otherwise a
 * final unterminated argument (a process that rewrote its argv) counts.
 * Recognised: -name/--name (QEMU keyval, implied key "guest", ",," escapes
 * a comma; the last one wins), -uuid/--uuid, -chardev socket,id=,path=|fd=
 * and -device virtserialport (keyval or JSON) with name=DOM_AGENT_PORT.
 * A missing or invalid value leaves the field absent.
 * Returns 0, or -ENOMEM (then @out holds nothing to free).
 */
int dom_cmdline_parse(const char *buf, size_t len, bool truncated,
		      struct dom_cmdline *out);

/* Free the strings of @c (not @c); safe on a zeroed or released struct. */
void dom_cmdline_release(struct dom_cmdline *c);

/* True when the last '/'-separated component of @path (@len bytes; may
 * end in " (deleted)", as an exe link does after an upgrade) names QEMU:
 * "qemu-system-*" (something after the dash) or "qemu-kvm". */
bool dom_is_qemu_path(const char *path, size_t len);

/* True when a thread or process comm (@len bytes, trailing newline
 * allowed) is QEMU's: "qemu-system-*" or "qemu-kvm".  comm is cut to 15
 * bytes, so qemu-system-x86_64 shows as "qemu-system-x86". */
bool dom_is_qemu_comm(const char *comm, size_t len);

/* Parse a thread comm "CPU N/KVM" (trailing newline allowed) into *@vcpu;
 * false for anything else, or N >= DOM_VCPU_MAX, or leading zeros. */
bool dom_parse_vcpu_comm(const char *comm, size_t len, unsigned int *vcpu);

/* Check and lowercase a UUID string of @len bytes into @out; false (and
 * @out = "") unless it is exactly 8-4-4-4-12 hex digits. */
bool dom_uuid_parse(const char *s, size_t len, char out[DOM_UUID_STRLEN + 1]);

#endif
