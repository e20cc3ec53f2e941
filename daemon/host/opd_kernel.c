#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opd_kernel.h"
#include "util/du_range.h"

struct opd_kernel {
	struct opd_images *images;
	struct opd_kernel_range *r;	/* sorted, non-overlapping */
	size_t nr, cap;
};

struct opd_kernel *opd_kernel_new(struct opd_images *images)
{
	struct opd_kernel *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->images = images;
	return k;
}

void opd_kernel_free(struct opd_kernel *k)
{
	if (!k)
		return;
	free(k->r);
	free(k);
}

int opd_kernel_add(struct opd_kernel *k, uint64_t start, uint64_t size, const char *name,
		   size_t name_len)
{
	struct opd_kernel_range nr;
	size_t i, j;

	name_len = strnlen(name, name_len);
	if (!size || start + size < start || !name_len)
		return -EINVAL;
	nr.start = start;
	nr.end = start + size;
	nr.image = opd_image_get(k->images, SFN_KERN, name, name_len);
	if (!nr.image)
		return -ENOMEM;
	if (k->nr + 1 > k->cap) {
		size_t ncap = k->cap ? k->cap * 2 : 64;
		struct opd_kernel_range *n = realloc(k->r, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		k->r = n;
		k->cap = ncap;
	}
	/* drop what overlaps, then insert in order */
	for (i = 0, j = 0; i < k->nr; i++)
		if (k->r[i].end <= nr.start || k->r[i].start >= nr.end)
			k->r[j++] = k->r[i];
	k->nr = j;
	for (i = 0; i < k->nr && k->r[i].start < nr.start; i++)
		;
	memmove(&k->r[i + 1], &k->r[i], (k->nr - i) * sizeof(*k->r));
	k->r[i] = nr;
	k->nr++;
	return 0;
}

const struct opd_kernel_range *opd_kernel_find(const struct opd_kernel *k, uint64_t pc,
					       uint64_t *gap_start, uint64_t *gap_end)
{
	size_t lo = DU_FIRST_END_AFTER(k->r, k->nr, pc);

	if (lo < k->nr && k->r[lo].start <= pc)
		return &k->r[lo];
	if (gap_start)
		*gap_start = lo ? k->r[lo - 1].end : 0;
	if (gap_end)
		*gap_end = lo < k->nr ? k->r[lo].start : UINT64_MAX;
	return NULL;
}
