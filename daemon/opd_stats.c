#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd_stats.h"
#include "util/du_kv.h"
#include "util/du_sdir.h"

int opd_stats_write(const struct opd_stats *st, const char *session_dir)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int ret = 0;

	if (snprintf(path, sizeof(path), "%s/stats", session_dir) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.stats.tmp", session_dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = du_nf_fopen(tmp, "w", DU_SDIR_FILE_MODE);
	if (!f)
		return -errno;
#define OPD_STATS_PRINT(k) fprintf(f, #k " %" PRIu64 "\n", st->k);
	OPD_STATS_KEYS(OPD_STATS_PRINT)
#undef OPD_STATS_PRINT
	fprintf(f, "running %d\n", st->running ? 1 : 0);
	fprintf(f, "collector %s\n", st->collector ? st->collector : "none");
	fprintf(f, "start_time %" PRId64 "\n", st->start_time);
	fprintf(f, "events %s\n", st->events);
	if (fflush(f) || fsync(fileno(f)))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (ret)
		goto out_unlink;
	ret = du_nf_rename(tmp, path);
	if (ret)
		goto out_unlink;
	return 0;

out_unlink:
	du_nf_unlink(tmp);
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
