#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opd_stats.h"

int opd_stats_write(const struct opd_stats *st, const char *session_dir)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	FILE *f;
	int ret = 0;

	if (snprintf(path, sizeof(path), "%s/stats", session_dir) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.stats.tmp", session_dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
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
	if (rename(tmp, path)) {
		ret = -errno;
		goto out_unlink;
	}
	return 0;

out_unlink:
	unlink(tmp);
	return ret;
}

int opd_stats_read_key(const char *session_dir, const char *key, uint64_t *val)
{
	char path[PATH_MAX], line[640];
	size_t klen = strlen(key);
	int ret = -ENOENT;
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/stats", session_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		*val = strtoull(line + klen + 1, NULL, 10);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}
