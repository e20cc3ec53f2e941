#include "config.h"

#include <bfd.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rep_opts.h"
#include "rep_view.h"

int rep_view_add_image_path(struct rep_opts *o, const char *list)
{
	const char *p = list;

	for (;;) {
		size_t len = strcspn(p, ",");
		char **nv;

		if (len) {
			nv = realloc(o->image_path, (o->nimage_path + 1) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			o->image_path = nv;
			nv[o->nimage_path] = strndup(p, len);
			if (!nv[o->nimage_path])
				return -ENOMEM;
			o->nimage_path++;
		}
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rep_progress_begin(struct rep_progress *pr, const char *what, size_t total)
{
	memset(pr, 0, sizeof(*pr));
	pr->what = what;
	pr->total = total;
	pr->tty = isatty(STDERR_FILENO) && !getenv("DP_NO_PROGRESS");
	pr->last_ns = now_ns();
}

void rep_progress_step(struct rep_progress *pr, size_t done)
{
	uint64_t t;

	if (!pr->tty)
		return;
	t = now_ns();
	/* Short work stays silent: the first line comes after half a second. */
	if (t - pr->last_ns < 200000000ull || (!pr->shown && t - pr->last_ns < 500000000ull))
		return;
	pr->last_ns = t;
	pr->shown = true;
	if (pr->total)
		fprintf(stderr, "\r%s: %zu/%zu (%zu%%)\033[K", pr->what, done, pr->total,
			done * 100 / pr->total);
	else
		fprintf(stderr, "\r%s: %zu\033[K", pr->what, done);
	fflush(stderr);
}

void rep_progress_end(struct rep_progress *pr)
{
	if (pr->tty && pr->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	pr->shown = false;
}

static bfd *open_elf(const char *path)
{
	static bool ready;
	bfd *abfd;

	if (!ready) {
		bfd_init();
		ready = true;
	}
	abfd = bfd_openr(path, NULL);
	if (!abfd)
		return NULL;
	if (!bfd_check_format(abfd, bfd_object)) {
		bfd_close(abfd);
		return NULL;
	}
	return abfd;
}

char *rep_view_build_id(const char *path, char *buf, size_t size)
{
	bfd *abfd = open_elf(path);
	asection *sec;
	bfd_byte *data = NULL;

	buf[0] = '\0';
	if (!abfd)
		return buf;
	sec = bfd_get_section_by_name(abfd, ".note.gnu.build-id");
	if (sec && bfd_malloc_and_get_section(abfd, sec, &data)) {
		bfd_size_type len = bfd_section_size(sec);

		/* One note: namesz, descsz, type, "GNU\0", then the id. */
		if (len >= 16) {
			uint32_t namesz = bfd_get_32(abfd, data);
			uint32_t descsz = bfd_get_32(abfd, data + 4);
			uint64_t off = 12 + (((uint64_t)namesz + 3) & ~3ull);

			if (off <= len && descsz <= len - off && 2 * (size_t)descsz < size)
				for (uint32_t i = 0; i < descsz; i++)
					snprintf(buf + 2 * i, 3, "%02x", data[off + i]);
		}
	}
	free(data);
	bfd_close(abfd);
	return buf;
}

char *rep_view_debug_file(const char *path, const char *dir)
{
	bfd *abfd = open_elf(path);
	char *found;

	if (!abfd)
		return NULL;
	found = bfd_follow_build_id_debuglink(abfd, dir);
	if (!found)
		found = bfd_follow_gnu_debuglink(abfd, dir);
	bfd_close(abfd);
	return found;
}
