#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opd_image.h"

struct opd_images {
	struct du_htab tab;
};

struct opd_images *opd_images_new(void)
{
	struct opd_images *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
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

struct opd_image *opd_image_get(struct opd_images *t, enum sfn_kind kind, const char *name, size_t len)
{
	uint32_t h = du_fnv1a32(DU_FNV32_BASIS ^ (uint32_t)kind, name, len);
	struct opd_image *img;

	for (struct du_hlink *l = du_htab_chain(&t->tab, h); l; l = l->next) {
		img = du_container_of(l, struct opd_image, hl);
		if (l->hash == h && img->kind == kind && img->len == len &&
		    !memcmp(img->name, name, len))
			return img;
	}
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
