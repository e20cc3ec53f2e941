#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rep_opts.h"
#include "util/du_cli.h"
#include "util/du_log.h"
#include "rep_spec.h"
#include "rep_view.h"

void rep_usage(FILE *f)
{
	fputs("Usage: opreport [OPTION]... [PROFILE SPECIFICATION]...\n"
	      "Report the samples of a domprof session, per image or per symbol.\n"
	      "\n"
	      "Options:\n"
	      "  --session-dir=DIR       session directory (default " DP_DEFAULT_SESSION_DIR ")\n"
	      "  -l, --symbols           list samples per symbol\n"
	      "  -c, --callgraph         call graph: each symbol with its callers above and\n"
	      "                          its callees below (sessions with --callgraph)\n"
	      "      --flamegraph=FILE   write the flame graph (as opflame) to FILE.svg\n"
	      "  -m, --merge=LIST        merge profiles: lib, cpu, tid, tgid, unitmask, all\n"
	      "  -t, --threshold=PERCENT hide rows below PERCENT of the total\n"
	      "  -s, --sort=LIST         sort by sample, image, app-name, symbol, vma\n"
	      "                          (in that priority; default sample)\n"
	      "  -r, --reverse-sort      reverse the sort order\n"
	      "  -a, --accumulated       add cumulated samples and percentages (with -l)\n"
	      "  -w, --show-address      show each symbol's address (with -l)\n"
	      "  -g, --debug-info        show each symbol's source file and line (with -l)\n"
	      "  -d, --details           samples per instruction under each symbol (implies -l)\n"
	      "  -e, --exclude-symbols=LIST  leave out these symbols (implies -l)\n"
	      "  -i, --include-symbols=LIST  only these symbols (implies -l)\n"
	      "  -x, --exclude-dependent only the applications' own images, not the\n"
	      "                          libraries and kernel they used (--separate=lib)\n"
	      "  -%, --global-percent    percentages of the whole profile, also under\n"
	      "                          an application\n"
	      "  -D, --demangle=MODE     C++ names: none, normal (default), smart\n"
	      "  -f, --long-filenames    whole paths instead of basenames\n"
	      "  -n, --no-header         no header and no column titles\n"
	      "  -p, --image-path=DIRS   comma-separated directories searched (recursively,\n"
	      "                          by basename) for binaries before anywhere else\n"
	      "      --root=DIR          prefix for binary paths (e.g. a guest's file system)\n"
	      "      --debug-dir=DIR     debug files by build-id and debug link (default /usr/lib/debug)\n"
	      "      --domain=NAMES      only these domains (\"host\": the host's own work);\n"
	      "                          the same as domain:NAMES\n"
	      "  -o, --output-file=FILE  write the report to FILE instead of the standard output\n"
	      "      --wide              make columns as wide as their longest entry\n"
	      "                          (nothing shortened, long names stay aligned)\n"
	      "      --json              write the report as one JSON document\n"
	      "                          (schema in opreport(1))\n"
	      "  -X, --xml               write OProfile's XML report (schema opreport.xsd)\n"
	      "  -v, --version           show the version and exit\n"
	      "  -h, --help              show this help and exit\n"
	      "\n"
	      "Profile specification (each TAG:VALUE[,VALUE...]; a bare NAME is image:NAME):\n"
	      "  image:NAMES      application or library image path, or basename (glob)\n"
	      "  lib-image:NAMES  dependent (library, kernel) image only\n"
	      "  event:NAMES      event names\n"
	      "  count:N          event counts (sampling periods)\n"
	      "  unit-mask:N      unit masks\n"
	      "  tgid:N tid:N cpu:N  process, thread, cpu (needs --separate=thread/cpu)\n"
	      "  domain:NAMES     domain names; \"host\" for the host's own work\n"
	      "  session:NAME     a session set aside by opcontrol --save=NAME (one name;\n"
	      "                   default: current)\n"
	      "\n"
	      "Percentages are of all samples reported (per event); with --separate=lib\n"
	      "the images an application used are listed under it, with percentages of\n"
	      "that application's samples.\n", f);
}

/*
 * Walk the comma list @s, each item one of @names (@n of them): @take(ctx,
 * index) for each, in order.  -EINVAL on an unknown or empty item, or what
 * @take returns when not 0.
 */
static int parse_words(const char *s, const char *const *names, size_t n,
		       int (*take)(void *ctx, size_t i), void *ctx)
{
	for (const char *p = s;; p++) {
		size_t len = strcspn(p, ","), i;
		int ret;

		for (i = 0; i < n; i++)
			if (strlen(names[i]) == len && !strncmp(names[i], p, len))
				break;
		if (i == n)
			return -EINVAL;
		ret = take(ctx, i);
		if (ret)
			return ret;
		p += len;
		if (!*p)
			return 0;
	}
}

static const char *const merge_names[] = { "lib", "cpu", "tid", "tgid", "unitmask", "all" };
static const unsigned merge_bits[] = { REP_MERGE_LIB, REP_MERGE_CPU, REP_MERGE_TID,
				       REP_MERGE_TGID, REP_MERGE_UNITMASK, REP_MERGE_ALL };
_Static_assert(sizeof(merge_names) / sizeof(merge_names[0]) ==
	       sizeof(merge_bits) / sizeof(merge_bits[0]), "one bit per --merge word");

static int take_merge(void *ctx, size_t i)
{
	*(unsigned *)ctx |= merge_bits[i];
	return 0;
}

int rep_parse_merge(const char *s, unsigned *out)
{
	return parse_words(s, merge_names, sizeof(merge_names) / sizeof(merge_names[0]),
			   take_merge, out);
}

static int take_sort(void *ctx, size_t i)
{
	struct rep_opts *o = ctx;

	if (o->nsort == REP_MAX_SORT)
		return -EINVAL;
	o->sort[o->nsort++] = (enum rep_sort_key)i;
	return 0;
}

int rep_parse_sort(const char *s, struct rep_opts *o)
{
	static const char *const names[] = {
		[REP_SORT_SAMPLE] = "sample", [REP_SORT_IMAGE] = "image",
		[REP_SORT_APP] = "app-name", [REP_SORT_SYMBOL] = "symbol", [REP_SORT_VMA] = "vma",
	};

	o->nsort = 0;
	return parse_words(s, names, sizeof(names) / sizeof(names[0]), take_sort, o);
}

char *rep_samples_path(const struct rep_opts *o, const char *sub)
{
	const char *name = rep_spec_session(o->spec);
	char *path = NULL;

	if (asprintf(&path, "%s/samples/%s%s%s", o->session_dir, name ? name : "current",
		     sub ? "/" : "", sub ? sub : "") < 0)
		return NULL;
	return path;
}

/* What stat() or access() said about the sample directory @dir, as a
 * message that names the session and tells a missing one from a locked
 * one. */
static void samples_error(const struct rep_opts *o, const char *dir, int e)
{
	const char *name = rep_spec_session(o->spec);

	if (e == EACCES || e == EPERM)
		du_err("permission denied reading %s%s%s (%s): the session is root's; run as root "
		       "or join the group domprof", name ? "session " : "the samples of ",
		       name ? name : o->session_dir, name ? "" : "", dir);
	else if (e == ENOENT && name && strcmp(name, "current"))
		du_err("no saved session '%s' in %s (%s does not exist; opcontrol --save=%s "
		       "makes one)", name, o->session_dir, dir, name);
	else if (e == ENOENT || e == ENOTDIR)
		du_err("no samples in session %s (%s does not exist; was the profiler started and "
		       "dumped?)", o->session_dir, dir);
	else
		du_err("%s: %s", dir, strerror(e));
}

int rep_samples_check(const struct rep_opts *o)
{
	char *dir = rep_samples_path(o, NULL);
	struct stat st;
	int e = 0;

	if (!dir) {
		du_err("out of memory");
		return -ENOMEM;
	}
	if (stat(o->session_dir, &st) && errno != EACCES)
		e = errno;
	else if (!stat(o->session_dir, &st) && !S_ISDIR(st.st_mode))
		e = ENOTDIR;
	if (e) {
		du_err("no session directory %s (give --session-dir=DIR)", o->session_dir);
		free(dir);
		return -e;
	}
	if (stat(dir, &st))
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (access(dir, R_OK | X_OK))
		e = errno;
	if (e)
		samples_error(o, dir, e);
	free(dir);
	return -e;
}

void rep_opts_release(struct rep_opts *o)
{
	for (size_t i = 0; i < o->nimage_path; i++)
		free(o->image_path[i]);
	free(o->image_path);
	rep_spec_free(o->spec);
	memset(o, 0, sizeof(*o));
}

enum { OPT_JSON = REP_OPT_FREE, OPT_FLAMEGRAPH, OPT_WIDE };

/* -D's words, in enum rep_demangle's order. */
static const char *const demangle_names[] = {
	[REP_DEMANGLE_NORMAL] = "normal", [REP_DEMANGLE_NONE] = "none",
	[REP_DEMANGLE_SMART] = "smart",
};

/* The options OProfile's opreport has that are flags or lists here:
 * 0 when @c was one of them, 1 when not, -EINVAL with @msg. */
static int o9_opt(struct rep_opts *o, int c, const char *arg, char *msg, size_t msglen)
{
	switch (c) {
	case 'X':
		o->xml = true;
		return 0;
	case 'g':
		o->debug_info = true;
		return 0;
	case 'd':
		o->details = o->symbols = true;
		return 0;
	case 'f':
		o->long_names = true;
		return 0;
	case 'n':
		o->no_header = true;
		return 0;
	case 'a':
		o->accumulated = true;
		return 0;
	case 'x':
		o->exclude_dependent = true;
		return 0;
	case '%':
		o->global_percent = true;
		return 0;
	case 'w':
		o->show_address = true;
		return 0;
	case 'e':
	case 'i':
		if (!*arg) {
			snprintf(msg, msglen, "--%s-symbols needs a list of symbols",
				 c == 'e' ? "exclude" : "include");
			return -EINVAL;
		}
		*(c == 'e' ? &o->exclude_syms : &o->include_syms) = arg;
		o->symbols = true;
		return 0;
	case 'D':
		for (size_t i = 0; i < sizeof(demangle_names) / sizeof(demangle_names[0]); i++)
			if (!strcmp(arg, demangle_names[i])) {
				o->demangle = (enum rep_demangle)i;
				return 0;
			}
		snprintf(msg, msglen, "bad --demangle \"%s\" (none, normal or smart)", arg);
		return -EINVAL;
	}
	return 1;
}

/* opreport's own options besides OProfile's flags: 0 when @c was one of
 * them, 1 when not, -EINVAL with @msg. */
static int own_opt(struct rep_opts *o, int c, const char *arg, char *msg, size_t msglen)
{
	char *end;

	switch (c) {
	case 'l':
		o->symbols = true;
		return 0;
	case 'c':
		o->callgraph = true;
		o->symbols = true;
		return 0;
	case OPT_FLAMEGRAPH:
		if (!*arg) {
			snprintf(msg, msglen, "--flamegraph needs a file name");
			return -EINVAL;
		}
		o->flamegraph = arg;
		o->symbols = true;
		return 0;
	case 'm':
		if (rep_parse_merge(arg, &o->merge)) {
			snprintf(msg, msglen, "bad --merge list \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case 't':
		errno = 0;
		o->threshold = strtod(arg, &end);
		if (errno || end == arg || *end || o->threshold < 0 || o->threshold > 100) {
			snprintf(msg, msglen, "bad --threshold \"%s\" (a percentage)", arg);
			return -EINVAL;
		}
		return 0;
	case 's':
		if (rep_parse_sort(arg, o)) {
			snprintf(msg, msglen, "bad --sort list \"%s\"", arg);
			return -EINVAL;
		}
		return 0;
	case 'r':
		o->reverse = true;
		return 0;
	case 'o':
		if (!*arg) {
			snprintf(msg, msglen, "--output-file needs a file name");
			return -EINVAL;
		}
		o->output = arg;
		return 0;
	case OPT_WIDE:
		o->wide = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	}
	return 1;
}

static const struct option lopts[] = {
	{ "session-dir", required_argument, NULL, REP_OPT_SESSION_DIR },
	{ "symbols", no_argument, NULL, 'l' },
	{ "callgraph", no_argument, NULL, 'c' },
	{ "flamegraph", required_argument, NULL, OPT_FLAMEGRAPH },
	{ "merge", required_argument, NULL, 'm' },
	{ "threshold", required_argument, NULL, 't' },
	{ "sort", required_argument, NULL, 's' },
	{ "reverse-sort", no_argument, NULL, 'r' },
	{ "image-path", required_argument, NULL, 'p' },
	{ "root", required_argument, NULL, REP_OPT_ROOT },
	{ "debug-dir", required_argument, NULL, REP_OPT_DEBUG_DIR },
	{ "domain", required_argument, NULL, REP_OPT_DOMAIN },
	{ "output-file", required_argument, NULL, 'o' },
	{ "wide", no_argument, NULL, OPT_WIDE },
	{ "show-address", no_argument, NULL, 'w' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "xml", no_argument, NULL, 'X' },
	{ "debug-info", no_argument, NULL, 'g' },
	{ "details", no_argument, NULL, 'd' },
	{ "long-filenames", no_argument, NULL, 'f' },
	{ "no-header", no_argument, NULL, 'n' },
	{ "accumulated", no_argument, NULL, 'a' },
	{ "exclude-dependent", no_argument, NULL, 'x' },
	{ "exclude-symbols", required_argument, NULL, 'e' },
	{ "include-symbols", required_argument, NULL, 'i' },
	{ "global-percent", no_argument, NULL, '%' },
	{ "demangle", required_argument, NULL, 'D' },
	{ "version", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int rep_opts_parse(struct rep_opts *o, int argc, char **argv, FILE *out, FILE *err)
{
	char msg[512];
	int c;

	memset(o, 0, sizeof(*o));
	o->session_dir = DP_DEFAULT_SESSION_DIR;
	o->sort[0] = REP_SORT_SAMPLE;
	o->nsort = 1;
	o->spec = rep_spec_new();
	if (!o->spec) {
		fprintf(err, "opreport: out of memory\n");
		return -ENOMEM;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "lcm:t:s:rp:o:wvhXgdfnaxe:i:%D:", lopts, NULL)) != -1) {
		int r = rep_view_common_opt(o, c, optarg, msg, sizeof(msg));

		if (r == 1)
			r = o9_opt(o, c, optarg, msg, sizeof(msg));
		if (r == 1)
			r = own_opt(o, c, optarg, msg, sizeof(msg));
		if (r == -ENOMEM)
			snprintf(msg, sizeof(msg), "out of memory");
		if (r < 0)
			goto bad;
		if (r == 0)
			continue;
		switch (c) {
		case 'v':
			du_cli_version(out, "opreport");
			return 1;
		case 'h':
			rep_usage(out);
			return 1;
		default:
			if (argv[optind - 1][0] == '-' && argv[optind - 1][1] == '-')
				du_cli_getopt_msg(msg, sizeof(msg), argv[optind - 1], lopts);
			else if (optopt && optopt < 256 && strchr("mtspoeiD", optopt))
				snprintf(msg, sizeof(msg), "option -%c needs an argument", optopt);
			else
				snprintf(msg, sizeof(msg), "unknown option \"%s\"", argv[optind - 1]);
			goto bad;
		}
	}
	for (int i = optind; i < argc; i++)
		if (rep_spec_add(o->spec, argv[i], msg, sizeof(msg)))
			goto bad;
	if (o->xml && (o->json || o->callgraph || o->flamegraph)) {
		snprintf(msg, sizeof(msg), "-X writes its own report: not with --json, -c or --flamegraph");
		goto bad;
	}
	return 0;
bad:
	du_cli_usage_error(err, "opreport", msg);
	return -EINVAL;
}
