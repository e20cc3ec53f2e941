#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events/ev.h"
#include "rep_collect.h"
#include "rep_info.h"
#include "util/du_kv.h"

/* "cpu MHz : 2400.000" of /proc/cpuinfo's first CPU, 0 when absent. */
static double cpu_mhz(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256];
	double mhz = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "cpu MHz", 7) && sscanf(line, "cpu MHz : %lf", &mhz) == 1)
			break;
	fclose(f);
	return mhz;
}

/* The descriptions of @cls's event and unit mask in @t, when it has them. */
static int describe(const struct ev_table *t, const struct rep_class *cls, char **ev, char **um)
{
	const struct ev_info *e = NULL;
	const char *d;
	uint32_t v;

	for (size_t i = 0; (e = ev_table_get(t, i)); i++)
		if (!strcmp(e->name, cls->event))
			break;
	if (!e)
		return 0;
	*ev = strdup(e->desc);
	for (size_t i = 0; (d = ev_unit_mask_get(t, e, i, &v)); i++)
		if (v == cls->unit_mask) {
			*um = strdup(d);
			return *um && *ev ? 0 : -ENOMEM;
		}
	return *ev ? 0 : -ENOMEM;
}

int rep_info_header(struct rep_info *in, const char *session_dir, const struct rep_profile *p)
{
	struct ev_table *t = NULL;
	struct du_kv *conf = NULL;
	char *path = NULL, err[256];
	const char *v;
	int rc = -ENOMEM;

	in->nclasses = p->nclasses;
	in->mhz = cpu_mhz();
	in->event_desc = calloc(p->nclasses + 1, sizeof(*in->event_desc));
	in->um_desc = calloc(p->nclasses + 1, sizeof(*in->um_desc));
	if (!in->event_desc || !in->um_desc || asprintf(&path, "%s/session.conf", session_dir) < 0)
		return -ENOMEM;
	conf = du_kv_load(path);
	free(path);
	v = du_kv_get(conf, "collector");
	if (v && *v && !(in->collector = strdup(v)))
		goto out;
	/* sessions from before the daemon recorded it: this machine's type */
	v = du_kv_get(conf, "cpu_type");
	t = ev_table_load(ev_default_dir(), v && *v ? v : NULL, err, sizeof(err));
	if ((v && *v) || t) {
		in->cpu_type = strdup(v && *v ? v : ev_table_cpu_type(t));
		if (!in->cpu_type)
			goto out;
	}
	for (size_t c = 0; t && c < p->nclasses; c++)
		if (describe(t, &p->classes[c], &in->event_desc[c], &in->um_desc[c]))
			goto out;
	rc = 0;
out:
	ev_table_free(t);
	du_kv_free(conf);
	return rc;
}

void rep_info_release(struct rep_info *in, size_t nrows)
{
	for (size_t c = 0; in->event_desc && c < in->nclasses; c++)
		free(in->event_desc[c]);
	for (size_t c = 0; in->um_desc && c < in->nclasses; c++)
		free(in->um_desc[c]);
	for (size_t r = 0; in->src_file && r < nrows; r++)
		free(in->src_file[r]);
	free(in->event_desc);
	free(in->um_desc);
	free(in->src_file);
	free(in->src_line);
	free(in->collector);
	free(in->cpu_type);
	free(in->det_first);
	free(in->det_vma);
	free(in->det_counts);
	memset(in, 0, sizeof(*in));
}
