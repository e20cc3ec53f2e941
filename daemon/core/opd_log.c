#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "opd_log.h"
#include "util/du_log.h"
#include "util/du_sdir.h"

static struct {
	FILE *f;
	char path[PATH_MAX];
	bool also_stderr;
	bool verbose;
} opd_log;

size_t opd_log_escape(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!size)
		return 0;
	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		if (*p >= 0x20 && *p != 0x7f && *p != '\\') {
			if (o + 1 >= size)
				break;
			dst[o++] = (char)*p;
			continue;
		}
		if (o + 4 >= size)
			break;
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = hex[*p >> 4];
		dst[o++] = hex[*p & 15];
	}
	dst[o] = '\0';
	return o;
}

static void log_hook(enum du_log_level level, const char *fmt, va_list ap)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	/* Names in a message may come from a guest or from another user's
	 * QEMU command line: a newline in one must not start a forged line,
	 * nor an escape sequence reach a terminal.  Formatted first, then
	 * escaped as a whole. */
	char msg[2048], esc[4 * sizeof(msg)];
	char when[32];
	struct tm tm;
	time_t now;

	if (level == DU_LOG_DEBUG && !opd_log.verbose)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	opd_log_escape(esc, sizeof(esc), msg);
	now = time(NULL);
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (opd_log.also_stderr && (level <= DU_LOG_WARN || opd_log.verbose))
		fprintf(stderr, "oprofiled: %s: %s\n", names[level], esc);
	if (opd_log.f) {
		fprintf(opd_log.f, "%s %s: %s\n", when, names[level], esc);
		fflush(opd_log.f);
	}
}

int opd_log_open(const char *path, bool also_stderr, bool verbose)
{
	if (snprintf(opd_log.path, sizeof(opd_log.path), "%s", path) >= (int)sizeof(opd_log.path))
		return -ENAMETOOLONG;
	opd_log.also_stderr = also_stderr;
	opd_log.verbose = verbose;
	/* the monitor's alone: not even the worker's user reads it */
	opd_log.f = du_nf_fopen(path, "a", DU_SDIR_SECRET_MODE);
	if (!opd_log.f)
		return -errno;
	if (fchmod(fileno(opd_log.f), DU_SDIR_SECRET_MODE)) {
		int ret = -errno;

		fclose(opd_log.f);
		opd_log.f = NULL;
		return ret;
	}
	du_log_set(log_hook);
	return 0;
}

int opd_log_reopen(void)
{
	FILE *f = du_nf_fopen(opd_log.path, "a", DU_SDIR_SECRET_MODE);

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
