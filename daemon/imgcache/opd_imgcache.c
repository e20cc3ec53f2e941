#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "opd_imgcache.h"
#include "opd_imgproof.h"
#include "util/du_elfid.h"
#include "sfname/sfname.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

struct opd_imgcache {
	char *session;
	char *dir;		/* SESSION/images */
	char *hints;		/* SESSION/images/by-build-id */
	struct opd_stats *st;
};

struct opd_imgcache *opd_imgcache_new(const char *session_dir, struct opd_stats *st)
{
	struct opd_imgcache *c = calloc(1, sizeof(*c));
	int ret;

	if (!c)
		return NULL;
	c->st = st;
	c->session = strdup(session_dir);
	if (!c->session || asprintf(&c->dir, "%s/images", session_dir) < 0) {
		c->dir = NULL;
		opd_imgcache_free(c);
		errno = ENOMEM;
		return NULL;
	}
	ret = du_nf_mkdirs(c->dir);
	if (!ret)
		ret = asprintf(&c->hints, "%s/by-build-id", c->dir) < 0 ? -ENOMEM : 0;
	else
		c->hints = NULL;
	if (!ret)
		ret = du_nf_mkdirs(c->hints);
	if (ret) {
		opd_imgcache_free(c);
		errno = -ret;
		return NULL;
	}
	return c;
}

void opd_imgcache_free(struct opd_imgcache *c)
{
	if (!c)
		return;
	free(c->session);
	free(c->dir);
	free(c->hints);
	free(c);
}

const char *opd_imgcache_dir(const struct opd_imgcache *c)
{
	return c->dir;
}

/* @lead (none when '\0'), then @b in lowercase hex, NUL-terminated. */
static void hex(char *out, char lead, const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	if (lead)
		*out++ = lead;
	for (size_t i = 0; i < n; i++) {
		*out++ = digits[b[i] >> 4];
		*out++ = digits[b[i] & 15];
	}
	*out = '\0';
}

/* The one file inside SESSION/images/<id>/ (its basename is the first
 * guest's; later guests may call it otherwise). */
/* A regular file at @path, no link followed on the way. */
static bool is_file(const char *path)
{
	struct stat sb;
	int fd = du_nf_open(path, O_RDONLY | O_NONBLOCK, 0, false);
	bool ok;

	if (fd < 0)
		return false;
	ok = !fstat(fd, &sb) && S_ISREG(sb.st_mode);
	close(fd);
	return ok;
}

bool opd_imgcache_lookup(struct opd_imgcache *c, const char *id, char *rel, size_t size)
{
	char path[PATH_MAX];
	FILE *f;
	char base[NAME_MAX + 1];
	bool ok = false;

	if (snprintf(path, sizeof(path), "%s/%s/.name", c->dir, id) >= (int)sizeof(path))
		return false;
	f = du_nf_fopen(path, "r", 0);
	if (!f)
		return false;
	if (fgets(base, sizeof(base), f)) {
		base[strcspn(base, "\n")] = '\0';
		if (snprintf(path, sizeof(path), "%s/%s/%s", c->dir, id, base) < (int)sizeof(path) &&
		    is_file(path) && snprintf(rel, size, "images/%s/%s", id, base) < (int)size)
			ok = true;
	}
	fclose(f);
	return ok;
}

/* Entries one build id's hint file lists at most: more are not listed
 * (a guest that stamps one note on many files costs a bounded scan). */
#define OPD_IMG_HINTS_MAX	64

/*
 * List @id under the build id @note in the hint index, once.  A failure
 * only loses a hint (logged at debug level): the cache and the maps do
 * not depend on it.
 */
static void hint_add(struct opd_imgcache *c, const uint8_t *note, size_t n, const char *id)
{
	char path[PATH_MAX], line[OPD_IMG_ID_MAX + 2];
	size_t lines = 0;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/", c->hints) >=
	    (int)(sizeof(path) - 2 * DP_AG_BUILD_ID_MAX - 1))
		return;
	hex(path + strlen(path), '\0', note, n);
	f = du_nf_fopen(path, "r", 0);
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (!strcmp(line, id) || ++lines >= OPD_IMG_HINTS_MAX) {
				fclose(f);
				return;
			}
		}
		fclose(f);
	}
	f = du_nf_fopen(path, "a", DU_SDIR_FILE_MODE);
	if (f && fprintf(f, "%s\n", id) < 0) {
		fclose(f);
		f = NULL;
	}
	if (!f || fclose(f))
		du_debug("image cache: cannot add a hint to %s", path);
}

/*
 * The content id of the file @tmp ("h" + the hex SHA-256 of its bytes,
 * which no other guest's file can share unless it is the same file) into
 * @id, and its own build-id note into @note (*@n bytes, 0: none).  A
 * @claimed build id that the note denies is counted: a guest uploading
 * bytes under another binary's build id, which is all it can try now
 * that the build id decides nothing.
 */
static int content_id(struct opd_imgcache *c, const char *tmp, const uint8_t *known,
		      const uint8_t *claimed, size_t claimed_size, char id[OPD_IMG_ID_MAX],
		      uint8_t *note, int *n)
{
	uint8_t sum[OPD_SHA256_SIZE];
	int fd = du_nf_open(tmp, O_RDONLY, 0, false), ret;

	if (fd < 0)
		return fd;
	*n = du_elf_build_id(fd, note, DP_AG_BUILD_ID_MAX);
	if (*n < 0)
		*n = 0;
	if (claimed_size && ((size_t)*n != claimed_size || memcmp(note, claimed, claimed_size))) {
		c->st->guest_hostile_image_mismatch++;
		du_debug("image cache: an upload's claimed build id is not its file's own");
	}
	if (known) {
		memcpy(sum, known, sizeof(sum));
		ret = 0;
	} else {
		ret = opd_sha256_fd(fd, sum);
	}
	close(fd);
	if (!ret)
		hex(id, 'h', sum, sizeof(sum));
	return ret;
}

/* Move @tmp into the cache as images/@id/<escaped @base>. */
static int store(struct opd_imgcache *c, const char *tmp, const char *id, const char *base,
		 size_t base_len, char *rel, size_t size)
{
	char esc[NAME_MAX + 1], dir[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int ret;

	/* escaped, and never a name with '/' (a long one is cut into pieces) */
	if (sfn_escape_component(base, base_len, esc, sizeof(esc)) < 0 || strchr(esc, '/') ||
	    esc[0] == '.')
		snprintf(esc, sizeof(esc), "image");
	if (snprintf(dir, sizeof(dir), "%s/%s", c->dir, id) >= (int)sizeof(dir) ||
	    snprintf(path, sizeof(path), "%s/%s", dir, esc) >= (int)sizeof(path)) {
		du_nf_unlink(tmp);
		return -ENAMETOOLONG;
	}
	ret = du_nf_mkdirs(dir);
	if (!ret)
		ret = du_nf_rename(tmp, path);
	if (ret) {
		du_nf_unlink(tmp);
		return ret;
	}
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/.name");
	f = du_nf_fopen(dir, "w", DU_SDIR_FILE_MODE);
	if (!f)
		return -EIO;
	ret = fprintf(f, "%s\n", esc) < 0 ? -EIO : 0;
	if (fclose(f) || ret)
		return -EIO;
	snprintf(rel, size, "images/%s/%s", id, esc);
	return 0;
}

int opd_imgcache_commit(struct opd_imgcache *c, const char *tmp, const uint8_t *sum,
			const uint8_t *bid, size_t bid_size, const char *base, size_t base_len,
			char *rel, size_t size)
{
	uint8_t note[DP_AG_BUILD_ID_MAX];
	char id[OPD_IMG_ID_MAX];
	int n, ret;

	ret = content_id(c, tmp, sum, bid, bid_size, id, note, &n);
	if (ret) {
		du_nf_unlink(tmp);
		return ret;
	}
	if (opd_imgcache_lookup(c, id, rel, size)) {
		/* the same bytes, from this domain or another */
		c->st->guest_images_dedup++;
		du_nf_unlink(tmp);
		return 0;
	}
	ret = store(c, tmp, id, base, base_len, rel, size);
	if (ret)
		return ret;
	if (n > 0)
		hint_add(c, note, (size_t)n, id);
	c->st->guest_images_cached++;
	return 1;
}

int opd_imgcache_map_add(const char *map_path, const char *rel, const char *guest_path,
			 size_t len)
{
	FILE *f = du_nf_fopen(map_path, "a", DU_SDIR_FILE_MODE);
	int ret = 0;

	if (!f)
		return -errno;
	fprintf(f, "%s\t", rel);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)guest_path[i];

		if (ch <= ' ' || ch > '~' || ch == '\\')
			fprintf(f, "\\x%02x", ch);
		else
			fputc(ch, f);
	}
	fputc('\n', f);
	if (fclose(f))
		ret = -errno;
	return ret;
}
