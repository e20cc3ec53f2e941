#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opd_guest_hash.h"
#include "opd_image.h"

/* Keyed (opd_guest_hash.h): guests name images (paths, modules), and
 * FNV would let them pick names that share a bucket. */
struct opd_images {
	struct du_htab tab;
	struct opd_ghkey key;
};

struct opd_images *opd_images_new(void)
{
	struct opd_images *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	opd_ghkey_init(&t->key);
	if (du_htab_init(&t->tab, 256)) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static void image_free(struct du_hlink *l)
{
	free(du_container_of(l, struct opd_image, hl));
}

void opd_images_free(struct opd_images *t)
{
	if (!t)
		return;
	du_htab_fini(&t->tab, image_free);
	free(t);
}

static uint32_t image_hash(const struct opd_images *t, enum sfn_kind kind, const char *name,
			   size_t len)
{
	return (uint32_t)(opd_ghash(&t->key, name, len) ^ (uint32_t)kind * 0x9e3779b9u);
}

struct opd_image *opd_image_find(const struct opd_images *t, enum sfn_kind kind,
				 const char *name, size_t len)
{
	uint32_t h = image_hash(t, kind, name, len);
	struct opd_image *img;

	for (struct du_hlink *l = du_htab_chain(&t->tab, h); l; l = l->next) {
		img = du_container_of(l, struct opd_image, hl);
		if (l->hash == h && img->kind == kind && img->len == len &&
		    !memcmp(img->name, name, len))
			return img;
	}
	return NULL;
}

struct opd_image *opd_image_get(struct opd_images *t, enum sfn_kind kind, const char *name, size_t len)
{
	uint32_t h = image_hash(t, kind, name, len);
	struct opd_image *img = opd_image_find(t, kind, name, len);

	if (img)
		return img;
	if (t->tab.count > t->tab.mask && du_htab_grow(&t->tab)) {
		errno = ENOMEM;
		return NULL;
	}
	img = calloc(1, sizeof(*img) + len + 1);
	if (!img)
		return NULL;
	img->kind = kind;
	img->len = len;
	memcpy(img->name, name, len);
	du_htab_add(&t->tab, &img->hl, h);
	return img;
}

struct opd_image *opd_image_for_path(struct opd_images *t, const char *path, size_t len)
{
	size_t nul = strnlen(path, len);

	len = nul;
	if (len > 0 && path[0] == '/' && !(len >= 2 && path[1] == '/'))
		return opd_image_get(t, SFN_ROOT, path, len);
	while (len > 0 && (path[0] == '[' || path[0] == '/')) {
		path++;
		len--;
	}
	while (len > 0 && path[len - 1] == ']')
		len--;
	if (!len)
		return opd_image_get(t, SFN_ANON, "anon", 4);
	return opd_image_get(t, SFN_ANON, path, len);
}

int64_t opd_image_mtime(struct opd_image *img)
{
	struct stat st;

	if (!img->mtime_known) {
		img->mtime_known = 1;
		if (img->kind == SFN_ROOT && !stat(img->name, &st))
			img->mtime = st.st_mtime;
	}
	return img->mtime;
}
