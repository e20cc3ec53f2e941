#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rep_collect.h"
#include "rep_image.h"
#include "rep_opts.h"
#include "rep_output.h"
#include "rep_spec.h"
#include "rep_view.h"
#include "util/du_cli.h"
#include "util/du_log.h"

int rep_view_load(const struct rep_opts *o, struct rep_images **images,
		  struct rep_profile **p)
{
	*p = NULL;
	*images = rep_images_new(o);
	if (!*images) {
		du_err("out of memory");
		return -1;
	}
	return rep_collect(o, *images, p) ? -1 : 0;
}

int rep_view_add_list(char ***v, size_t *n, const char *list)
{
	const char *p = list;

	for (;;) {
		size_t len = strcspn(p, ",");
		char **nv;

		if (len) {
			nv = realloc(*v, (*n + 1) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			*v = nv;
			nv[*n] = strndup(p, len);
			if (!nv[*n])
				return -ENOMEM;
			(*n)++;
		}
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int rep_view_add_image_path(struct rep_opts *o, const char *list)
{
	return rep_view_add_list(&o->image_path, &o->nimage_path, list);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rep_progress_begin(struct rep_progress *pr, const char *what, size_t total)
{
	memset(pr, 0, sizeof(*pr));
	pr->what = what;
	pr->total = total;
	pr->tty = isatty(STDERR_FILENO) && !getenv("DP_NO_PROGRESS");
	pr->last_ns = now_ns();
}

void rep_progress_step(struct rep_progress *pr, size_t done)
{
	uint64_t t;

	if (!pr->tty)
		return;
	t = now_ns();
	/* Short work stays silent: the first line comes after half a second. */
	if (t - pr->last_ns < 200000000ull || (!pr->shown && t - pr->last_ns < 500000000ull))
		return;
	pr->last_ns = t;
	pr->shown = true;
	if (pr->total)
		fprintf(stderr, "\r%s: %zu/%zu (%zu%%)\033[K", pr->what, done, pr->total,
			done * 100 / pr->total);
	else
		fprintf(stderr, "\r%s: %zu\033[K", pr->what, done);
	fflush(stderr);
}

void rep_progress_end(struct rep_progress *pr)
{
	if (pr->tty && pr->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	pr->shown = false;
}

const char rep_view_common_usage[] =
	"      --session-dir=DIR   session directory (default " DP_DEFAULT_SESSION_DIR ")\n"
	"  -p, --image-path=DIRS   comma-separated directories searched for binaries\n"
	"      --root=DIR          prefix for binary paths\n"
	"      --debug-dir=DIR     debug files by build-id and debug link (default /usr/lib/debug)\n"
	"      --domain=NAMES      only these domains (\"host\": the host's own work)\n"
	"  -h, --help              show this help and exit\n"
	"  -v, --version           show the version and exit\n"
	"\n"
	"Profile specifications are opreport's (see opreport --help).\n";

int rep_view_common_opt(struct rep_opts *o, int c, const char *arg, char *msg, size_t msglen)
{
	switch (c) {
	case REP_OPT_SESSION_DIR:
		o->session_dir = arg;
		return 0;
	case 'p':
		return rep_view_add_image_path(o, arg) ? -ENOMEM : 0;
	case REP_OPT_ROOT:
		o->root = arg;
		return 0;
	case REP_OPT_DEBUG_DIR:
		o->debug_dir = arg;
		return 0;
	case REP_OPT_DOMAIN:
		return rep_spec_add_domains(o->spec, arg, msg, msglen) ? -EINVAL : 0;
	default:
		return 1;
	}
}

/* The views' common long options, then @extra's (ended by a NULL name),
 * in one malloc'd array with its end; NULL when out of memory. */
static struct option *long_options(const struct option *extra)
{
	static const struct option common[] = {
		{ "session-dir", required_argument, NULL, REP_OPT_SESSION_DIR },
		{ "image-path", required_argument, NULL, 'p' },
		{ "root", required_argument, NULL, REP_OPT_ROOT },
		{ "debug-dir", required_argument, NULL, REP_OPT_DEBUG_DIR },
		{ "domain", required_argument, NULL, REP_OPT_DOMAIN },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'v' },
	};
	size_t ncommon = sizeof(common) / sizeof(common[0]), nextra = 0;
	struct option *lopts;

	while (extra && extra[nextra].name)
		nextra++;
	lopts = calloc(ncommon + nextra + 1, sizeof(*lopts));
	if (!lopts)
		return NULL;
	memcpy(lopts, common, sizeof(common));
	if (nextra)
		memcpy(lopts + ncommon, extra, nextra * sizeof(*extra));
	return lopts;
}

int rep_view_parse(const char *prog, struct rep_opts *o, int argc, char **argv,
		   const struct option *extra, const char *extra_short,
		   int (*cb)(void *ctx, int c, const char *arg, char *err, size_t errlen),
		   void *ctx, void (*usage)(FILE *f))
{
	struct option *lopts;
	char shorts[64], msg[512];
	int c, rc = -EINVAL;

	memset(o, 0, sizeof(*o));
	o->session_dir = DP_DEFAULT_SESSION_DIR;
	o->symbols = true;
	o->sort[0] = REP_SORT_SAMPLE;
	o->nsort = 1;
	o->spec = rep_spec_new();
	lopts = long_options(extra);
	if (!o->spec || !lopts) {
		free(lopts);
		return -ENOMEM;
	}
	snprintf(shorts, sizeof(shorts), "p:hv%s", extra_short ? extra_short : "");
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lopts, NULL)) != -1) {
		int r = rep_view_common_opt(o, c, optarg, msg, sizeof(msg));

		if (r == -EINVAL)
			goto bad;
		if (r < 0) {
			rc = r;
			goto out;
		}
		if (r == 0)
			continue;
		switch (c) {
		case 'h':
			usage(stdout);
			rc = 1;
			goto out;
		case 'v':
			du_cli_version(stdout, prog);
			rc = 1;
			goto out;
		case '?':
		case ':':
			if (argv[optind - 1][1] == '-')
				du_cli_getopt_msg(msg, sizeof(msg), argv[optind - 1], lopts);
			else
				snprintf(msg, sizeof(msg), "unknown option or missing value: \"%s\"",
					 argv[optind - 1]);
			goto bad;
		default:
			msg[0] = '\0';
			if (cb(ctx, c, optarg, msg, sizeof(msg)))
				goto bad;
		}
	}
	for (int i = optind; i < argc; i++)
		if (rep_spec_add(o->spec, argv[i], msg, sizeof(msg)))
			goto bad;
	rc = cb(ctx, 0, NULL, msg, sizeof(msg));	/* 0: the end, check what is missing */
	if (rc)
		goto bad;
	goto out;
bad:
	du_cli_usage_error(stderr, prog, msg);
	rc = -EINVAL;
out:
	free(lopts);
	return rc;
}

char *rep_view_image_name(const struct sfn_image *img, bool full)
{
	const char *base;
	char *s = NULL;

	switch (img->kind) {
	case SFN_ROOT:
		base = strrchr(img->name, '/');
		return strdup(base && base[1] && !full ? base + 1 : img->name);
	case SFN_KERN:
		return strdup(img->name);
	default:
		if (asprintf(&s, "{anon:%s}", img->name) < 0)
			return NULL;
		return s;
	}
}

char *rep_view_image_label(const struct sfn_image *img)
{
	return rep_view_image_name(img, false);
}

char *rep_view_dep_name(const struct rep_group *g, const struct sfn_image *img, bool full)
{
	char *s = rep_view_image_name(img, full), *m = NULL;

	if (!s || !g->unverified)
		return s;
	if (asprintf(&m, "%s " REP_UNVERIFIED, s) < 0)
		m = NULL;
	free(s);
	return m;
}

char *rep_view_dep_label(const struct rep_group *g, const struct sfn_image *img)
{
	return rep_view_dep_name(g, img, false);
}

char *rep_view_app_label(const struct rep_group *g)
{
	return rep_view_app_name(g, false);
}

char *rep_view_app_name(const struct rep_group *g, bool full)
{
	char *base = rep_view_image_name(&g->app, full), *s = NULL;
	char extra[96] = "";
	size_t n = 0;

	if (!base)
		return NULL;
	if (g->tgid != SFN_ALL)
		n += snprintf(extra + n, sizeof(extra) - n, " tgid:%" PRId64, g->tgid);
	if (g->tid != SFN_ALL)
		n += snprintf(extra + n, sizeof(extra) - n, " tid:%" PRId64, g->tid);
	if (g->cpu != SFN_ALL)
		n += snprintf(extra + n, sizeof(extra) - n, " cpu:%" PRId64, g->cpu);
	if (!n)
		return base;
	if (asprintf(&s, "%s (%s)", base, extra + 1) < 0)
		s = NULL;
	free(base);
	return s;
}

bool rep_view_is_guest_kernel(const struct sfn_image *dep)
{
	return dep->kind == SFN_KERN || (dep->kind == SFN_ANON && !strcmp(dep->name, "guest-kernel"));
}
