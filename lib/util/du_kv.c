#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/du_kv.h"

/*
 * Bounds: the daemon writes a few dozen lines; anything far beyond is not
 * a stats file, and we stop rather than grow without limit.
 */
#define DU_KV_MAX_ENTRIES	1024
#define DU_KV_MAX_FILE	(1 << 20)
#define DU_KV_MAX_KEY	64

struct kv_entry {
	char *key;
	char *value;
};

struct du_kv {
	struct kv_entry *e;
	size_t n;
	size_t garbage;
	char *text;		/* owns the strings the entries point into */
};

static bool key_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

struct du_kv *du_kv_parse(const char *text, size_t len)
{
	struct du_kv *kv = calloc(1, sizeof(*kv));
	char *p, *end;

	if (!kv)
		return NULL;
	kv->text = malloc(len + 1);
	kv->e = calloc(DU_KV_MAX_ENTRIES, sizeof(*kv->e));
	if (!kv->text || !kv->e)
		goto out_free_kv;
	memcpy(kv->text, text, len);
	kv->text[len] = '\0';

	p = kv->text;
	end = kv->text + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line = p, *lend = nl ? nl : end, *k;
		size_t klen;

		p = nl ? nl + 1 : end;
		if (lend == line)
			continue;
		/* a NUL byte would silently cut the line short: garbage */
		if (memchr(line, '\0', (size_t)(lend - line))) {
			kv->garbage++;
			continue;
		}
		*lend = '\0';
		if (lend[-1] == '\r')
			lend[-1] = '\0';
		for (k = line; key_char(*k); k++)
			;
		klen = (size_t)(k - line);
		if (!klen || klen > DU_KV_MAX_KEY || (*k != ' ' && *k != '\t') ||
		    kv->n == DU_KV_MAX_ENTRIES) {
			kv->garbage++;
			continue;
		}
		*k = '\0';
		kv->e[kv->n].key = line;
		kv->e[kv->n].value = k + 1;
		kv->n++;
	}
	return kv;

out_free_kv:
	du_kv_free(kv);
	errno = ENOMEM;
	return NULL;
}

struct du_kv *du_kv_load(const char *path)
{
	struct du_kv *kv = NULL;
	size_t len = 0;
	char *buf;
	int fd, saved;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(DU_KV_MAX_FILE);
	if (!buf)
		goto out_close;
	while (len < DU_KV_MAX_FILE) {
		ssize_t n = read(fd, buf + len, DU_KV_MAX_FILE - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out_free_buf;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	kv = du_kv_parse(buf, len);
out_free_buf:
	saved = errno;
	free(buf);
	errno = saved;
out_close:
	saved = errno;
	close(fd);
	errno = saved;
	return kv;
}

void du_kv_free(struct du_kv *kv)
{
	if (!kv)
		return;
	free(kv->e);
	free(kv->text);
	free(kv);
}

const char *du_kv_get(const struct du_kv *kv, const char *key)
{
	if (!kv)
		return NULL;
	for (size_t i = kv->n; i-- > 0;)
		if (!strcmp(kv->e[i].key, key))
			return kv->e[i].value;
	return NULL;
}

bool du_kv_get_u64(const struct du_kv *kv, const char *key, uint64_t *v)
{
	const char *s = du_kv_get(kv, key);
	char *end;
	unsigned long long x;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

bool du_kv_entry(const struct du_kv *kv, size_t i, const char **key, const char **value)
{
	if (!kv || i >= kv->n)
		return false;
	*key = kv->e[i].key;
	*value = kv->e[i].value;
	return true;
}

size_t du_kv_count(const struct du_kv *kv)
{
	return kv ? kv->n : 0;
}

size_t du_kv_garbage(const struct du_kv *kv)
{
	return kv ? kv->garbage : 0;
}
