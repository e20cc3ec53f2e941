#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opd_imgid.h"
#include "util/du_elfid.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

struct opd_imgids {
	char *path;
	FILE *f;		/* NULL until the first line */
	bool failed;		/* the record cannot be written: said once */
	struct opd_image **imgs;	/* recorded, for opd_imgids_recheck */
	size_t n, cap;
};

struct opd_imgids *opd_imgids_new(const char *path)
{
	struct opd_imgids *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->path = strdup(path);
	if (!r->path) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void opd_imgids_free(struct opd_imgids *r)
{
	if (!r)
		return;
	if (r->f)
		fclose(r->f);
	free(r->imgs);
	free(r->path);
	free(r);
}

int opd_imgids_escape(const char *path, char *out, size_t size)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (o + 5 > size)
			return -ENAMETOOLONG;
		if (*p < '!' || *p > '~' || *p == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\x%02x", *p);
		else
			out[o++] = (char)*p;
	}
	if (o >= size)
		return -ENAMETOOLONG;
	out[o] = '\0';
	return (int)o;
}

/* The record, opened (created with its header line) on first use: by the
 * walk that refuses links for a session path, as every session file. */
static FILE *record(struct opd_imgids *r)
{
	struct stat st;

	if (r->f || r->failed)
		return r->f;
	r->f = r->path[0] == '/' ? du_nf_fopen(r->path, "a", DU_SDIR_FILE_MODE)
				 : fopen(r->path, "ae");
	if (!r->f) {
		du_err("cannot write the image identity record %s: %s", r->path, strerror(errno));
		r->failed = true;
		return NULL;
	}
	/* the header once per file: a later daemon run appends below it (an
	 * fdopen()ed append stream's ftell() says 0 whatever the size) */
	if (!fstat(fileno(r->f), &st) && st.st_size == 0)
		fputs("domprof-images 1\n", r->f);
	return r->f;
}

/* The build id of @path as hex into @hex: "-" none, "?" unreadable.  The
 * file is opened without following it into a fifo or a device. */
static void read_build_id(const char *path, char *hex, size_t size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	snprintf(hex, size, "?");
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		int n = du_elf_build_id_hex(fd, hex, size);

		if (n == 0)
			snprintf(hex, size, "-");
		else if (n < 0)
			snprintf(hex, size, "?");
	}
	close(fd);
}

/* Write @img's identity as stat() gave it in @st. */
static int write_line(struct opd_imgids *r, struct opd_image *img, const struct stat *st)
{
	char esc[4 * 4096 + 1], hex[DU_BUILD_ID_HEX];
	FILE *f;

	if (opd_imgids_escape(img->name, esc, sizeof(esc)) < 0)
		return 0;	/* no host path is that long */
	read_build_id(img->name, hex, sizeof(hex));
	f = record(r);
	if (!f)
		return -EIO;
	fprintf(f, "image\t%s\t%s\t%" PRIu64 "\t%" PRId64 ".%09ld\n", esc, hex,
		(uint64_t)st->st_size, (int64_t)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
	/* a line at a time: a killed daemon leaves whole lines */
	if (fflush(f) || ferror(f)) {
		if (!r->failed)
			du_err("cannot write the image identity record %s", r->path);
		r->failed = true;
		return -EIO;
	}
	img->id_dev = (uint64_t)st->st_dev;
	img->id_ino = (uint64_t)st->st_ino;
	img->id_size = (uint64_t)st->st_size;
	img->id_mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	return 1;
}

int opd_imgids_note(struct opd_imgids *r, struct opd_image *img)
{
	struct stat st;
	int ret;

	if (!r || img->kind != SFN_ROOT || img->id_noted)
		return 0;
	img->id_noted = 1;	/* tried once, whatever comes of it */
	if (stat(img->name, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 64;
		struct opd_image **nv = realloc(r->imgs, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		r->imgs = nv;
		r->cap = cap;
	}
	ret = write_line(r, img, &st);
	if (ret > 0)
		r->imgs[r->n++] = img;
	return ret;
}

void opd_imgids_unnote(struct opd_imgids *r)
{
	for (size_t i = 0; r && i < r->n; i++)
		r->imgs[i]->id_noted = 0;
}

int opd_imgids_recheck(struct opd_imgids *r)
{
	int n = 0;

	for (size_t i = 0; r && i < r->n; i++) {
		struct opd_image *img = r->imgs[i];
		struct stat st;
		int ret;

		if (stat(img->name, &st) || !S_ISREG(st.st_mode))
			continue;	/* removed: its last identity stands */
		if ((uint64_t)st.st_dev == img->id_dev && (uint64_t)st.st_ino == img->id_ino &&
		    (uint64_t)st.st_size == img->id_size &&
		    (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec == img->id_mtime_ns)
			continue;
		ret = write_line(r, img, &st);
		if (ret < 0)
			return ret;
		n += ret;
	}
	return n;
}
