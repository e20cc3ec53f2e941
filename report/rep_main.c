#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_flame.h"
#include "rep_image.h"
#include "rep_main.h"
#include "rep_opts.h"
#include "rep_output.h"
#include "rep_view.h"
#include "util/du_kv.h"
#include "util/du_log.h"

/* "collector NAME" from SESSION/session.conf, if the daemon wrote one. */
static char *read_collector(const char *session_dir)
{
	char *path = NULL, *res = NULL;
	struct du_kv *conf;
	const char *v;

	if (asprintf(&path, "%s/session.conf", session_dir) < 0)
		return NULL;
	conf = du_kv_load(path);
	free(path);
	v = du_kv_get(conf, "collector");
	if (v && *v)
		res = strdup(v);
	du_kv_free(conf);
	return res;
}

/* Write the report to -o FILE or stdout: 0, or 1 after a message. */
static int write_report(const struct rep_opts *o, const struct rep_profile *p,
			const char *collector)
{
	FILE *f = stdout;
	int rc;

	if (o->output) {
		/* opened only now: a failed collection leaves an old report alone */
		f = fopen(o->output, "we");
		if (!f) {
			du_err("cannot create %s: %s", o->output, strerror(errno));
			return 1;
		}
	}
	rc = rep_output(f, o, p, collector);
	if (f != stdout && fclose(f) && !rc)
		rc = -errno;
	if (rc) {
		du_err("cannot write the report%s%s: %s", o->output ? " to " : "",
		       o->output ? o->output : "", strerror(-rc));
		return 1;
	}
	return 0;
}

int rep_main(int argc, char **argv)
{
	struct rep_profile *p = NULL;
	struct rep_images *images = NULL;
	struct rep_opts o;
	char *collector = NULL;
	int rc, status = 1;

	du_log_set_prog("opreport");
	rc = rep_opts_parse(&o, argc, argv, stdout, stderr);
	if (rc) {
		status = rc == 1 ? 0 : 1;
		goto out_opts;
	}
	if (rep_view_load(&o, &images, &p))
		goto out_profile;
	if (o.flamegraph) {
		/* OProfile's spelling of opflame -o FILE: the SVG, no text */
		status = rep_flame_write_file(&o, images, p, 0, o.flamegraph, 0) ? 1 : 0;
		goto out_profile;
	}
	collector = read_collector(o.session_dir);
	status = write_report(&o, p, collector);
out_profile:
	free(collector);
	rep_profile_free(p);
	rep_images_free(images);
out_opts:
	rep_opts_release(&o);
	return status;
}
