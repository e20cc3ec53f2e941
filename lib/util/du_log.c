#include "config.h"

#include <stdio.h>

#include "util/du_log.h"

static du_log_fn log_hook;
static const char *log_prog = "domprof";
static enum du_log_level log_max = DU_LOG_INFO;

void du_log_set(du_log_fn fn)
{
	log_hook = fn;
}

void du_log_set_prog(const char *prog)
{
	log_prog = prog ? prog : "domprof";
}

void du_log_set_level(enum du_log_level level)
{
	log_max = level;
}

void du_log(enum du_log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	va_list ap;

	va_start(ap, fmt);
	if (log_hook) {
		log_hook(level, fmt, ap);
	} else if (level <= log_max) {
		fprintf(stderr, "%s: %s: ", log_prog, names[level]);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
	va_end(ap);
}
