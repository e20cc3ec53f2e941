#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_image.h"
#include "rep_main.h"
#include "rep_opts.h"
#include "rep_output.h"
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
	images = rep_images_new(&o);
	if (!images) {
		du_err("out of memory");
		goto out_opts;
	}
	if (rep_collect(&o, images, &p))
		goto out_images;
	collector = read_collector(o.session_dir);
	rc = rep_output(stdout, &o, p, collector);
	if (rc) {
		du_err("cannot write the report: %s", strerror(-rc));
		goto out_profile;
	}
	status = 0;
out_profile:
	free(collector);
	rep_profile_free(p);
out_images:
	rep_images_free(images);
out_opts:
	rep_opts_release(&o);
	return status;
}
