#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rep_image.h"
#include "rep_opts.h"
#include "rep_spec.h"
#include "rep_stacks.h"
#include "rep_sym.h"
#include "rep_view.h"
#include "util/du_fs.h"
#include "util/du_log.h"

struct stack_file {
	struct sfn_image *imgs;
	size_t nimgs, cap;
	const struct sfn_image **fimg;	/* [DP_RAW_CC_MAX + 1] */
	uint64_t *fkey;
};

/* Stacks never hold more callers than a raw call chain. */
#define STACK_MAX 128

static void free_images(struct stack_file *sf)
{
	for (size_t i = 0; i < sf->nimgs; i++)
		free(sf->imgs[i].name);
	free(sf->imgs);
	sf->imgs = NULL;
	sf->nimgs = sf->cap = 0;
}

/* "image N IMAGE": N must be the next index. */
static int image_line(struct stack_file *sf, char *line)
{
	char *sp = strchr(line, ' ');
	struct sfn_image im;
	char *end;
	unsigned long long idx;

	if (!sp)
		return -EINVAL;
	*sp = '\0';
	idx = strtoull(line, &end, 10);
	if (*end || idx != sf->nimgs || sfn_parse_image(sp + 1, &im))
		return -EINVAL;
	if (sf->nimgs == sf->cap) {
		size_t ncap = sf->cap ? sf->cap * 2 : 64;
		struct sfn_image *n = realloc(sf->imgs, ncap * sizeof(*n));

		if (!n) {
			free(im.name);
			return -ENOMEM;
		}
		sf->imgs = n;
		sf->cap = ncap;
	}
	sf->imgs[sf->nimgs++] = im;
	return 0;
}

/* "stack COUNT LEAF KEY IDX:KEY...": parsed into @s (leaf into @leaf). */
static int stack_line(struct stack_file *sf, char *line, struct sfn_name *leaf,
		      struct rep_stack *s)
{
	char *tok, *save = NULL, *end;

	tok = strtok_r(line, " ", &save);
	s->count = tok ? strtoull(tok, &end, 10) : 0;
	if (!tok || *end || !s->count)
		return -EINVAL;
	tok = strtok_r(NULL, " ", &save);
	if (!tok || sfn_parse(tok, leaf))
		return -EINVAL;
	tok = strtok_r(NULL, " ", &save);
	s->leaf_key = tok ? strtoull(tok, &end, 0) : 0;
	if (!tok || *end)
		goto out_bad;
	s->n = 0;
	while ((tok = strtok_r(NULL, " ", &save))) {
		unsigned long long idx = strtoull(tok, &end, 10);

		if (*end != ':' || idx >= sf->nimgs || s->n >= STACK_MAX)
			goto out_bad;
		sf->fimg[s->n] = &sf->imgs[idx];
		sf->fkey[s->n] = strtoull(end + 1, &end, 0);
		if (*end)
			goto out_bad;
		s->n++;
	}
	s->leaf = leaf;
	s->img = sf->fimg;
	s->key = sf->fkey;
	return 0;
out_bad:
	sfn_name_release(leaf);
	return -EINVAL;
}

/* Stacks file @name of directory @dfd: opened with no link followed and
 * without waiting on a FIFO (the daemon's worker writes the directory);
 * what is not a regular file is passed over. */
static int read_file(const struct rep_opts *o, int dfd, const char *name, struct stack_file *sf,
		     rep_stack_fn fn, void *ctx, size_t *bad)
{
	int fd = du_open_beneath_file(dfd, name);
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;
	int rc = 0;

	if (fd == -ELOOP || fd == -ENOTDIR || fd == -EINVAL)
		du_warn("skipping {stacks}/%s: %s", name,
			fd == -EINVAL ? "not a regular file" : "a link");
	if (fd < 0)
		return fd == -ENOMEM ? fd : 0;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return errno == ENOMEM ? -ENOMEM : 0;
	}
	free_images(sf);
	while (!rc && (len = getline(&line, &cap, f)) > 0) {
		struct sfn_name leaf;
		struct rep_stack s;
		int r;

		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (!strncmp(line, "image ", 6)) {
			r = image_line(sf, line + 6);
		} else if (!strncmp(line, "stack ", 6)) {
			r = stack_line(sf, line + 6, &leaf, &s);
			if (!r) {
				if (rep_spec_match(o->spec, &leaf))
					rc = fn(ctx, &s);
				sfn_name_release(&leaf);
			}
		} else {
			r = strncmp(line, "domprof-stacks ", 15) ? -EINVAL : 0;
		}
		if (r == -ENOMEM)
			rc = r;
		else if (r && bad)
			(*bad)++;
	}
	free(line);
	fclose(f);
	return rc;
}

int rep_stacks_foreach(const struct rep_opts *o, rep_stack_fn fn, void *ctx, size_t *bad)
{
	struct stack_file sf = { 0 };
	struct dirent *e;
	char *dir = NULL;
	int sfd, dfd;
	DIR *d;
	int rc = 0;

	/* the sample directory's, then its {stacks} with no link followed */
	dir = rep_samples_path(o, NULL);
	if (!dir)
		return -ENOMEM;
	sfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (sfd < 0)
		return 0;
	dfd = du_open_beneath(sfd, "{stacks}", O_RDONLY | O_DIRECTORY);
	close(sfd);
	if (dfd == -ELOOP || dfd == -ENOTDIR)
		du_warn("not reading the call stacks: {stacks} is not a directory");
	d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return dfd == -ENOMEM ? -ENOMEM : 0;
	}
	sf.fimg = calloc(STACK_MAX, sizeof(*sf.fimg));
	sf.fkey = calloc(STACK_MAX, sizeof(*sf.fkey));
	if (!sf.fimg || !sf.fkey)
		rc = -ENOMEM;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		rc = read_file(o, dirfd(d), e->d_name, &sf, fn, ctx, bad);
	}
	closedir(d);
	free_images(&sf);
	free(sf.fimg);
	free(sf.fkey);
	return rc;
}

const char *rep_stack_symbol(struct rep_images *images, const struct sfn_name *leaf,
			     const struct sfn_image *img, uint64_t key, char *buf, size_t size)
{
	const struct rep_bin *bin = rep_images_get(images, leaf->domain, leaf->vmm, img);
	long sym = bin ? rep_bin_lookup_key(bin, key) : -1;
	char *label;

	if (sym >= 0)
		return rep_bin_sym(bin, (size_t)sym)->name;
	label = rep_view_image_label(img);
	snprintf(buf, size, "[%s]", label ? label : "?");
	free(label);
	return buf;
}
