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
#include "util/du_log.h"

/* "collector NAME" from SESSION/session.conf, if the daemon wrote one. */
static char *read_collector(const char *session_dir)
{
	char *path = NULL, *res = NULL;
	char line[256];
	FILE *f;

	if (asprintf(&path, "%s/session.conf", session_dir) < 0)
		return NULL;
	f = fopen(path, "r");
	free(path);
	if (!f)
		return NULL;
	while (!res && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "collector ", 10))
			continue;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[10])
			res = strdup(line + 10);
	}
	fclose(f);
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
