#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd_guest_kernel.h"
#include "util/du_ksym.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

#define MAX_MODULES	4096
#define KERNEL_IMAGE_MAX (1ULL << 30)	/* x86-64: the kernel image mapping */

struct opd_gmod {
	uint64_t start, end;
	struct opd_image *img;
};

int opd_gkern_init(struct opd_gkernel *k, const char *name, const char *dir, size_t max_bytes,
		   struct opd_images *images, struct opd_stats *st)
{
	memset(k, 0, sizeof(*k));
	k->ks.fd = k->mods.fd = -1;
	k->name = name;
	k->dir = dir;
	k->max_bytes = max_bytes;
	k->images = images;
	k->st = st;
	k->vmlinux = opd_image_get(images, SFN_KERN, "vmlinux", 7);
	return k->vmlinux ? 0 : -ENOMEM;
}

void opd_gkern_reset(struct opd_gkernel *k)
{
	if (k->ks.fd >= 0) {
		close(k->ks.fd);
		k->ks.fd = -1;
	}
	if (k->mods.fd >= 0) {
		close(k->mods.fd);
		k->mods.fd = -1;
	}
	k->mods.chunks = 0;
}

void opd_gkern_fini(struct opd_gkernel *k)
{
	opd_gkern_reset(k);
	free(k->modv);
	k->modv = NULL;
	k->nr_mod = 0;
}

/* Table text goes to a temporary file, renamed at its END frame. */
static int table_open(struct opd_gkernel *k, struct opd_gtable *tf, const char *name)
{
	char tmp[PATH_MAX];

	if (tf->fd >= 0)
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", k->dir, name) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	tf->fd = du_nf_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, DU_SDIR_SECRET_MODE, false);
	if (tf->fd < 0)
		return tf->fd;
	tf->bytes = 0;
	tf->chunks = 0;
	tf->line_len = 0;
	tf->line_over = false;
	return 0;
}

static void table_close(struct opd_gkernel *k, struct opd_gtable *tf, const char *name,
			const struct dp_ag_table_end *e)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int ret;

	if (tf->fd < 0 && e->status != DP_AG_TABLE_UNREADABLE)
		return;
	if (tf->fd < 0 && table_open(k, tf, name))
		return;
	close(tf->fd);
	tf->fd = -1;
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", k->dir, name);
	snprintf(path, sizeof(path), "%s/%s", k->dir, name);
	if (e->total_bytes != tf->bytes || e->chunks != tf->chunks)
		k->st->guest_bad_values++;
	ret = du_nf_rename(tmp, path);
	if (ret)
		du_warn("domain %s: cannot write %s: %s", k->name, path, strerror(-ret));
}

/* Split text into lines for @fn; a line over OPD_GKERN_LINE_MAX is skipped. */
static void table_text(struct opd_gkernel *k, struct opd_gtable *tf, const char *name,
		       const char *text, size_t len, void (*fn)(struct opd_gkernel *, char *))
{
	if (table_open(k, tf, name))
		return;
	if (k->bytes + len > k->max_bytes) {
		k->st->guest_bytes_capped++;
		return;
	}
	k->bytes += len;
	if (write(tf->fd, text, len) != (ssize_t)len)
		k->st->guest_bad_values++;
	tf->bytes += len;
	tf->chunks++;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c == '\n') {
			if (!tf->line_over) {
				tf->line[tf->line_len] = '\0';
				fn(k, tf->line);
			}
			tf->line_len = 0;
			tf->line_over = false;
		} else if (tf->line_len + 1 < sizeof(tf->line)) {
			tf->line[tf->line_len++] = c;
		} else {
			tf->line_over = true;
		}
	}
}

static void ks_line(struct opd_gkernel *k, char *line)
{
	struct du_ksym s;

	if (du_ksym_parse(line, &s))
		return;
	if (s.name_len == 5 && !memcmp(s.name, "_text", 5))
		k->ktext = s.addr;
	else if (!s.mod && s.addr > k->klast && s.addr < 0xffffffffff000000ULL)
		k->klast = s.addr;	/* not a module's: part of the kernel image */
}

static bool mod_name_ok(const char *s, size_t len)
{
	if (!len || len > 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* A /proc/modules line (util/du_ksym.h) of the guest's. */
static void mod_line(struct opd_gkernel *k, char *line)
{
	struct opd_gmod *nv;
	struct opd_image *img;
	struct du_kmod m;
	uint64_t size, addr;

	if (du_kmod_parse(line, &m) || !mod_name_ok(m.name, m.name_len))
		return;
	size = m.size;
	addr = m.addr;
	if (!addr || !size || addr + size < addr || size > (1ULL << 32))
		return;
	if (k->nr_mod >= MAX_MODULES) {
		k->st->guest_bad_values++;
		return;
	}
	img = opd_image_find(k->images, SFN_KERN, m.name, m.name_len);
	if (!img && k->nr_images) {
		if (*k->nr_images >= k->max_images) {
			k->st->guest_images_capped++;
			return;
		}
		++*k->nr_images;
	}
	nv = realloc(k->modv, (k->nr_mod + 1) * sizeof(*nv));
	if (!nv)
		return;
	k->modv = nv;
	nv[k->nr_mod].start = addr;
	nv[k->nr_mod].end = addr + size;
	nv[k->nr_mod].img = img ? img : opd_image_get(k->images, SFN_KERN, m.name, m.name_len);
	if (nv[k->nr_mod].img)
		k->nr_mod++;
}

void opd_gkern_text(struct opd_gkernel *k, uint16_t type, const char *text, size_t len)
{
	if (type == DP_AG_KALLSYMS) {
		table_text(k, &k->ks, "kallsyms", text, len, ks_line);
		return;
	}
	if (!k->mods.chunks)
		k->nr_mod = 0;	/* a new table replaces the old */
	table_text(k, &k->mods, "modules", text, len, mod_line);
}

void opd_gkern_end(struct opd_gkernel *k, uint16_t type, const struct dp_ag_table_end *e)
{
	if (type != DP_AG_KALLSYMS) {
		table_close(k, &k->mods, "modules", e);
		k->mods.chunks = 0;
		return;
	}
	table_close(k, &k->ks, "kallsyms", e);
	/* the image runs from _text past its last symbol (entry text,
	 * .init, data symbols): samples there are the kernel's too */
	k->ketext = k->klast + 4096;
	if (k->ktext && (k->ketext <= k->ktext || k->ketext - k->ktext > KERNEL_IMAGE_MAX))
		k->ketext = k->ktext + (64ULL << 20);
}

bool opd_gkern_resolve(const struct opd_gkernel *k, uint64_t pc, struct opd_image **img,
		       uint64_t *key)
{
	/* Until the whole symbol table is in, the image's end is not known:
	 * anything within the kernel image's largest size from _text that is
	 * not a module's is taken for the kernel's. */
	uint64_t end = k->ketext ? k->ketext : k->ktext + KERNEL_IMAGE_MAX;

	for (size_t i = 0; i < k->nr_mod; i++) {
		if (pc >= k->modv[i].start && pc < k->modv[i].end) {
			*img = k->modv[i].img;
			*key = pc - k->modv[i].start;
			return true;
		}
	}
	if (k->ktext && pc >= k->ktext && pc < end) {
		*img = k->vmlinux;
		*key = pc - k->ktext;
		return true;
	}
	return false;
}
