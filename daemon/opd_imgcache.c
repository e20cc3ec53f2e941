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
	free(c);
}

const char *opd_imgcache_dir(const struct opd_imgcache *c)
{
	return c->dir;
}

static void hex(char *out, char lead, const uint8_t *b, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	*out++ = lead;
	for (size_t i = 0; i < n; i++) {
		*out++ = digits[b[i] >> 4];
		*out++ = digits[b[i] & 15];
	}
	*out = '\0';
}

bool opd_imgcache_build_id(const uint8_t *bid, size_t size, char id[OPD_IMG_ID_MAX])
{
	if (!size || size > 20)
		return false;
	hex(id, 'b', bid, size);
	return true;
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

/* The content id of @path: "h" + the hex SHA-256 of its bytes (a guest
 * cannot make its file collide with another guest's). */
static int hash_file(int fd, char id[OPD_IMG_ID_MAX])
{
	uint8_t out[32];
	int ret = opd_sha256_fd(fd, out);

	if (!ret)
		hex(id, 'h', out, sizeof(out));
	return ret;
}

/*
 * The id the file @tmp is stored under (into @out): the @claimed build id
 * only when the file's own build-id note says the same; else its content
 * hash, and a claim that the file denies is counted (a guest uploading
 * bytes under another binary's build id, to poison a domain that runs
 * that binary).
 */
static int proven_id(struct opd_imgcache *c, const char *tmp, const char *claimed,
		     char out[OPD_IMG_ID_MAX])
{
	uint8_t bid[DP_AG_BUILD_ID_MAX];
	char note[OPD_IMG_ID_MAX];
	int fd = du_nf_open(tmp, O_RDONLY, 0, false), n, ret;

	if (fd < 0)
		return fd;
	n = du_elf_build_id(fd, bid, sizeof(bid));
	if (claimed && n > 0 && opd_imgcache_build_id(bid, (size_t)n, note) &&
	    !strcmp(note, claimed)) {
		close(fd);
		snprintf(out, OPD_IMG_ID_MAX, "%s", claimed);
		return 0;
	}
	if (claimed) {
		c->st->guest_hostile_image_mismatch++;
		du_debug("image cache: an upload claimed build id %s, its file says %s", claimed,
			 n > 0 ? note : "none");
	}
	ret = hash_file(fd, out);
	close(fd);
	return ret;
}

int opd_imgcache_commit(struct opd_imgcache *c, const char *tmp, const char *id,
			const char *base, size_t base_len, char *rel, size_t size)
{
	char hid[OPD_IMG_ID_MAX], esc[NAME_MAX + 1], dir[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int ret;

	ret = proven_id(c, tmp, id, hid);
	if (ret)
		goto out_unlink;
	id = hid;
	if (opd_imgcache_lookup(c, id, rel, size)) {
		c->st->guest_images_dedup++;
		ret = 0;
		goto out_unlink;
	}
	/* escaped, and never a name with '/' (a long one is cut into pieces) */
	if (sfn_escape_component(base, base_len, esc, sizeof(esc)) < 0 || strchr(esc, '/') ||
	    esc[0] == '.')
		snprintf(esc, sizeof(esc), "image");
	if (snprintf(dir, sizeof(dir), "%s/%s", c->dir, id) >= (int)sizeof(dir) ||
	    snprintf(path, sizeof(path), "%s/%s", dir, esc) >= (int)sizeof(path)) {
		ret = -ENAMETOOLONG;
		goto out_unlink;
	}
	ret = du_nf_mkdirs(dir);
	if (!ret)
		ret = du_nf_rename(tmp, path);
	if (ret)
		goto out_unlink;
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/.name");
	f = du_nf_fopen(dir, "w", DU_SDIR_FILE_MODE);
	if (!f)
		return -EIO;
	ret = fprintf(f, "%s\n", esc) < 0 ? -EIO : 0;
	if (fclose(f) || ret)
		return -EIO;
	snprintf(rel, size, "images/%s/%s", id, esc);
	c->st->guest_images_cached++;
	return 1;

out_unlink:
	du_nf_unlink(tmp);
	return ret;
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
