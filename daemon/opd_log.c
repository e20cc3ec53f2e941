#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "opd_log.h"
#include "util/du_log.h"

static struct {
	FILE *f;
	char path[PATH_MAX];
	bool also_stderr;
	bool verbose;
} opd_log;

static void log_hook(enum du_log_level level, const char *fmt, va_list ap)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char when[32];
	struct tm tm;
	time_t now;
	va_list ap2;

	if (level == DU_LOG_DEBUG && !opd_log.verbose)
		return;
	now = time(NULL);
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (opd_log.also_stderr && (level <= DU_LOG_WARN || opd_log.verbose)) {
		va_copy(ap2, ap);
		fprintf(stderr, "oprofiled: %s: ", names[level]);
		vfprintf(stderr, fmt, ap2);
		fputc('\n', stderr);
		va_end(ap2);
	}
	if (opd_log.f) {
		fprintf(opd_log.f, "%s %s: ", when, names[level]);
		vfprintf(opd_log.f, fmt, ap);
		fputc('\n', opd_log.f);
		fflush(opd_log.f);
	}
}

int opd_log_open(const char *path, bool also_stderr, bool verbose)
{
	if (snprintf(opd_log.path, sizeof(opd_log.path), "%s", path) >= (int)sizeof(opd_log.path))
		return -ENAMETOOLONG;
	opd_log.also_stderr = also_stderr;
	opd_log.verbose = verbose;
	opd_log.f = fopen(path, "ae");
	if (!opd_log.f)
		return -errno;
	du_log_set(log_hook);
	return 0;
}

int opd_log_reopen(void)
{
	FILE *f = fopen(opd_log.path, "ae");

	if (!f)
		return -errno;
	if (opd_log.f)
		fclose(opd_log.f);
	opd_log.f = f;
	return 0;
}

void opd_log_quiet_stderr(void)
{
	opd_log.also_stderr = false;
}

void opd_log_close(void)
{
	du_log_set(NULL);
	if (opd_log.f)
		fclose(opd_log.f);
	opd_log.f = NULL;
}
