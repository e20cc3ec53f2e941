#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "opd_image.h"

struct opd_images {
	struct opd_image **buckets;
	size_t mask;
	size_t count;
};

static uint32_t image_hash(enum sfn_kind kind, const char *s, size_t len)
{
	uint32_t h = 2166136261u ^ (uint32_t)kind;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

struct opd_images *opd_images_new(void)
{
	struct opd_images *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->mask = 255;
	t->buckets = calloc(t->mask + 1, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void opd_images_free(struct opd_images *t)
{
	if (!t)
		return;
	for (size_t i = 0; i <= t->mask; i++) {
		struct opd_image *img = t->buckets[i], *next;

		for (; img; img = next) {
			next = img->next;
			free(img);
		}
	}
	free(t->buckets);
	free(t);
}

static int images_grow(struct opd_images *t)
{
	size_t nmask = t->mask * 2 + 1;
	struct opd_image **nb = calloc(nmask + 1, sizeof(*nb));

	if (!nb)
		return -ENOMEM;
	for (size_t i = 0; i <= t->mask; i++) {
		struct opd_image *img = t->buckets[i], *next;

		for (; img; img = next) {
			next = img->next;
			img->next = nb[img->hash & nmask];
			nb[img->hash & nmask] = img;
		}
	}
	free(t->buckets);
	t->buckets = nb;
	t->mask = nmask;
	return 0;
}

struct opd_image *opd_image_get(struct opd_images *t, enum sfn_kind kind, const char *name, size_t len)
{
	uint32_t h = image_hash(kind, name, len);
	struct opd_image *img;

	for (img = t->buckets[h & t->mask]; img; img = img->next)
		if (img->hash == h && img->kind == kind && img->len == len &&
		    !memcmp(img->name, name, len))
			return img;
	if (t->count > t->mask && images_grow(t)) {
		errno = ENOMEM;
		return NULL;
	}
	img = calloc(1, sizeof(*img) + len + 1);
	if (!img)
		return NULL;
	img->kind = kind;
	img->hash = h;
	img->len = len;
	memcpy(img->name, name, len);
	img->next = t->buckets[h & t->mask];
	t->buckets[h & t->mask] = img;
	t->count++;
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
