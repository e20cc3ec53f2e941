#include "config.h"

#include <CUnit/CUnit.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "dom_testproc.h"
#include "util/du_fs.h"

void tp_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");

	CU_ASSERT_FATAL(f != NULL);
	CU_ASSERT_FATAL(fwrite(data, 1, len, f) == len);
	fclose(f);
}

void tp_pathf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	CU_ASSERT_FATAL(n > 0 && (size_t)n < size);
}

void tp_thread(const char *root, int pid, int tid, const char *comm)
{
	char p[256], c[64];

	tp_pathf(p, sizeof(p), "%s/%d/task/%d", root, pid, tid);
	mkdir(p, 0755);
	tp_pathf(p, sizeof(p), "%s/%d/task/%d/comm", root, pid, tid);
	tp_pathf(c, sizeof(c), "%s\n", comm);
	tp_write_file(p, c, strlen(c));
}

void tp_kill(const char *root, int pid)
{
	char p[256];

	tp_pathf(p, sizeof(p), "%s/%d", root, pid);
	CU_ASSERT_FATAL(du_rm_tree(p) == 0);
}
