/*
 * File cookies: each distinct mapped file (dev, ino, path) gets a small id
 * the first time it is seen, and MMAP frames carry the id.  The host asks
 * for a file by id, so the agent never has to trust a path from the host.
 * The table is bounded; once full, new files go out with cookie 0.
 */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ag.h"

struct ag_cookies {
	struct ag_cookie *by_id;	/* by_id[id - 1] */
	uint32_t *slots;		/* open addressing: id or 0 */
	unsigned int nslots, n, max;
};

struct ag_cookies *ag_cookies_new(unsigned int max)
{
	struct ag_cookies *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max = max;
	t->nslots = 16;
	while (t->nslots < 2 * max)
		t->nslots *= 2;
	t->by_id = calloc(max, sizeof(*t->by_id));
	t->slots = calloc(t->nslots, sizeof(*t->slots));
	if (!t->by_id || !t->slots) {
		ag_cookies_free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void ag_cookies_free(struct ag_cookies *t)
{
	unsigned int i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++)
		free(t->by_id[i].path);
	free(t->by_id);
	free(t->slots);
	free(t);
}

static uint64_t hash(uint64_t dev, uint64_t ino, const char *path, size_t len)
{
	uint64_t h = 1469598103934665603ULL ^ dev ^ (ino * 0x9e3779b97f4a7c15ULL);
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (uint8_t)path[i]) * 1099511628211ULL;
	return h;
}

/* Read a file's GNU build-id note: program headers, then PT_NOTE
 * segments, each read bounded. */
int ag_read_build_id(int fd, uint8_t out[DP_AG_BUILD_ID_MAX])
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint8_t note[4096];
	unsigned int i;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph) || eh.e_phnum > 256)
		return 0;
	for (i = 0; i < eh.e_phnum; i++) {
		size_t len, off = 0;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			return 0;
		if (ph.p_type != PT_NOTE)
			continue;
		len = ph.p_filesz < sizeof(note) ? ph.p_filesz : sizeof(note);
		if (pread(fd, note, len, (off_t)ph.p_offset) != (ssize_t)len)
			continue;
		while (len - off >= sizeof(Elf64_Nhdr)) {
			Elf64_Nhdr nh;
			size_t name_sz, desc_sz;

			memcpy(&nh, note + off, sizeof(nh));
			off += sizeof(nh);
			name_sz = (nh.n_namesz + 3) & ~3U;
			desc_sz = (nh.n_descsz + 3) & ~3U;
			if (name_sz > len - off || desc_sz > len - off - name_sz)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(note + off, "GNU", 4) && nh.n_descsz > 0 &&
			    nh.n_descsz <= DP_AG_BUILD_ID_MAX) {
				memcpy(out, note + off + name_sz, nh.n_descsz);
				return (int)nh.n_descsz;
			}
			off += name_sz + desc_sz;
		}
	}
	return 0;
}

static int open_checked(const char *path, uint64_t dev, uint64_t ino)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_dev != dev || st.st_ino != ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int ag_cookie_open(const struct ag_cookie *c)
{
	char alt[DP_AG_MAX_PATH + 64];
	int fd = open_checked(c->path, c->dev, c->ino);

	/* A task in another mount namespace: its root shows the same file. */
	if (fd < 0 && c->pid) {
		snprintf(alt, sizeof(alt), "/proc/%u/root%s", c->pid, c->path);
		fd = open_checked(alt, c->dev, c->ino);
	}
	return fd;
}

const struct ag_cookie *ag_cookie_get(struct ag_cookies *t, uint64_t dev, uint64_t ino,
				      const char *path, size_t len, uint32_t pid)
{
	unsigned int mask = t->nslots - 1, i;
	struct ag_cookie *c;
	int fd, n;

	if (!ino || !len || path[0] != '/')
		return NULL;
	for (i = hash(dev, ino, path, len) & mask; t->slots[i]; i = (i + 1) & mask) {
		c = &t->by_id[t->slots[i] - 1];
		if (c->dev == dev && c->ino == ino && !strncmp(c->path, path, len) && !c->path[len])
			return c;
	}
	if (t->n >= t->max)
		return NULL;
	c = &t->by_id[t->n];
	c->path = strndup(path, len);
	if (!c->path)
		return NULL;
	c->dev = dev;
	c->ino = ino;
	c->pid = pid;
	c->id = ++t->n;
	t->slots[i] = c->id;
	fd = ag_cookie_open(c);
	if (fd >= 0) {
		n = ag_read_build_id(fd, c->build_id);
		c->build_id_size = n > 0 ? (uint8_t)n : 0;
		close(fd);
	}
	return c;
}

const struct ag_cookie *ag_cookie_find(const struct ag_cookies *t, uint32_t id)
{
	if (!id || id > t->n)
		return NULL;
	return &t->by_id[id - 1];
}
