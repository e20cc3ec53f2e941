#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_filter.h"
#include "rep_flame.h"
#include "rep_image.h"
#include "rep_info.h"
#include "rep_main.h"
#include "rep_opts.h"
#include "rep_output.h"
#include "rep_view.h"
#include "util/du_log.h"

/* Write the report to -o FILE or stdout: 0, or 1 after a message. */
static int write_report(const struct rep_opts *o, const struct rep_profile *p,
			const struct rep_info *in)
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
	rc = rep_output(f, o, p, in);
	if (f != stdout && fclose(f) && !rc)
		rc = -errno;
	if (rc) {
		du_err("cannot write the report%s%s: %s", o->output ? " to " : "",
		       o->output ? o->output : "", strerror(-rc));
		return 1;
	}
	return 0;
}

/*
 * The profile as the options select it: collected (with -d every sample's
 * address kept), then -x, -e, -i applied, then -d's and -g's extras and
 * the header's facts in @in.  0, or -1 with the reason said.
 */
static int load(const struct rep_opts *o, struct rep_images **images, struct rep_profile **p,
		struct rep_info *in)
{
	struct rep_key_sink sink;
	struct rep_keys *keys = NULL;
	long *gmap = NULL;
	int rc = -ENOMEM;

	*p = NULL;
	*images = rep_images_new(o);
	if (!*images || (o->details && !(keys = rep_keys_new(&sink))))
		goto out;
	if (rep_collect_keys(o, *images, keys ? &sink : NULL, p)) {
		rep_keys_free(keys);
		return -1;
	}
	if (rep_filter(o, *p, keys ? &gmap : NULL) || rep_info_header(in, o->session_dir, *p))
		goto out;
	if (keys && rep_info_details(in, *p, keys, gmap))
		goto out;
	if (o->debug_info && o->symbols && rep_info_lines(in, o, *p, *images))
		goto out;
	rc = 0;
out:
	if (rc)
		du_err("out of memory");
	free(gmap);
	rep_keys_free(keys);
	return rc ? -1 : 0;
}

int rep_main(int argc, char **argv)
{
	struct rep_profile *p = NULL;
	struct rep_images *images = NULL;
	struct rep_info in = { 0 };
	struct rep_opts o;
	int rc, status = 1;

	du_log_set_prog("opreport");
	rc = rep_opts_parse(&o, argc, argv, stdout, stderr);
	if (rc) {
		status = rc == 1 ? 0 : 1;
		goto out_opts;
	}
	if (load(&o, &images, &p, &in))
		goto out_profile;
	if (o.flamegraph) {
		/* OProfile's spelling of opflame -o FILE: the SVG, no text */
		status = rep_flame_write_file(&o, images, p, 0, o.flamegraph, 0) ? 1 : 0;
		goto out_profile;
	}
	status = write_report(&o, p, &in);
out_profile:
	rep_info_release(&in, p ? p->nrows : 0);
	rep_profile_free(p);
	rep_images_free(images);
out_opts:
	rep_opts_release(&o);
	return status;
}
