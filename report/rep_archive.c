#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rep_archive.h"
#include "rep_collect.h"
#include "rep_debug.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_verify.h"
#include "rep_view.h"
#include "util/du_elfid.h"
#include "util/du_fs.h"
#include "util/du_io.h"
#include "util/du_log.h"

extern char **environ;

struct archive_args {
	const char *output;	/* -o DIR */
	const char *tarball;	/* --tar FILE */
};

/* The size of a hole write_sparse leaves: a page of zeros. */
#define HOLE_BLOCK 4096

static bool zero_block(const char *p, size_t len)
{
	return len && p[0] == 0 && !memcmp(p, p + 1, len - 1);
}

/*
 * @n bytes of @buf written to @out at its offset, each whole block of
 * zeros left a hole: a sample file is mostly a hole (the room it was made
 * with), and a copy that wrote its zeros took two or three times its disk.
 * 0 or -errno.
 */
static int write_sparse(int out, const char *buf, size_t n)
{
	size_t off = 0, start = 0;
	int rc;

	while (off < n) {
		size_t len = n - off < HOLE_BLOCK ? n - off : HOLE_BLOCK;

		if (zero_block(buf + off, len)) {
			rc = du_write_all(out, buf + start, off - start);
			if (rc)
				return rc;
			if (lseek(out, (off_t)len, SEEK_CUR) < 0)
				return -errno;
			start = off + len;
		}
		off += len;
	}
	return du_write_all(out, buf + start, n - start);
}

/* Copy the regular file open as @in (closed here) to @dst (parents
 * created), keeping its mode and its holes (write_sparse); -EINVAL for
 * what is not a regular file. */
static int copy_fd(int in, const char *dst)
{
	char buf[65536], *tmp = NULL;
	struct stat st;
	off_t end;
	int out = -1, rc = 0;
	ssize_t n;

	if (fstat(in, &st)) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	tmp = strdup(dst);
	if (!tmp) {
		rc = -ENOMEM;
		goto out;
	}
	rc = du_mkdir_parents(tmp, 0, 0755);
	if (rc)
		goto out;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 0777);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		rc = write_sparse(out, buf, (size_t)n);
		if (rc)
			goto out;
	}
	if (n < 0)
		rc = -errno;
	/* (a hole at the end: the size of what was read still) */
	else if ((end = lseek(out, 0, SEEK_CUR)) < 0 || ftruncate(out, end))
		rc = -errno;
	/* the mtime too: an image without a build id is checked by size and
	 * mtime (rep_verify.h) */
	else if (futimens(out, (struct timespec[2]){ st.st_atim, st.st_mtim }))
		rc = -errno;
out:
	if (out >= 0 && close(out) && !rc)
		rc = -errno;
	close(in);
	free(tmp);
	return rc;
}

/* Copy regular file @src to @dst as copy_fd. */
static int copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);

	return in < 0 ? -errno : copy_fd(in, dst);
}

/* nftw has no context argument; an archive is made by one thread. */
static struct copy_ctx {
	const char *from, *to;
	int from_fd;	/* @from: the files opened below it (the worker's tree) */
	size_t fromlen, nfiles;
	int rc;
	struct rep_progress pr;
} *copy_target;

static int copy_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct copy_ctx *c = copy_target;
	char *dst = NULL;
	int rc;

	(void)ftw;
	/* Only files and directories: sockets, fifos and the daemon's lock are
	 * the live session's, not the profile's. */
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if (asprintf(&dst, "%s%s", c->to, path + c->fromlen) < 0)
		return c->rc = -ENOMEM, -1;
	/* opened below the session with no link followed and without waiting
	 * on a FIFO: the worker may swap what nftw saw for a link meanwhile */
	rc = du_open_beneath(c->from_fd, path + c->fromlen + 1, O_RDONLY | O_NONBLOCK);
	rc = rc < 0 ? rc : copy_fd(rc, dst);
	if (rc) {
		du_err("cannot copy %s to %s: %s", path, dst, strerror(-rc));
		c->rc = rc;
	}
	free(dst);
	rep_progress_step(&c->pr, ++c->nfiles);
	return rc ? -1 : 0;
}

/* The session's own files: samples, kallsyms, domains, the guest image cache. */
static int copy_session(const char *from, const char *to)
{
	struct copy_ctx c = { .from = from, .to = to, .fromlen = strlen(from) };

	c.from_fd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.from_fd < 0)
		return -errno;
	rep_progress_begin(&c.pr, "oparchive: copying the session", 0);
	copy_target = &c;
	if (nftw(from, copy_one, 32, FTW_PHYS) < 0 && !c.rc)
		c.rc = -errno;
	copy_target = NULL;
	close(c.from_fd);
	rep_progress_end(&c.pr);
	return c.rc;
}

/*
 * @src (a binary, or with @suffix ".debug" its debug file) also under its
 * build id: DIR/archive/.build-id/NN/REST@suffix, where the report looks
 * for an image's recorded build id first.  A hard link to @copy when it
 * can be.  0 (nothing to do: no build id, or there already) or -errno.
 */
static int store_by_build_id(const char *dir, const char *copy, const char *suffix,
			     size_t *ncopied)
{
	char *arch = NULL, *dst = NULL;
	struct rep_ident id;
	struct stat st;
	int rc = 0;

	if (rep_ident_of_file(copy, &id) || asprintf(&arch, "%s/" REP_ARCHIVE_DIR, dir) < 0)
		return 0;
	dst = rep_verify_bid_path(arch, id.build_id, suffix);
	free(arch);
	if (!dst || !stat(dst, &st))
		goto out;
	rc = du_mkdir_parents(dst, 0, 0755);
	if (!rc && link(copy, dst))
		rc = copy_file(copy, dst);
	if (rc)
		du_err("cannot store %s as %s: %s", copy, dst, strerror(-rc));
	else
		(*ncopied)++;
out:
	free(dst);
	return rc;
}

/*
 * The debug file the parser child named for the image with build id @bid
 * (the bounded reader in a parser child, on the copied image), or NULL: the child's
 * word is not taken, only a regular file, reached without a link, whose
 * own build-id note says @bid.  Malloc'd.
 */
static char *checked_debug_file(const char *found, const char *bid)
{
	char now[DU_BUILD_ID_HEX];
	int fd;

	if (!found || found[0] != '/' || strstr(found, "/../") || !bid[0] || !strcmp(bid, "-") ||
	    !strcmp(bid, "?"))
		return NULL;
	fd = open(found, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	if (rep_elf_probe(fd, now, sizeof(now), NULL, NULL) || strcmp(now, bid)) {
		close(fd);
		du_warn("debug file %s: not the one of build-id %s: not archived", found, bid);
		return NULL;
	}
	close(fd);
	return strdup(found);
}

/* A host binary the samples need, and its separate debug file, into
 * DIR/archive/<its path> and by build id (store_by_build_id), where
 * opreport and opannotate look first. */
static int copy_binary(struct rep_images *images, const char *dir, const struct rep_group *g,
		       size_t *ncopied)
{
	char *src = rep_images_locate(images, g->domain, g->vmm, g->dep.name);
	char *dst = NULL, *dbg = NULL, *dbgdst = NULL;
	const char *cbid, *found = NULL;
	struct rep_ident id = { .build_id = "" };
	const char *bid = NULL;
	struct stat st;
	int rc = 0;

	if (!src) {
		du_warn("binary %s not found: archived without it", g->dep.name);
		return 0;
	}
	if (asprintf(&dst, "%s/" REP_ARCHIVE_DIR "%s", dir, g->dep.name) < 0) {
		dst = NULL;
		rc = -ENOMEM;
		goto out;
	}
	if (!stat(dst, &st))
		goto out;	/* another group needed it too */
	rc = copy_file(src, dst);
	if (rc) {
		du_err("cannot copy %s to %s: %s", src, dst, strerror(-rc));
		goto out;
	}
	(*ncopied)++;
	rc = store_by_build_id(dir, dst, NULL, ncopied);
	if (rc)
		goto out;
	/* the debug file the image's parser child used (found by build-id,
	 * debug link or debuginfod); the report parses no ELF itself */
	if (g->dep.kind == SFN_ROOT && !rep_ident_of_file(dst, &id)) {
		bid = id.build_id;
		rep_images_info(images, g->domain, g->vmm, &g->dep, &cbid, &found);
		dbg = checked_debug_file(found, bid);
	}
	if (dbg) {
		/* by build-id where it has one: found so whatever its path was
		 * (a debuginfod cache), as opreport looks there first */
		int n = strlen(bid) > 2 ?
			asprintf(&dbgdst, "%s/" REP_ARCHIVE_DIR REP_DEBUG_DIR "/.build-id/%.2s/%s.debug",
				 dir, bid, bid + 2) :
			asprintf(&dbgdst, "%s/" REP_ARCHIVE_DIR "%s", dir, dbg);

		if (n < 0) {
			dbgdst = NULL;
			rc = -ENOMEM;
			goto out;
		}
		rc = copy_file(dbg, dbgdst);
		if (rc)
			du_err("cannot copy %s to %s: %s", dbg, dbgdst, strerror(-rc));
		else
			(*ncopied)++;
		if (!rc)
			rc = store_by_build_id(dir, dbgdst, ".debug", ncopied);
	}
out:
	free(src);
	free(dst);
	free(dbg);
	free(dbgdst);
	return rc;
}

static int run_tar(const char *dir, const char *tarball)
{
	char *const argv[] = { (char *)"tar", (char *)"-C", (char *)dir, (char *)"-czf",
			       (char *)tarball, (char *)".", NULL };
	pid_t pid;
	int st, rc;

	rc = posix_spawnp(&pid, "tar", NULL, NULL, argv, environ);
	if (rc)
		return -rc;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static void usage(FILE *f)
{
	fputs("Usage: oparchive -o DIR | --tar=FILE.tar.gz [OPTION]... [PROFILE SPECIFICATION]...\n"
	      "Copy a domprof session with every binary its samples need (host binaries\n"
	      "and their separate debug files, the guest image cache, guest kallsyms), so\n"
	      "that opreport --session-dir=DIR and opannotate report the same elsewhere.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output=DIR        the archive directory to create (must not exist)\n"
	      "      --tar=FILE          write a gzipped tarball of the archive instead\n", f);
	fputs(rep_view_common_usage, f);
}

enum { OPT_TAR = 0x2000 };

static int archive_opt(void *ctx, int c, const char *arg, char *err, size_t errlen)
{
	struct archive_args *a = ctx;

	switch (c) {
	case 'o':
		a->output = arg;
		return 0;
	case OPT_TAR:
		a->tarball = arg;
		return 0;
	case 0:
		if (!a->output == !a->tarball) {
			snprintf(err, errlen, "give either -o DIR or --tar=FILE");
			return -EINVAL;
		}
		return 0;
	default:
		snprintf(err, errlen, "unknown option");
		return -EINVAL;
	}
}

/* The directory the archive is made in, *@dir (malloc'd, also on
 * failure: the caller frees it): the -o directory, or one next to the
 * --tar file.  0, or -1 after saying why not. */
static int make_dir(const struct archive_args *args, char **dir)
{
	if (args->tarball) {
		if (asprintf(dir, "%s.tmpXXXXXX", args->tarball) < 0 || !mkdtemp(*dir)) {
			du_err("cannot make a directory next to %s: %s", args->tarball, strerror(errno));
			return -1;
		}
		return 0;
	}
	*dir = strdup(args->output);
	if (!*dir || mkdir(*dir, 0755)) {
		du_err("cannot create %s: %s", args->output, *dir ? strerror(errno) : "out of memory");
		return -1;
	}
	return 0;
}

/* @dir is below the session @session (or cannot be told apart from it). */
static bool inside_session(const char *dir, const char *session)
{
	char *real = realpath(dir, NULL);
	size_t n = strlen(session);
	bool inside = !real || (!strncmp(real, session, n) && real[n] == '/');

	free(real);
	return inside;
}

/* The host binaries of @p's groups into @dir, counted in *@ncopied.
 * Guest binaries are in the image cache, copied with the session. */
static int copy_binaries(struct rep_images *images, const struct rep_profile *p, const char *dir,
			 size_t *ncopied)
{
	struct rep_progress pr;
	int rc = 0;

	rep_progress_begin(&pr, "oparchive: copying binaries", p->ngroups);
	for (size_t i = 0; i < p->ngroups && !rc; i++) {
		const struct rep_group *g = &p->groups[i];

		rep_progress_step(&pr, i);
		if (g->dep.kind != SFN_ROOT || (g->domain && !g->vmm))
			continue;
		rc = copy_binary(images, dir, g, ncopied);
	}
	rep_progress_end(&pr);
	return rc;
}

int rep_archive_main(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "tar", required_argument, NULL, OPT_TAR },
		{ NULL, 0, NULL, 0 },
	};
	struct archive_args args = { 0 };
	struct rep_images *images = NULL;
	struct rep_profile *p = NULL;
	struct rep_opts o;
	char *dir = NULL, *session = NULL;
	size_t ncopied = 0;
	bool made = false;
	int rc, status = 1;

	du_log_set_prog("oparchive");
	rc = rep_view_parse("oparchive", &o, argc, argv, extra, "o:", archive_opt, &args, usage);
	if (rc) {
		status = rc == 1 ? 0 : 1;
		goto out;
	}
	/* Which binaries: the groups are enough, no need to symbolize. */
	o.symbols = false;
	if (rep_view_load(&o, &images, &p))
		goto out;
	if (make_dir(&args, &dir))
		goto out;
	made = true;
	/* An absolute source, so that nftw paths map onto the copy. */
	session = realpath(o.session_dir, NULL);
	if (!session) {
		du_err("%s: %s", o.session_dir, strerror(errno));
		goto out;
	}
	if (inside_session(dir, session)) {
		du_err("the archive cannot be inside the session %s", session);
		goto out;
	}
	rc = copy_session(session, dir);
	if (rc)
		goto out;
	rc = copy_binaries(images, p, dir, &ncopied);
	if (rc)
		goto out;
	if (args.tarball) {
		rc = run_tar(dir, args.tarball);
		if (rc) {
			du_err("tar could not write %s", args.tarball);
			goto out;
		}
	}
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "oparchive: %s: the session and %zu host file%s\n",
			args.tarball ? args.tarball : dir, ncopied, ncopied == 1 ? "" : "s");
	status = 0;
out:
	/* A tarball's staging directory goes whatever happened; a failed -o
	 * directory stays for the user to look at. */
	if (made && args.tarball)
		du_rm_tree(dir);
	free(dir);
	free(session);
	rep_profile_free(p);
	rep_images_free(images);
	rep_opts_release(&o);
	return status;
}
