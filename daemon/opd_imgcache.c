#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opd_imgcache.h"
#include "sfname/sfname.h"
#include "util/du_log.h"

struct opd_imgcache {
	char *session;
	char *dir;		/* SESSION/images */
	struct opd_stats *st;
};

struct opd_imgcache *opd_imgcache_new(const char *session_dir, struct opd_stats *st)
{
	struct opd_imgcache *c = calloc(1, sizeof(*c));

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
	if (mkdir(c->dir, 0750) && errno != EEXIST) {
		int e = errno;

		opd_imgcache_free(c);
		errno = e;
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
bool opd_imgcache_lookup(struct opd_imgcache *c, const char *id, char *rel, size_t size)
{
	char path[PATH_MAX];
	struct stat sb;
	FILE *f;
	char base[NAME_MAX + 1];
	bool ok = false;

	if (snprintf(path, sizeof(path), "%s/%s/.name", c->dir, id) >= (int)sizeof(path))
		return false;
	f = fopen(path, "r");
	if (!f)
		return false;
	if (fgets(base, sizeof(base), f)) {
		base[strcspn(base, "\n")] = '\0';
		if (snprintf(path, sizeof(path), "%s/%s/%s", c->dir, id, base) < (int)sizeof(path) &&
		    !stat(path, &sb) && S_ISREG(sb.st_mode) &&
		    snprintf(rel, size, "images/%s/%s", id, base) < (int)size)
			ok = true;
	}
	fclose(f);
	return ok;
}

/* Two 64-bit FNV-1a lanes over the file: a content key, not a security
 * boundary (a guest can only collide with its own other binaries' names). */
static int hash_file(const char *path, char id[OPD_IMG_ID_MAX])
{
	uint64_t h1 = 0xcbf29ce484222325ULL, h2 = 0xcbf29ce484222325ULL ^ 0x5bd1e9955bd1e995ULL;
	uint8_t buf[65536], out[16];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			h1 = (h1 ^ buf[i]) * 0x100000001b3ULL;
			h2 = (h2 ^ buf[i]) * 0x100000001b3ULL;
			h2 ^= h2 >> 29;
		}
	}
	close(fd);
	if (n < 0)
		return -EIO;
	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(h1 >> (56 - 8 * i));
		out[8 + i] = (uint8_t)(h2 >> (56 - 8 * i));
	}
	hex(id, 'h', out, sizeof(out));
	return 0;
}

int opd_imgcache_commit(struct opd_imgcache *c, const char *tmp, const char *id,
			const char *base, size_t base_len, char *rel, size_t size)
{
	char hid[OPD_IMG_ID_MAX], esc[NAME_MAX + 1], dir[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int ret;

	if (!id) {
		ret = hash_file(tmp, hid);
		if (ret)
			goto out_unlink;
		id = hid;
	}
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
	if (mkdir(dir, 0750) && errno != EEXIST) {
		ret = -errno;
		goto out_unlink;
	}
	if (rename(tmp, path)) {
		ret = -errno;
		goto out_unlink;
	}
	chmod(path, 0640);
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/.name");
	f = fopen(dir, "w");
	if (!f || fprintf(f, "%s\n", esc) < 0 || fclose(f)) {
		ret = -EIO;
		return ret;
	}
	snprintf(rel, size, "images/%s/%s", id, esc);
	c->st->guest_images_cached++;
	return 1;

out_unlink:
	unlink(tmp);
	return ret;
}

int opd_imgcache_map_add(const char *map_path, const char *rel, const char *guest_path,
			 size_t len)
{
	FILE *f = fopen(map_path, "a");
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
