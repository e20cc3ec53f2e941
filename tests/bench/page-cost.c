/*
 * What the kernel operations behind creating a session cost on this
 * machine: a page first written through a shared file mapping (as lib/odb
 * writes a sample file), the same page written with pwrite, a page of
 * fresh anonymous memory, a directory made, a file created; then a new
 * file whose first pages only are written, mapped with the kernel's
 * read-ahead (as lib/odb mapped a new file before the twelfth round) and
 * without (MADV_RANDOM, as it does now), and the munmap of a mapping
 * written to (which a daemon about to exit now leaves to its exit).  Each is
 * timed in CPU time of this process (user + system), over many of it,
 * each measure in a new directory of its own, all under a directory made
 * in DIR and removed after (on an error too).
 *
 *   page-cost [--files N] [--size BYTES] DIR
 *
 * --files: how many files (and directories) each measure makes (default
 * 4,000); --size: a file's size (default 24,832: a sample file of 1,024
 * nodes, which every file of the benchmark's session becomes; lib/odb
 * makes one at 512, 12,544 bytes, and doubles it when full).
 * Prints microseconds an operation; asserts nothing about time
 * (doc/performance.md, "Tenth round").
 */
#include "config.h"
#include "util/du_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define PAGE	4096u

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* the directory made in DIR, removed at the end or by die() */
static char work[1024];

static int rm_work(void)
{
	return work[0] ? du_rm_tree(work) : 0;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "page-cost: %s %s: %s\n", what, path, strerror(errno));
	rm_work();
	exit(1);
}

/* A new directory @name in the work directory, its path in @out. */
static void subdir(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", work, name);
	if (mkdir(out, 0700) < 0)
		die("making", out);
}

static int new_file(const char *dir, const char *kind, unsigned i, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/%s%u", dir, kind, i);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		die("creating", path);
	return fd;
}

/* A new file @kind@i in @dir cut to @size and mapped (its descriptor
 * closed), its path in @path. */
static char *map_new(const char *dir, const char *kind, unsigned i, size_t size, char *path,
		     size_t len)
{
	int fd = new_file(dir, kind, i, path, len);
	char *p;

	if (ftruncate(fd, (off_t)size) < 0)
		die("sizing", path);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mapping", path);
	close(fd);
	return p;
}

/* N files of @size: each made, cut to @size, mapped and every page
 * written once, as a new sample file is; the time of the writes alone
 * and of the whole. */
static void mapped(const char *dir, unsigned n, size_t size, double *per_page, double *per_file)
{
	char path[1200];
	double t0 = cpu_s(), tw = 0;
	size_t pages = (size + PAGE - 1) / PAGE;

	for (unsigned i = 0; i < n; i++) {
		char *p = map_new(dir, "m", i, size, path, sizeof(path));
		double t = cpu_s();

		for (size_t k = 0; k < pages; k++)
			p[k * PAGE] = 1;
		tw += cpu_s() - t;
		munmap(p, size);
	}
	*per_page = tw / (double)(n * pages) * 1e6;
	*per_file = (cpu_s() - t0) / n * 1e6;
}

/* N files of @size, each mapped with the kernel's read-ahead or without
 * (@no_ahead: MADV_RANDOM) and its first @touch pages written: CPU
 * microseconds a file, its munmap apart (into @unmap). */
static double touched(const char *dir, unsigned n, size_t size, size_t touch, int no_ahead,
		      double *unmap)
{
	char path[1200];
	double t0 = cpu_s(), tu = 0;

	for (unsigned i = 0; i < n; i++) {
		char *p = map_new(dir, no_ahead ? "r" : "a", i, size, path, sizeof(path));
		double t;

		if (no_ahead)
			madvise(p, size, MADV_RANDOM);
		for (size_t k = 0; k < touch && k * PAGE < size; k++)
			p[k * PAGE + 8] = 1;
		t = cpu_s();
		munmap(p, size);
		tu += cpu_s() - t;
	}
	*unmap = tu / n * 1e6;
	return (cpu_s() - t0 - tu) / n * 1e6;
}

/* The same bytes by pwrite, a page a call. */
static double written(const char *dir, unsigned n, size_t size)
{
	char path[1200], page[PAGE];
	size_t pages = (size + PAGE - 1) / PAGE;
	double tw = 0;

	memset(page, 1, sizeof(page));
	for (unsigned i = 0; i < n; i++) {
		int fd = new_file(dir, "w", i, path, sizeof(path));
		double t = cpu_s();

		for (size_t k = 0; k < pages; k++)
			if (pwrite(fd, page, PAGE, (off_t)(k * PAGE)) != (ssize_t)PAGE)
				die("writing", path);
		tw += cpu_s() - t;
		close(fd);
	}
	return tw / (double)(n * pages) * 1e6;
}

/* Fresh anonymous memory, a page at a time. */
static double anon(size_t pages)
{
	char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	double t;

	if (p == MAP_FAILED)
		die("mapping", "anonymous memory");
	/* pages, not a huge page's average where the system gives them */
	madvise(p, pages * PAGE, MADV_NOHUGEPAGE);
	t = cpu_s();
	for (size_t k = 0; k < pages; k++)
		p[k * PAGE] = 1;
	t = cpu_s() - t;
	munmap(p, pages * PAGE);
	return t / (double)pages * 1e6;
}

/* Directories, and empty files created and closed. */
static double made(const char *dir, unsigned n, int dirs)
{
	char path[1200];
	double t = cpu_s();

	for (unsigned i = 0; i < n; i++) {
		if (dirs) {
			snprintf(path, sizeof(path), "%s/d%u", dir, i);
			if (mkdir(path, 0750) < 0)
				die("making", path);
		} else {
			close(new_file(dir, "e", i, path, sizeof(path)));
		}
	}
	return (cpu_s() - t) / n * 1e6;
}

/* @s as a whole number in [1, @max], or 0 */
static unsigned long count(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	return errno || end == s || *end || v > max || s[0] == '-' ? 0 : v;
}

/* Room for what the measures write (twice the files, a page per directory
 * and empty file, the eight pages of the files partly written, a margin):
 * a full disk under a mapping is a SIGBUS. */
static void check_room(unsigned long n, unsigned long size)
{
	struct statvfs v;
	double need = (double)n * ((double)size * 2 + 11 * PAGE) + 64e6;

	if (statvfs(work, &v) == 0 && (double)v.f_bavail * (double)v.f_frsize < need) {
		fprintf(stderr, "page-cost: %s has room for less than the %.0f MB the measures write\n",
			work, need / 1e6);
		rm_work();
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "files", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long n = 4000, size = 24832;
	char sub[1100];
	double page, file;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'n')
			n = count(optarg, 1000000);
		else if (o == 's')
			size = count(optarg, 1ul << 30);
		else
			n = 0;
	}
	if (optind != argc - 1 || !n || !size) {
		fprintf(stderr, "usage: page-cost [--files N (1 to 1,000,000)] "
				"[--size BYTES (1 to 1 GiB)] DIR\n");
		return 1;
	}
	if (strlen(argv[optind]) > sizeof(work) - 32) {
		fprintf(stderr, "page-cost: %s: too long a path\n", argv[optind]);
		return 1;
	}
	snprintf(work, sizeof(work), "%s/page-cost.XXXXXX", argv[optind]);
	if (!mkdtemp(work)) {
		work[0] = '\0';
		die("making a directory in", argv[optind]);
	}
	check_room(n, size);
	printf("page-cost: %lu files of %lu bytes in %s, CPU microseconds an operation\n", n, size,
	       work);
	subdir("mapped", sub, sizeof(sub));
	mapped(sub, (unsigned)n, size, &page, &file);
	printf("first write to a page of a new shared file mapping\t%.2f\n", page);
	printf("a new file made, sized, mapped, every page written, unmapped\t%.2f\n", file);
	subdir("written", sub, sizeof(sub));
	printf("pwrite of a page to a new file\t%.2f\n", written(sub, (unsigned)n, size));
	printf("first write to a page of fresh anonymous memory\t%.2f\n",
	       anon(n * ((size + PAGE - 1) / PAGE)));
	subdir("dirs", sub, sizeof(sub));
	printf("mkdir (in a new directory)\t%.2f\n", made(sub, (unsigned)n, 1));
	subdir("empty", sub, sizeof(sub));
	printf("an empty file created and closed (in a new directory)\t%.2f\n",
	       made(sub, (unsigned)n, 0));
	for (size_t touch = 1; touch <= 3; touch += 2) {
		double cost[2], unmap[2];

		for (int no_ahead = 0; no_ahead < 2; no_ahead++) {
			char name[32];

			snprintf(name, sizeof(name), "touch%zu.%d", touch, no_ahead);
			subdir(name, sub, sizeof(sub));
			cost[no_ahead] = touched(sub, (unsigned)n, size, touch, no_ahead,
						 &unmap[no_ahead]);
		}
		printf("a new file made, sized, mapped, its first %zu page(s) written: "
		       "read ahead\t%.2f\n", touch, cost[0]);
		printf("the same, MADV_RANDOM (no read-ahead)\t%.2f\n", cost[1]);
		printf("munmap of such a mapping: read ahead, MADV_RANDOM\t%.2f\t%.2f\n", unmap[0],
		       unmap[1]);
	}
	if (rm_work() != 0) {
		fprintf(stderr, "page-cost: removing %s: %s\n", work, strerror(errno));
		return 1;
	}
	return 0;
}
