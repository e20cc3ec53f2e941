#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "opd_procfs.h"
#include "util/du_ksym.h"

struct maps_line {
	struct dp_raw_mmap m;
	char *path;
	size_t path_len;
};

/* Parse one maps line; false for lines that are not executable files. */
static bool parse_maps_line(char *line, pid_t pid, struct maps_line *out)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;
	char *path;
	size_t len;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj,
		   &min, &ino, &pos) < 7 || pos == 0)
		return false;
	if (strlen(perms) < 3 || perms[2] != 'x')
		return false;
	path = line + pos;
	len = strlen(path);
	while (len && (path[len - 1] == '\n' || path[len - 1] == ' '))
		path[--len] = '\0';
	/* Anonymous executable memory has no name to report; [vdso] does
	 * (perf reports it too), the daemon files it as {anon:vdso}. */
	if (!len || (path[0] != '/' && path[0] != '[') || end <= start)
		return false;
	if (len > 10 && !strcmp(path + len - 10, " (deleted)"))
		len -= 10;
	if (len > DP_RAW_MAX_PATH)
		return false;
	memset(&out->m, 0, sizeof(out->m));
	out->m.pid = (uint32_t)pid;
	out->m.tid = (uint32_t)pid;
	out->m.start = start;
	out->m.len = end - start;
	out->m.pgoff = off;
	out->m.ino = ino;
	out->m.maj = maj;
	out->m.min = min;
	out->m.prot = PROT_READ | PROT_EXEC;
	out->m.path_len = (uint16_t)len;
	out->path = path;
	out->path_len = len;
	return true;
}

int opd_procfs_maps(const char *proc_root, pid_t pid, opd_map_fn fn, void *ctx)
{
	char path[PATH_MAX], exe[PATH_MAX];
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/%d/exe", proc_root, (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = '\0';

	snprintf(path, sizeof(path), "%s/%d/maps", proc_root, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	/* Two passes over the text: the main binary's mappings, then the rest. */
	for (int pass = 0; pass < 2 && !ret; pass++) {
		rewind(f);
		while (!ret && getline(&line, &cap, f) > 0) {
			struct maps_line ml;
			bool is_exe;

			if (!parse_maps_line(line, pid, &ml))
				continue;
			is_exe = exe[0] && ml.path_len == strlen(exe) && !memcmp(ml.path, exe, ml.path_len);
			if (is_exe == (pass == 0))
				ret = fn(ctx, &ml.m, ml.path, ml.path_len);
		}
	}
	free(line);
	fclose(f);
	return ret;
}

int opd_procfs_comm(const char *proc_root, pid_t pid, char comm[16])
{
	char path[PATH_MAX], buf[64];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/comm", proc_root, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	memset(comm, 0, 16);
	memcpy(comm, buf, strnlen(buf, 15));
	return 0;
}

int opd_procfs_kernel_range(const char *kallsyms, uint64_t *start, uint64_t *end)
{
	char *line = NULL;
	size_t cap = 0;
	bool have_s = false, have_e = false;
	FILE *f = fopen(kallsyms, "r");

	if (!f)
		return -errno;
	while (!(have_s && have_e) && getline(&line, &cap, f) > 0) {
		struct du_ksym s;

		if (du_ksym_parse(line, &s))
			continue;
		if (!have_s && s.name_len == 5 && !memcmp(s.name, "_text", 5)) {
			*start = s.addr;
			have_s = true;
		} else if (!have_e && s.name_len == 6 && !memcmp(s.name, "_etext", 6)) {
			*end = s.addr;
			have_e = true;
		}
	}
	free(line);
	fclose(f);
	if (!have_s || !have_e || !*start || *end <= *start)
		return -ENOENT;
	return 0;
}

int opd_procfs_modules(const char *modules, opd_kmod_fn fn, void *ctx)
{
	char *line = NULL;
	size_t cap = 0;
	int ret = 0;
	FILE *f = fopen(modules, "r");

	if (!f)
		return -errno;
	while (!ret && getline(&line, &cap, f) > 0) {
		struct du_kmod m;

		/* a module's name is under 64 bytes (MODULE_NAME_LEN) */
		if (du_kmod_parse(line, &m) || !m.addr || !m.size || m.name_len >= 64)
			continue;
		ret = fn(ctx, m.addr, m.size, m.name, m.name_len);
	}
	free(line);
	fclose(f);
	return ret;
}

int opd_procfs_cpu_list(const char *path, int *cpus, int max)
{
	char buf[4096], *p, *tok, *save = NULL;
	int n = 0;
	size_t len;
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (p = buf; (tok = strtok_r(p, ",\n", &save)); p = NULL) {
		char *dash;
		long a, b;

		a = strtol(tok, &dash, 10);
		b = a;
		if (*dash == '-')
			b = strtol(dash + 1, NULL, 10);
		if (a < 0 || b < a || b > 65535)
			return -EINVAL;
		for (long c = a; c <= b && n < max; c++)
			cpus[n++] = (int)c;
	}
	return n ? n : -EINVAL;
}
