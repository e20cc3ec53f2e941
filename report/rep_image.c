#include "config.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rep_hash.h"
#include "rep_image.h"
#include "rep_kernel.h"
#include "rep_opts.h"
#include "rep_sym.h"
#include "rep_verify.h"
#include "rep_view.h"
#include "util/du_log.h"

struct rep_images {
	const struct rep_opts *o;
	struct rep_strmap *by_key;	/* cache key -> index in bins (SIZE_MAX-free) */
	struct cached {
		const struct rep_bin *bin;	/* NULL: tried, nothing found */
		struct rep_bin *owned;		/* kernel tables belong to kernel */
	} *bins;
	size_t nbins;
	struct rep_strmap *basenames;	/* -p: basename -> index in found */
	char **found;
	size_t nfound;
	bool scanned;
	struct rep_kernel *kernel;
	bool kernel_tried;
	struct dom_kernel {
		char *domain;
		struct rep_kernel *kernel;	/* NULL: none found */
	} *dkern;
	size_t ndkern;
	struct rep_vstore *vs;		/* recorded identities, verdicts */
};

struct rep_images *rep_images_new(const struct rep_opts *o)
{
	struct rep_images *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = o;
	c->by_key = rep_strmap_new();
	c->basenames = rep_strmap_new();
	c->vs = rep_vstore_new(o->session_dir);
	if (!c->by_key || !c->basenames || !c->vs) {
		rep_images_free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void rep_images_free(struct rep_images *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nbins; i++)
		rep_bin_free(c->bins[i].owned);
	free(c->bins);
	for (size_t i = 0; i < c->nfound; i++)
		free(c->found[i]);
	free(c->found);
	rep_strmap_free(c->by_key);
	rep_strmap_free(c->basenames);
	rep_kernel_free(c->kernel);
	for (size_t i = 0; i < c->ndkern; i++) {
		free(c->dkern[i].domain);
		rep_kernel_free(c->dkern[i].kernel);
	}
	free(c->dkern);
	rep_vstore_free(c->vs);
	free(c);
}

/* nftw has no context argument; the scan is single-threaded and short. */
static struct rep_images *scan_target;

static int scan_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct rep_images *c = scan_target;
	const char *base = path + ftw->base;
	char **nv;

	if (type != FTW_F || !S_ISREG(st->st_mode) || rep_strmap_get(c->basenames, base) >= 0)
		return 0;
	nv = realloc(c->found, (c->nfound + 1) * sizeof(*nv));
	if (!nv)
		return -1;
	c->found = nv;
	nv[c->nfound] = strdup(path);
	if (!nv[c->nfound] || rep_strmap_put(c->basenames, base, c->nfound))
		return -1;
	c->nfound++;
	return 0;
}

static void scan_image_path(struct rep_images *c)
{
	c->scanned = true;
	scan_target = c;
	for (size_t i = 0; i < c->o->nimage_path; i++)
		if (nftw(c->o->image_path[i], scan_one, 16, FTW_PHYS) < 0)
			du_warn("cannot search image path %s: %s", c->o->image_path[i],
				strerror(errno));
	scan_target = NULL;
}


static bool is_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode);
}

/* Undo the \xHH escapes of a map file's guest path in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		unsigned int v;

		if (s[0] == '\\' && s[1] == 'x' && sscanf(s + 2, "%2x", &v) == 1 && v) {
			*o++ = (char)v;
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/*
 * A guest binary from the session's image cache: SESSION/domains/<esc>/images
 * maps guest paths to images/<id>/<name> (written by oprofiled).  Only
 * entries that name a file below SESSION/images/ are followed.
 */
static char *locate_cached(struct rep_images *c, const char *domain, const char *path)
{
	char safe[512], *map = NULL, *line = NULL, *found = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;

	if (sfn_escape_component(domain, strlen(domain), safe, sizeof(safe)) < 0 ||
	    asprintf(&map, "%s/domains/%s/images", c->o->session_dir, safe) < 0)
		return NULL;
	f = fopen(map, "r");
	free(map);
	if (!f)
		return NULL;
	while (!found && (n = getline(&line, &cap, f)) > 0) {
		char *tab = strchr(line, '\t');

		line[strcspn(line, "\n")] = '\0';
		if (!tab || strncmp(line, "images/", 7) || strstr(line, "/../") ||
		    strstr(line, "/./"))
			continue;
		*tab = '\0';
		unescape(tab + 1);
		if (strcmp(tab + 1, path))
			continue;
		if (asprintf(&found, "%s/%s", c->o->session_dir, line) < 0)
			found = NULL;
		else if (!is_file(found)) {
			free(found);
			found = NULL;
		}
	}
	free(line);
	fclose(f);
	return found;
}

/* The files that may hold @path's binary, in the order of preference the
 * lookup always had (rep_image.h): -p by basename, --root, oparchive's
 * copy, the path itself, a guest's image cache.  Appended to @cands
 * (room for LOCATE_MAX; the pick skips those that do not exist).  The
 * new count. */
#define LOCATE_MAX 16
static size_t path_candidates(struct rep_images *c, const char *domain, bool vmm,
			      const char *path, char **cands, size_t n)
{
	const char *base = strrchr(path, '/');
	char *p = NULL;
	long i;

	base = base ? base + 1 : path;
	if (!c->scanned)
		scan_image_path(c);
	i = rep_strmap_get(c->basenames, base);
	if (i >= 0)
		cands[n++] = strdup(c->found[i]);
	if (c->o->root && asprintf(&p, "%s%s", c->o->root, path) >= 0)
		cands[n++] = p;
	/* A session made by oparchive carries its host binaries with it. */
	if ((!domain || vmm) && path[0] == '/' &&
	    asprintf(&p, "%s/" REP_ARCHIVE_DIR "%s", c->o->session_dir, path) >= 0)
		cands[n++] = p;
	if (!domain || vmm)
		cands[n++] = strdup(path);
	if (domain && !vmm)
		cands[n++] = locate_cached(c, domain, path);
	return n;
}

/* Copies by build id of each of @ids: oparchive's SESSION/archive/.build-id
 * store, then the session's image cache (SESSION/images/b<HEX>/<name>). */
static size_t bid_candidates(struct rep_images *c, const struct rep_ident *ids, size_t nids,
			     char **cands, size_t n)
{
	for (size_t k = 0; k < nids && n + 2 <= LOCATE_MAX - 5; k++) {
		char *arch = NULL, *dir = NULL;

		if (asprintf(&arch, "%s/" REP_ARCHIVE_DIR, c->o->session_dir) >= 0)
			cands[n++] = rep_verify_bid_path(arch, ids[k].build_id, NULL);
		free(arch);
		if (asprintf(&dir, "%s/images/b%s", c->o->session_dir, ids[k].build_id) >= 0)
			cands[n++] = rep_verify_cache_file(dir);
		free(dir);
	}
	return n;
}

char *rep_images_locate(struct rep_images *c, const char *domain, bool vmm, const char *path)
{
	char *cands[LOCATE_MAX] = { NULL };
	const struct rep_ident *ids = NULL;
	size_t n, nids = rep_vstore_recorded(c->vs, domain, vmm, path, &ids);
	struct rep_vpick pick;
	int rc;

	n = bid_candidates(c, ids, nids, cands, 0);
	n = path_candidates(c, domain, vmm, path, cands, n);
	rc = rep_vstore_pick(c->vs, path, ids, nids, cands, n, &pick);
	for (size_t i = 0; i < n; i++)
		free(cands[i]);
	if (rc)
		return NULL;
	rep_vstore_verdict(c->vs, domain, vmm, path, &pick);
	return pick.file;
}

bool rep_images_unverified(struct rep_images *c, const char *domain, bool vmm,
			   const struct sfn_image *img)
{
	int st;

	if (img->kind != SFN_ROOT)
		return false;
	st = rep_vstore_state(c->vs, domain, vmm, img->name);
	if (st < 0) {
		free(rep_images_locate(c, domain, vmm, img->name));
		st = rep_vstore_state(c->vs, domain, vmm, img->name);
	}
	return st == REP_V_UNVERIFIED || st == REP_V_MIXED;
}

struct rep_vstore *rep_images_vstore(struct rep_images *c)
{
	return c->vs;
}

/* Kernel symbols in @dir/kallsyms and @dir/modules, warning when absent. */
static struct rep_kernel *load_kernel(const char *dir, const char *who)
{
	char *ks = NULL, *mods = NULL;
	struct rep_kernel *k = NULL;
	char err[256];

	if (asprintf(&ks, "%s/kallsyms", dir) < 0 || asprintf(&mods, "%s/modules", dir) < 0)
		goto out;
	k = rep_kernel_load(ks, mods, err, sizeof(err));
	if (!k)
		du_warn("no kernel symbols for %s: %s: %s", who, ks, err);
out:
	free(ks);
	free(mods);
	return k;
}

static struct rep_kernel *host_kernel(struct rep_images *c)
{
	if (!c->kernel_tried) {
		c->kernel_tried = true;
		c->kernel = load_kernel(c->o->session_dir, "the host");
	}
	return c->kernel;
}

/* A guest's kernel symbols: SESSION/domains/NAME/{kallsyms,modules}. */
static struct rep_kernel *guest_kernel(struct rep_images *c, const char *domain)
{
	char safe[512], *dir = NULL, *who = NULL;
	struct dom_kernel *nv;
	struct rep_kernel *k = NULL;

	for (size_t i = 0; i < c->ndkern; i++)
		if (!strcmp(c->dkern[i].domain, domain))
			return c->dkern[i].kernel;
	if (sfn_escape_component(domain, strlen(domain), safe, sizeof(safe)) < 0)
		return NULL;
	if (asprintf(&dir, "%s/domains/%s", c->o->session_dir, safe) >= 0 &&
	    asprintf(&who, "domain %s", domain) >= 0)
		k = load_kernel(dir, who);
	free(dir);
	free(who);
	nv = realloc(c->dkern, (c->ndkern + 1) * sizeof(*nv));
	if (!nv)
		goto out_free;
	c->dkern = nv;
	nv[c->ndkern].domain = strdup(domain);
	if (!nv[c->ndkern].domain)
		goto out_free;
	nv[c->ndkern++].kernel = k;
	return k;
out_free:
	rep_kernel_free(k);
	return NULL;
}

static const struct rep_bin *lookup_kernel(struct rep_images *c, const char *domain, bool vmm,
					   const char *name)
{
	struct rep_kernel *k = domain && !vmm ? guest_kernel(c, domain) : host_kernel(c);
	const struct rep_bin *b;

	if (!k)
		return NULL;
	b = rep_kernel_image(k, name);
	if (!b)
		du_warn("no symbols for kernel image %s%s%s in its kallsyms", name,
			domain && !vmm ? " of domain " : "", domain && !vmm ? domain : "");
	return b;
}

/*
 * Limits of the child that parses one guest binary: CPU seconds, address
 * space, wall-clock seconds, and bytes of symbol table it may send back.
 */
#define LIMIT_CPU_S	10
#define LIMIT_AS	(1024ull << 20)
#define LIMIT_WALL_MS	30000
#define LIMIT_REPLY	(256u << 20)

/* The child: drop root and what it could regain, limit itself, parse, send. */
static void __attribute__((noreturn)) parse_child(const char *file, int fd, int out, uid_t uid,
						  gid_t gid)
{
	struct rlimit cpu = { LIMIT_CPU_S, LIMIT_CPU_S + 1 }, as = { LIMIT_AS, LIMIT_AS };
	struct rlimit none = { 0, 0 };
	struct rep_bin *b;
	char err[256];
	int null;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || setrlimit(RLIMIT_CPU, &cpu) ||
	    setrlimit(RLIMIT_AS, &as) || setrlimit(RLIMIT_FSIZE, &none) ||
	    setrlimit(RLIMIT_CORE, &none))
		_exit(3);
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)))
		_exit(3);
	if (geteuid() == 0)
		_exit(3);
	/* libbfd's own complaints about the file: not ours to print */
	null = open("/dev/null", O_WRONLY);
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
		_exit(3);
	b = rep_bin_open_elf_fd(file, fd, err, sizeof(err));
	if (!b) {
		/* the reason, as text after a zero marker */
		ssize_t n = write(out, "\0", 1);

		n += write(out, err, strnlen(err, sizeof(err)));
		_exit(n > 0 ? 2 : 3);
	}
	_exit(rep_bin_write(b, out) ? 3 : 0);
}

/*
 * A guest binary's symbols, parsed by a child that runs as nobody (when we
 * are root), with no_new_privs and CPU, memory and file-size limits: a
 * hostile binary that crashes, loops or bloats libbfd costs its own line of
 * report, nothing else.  Only ELF files get as far as libbfd.
 */
static struct rep_bin *open_elf_limited(const char *file, char *err, size_t errlen)
{
	unsigned char magic[4];
	char *reply = NULL;
	size_t len = 0, cap = 0;
	struct rep_bin *b = NULL;
	struct passwd *pw;
	uid_t uid = 65534;
	gid_t gid = 65534;
	int fd, p[2], status;
	pid_t pid;

	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4)) {
		snprintf(err, errlen, "not an ELF file (guest binaries are read as ELF only)");
		close(fd);
		return NULL;
	}
	pw = getpwnam("nobody");
	if (pw) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(fd);
		close(p[0]);
		close(p[1]);
		return NULL;
	}
	if (pid == 0) {
		close(p[0]);
		parse_child(file, fd, p[1], uid, gid);
	}
	close(fd);
	close(p[1]);
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		ssize_t n;
		int r = poll(&pfd, 1, LIMIT_WALL_MS);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			kill(pid, SIGKILL);
			snprintf(err, errlen, "its parser took over %d s: stopped", LIMIT_WALL_MS / 1000);
			goto out_wait;
		}
		if (len == cap) {
			char *nv;

			if (cap >= LIMIT_REPLY) {
				kill(pid, SIGKILL);
				snprintf(err, errlen, "its symbol table is over %u MiB: ignored",
					 LIMIT_REPLY >> 20);
				goto out_wait;
			}
			cap = cap ? cap * 2 : 65536;
			nv = realloc(reply, cap);
			if (!nv) {
				kill(pid, SIGKILL);
				snprintf(err, errlen, "out of memory");
				goto out_wait;
			}
			reply = nv;
		}
		n = read(p[0], reply + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	err[0] = '\0';
out_wait:
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (err[0])
		goto out;
	if (WIFSIGNALED(status)) {
		snprintf(err, errlen, "its parser was killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)),
			 WTERMSIG(status) == SIGXCPU ? ": over its CPU limit" : "");
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && len && !reply[0]) {
		snprintf(err, errlen, "%.*s", (int)(len - 1 < 200 ? len - 1 : 200), reply + 1);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errlen, "its parser failed (exit %d)",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	} else {
		b = rep_bin_read(reply, len);
		if (!b)
			snprintf(err, errlen, "its parser sent a bad table: %s", strerror(errno));
	}
out:
	free(reply);
	return b;
}

static struct rep_bin *load_root(struct rep_images *c, const char *domain, bool vmm,
				 const char *path)
{
	char *file = rep_images_locate(c, domain, vmm, path);
	struct rep_bin *b;
	char err[256];

	if (!file) {
		du_warn("binary %s%s%s not found: reported without symbols", path,
			domain ? " of domain " : "", domain ? domain : "");
		return NULL;
	}
	/* A guest's binary is the guest's bytes: parsed in a child without
	 * privileges; a host binary is the host's own. */
	b = domain && !vmm ? open_elf_limited(file, err, sizeof(err))
			   : rep_bin_open_elf(file, err, sizeof(err));
	if (!b)
		du_warn("cannot read symbols of %s: %s", file, err);
	free(file);
	return b;
}

const struct rep_bin *rep_images_get(struct rep_images *c, const char *domain, bool vmm,
				     const struct sfn_image *img)
{
	/* Host and vmm images are the same binaries: cache them together. */
	const char *owner = domain && !vmm ? domain : "";
	const struct rep_bin *kb = NULL;
	struct rep_bin *b = NULL;
	struct cached *nv;
	char *key = NULL;
	long i;

	if (img->kind == SFN_ANON)
		return NULL;
	if (asprintf(&key, "%s%c%d%c%s", owner, 1, (int)img->kind, 1, img->name) < 0)
		return NULL;
	i = rep_strmap_get(c->by_key, key);
	if (i >= 0) {
		free(key);
		return c->bins[i].bin;
	}
	if (img->kind == SFN_KERN)
		kb = lookup_kernel(c, domain, vmm, img->name);
	else
		b = load_root(c, domain, vmm, img->name);
	nv = realloc(c->bins, (c->nbins + 1) * sizeof(*nv));
	if (!nv) {
		rep_bin_free(b);
		free(key);
		return NULL;
	}
	c->bins = nv;
	c->bins[c->nbins].bin = b ? b : kb;
	c->bins[c->nbins].owned = b;
	/* A failed put only costs a second lookup later, never a leak. */
	c->nbins++;
	rep_strmap_put(c->by_key, key, c->nbins - 1);
	free(key);
	return b ? b : kb;
}
