/* Logging for libraries: a library never prints, it calls the log hook.
 * Programs install a hook (default: stderr with the program name). */
#ifndef DU_LOG_H
#define DU_LOG_H

#include <stdarg.h>

enum du_log_level { DU_LOG_ERR, DU_LOG_WARN, DU_LOG_INFO, DU_LOG_DEBUG };

typedef void (*du_log_fn)(enum du_log_level level, const char *fmt, va_list ap);

/* Install @fn (NULL restores the default stderr printer). */
void du_log_set(du_log_fn fn);
/* Name printed by the default printer, e.g. "oprofiled". Borrowed. */
void du_log_set_prog(const char *prog);
/* Messages above @level are dropped by the default printer. */
void du_log_set_level(enum du_log_level level);

void du_log(enum du_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define du_err(...)	du_log(DU_LOG_ERR, __VA_ARGS__)
#define du_warn(...)	du_log(DU_LOG_WARN, __VA_ARGS__)
#define du_info(...)	du_log(DU_LOG_INFO, __VA_ARGS__)
#define du_debug(...)	du_log(DU_LOG_DEBUG, __VA_ARGS__)

#endif
