/*
 * One domain's guest kernel tables: the kallsyms and modules text its
 * agent sends, written to SESSION/domains/<esc>/{kallsyms,modules} (a
 * temporary file renamed at the table's END frame) for opreport, and
 * parsed on the way for the kernel's _text..end range and the modules'
 * ranges that guest kernel samples resolve against.
 */
#ifndef OPD_GUEST_KERNEL_H
#define OPD_GUEST_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "opd_image.h"
#include "opd_stats.h"

#define OPD_GKERN_LINE_MAX 512

struct opd_gtable {
	int fd;
	uint64_t bytes;
	uint32_t chunks;
	char line[OPD_GKERN_LINE_MAX];
	size_t line_len;
	bool line_over;
};

struct opd_gmod;

struct opd_gkernel {
	const char *name, *dir;		/* borrowed */
	struct opd_gtable ks, mods;
	uint64_t ktext, ketext, klast;
	struct opd_gmod *modv;
	size_t nr_mod, bytes, max_bytes;
	struct opd_image *vmlinux;
	/* module names new to the daemon count against the domain's image
	 * cap (its guest images' count; NULL: no cap), or a guest could
	 * intern names without end by resending MODULES */
	size_t *nr_images, max_images;
	struct opd_images *images;	/* borrowed */
	struct opd_stats *st;		/* borrowed */
};

/* For domain @name whose directory is @dir.  0 or -ENOMEM. */
int opd_gkern_init(struct opd_gkernel *k, const char *name, const char *dir, size_t max_bytes,
		   struct opd_images *images, struct opd_stats *st);
void opd_gkern_fini(struct opd_gkernel *k);

/* Table text (@type DP_AG_KALLSYMS or DP_AG_MODULES) and its END. */
void opd_gkern_text(struct opd_gkernel *k, uint16_t type, const char *text, size_t len);
void opd_gkern_end(struct opd_gkernel *k, uint16_t type, const struct dp_ag_table_end *e);

/* A new connection: tables in flight are dropped. */
void opd_gkern_reset(struct opd_gkernel *k);

/* _text is known: kernel samples can be placed. */
static inline bool opd_gkern_ready(const struct opd_gkernel *k)
{
	return k->ktext != 0;
}

/* The image (vmlinux or a module) and key of guest kernel @pc; false if
 * it is in neither. */
bool opd_gkern_resolve(const struct opd_gkernel *k, uint64_t pc, struct opd_image **img,
		       uint64_t *key);

#endif
