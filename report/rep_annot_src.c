/*
 * opannotate's source files (rep_annot_int.h): where the file a binary's
 * debug info names is found, the --source listing, the source lines of
 * mixed mode, and the annotated tree of --output-dir.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rep_annot_child.h"
#include "rep_annot_int.h"
#include "rep_collect.h"
#include "rep_hash.h"
#include "rep_image.h"
#include "util/du_fs.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

/* Mixed mode reads a source file whole; none is longer than this. */
#define MAX_SOURCE	(64u << 20)

/* --- finding a source file ---------------------------------------------- */

/* @name with the first --base-dirs prefix that leads it taken off (at a
 * component boundary, the '/' after it kept), else @name itself. */
static const char *strip_base(const struct rep_asrc_opts *so, const char *name)
{
	for (size_t i = 0; i < so->nbase; i++) {
		const char *b = so->base_dirs[i];
		size_t len = strlen(b);

		while (len && b[len - 1] == '/')
			len--;
		if (!strncmp(name, b, len) && name[len] == '/')
			return name + len;
	}
	return name;
}

/* @name below @dir only: openat2 RESOLVE_BENEATH, no magic links. */
static FILE *open_below(const char *dir, const char *name)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	int dfd, fd;
	FILE *f;

	while (*name == '/')
		name++;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	fd = (int)syscall(SYS_openat2, dfd, name, &how, sizeof(how));
	close(dfd);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/*
 * A source file named by a binary's debug info, --base-dirs' prefix taken
 * off first.  A guest's only below --source-dir, never as given (its DWARF
 * may name any host file), and never through a link that leaves that
 * directory.  A host binary's in each --search-dirs directory (OProfile's
 * order), then as opreport finds binaries (-p, --root, the path as named).
 */
static FILE *open_source(const struct annot *a, bool guest, const char *name)
{
	const char *rel = strip_base(&a->so, name);
	char *path;
	FILE *f;

	if (guest)
		return a->so.source_dir ? open_below(a->so.source_dir, rel) : NULL;
	for (size_t i = 0; i < a->so.nsearch; i++) {
		if (asprintf(&path, "%s/%s", a->so.search_dirs[i], rel + (*rel == '/')) < 0)
			return NULL;
		f = fopen(path, "re");
		free(path);
		if (f)
			return f;
	}
	path = rep_images_locate(a->images, NULL, false, name);
	f = path ? fopen(path, "re") : NULL;
	free(path);
	return f;
}

static bool is_guest(const struct img *m)
{
	return m->domain && !m->vmm;
}

/* --- source texts (mixed mode) ------------------------------------------ */

struct src_text {
	char *buf;		/* the file, each '\n' made '\0'; NULL: not found */
	size_t *line;		/* [nlines] offsets of the lines' starts */
	unsigned int nlines;
};

struct rep_asrc_cache {
	struct rep_strmap *byname;
	struct src_text *t;
	size_t n;
};

static int read_text(FILE *f, struct src_text *t)
{
	size_t len = 0, cap = 0, nl = 0;
	char *buf = NULL;

	for (;;) {
		if (len == cap) {
			char *nb = cap >= MAX_SOURCE ? NULL : realloc(buf, cap = cap * 2 + 65536);

			if (!nb) {
				free(buf);
				return cap >= MAX_SOURCE ? -EFBIG : -ENOMEM;
			}
			buf = nb;
		}
		size_t got = fread(buf + len, 1, cap - len - 1, f);

		if (!got)
			break;
		len += got;
	}
	buf[len] = '\0';
	for (size_t i = 0; i < len; i++)
		nl += buf[i] == '\n';
	t->line = calloc(nl + 2, sizeof(*t->line));
	if (!t->line) {
		free(buf);
		return -ENOMEM;
	}
	t->buf = buf;
	for (size_t i = 0, start = 0; i <= len; i++) {
		if (i < len && buf[i] != '\n')
			continue;
		if (i < len || i > start)
			t->line[t->nlines++] = start;
		buf[i] = '\0';
		start = i + 1;
	}
	return 0;
}

/* Line @line (from 1) of source file @name of an image (@guest's or the
 * host's), read once; NULL when the file or the line is not there. */
static const char *source_line(struct annot *a, bool guest, const char *name, unsigned int line)
{
	struct rep_asrc_cache *c = a->texts;
	char *key = NULL;
	long k;

	if (!c && !(c = a->texts = calloc(1, sizeof(*c))))
		return NULL;
	if (!c->byname && !(c->byname = rep_strmap_new()))
		return NULL;
	if (asprintf(&key, "%c%s", guest ? 'g' : 'h', name) < 0)
		return NULL;
	k = rep_strmap_get(c->byname, key);
	if (k < 0) {
		struct src_text *nt = realloc(c->t, (c->n + 1) * sizeof(*nt));
		FILE *f;

		if (!nt || rep_strmap_put(c->byname, key, c->n)) {
			c->t = nt ? nt : c->t;
			free(key);
			return NULL;
		}
		c->t = nt;
		memset(&nt[c->n], 0, sizeof(*nt));
		f = open_source(a, guest, name);
		if (f && read_text(f, &nt[c->n]))
			du_warn("%s: not read (longer than %u MiB, or out of memory)", name,
				MAX_SOURCE >> 20);
		if (f)
			fclose(f);
		k = (long)c->n++;
	}
	free(key);
	if (!c->t[k].buf || !line || line > c->t[k].nlines)
		return NULL;
	return c->t[k].buf + c->t[k].line[line - 1];
}

void rep_asrc_print_mixed(struct annot *a, const struct img *m, const struct rep_annot_res *res)
{
	FILE *f = a->out;
	size_t pos = 0;

	for (size_t i = 0; i < res->nmarks; i++) {
		const struct rep_annot_mark *mk = &res->marks[i];
		const char *text = source_line(a, is_guest(m), mk->file, mk->line);
		const char *base = strrchr(mk->file, '/');

		fwrite(res->text + pos, 1, mk->off - pos, f);
		pos = mk->off;
		fputs("  ", f);
		rep_annot_counts(f, a, a->zero, NULL);
		fprintf(f, ":   %s:%u%s%s\n", base ? base + 1 : mk->file, mk->line, text ? "  " : "",
			text ? text : "");
	}
	fwrite(res->text + pos, 1, res->len - pos, f);
}

/* --- lines and files ---------------------------------------------------- */

struct srcline {
	size_t file;
	unsigned int line;
	uint64_t *counts;
};

struct srcfile {
	char *name;		/* as the debug info names it */
	char *domain;		/* a guest's domain: its sources are below --source-dir */
	uint64_t *tot;
};

/* The sampled lines of one image, or with --output-dir of them all (a
 * guest's files apart from the host's). */
struct rep_asrc_tree {
	struct rep_strmap *files, *lines;
	struct srcfile *f;
	size_t nf;
	struct srcline *l;
	size_t nl;
};

static void free_srcmap(struct rep_asrc_tree *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nf; i++) {
		free(s->f[i].name);
		free(s->f[i].domain);
		free(s->f[i].tot);
	}
	for (size_t i = 0; i < s->nl; i++)
		free(s->l[i].counts);
	free(s->f);
	free(s->l);
	rep_strmap_free(s->files);
	rep_strmap_free(s->lines);
	memset(s, 0, sizeof(*s));
}

static long add_file(struct annot *a, struct rep_asrc_tree *s, const struct img *m,
		     const char *file)
{
	struct srcfile *nf;
	char *key;
	long fi;

	/* \001 is in no name: the parser child's names are printable */
	if (asprintf(&key, "%s\001%s", is_guest(m) ? m->domain : "", file) < 0)
		return -ENOMEM;
	fi = rep_strmap_get(s->files, key);
	if (fi >= 0)
		goto out;
	fi = -ENOMEM;
	nf = realloc(s->f, (s->nf + 1) * sizeof(*nf));
	if (!nf)
		goto out;
	s->f = nf;
	nf += s->nf;
	nf->name = strdup(file);
	nf->domain = is_guest(m) ? strdup(m->domain) : NULL;
	nf->tot = calloc(a->nclasses, sizeof(uint64_t));
	s->nf++;
	if (nf->name && (nf->domain || !is_guest(m)) && nf->tot &&
	    !rep_strmap_put(s->files, key, s->nf - 1))
		fi = (long)(s->nf - 1);
out:
	free(key);
	return fi;
}

static int add_line(struct annot *a, struct rep_asrc_tree *s, const struct img *m,
		    const char *file, unsigned int line, const uint64_t *counts)
{
	char key[32];
	long fi = add_file(a, s, m, file), li;

	if (fi < 0)
		return (int)fi;
	snprintf(key, sizeof(key), "%ld:%u", fi, line);
	li = rep_strmap_get(s->lines, key);
	if (li < 0) {
		struct srcline *nl = realloc(s->l, (s->nl + 1) * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		s->l = nl;
		nl[s->nl].file = (size_t)fi;
		nl[s->nl].line = line;
		nl[s->nl].counts = calloc(a->nclasses, sizeof(uint64_t));
		if (!nl[s->nl].counts || rep_strmap_put(s->lines, key, s->nl))
			return -ENOMEM;
		li = (long)s->nl++;
	}
	for (size_t k = 0; k < a->nclasses; k++) {
		s->l[li].counts[k] += counts[k];
		s->f[fi].tot[k] += counts[k];
	}
	return 0;
}

/* The counts of file @fi's lines by line number ([0, *maxline]). */
static uint64_t **lines_of(const struct rep_asrc_tree *s, size_t fi, unsigned int *maxline)
{
	uint64_t **byline;

	*maxline = 0;
	for (size_t i = 0; i < s->nl; i++)
		if (s->l[i].file == fi && s->l[i].line > *maxline)
			*maxline = s->l[i].line;
	byline = calloc(*maxline + 1, sizeof(*byline));
	for (size_t i = 0; byline && i < s->nl; i++)
		if (s->l[i].file == fi)
			byline[s->l[i].line] = s->l[i].counts;
	return byline;
}

/* @src's lines on @f, each after its counts and mark (and its number
 * when @numbered); returns the last line number read. */
static unsigned int put_source_lines(FILE *f, struct annot *a, FILE *src, uint64_t **byline,
				     unsigned int maxline, const uint64_t *file_tot, bool numbered)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned int n = 0;

	while (getline(&line, &cap, src) > 0) {
		bool hot = false;

		n++;
		line[strcspn(line, "\n")] = '\0';
		if (numbered)
			fputs("  ", f);
		if (n <= maxline && byline[n])
			hot = rep_annot_counts(f, a, byline[n], file_tot);
		else
			rep_annot_counts(f, a, a->zero, NULL);
		if (numbered)
			fprintf(f, "%s %5u: %s\n", hot ? "*" : ":", n, line);
		else
			fprintf(f, "%s %s\n", hot ? "*" : ":", line);
	}
	free(line);
	return n;
}

static void print_source_file(struct annot *a, struct rep_asrc_tree *s, size_t fi)
{
	const struct srcfile *sf = &s->f[fi];
	FILE *f = a->out, *src;
	unsigned int maxline;
	uint64_t **byline = lines_of(s, fi, &maxline);

	if (!byline)
		return;
	src = open_source(a, sf->domain != NULL, sf->name);
	fputs("  ", f);
	rep_annot_counts(f, a, sf->tot, NULL);
	fprintf(f, ": source file %s%s\n", sf->name, src ? "" :
		sf->domain && !a->so.source_dir ?
		" (a guest's source: looked for under --source-dir only; sampled lines only)" :
		" (not found: sampled lines only)");
	if (src) {
		put_source_lines(f, a, src, byline, maxline, sf->tot, true);
		fclose(src);
	} else {
		for (unsigned int l = 0; l <= maxline; l++) {
			bool hot;

			if (!byline[l])
				continue;
			fputs("  ", f);
			hot = rep_annot_counts(f, a, byline[l], sf->tot);
			fprintf(f, "%s %5u:\n", hot ? "*" : ":", l);
		}
	}
	fputc('\n', f);
	free(byline);
}

int rep_asrc_annotate(struct annot *a, const struct img *m, const struct rep_annot_res *res)
{
	struct rep_asrc_tree local = { 0 }, *s = a->tree ? a->tree : &local;
	uint64_t *nolines;
	int rc = -ENOMEM;

	if (!res->have_lines) {
		fprintf(a->out, "(%s%s)\n\n", res->note[0] ? res->note : "no debug line information",
			": build with -g or install its debug file");
		return 0;
	}
	nolines = calloc(a->nclasses, sizeof(*nolines));
	if (!a->tree) {
		local.files = rep_strmap_new();
		local.lines = rep_strmap_new();
	}
	if (!nolines || !s->files || !s->lines)
		goto out;
	for (size_t i = 0; i < m->na; i++) {
		if (res->lines[i] && res->files[i]) {
			if (add_line(a, s, m, res->files[i], res->lines[i], m->a[i].counts))
				goto out;
		} else {
			for (size_t k = 0; k < a->nclasses; k++)
				nolines[k] += m->a[i].counts[k];
		}
	}
	for (size_t fi = 0; fi < s->nf && !a->tree; fi++) {
		if (rep_annot_above(a, s->f[fi].tot))
			print_source_file(a, s, fi);
	}
	if (nolines[0]) {
		fputs("  ", a->out);
		rep_annot_counts(a->out, a, nolines, NULL);
		fputs(": (no line information)\n\n", a->out);
	}
	rc = 0;
out:
	free(nolines);
	free_srcmap(&local);
	return rc;
}

/* --- the annotated tree (--output-dir) ---------------------------------- */

int rep_asrc_tree_begin(struct annot *a)
{
	int rc = du_mkdir_p(a->output_dir);

	if (!rc && (a->out_dfd = open(a->output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		rc = -errno;
	if (rc) {
		du_err("--output-dir %s: %s", a->output_dir, strerror(-rc));
		return rc;
	}
	a->tree = calloc(1, sizeof(*a->tree));
	if (!a->tree || !(a->tree->files = rep_strmap_new()) || !(a->tree->lines = rep_strmap_new())) {
		du_err("out of memory");
		return -ENOMEM;
	}
	return 0;
}

/*
 * TREE/REL below @dfd (TREE NULL: none) for writing, its directories made:
 * every component opened by descriptor with O_NOFOLLOW, none of them "..",
 * so nothing outside @dfd is written whatever the debug info names; and
 * not when it is @src itself (an output directory of "/").  fd or -errno.
 */
static int tree_open(int dfd, const char *tree, const char *rel, FILE *src)
{
	char *path, *save = NULL, *comp, *next;
	struct stat ss, os;
	int cur = dfd, fd = -EINVAL, e;

	if (asprintf(&path, "%s%s%s", tree ? tree : "", tree ? "/" : "", rel) < 0)
		return -ENOMEM;
	comp = strtok_r(path, "/", &save);
	for (; comp; comp = next) {
		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, "..") || (!next && !strcmp(comp, ".")))
			break;
		if (!strcmp(comp, "."))
			continue;
		if (!next) {
			e = openat(cur, comp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (e >= 0 && !fstat(e, &os) && !fstat(fileno(src), &ss) &&
			    os.st_dev == ss.st_dev && os.st_ino == ss.st_ino)
				fd = -EEXIST;
			else
				fd = du_openat_own(cur, comp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (e >= 0)
				close(e);
			break;
		}
		if (mkdirat(cur, comp, 0755) && errno != EEXIST) {
			fd = -errno;
			break;
		}
		e = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cur != dfd)
			close(cur);
		cur = e;
		if (cur < 0) {
			fd = -errno;
			cur = dfd;
			break;
		}
	}
	if (cur != dfd)
		close(cur);
	free(path);
	return fd;
}

/* OProfile's closing comment: the file's total and how it was made. */
static void put_footer(FILE *f, struct annot *a, const struct srcfile *sf, uint64_t past_end)
{
	fprintf(f, "/*\n * Total samples for file : \"%s\"\n *\n * ", sf->name);
	rep_annot_counts(f, a, sf->tot, NULL);
	fputc('\n', f);
	if (past_end)
		fprintf(f, " * (%" PRIu64 " of them on lines past the end of this copy:"
			" it changed since the build?)\n", past_end);
	fprintf(f, " *\n * Command line: %s\n", a->cmdline ? a->cmdline : "opannotate");
	for (size_t c = 0; c < a->nclasses; c++)
		fprintf(f, " * Counted %s events with a unit mask of 0x%02x count %" PRIu64 "\n",
			a->p->classes[c].event, a->p->classes[c].unit_mask,
			a->p->classes[c].count);
	fputs(" */\n", f);
}

/* One file of the tree: 0; -ENOENT when its source was not found, -EIO
 * when it could not be written (both said). */
static int write_tree_file(struct annot *a, size_t fi, const char *rel, const char *tree)
{
	const struct rep_asrc_tree *s = a->tree;
	const struct srcfile *sf = &s->f[fi];
	unsigned int maxline, n;
	uint64_t past = 0, **byline = lines_of(s, fi, &maxline);
	FILE *src = byline ? open_source(a, sf->domain != NULL, sf->name) : NULL, *out = NULL;
	int fd, rc = 0;

	if (!byline || !src) {
		rc = byline ? -ENOENT : -ENOMEM;
		du_warn("%s: %s: not written", sf->name, byline ? "source file not found" :
			"out of memory");
		goto out;
	}
	fd = tree_open(a->out_dfd, tree, rel, src);
	if (fd < 0 || !(out = fdopen(fd, "w"))) {
		rc = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		du_warn("%s: cannot write %s%s%s below %s: %s", sf->name, tree ? tree : "",
			tree ? "/" : "", rel + (*rel == '/'), a->output_dir,
			rc == -EEXIST ? "it is the source file itself" :
			rc == -ENOTDIR || rc == -ELOOP ? "a link or a file where a directory goes" :
			rc == -EINVAL ? "a \"..\" in the path, or no file name" : strerror(-rc));
		rc = -EIO;
		goto out;
	}
	n = put_source_lines(out, a, src, byline, maxline, sf->tot, false);
	for (unsigned int l = n + 1; l <= maxline; l++)
		past += byline[l] ? byline[l][0] : 0;
	put_footer(out, a, sf, past);
	if (fclose(out))
		rc = -EIO;
	fputs("  ", a->out);
	rep_annot_counts(a->out, a, sf->tot, NULL);
	fprintf(a->out, ": %s %s/%s%s%s\n", rc ? "could not finish" : "wrote", a->output_dir,
		tree ? tree : "", tree ? "/" : "", rel + (*rel == '/'));
out:
	if (src)
		fclose(src);
	free(byline);
	return rc;
}

int rep_asrc_tree_write(struct annot *a)
{
	const struct rep_asrc_tree *s = a->tree;
	size_t written = 0, failed = 0;

	fputs("Annotated source files:\n", a->out);
	for (size_t fi = 0; fi < s->nf; fi++) {
		const struct srcfile *sf = &s->f[fi];
		char *tree = NULL;

		if (!rep_annot_above(a, sf->tot))
			continue;
		/* a guest's sources apart: its paths name files of its own */
		if (sf->domain && asprintf(&tree, "domain:%s", sf->domain) < 0)
			return -ENOMEM;
		switch (write_tree_file(a, fi, strip_base(&a->so, sf->name), tree)) {
		case 0:
			written++;
			break;
		case -ENOENT:	/* no source to annotate: said, not an error */
			break;
		default:
			failed++;
		}
		free(tree);
	}
	fprintf(a->out, "%zu file(s) written below %s%s\n", written, a->output_dir,
		failed ? ", some not: see the warnings" : "");
	return failed ? -EIO : 0;
}

void rep_asrc_release(struct annot *a)
{
	if (a->texts) {
		for (size_t i = 0; i < a->texts->n; i++) {
			free(a->texts->t[i].buf);
			free(a->texts->t[i].line);
		}
		free(a->texts->t);
		rep_strmap_free(a->texts->byname);
		free(a->texts);
	}
	free_srcmap(a->tree);
	free(a->tree);
	if (a->out_dfd >= 0)
		close(a->out_dfd);
	for (size_t i = 0; i < a->so.nsearch; i++)
		free(a->so.search_dirs[i]);
	for (size_t i = 0; i < a->so.nbase; i++)
		free(a->so.base_dirs[i]);
	free(a->so.search_dirs);
	free(a->so.base_dirs);
	free(a->cmdline);
}
