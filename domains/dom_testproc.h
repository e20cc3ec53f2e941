/*
 * Test support (not in libdomains): build a fake /proc tree for the tests
 * of domains/ and of the daemon's domain handling.  Every helper stops the
 * current CUnit test (CU_ASSERT_FATAL) when the file system says no.
 */
#ifndef DOM_TESTPROC_H
#define DOM_TESTPROC_H

#include <stddef.h>

/* Write @len bytes of @data to @path (created or truncated). */
void tp_write_file(const char *path, const void *data, size_t len);
/* snprintf into @buf that must fit. */
void tp_pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Give thread @tid of process @pid under @root the name @comm (creating it). */
void tp_thread(const char *root, int pid, int tid, const char *comm);
/* Remove process @pid's directory under @root. */
void tp_kill(const char *root, int pid);

#endif
