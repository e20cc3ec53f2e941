#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd_pub.h"
#include "opd_stats.h"
#include "util/du_kv.h"
#include "util/du_sdir.h"

int opd_stats_write(const struct opd_stats *st, const char *session_dir, int pub_fd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int ret;

	if (!f)
		return -errno;
#define OPD_STATS_PRINT(k) fprintf(f, #k " %" PRIu64 "\n", st->k);
	OPD_STATS_KEYS(OPD_STATS_PRINT)
#undef OPD_STATS_PRINT
	fprintf(f, "running %d\n", st->running ? 1 : 0);
	fprintf(f, "collector %s\n", st->collector ? st->collector : "none");
	fprintf(f, "start_time %" PRId64 "\n", st->start_time);
	fprintf(f, "events %s\n", st->events);
	ret = fclose(f) ? -errno : opd_pub_write(pub_fd, session_dir, OPD_PUB_STATS, buf, len);
	free(buf);
	return ret;
}

int opd_stats_read_key(const char *session_dir, const char *key, uint64_t *val)
{
	char path[PATH_MAX];
	struct du_kv *kv;
	int ret = -ENOENT;

	if (snprintf(path, sizeof(path), "%s/stats", session_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	kv = du_kv_load(path);
	if (!kv)
		return -errno;
	if (du_kv_get_u64(kv, key, val))
		ret = 0;
	else if (du_kv_get(kv, key))
		ret = -EINVAL;	/* there, but not a number */
	du_kv_free(kv);
	return ret;
}
