#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#ifdef HAVE_DEBUGINFOD
#include <elfutils/debuginfod.h>
#endif

#include "rep_debug.h"

/* MiniDebugInfo is a small symbol table; anything bigger is not one. */
#define MINI_MAX_OUT	(64u << 20)

/* One ELF file's facts that decide whether it serves as debug info. */
struct facts {
	unsigned char id[REP_DEBUG_ID_MAX];
	size_t idlen;
	bool symtab;		/* a .symtab with more than its null entry */
	bool lines;		/* a .debug_line with contents */
	char link[256];		/* .gnu_debuglink's name, "" none */
	uint32_t link_crc;
	bool has_mini;		/* a .gnu_debugdata section */
};

const char *rep_debug_src_name(enum rep_debug_src src)
{
	static const char *const names[] = {
		[REP_DEBUG_NONE] = "none", [REP_DEBUG_SELF] = "its own symbol table",
		[REP_DEBUG_BUILD_ID] = "build-id directory", [REP_DEBUG_LINK] = ".gnu_debuglink",
		[REP_DEBUG_MINI] = ".gnu_debugdata", [REP_DEBUG_DEBUGINFOD] = "debuginfod",
	};

	return (unsigned int)src < sizeof(names) / sizeof(names[0]) ? names[src] : "?";
}

static void say(struct rep_debug_found *f, const char *fmt, ...)
{
	size_t n = strlen(f->why);
	va_list ap;

	if (n + 3 >= sizeof(f->why))
		return;
	if (n)
		n += (size_t)snprintf(f->why + n, sizeof(f->why) - n, "; ");
	va_start(ap, fmt);
	vsnprintf(f->why + n, sizeof(f->why) - n, fmt, ap);
	va_end(ap);
}

static void hex(const unsigned char *id, size_t n, char *buf, size_t size)
{
	buf[0] = '\0';
	if (2 * n >= size)
		return;
	for (size_t i = 0; i < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", id[i]);
}

static void note_build_id(Elf_Data *d, struct facts *x)
{
	size_t off = 0, noff, doff;
	GElf_Nhdr nh;

	while (!x->idlen && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)d->d_buf + noff, "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz <= REP_DEBUG_ID_MAX) {
			memcpy(x->id, (const char *)d->d_buf + doff, nh.n_descsz);
			x->idlen = nh.n_descsz;
		}
	}
}

static void note_link(Elf *e, Elf_Data *d, struct facts *x)
{
	size_t n = d->d_buf ? strnlen(d->d_buf, d->d_size) : d->d_size;
	size_t at = (n + 4) & ~(size_t)3;
	const unsigned char *p = d->d_buf;
	const char *ident = elf_getident(e, NULL);

	/* name, NUL, padding to 4, then the CRC in the file's byte order */
	if (!n || n >= sizeof(x->link) || at + 4 > d->d_size || memchr(d->d_buf, '/', n))
		return;
	memcpy(x->link, d->d_buf, n);
	x->link[n] = '\0';
	if (ident && ident[EI_DATA] == ELFDATA2MSB)
		x->link_crc = (uint32_t)p[at] << 24 | p[at + 1] << 16 | p[at + 2] << 8 | p[at + 3];
	else
		x->link_crc = (uint32_t)p[at + 3] << 24 | p[at + 2] << 16 | p[at + 1] << 8 | p[at];
}

/* The facts of the ELF file at @fd: 0, or -ENOEXEC when it is not one. */
static int read_facts(int fd, struct facts *x)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	Elf *e;

	memset(x, 0, sizeof(*x));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx)) {
		elf_end(e);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (sh.sh_type == SHT_SYMTAB && sh.sh_entsize && sh.sh_size / sh.sh_entsize > 1)
			x->symtab = true;
		else if (!strcmp(name, ".debug_line") && sh.sh_type != SHT_NOBITS && sh.sh_size)
			x->lines = true;
		else if (!strcmp(name, ".gnu_debugdata") && sh.sh_type != SHT_NOBITS)
			x->has_mini = true;
		else if (sh.sh_type == SHT_NOTE && !x->idlen && (d = elf_getdata(scn, NULL)))
			note_build_id(d, x);
		else if (!strcmp(name, ".gnu_debuglink") && sh.sh_type != SHT_NOBITS &&
			 (d = elf_getdata(scn, NULL)))
			note_link(e, d, x);
	}
	elf_end(e);
	return 0;
}

int rep_debug_build_id(int fd, char *buf, size_t size)
{
	struct facts x;
	int rc = read_facts(fd, &x);

	buf[0] = '\0';
	if (!rc)
		hex(x.id, x.idlen, buf, size);
	return rc;
}

int rep_debug_crc32(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	off_t at = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), at)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c = crc32(c, buf, (uInt)n);
		at += n;
	}
	*crc = (uint32_t)c;
	return 0;
}

/*
 * Whether the file at @cfd serves @img as debug info: an ELF file with the
 * image's build-id (when the image has one), the CRC @crc when @check_crc,
 * and what is needed.  Refusals are counted and said.
 */
static bool usable(int cfd, const char *where, const struct facts *img, bool check_crc,
		   uint32_t crc, const struct rep_debug_opts *o, struct rep_debug_found *f)
{
	struct facts x;
	uint32_t got;

	if (read_facts(cfd, &x)) {
		f->refused++;
		say(f, "%s: not an ELF file, refused", where);
		return false;
	}
	if (img->idlen && (x.idlen != img->idlen || memcmp(x.id, img->id, x.idlen))) {
		char h[2 * REP_DEBUG_ID_MAX + 1];

		hex(x.id, x.idlen, h, sizeof(h));
		f->refused++;
		say(f, "%s: build-id %s does not match, refused", where, h[0] ? h : "(none)");
		return false;
	}
	if (check_crc && (rep_debug_crc32(cfd, &got) || got != crc)) {
		f->refused++;
		say(f, "%s: CRC does not match its .gnu_debuglink, refused", where);
		return false;
	}
	if (o->need_lines ? !x.lines : !x.symtab) {
		say(f, "%s: no %s", where, o->need_lines ? "line table" : "symbol table");
		return false;
	}
	return true;
}

static bool same_file(int a, int b)
{
	struct stat x, y;

	return !fstat(a, &x) && !fstat(b, &y) && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* Try the file at @p: taken when usable. */
static bool try_path(const char *p, int imgfd, const struct facts *img, bool check_crc,
		     uint32_t crc, const struct rep_debug_opts *o, enum rep_debug_src src,
		     struct rep_debug_found *f)
{
	int cfd = open(p, O_RDONLY | O_CLOEXEC);

	if (cfd < 0)
		return false;
	if (same_file(cfd, imgfd) || !usable(cfd, p, img, check_crc, crc, o, f)) {
		close(cfd);
		return false;
	}
	f->src = src;
	f->fd = cfd;
	snprintf(f->path, sizeof(f->path), "%s", p);
	return true;
}

static bool by_build_id(int fd, const char *dir, const struct facts *img,
			const struct rep_debug_opts *o, struct rep_debug_found *f)
{
	char p[1024];
	int n;

	if (!img->idlen) {
		say(f, "no build-id");
		return false;
	}
	n = snprintf(p, sizeof(p), "%s/.build-id/%02x/", dir, img->id[0]);
	if (n < 0 || (size_t)n + 2 * img->idlen + 7 > sizeof(p)) {
		say(f, "%s: path too long", dir);
		return false;
	}
	hex(img->id + 1, img->idlen - 1, p + n, sizeof(p) - (size_t)n - 7);
	strcat(p, ".debug");
	if (try_path(p, fd, img, false, 0, o, REP_DEBUG_BUILD_ID, f))
		return true;
	say(f, "not in %s/.build-id", dir);
	return false;
}

static bool by_link(int fd, const char *path, const char *dir, const struct facts *img,
		    const struct rep_debug_opts *o, struct rep_debug_found *f)
{
	const char *slash = strrchr(path, '/');
	int dlen = slash ? (int)(slash - path) : 1;
	const char *d = slash ? path : ".";
	char p[1536];

	if (!img->link[0]) {
		say(f, "no .gnu_debuglink");
		return false;
	}
	if (slash == path)
		dlen = 0;	/* an image in / */
	snprintf(p, sizeof(p), "%.*s/%s", dlen, d, img->link);
	if (try_path(p, fd, img, true, img->link_crc, o, REP_DEBUG_LINK, f))
		return true;
	snprintf(p, sizeof(p), "%.*s/.debug/%s", dlen, d, img->link);
	if (try_path(p, fd, img, true, img->link_crc, o, REP_DEBUG_LINK, f))
		return true;
	snprintf(p, sizeof(p), "%s%.*s/%s", dir, dlen, d, img->link);
	if (try_path(p, fd, img, true, img->link_crc, o, REP_DEBUG_LINK, f))
		return true;
	say(f, ".gnu_debuglink %s: not beside it, in .debug/ or under %s", img->link, dir);
	return false;
}

/* .gnu_debugdata's xz stream, decompressed into a memfd: the fd, or -errno. */
static int unxz(const unsigned char *in, size_t inlen)
{
	lzma_stream s = LZMA_STREAM_INIT;
	unsigned char *out = NULL;
	size_t cap = 0;
	lzma_ret r;
	int mfd = -EBADMSG;

	if (lzma_stream_decoder(&s, MINI_MAX_OUT, 0) != LZMA_OK)
		return -ENOMEM;
	s.next_in = in;
	s.avail_in = inlen;
	do {
		if (!s.avail_out) {
			unsigned char *nv;

			if (cap >= MINI_MAX_OUT)
				goto out;
			nv = realloc(out, cap ? cap * 2 : 1u << 20);
			if (!nv)
				goto out;
			out = nv;
			s.next_out = out + cap;
			s.avail_out = cap ? cap : 1u << 20;
			cap = cap ? cap * 2 : 1u << 20;
		}
		r = lzma_code(&s, LZMA_FINISH);
	} while (r == LZMA_OK);
	if (r != LZMA_STREAM_END)
		goto out;
	mfd = memfd_create("gnu_debugdata", MFD_CLOEXEC);
	if (mfd < 0) {
		mfd = -errno;
		goto out;
	}
	if (write(mfd, out, cap - s.avail_out) != (ssize_t)(cap - s.avail_out)) {
		close(mfd);
		mfd = -EIO;
	}
out:
	lzma_end(&s);
	free(out);
	return mfd;
}

static int mini_fd(int fd)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int rc = -ENOENT;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (!e || elf_getshdrstrndx(e, &shstrndx)) {
		elf_end(e);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn)) && rc == -ENOENT) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debugdata"))
			continue;
		d = elf_rawdata(scn, NULL);
		rc = d && d->d_buf ? unxz(d->d_buf, d->d_size) : -EBADMSG;
	}
	elf_end(e);
	return rc;
}

static bool by_mini(int fd, const struct facts *img, const struct rep_debug_opts *o,
		    struct rep_debug_found *f)
{
	struct facts x;
	int m;

	if (!img->has_mini || o->need_lines) {
		say(f, "no .gnu_debugdata");
		return false;
	}
	m = mini_fd(fd);
	if (m < 0 || read_facts(m, &x) || !x.symtab) {
		if (m >= 0)
			close(m);
		f->refused++;
		say(f, ".gnu_debugdata: not a compressed symbol table, refused");
		return false;
	}
	f->src = REP_DEBUG_MINI;
	f->fd = m;
	return true;
}

#ifdef HAVE_DEBUGINFOD
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct clock {
	uint64_t deadline;
	bool late;
};

/* Called by the client as it waits, about once a second even when no
 * byte comes: the overall bound, whatever DEBUGINFOD_TIMEOUT says. */
static int progress(debuginfod_client *c, long a, long b)
{
	struct clock *k = debuginfod_get_user_data(c);

	(void)a;
	(void)b;
	if (now_ms() < k->deadline)
		return 0;
	k->late = true;
	return 1;
}

static bool by_debuginfod(int fd, const struct facts *img, const struct rep_debug_opts *o,
			  struct rep_debug_found *f)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct clock k = { now_ms() + o->debuginfod_ms, false };
	debuginfod_client *c;
	char *path = NULL, where[600];
	uint64_t t0 = now_ms();
	int dfd;

	if (!urls || !urls[0] || !o->debuginfod_ms || !img->idlen) {
		say(f, "debuginfod: %s", !img->idlen ? "no build-id to ask for" :
			!urls || !urls[0] ? "DEBUGINFOD_URLS unset" : "not asked (no time left)");
		return false;
	}
	c = debuginfod_begin();
	if (!c) {
		say(f, "debuginfod: cannot start its client");
		return false;
	}
	f->debuginfod_asked = true;
	debuginfod_set_user_data(c, &k);
	debuginfod_set_progressfn(c, progress);
	dfd = debuginfod_find_debuginfo(c, img->id, (int)img->idlen, &path);
	debuginfod_end(c);
	f->debuginfod_spent_ms = (unsigned int)(now_ms() - t0);
	f->debuginfod_timeout = k.late;
	if (dfd < 0) {
		free(path);
		if (k.late)
			say(f, "debuginfod: no answer within %u ms", o->debuginfod_ms);
		else
			say(f, "debuginfod: %s", dfd == -ENOENT ? "not found" : strerror(-dfd));
		return false;
	}
	snprintf(where, sizeof(where), "debuginfod's %s", path ? path : "file");
	if (same_file(dfd, fd) || !usable(dfd, where, img, false, 0, o, f)) {
		close(dfd);
		free(path);
		return false;
	}
	f->src = REP_DEBUG_DEBUGINFOD;
	f->fd = dfd;
	snprintf(f->path, sizeof(f->path), "%s", path ? path : "");
	free(path);
	return true;
}
#else
static bool by_debuginfod(int fd, const struct facts *img, const struct rep_debug_opts *o,
			  struct rep_debug_found *f)
{
	(void)fd;
	(void)img;
	(void)o;
	say(f, "debuginfod: not built in");
	return false;
}
#endif

int rep_debug_find(int fd, const char *path, const struct rep_debug_opts *o,
		   struct rep_debug_found *f)
{
	const char *dir = o->debug_dir ? o->debug_dir : REP_DEBUG_DIR;
	struct facts img;
	int rc;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	rc = read_facts(fd, &img);
	if (rc)
		return rc;
	hex(img.id, img.idlen, f->build_id, sizeof(f->build_id));
	/* gdb's and perf's order: the image itself, the build-id directory,
	 * the debug link, MiniDebugInfo, then the network. */
	if (o->need_lines ? img.lines : img.symtab) {
		f->src = REP_DEBUG_SELF;
		return 0;
	}
	if ((o->first_dir && !access(o->first_dir, F_OK) &&
	     by_build_id(fd, o->first_dir, &img, o, f)) ||
	    by_build_id(fd, dir, &img, o, f) || by_link(fd, path, dir, &img, o, f) ||
	    by_mini(fd, &img, o, f) || by_debuginfod(fd, &img, o, f))
		return 0;
	f->src = REP_DEBUG_NONE;
	return 0;
}
