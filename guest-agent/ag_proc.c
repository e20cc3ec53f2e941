/*
 * What the agent reads from /proc: the HELLO facts, the kernel's symbol and
 * module tables, and a snapshot of the tasks that existed before the perf
 * events were opened (perf only reports what happens afterwards).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_log.h"
#include "util/du_hex.h"

static void read_boot_id(uint8_t out[16])
{
	char line[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	unsigned int n = 0;
	const char *p;

	memset(out, 0, 16);
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		for (p = line; *p && n < 32; p++) {
			int v = du_hexval(*p);

			if (v < 0)
				continue;
			out[n / 2] |= (uint8_t)(n % 2 ? v : v << 4);
			n++;
		}
	}
	fclose(f);
}

int ag_send_hello(struct ag_out *o, uint32_t flags, uint64_t instance)
{
	struct dp_ag_hello h = {
		.proto_min = DP_AG_PROTO_MIN,
		.proto_max = DP_AG_PROTO_VERSION,
		.agent_version = AG_VERSION,
		.flags = flags,
		.clock_id = CLOCK_MONOTONIC,
		.instance = instance,
	};
	struct utsname u;
	long v;

	v = sysconf(_SC_NPROCESSORS_CONF);
	h.nr_cpus = v > 0 ? (uint32_t)v : 1;
	v = sysconf(_SC_PAGESIZE);
	h.page_size = v > 0 ? (uint32_t)v : 4096;
	read_boot_id(h.boot_id);
	if (uname(&u))
		strcpy(u.release, "unknown");
	h.now_ns = ag_now_ns();
	return AG_PUT(o, ap_put_hello, &h, u.release, strnlen(u.release, sizeof(u.release)));
}

int ag_table_open(struct ag_table *t, const char *path, uint16_t type, uint16_t end_type)
{
	memset(t, 0, sizeof(*t));
	t->type = type;
	t->end_type = end_type;
	t->end.status = DP_AG_TABLE_OK;
	t->first = true;
	t->fd = open(path, O_RDONLY | O_CLOEXEC);
	t->buf = malloc(DP_AG_MAX_PAYLOAD);
	if (!t->buf)
		return -ENOMEM;
	if (t->fd < 0)
		t->end.status = DP_AG_TABLE_UNREADABLE;
	t->pending = true;
	return 0;
}

void ag_table_close(struct ag_table *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	free(t->buf);
	t->buf = NULL;
	t->pending = false;
}

/* Fill the buffer from the file; false at its end (or a read error). */
static bool table_fill(struct ag_table *t)
{
	while (t->fd >= 0 && t->have < DP_AG_MAX_PAYLOAD) {
		ssize_t n = read(t->fd, t->buf + t->have, DP_AG_MAX_PAYLOAD - t->have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			t->end.status = DP_AG_TABLE_TRUNCATED;
		if (n <= 0) {
			close(t->fd);
			t->fd = -1;
			break;
		}
		t->have += (size_t)n;
		if (t->first && t->have >= 16 && t->type == DP_AG_KALLSYMS) {
			if (!strncmp(t->buf, "0000000000000000", 16))
				t->end.status = DP_AG_TABLE_NO_ADDRS;
			t->first = false;
		}
	}
	return t->fd >= 0;
}

/* Chunks end at a line end where one exists, so each chunk is whole lines
 * (the host must not rely on it: a line longer than a chunk is split). */
int ag_table_send(struct ag_table *t, struct ag_out *o, size_t max_bytes)
{
	size_t sent = 0;
	int err;

	if (!t->pending)
		return 1;
	while (sent < max_bytes) {
		bool more = table_fill(t);
		const char *nl;
		size_t cut;

		if (!t->have)
			break;
		nl = more ? memrchr(t->buf, '\n', t->have) : NULL;
		cut = nl ? (size_t)(nl - t->buf) + 1 : t->have;
		err = AG_PUT(o, ap_put_text, t->type, t->buf, cut);
		if (err)
			return err;
		t->end.total_bytes += cut;
		t->end.chunks++;
		memmove(t->buf, t->buf + cut, t->have - cut);
		t->have -= cut;
		sent += cut;
	}
	if (t->have || t->fd >= 0)
		return 0;
	err = AG_PUT(o, ap_put_table_end, t->end_type, &t->end);
	if (err)
		return err;
	t->pending = false;
	return 1;
}

int ag_send_table(struct ag_out *o, const char *path, uint16_t type, uint16_t end_type)
{
	struct ag_table t;
	int err = ag_table_open(&t, path, type, end_type);

	if (!err)
		err = ag_table_send(&t, o, SIZE_MAX);
	ag_table_close(&t);
	return err < 0 ? err : 0;
}

void ag_fill_cookie(struct ag_cookies *ck, struct dp_ag_mmap *m, uint64_t dev, uint64_t ino,
		    const char *path, size_t len)
{
	const struct ag_cookie *c = ag_cookie_get(ck, dev, ino, path, len, m->pid);

	m->cookie = c ? c->id : 0;
	m->build_id_size = c ? c->build_id_size : 0;
	if (c)
		memcpy(m->build_id, c->build_id, sizeof(m->build_id));
}

static int send_comms(struct ag_out *o, uint32_t pid, unsigned int *ntasks)
{
	char path[64], name[DP_AG_MAX_COMM + 2];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && !err) {
		struct dp_ag_comm c = { .pid = pid };
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);
		size_t n;
		FILE *f;

		if (*end || !tid)
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%lu/comm", pid, tid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (!fgets(name, sizeof(name), f))
			name[0] = '\0';
		fclose(f);
		n = strcspn(name, "\n");
		c.tid = (uint32_t)tid;
		c.time_ns = ag_now_ns();
		err = AG_PUT(o, ap_put_comm, &c, name, n > DP_AG_MAX_COMM ? DP_AG_MAX_COMM : n);
		(*ntasks)++;
	}
	closedir(d);
	return err;
}

/* Executable mappings from /proc/PID/maps: "start-end perms off maj:min ino path". */
static int send_maps(struct ag_out *o, struct ag_cookies *ck, uint32_t pid, unsigned int *nmmaps)
{
	char path[64], line[DP_AG_MAX_PATH + 256];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!err && fgets(line, sizeof(line), f)) {
		struct dp_ag_mmap m = { .cpu = DP_AG_CPU_UNKNOWN, .pid = pid, .tid = pid };
		uint64_t start, end, pgoff, ino;
		unsigned int maj, min;
		char perms[8];
		int pos = 0;
		const char *file;
		size_t len;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &end, perms, &pgoff, &maj, &min, &ino, &pos) < 7 || !pos)
			continue;
		if (strlen(perms) < 4 || perms[2] != 'x')
			continue;
		file = line + pos;
		len = strcspn(file, "\n");
		m.start = start;
		m.len = end - start;
		m.pgoff = pgoff;
		m.prot = PROT_EXEC | (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0);
		m.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		m.time_ns = ag_now_ns();
		ag_fill_cookie(ck, &m, makedev(maj, min), ino, file, len);
		err = AG_PUT(o, ap_put_mmap, &m, file, len);
		(*nmmaps)++;
	}
	fclose(f);
	return err;
}

int ag_send_snapshot(struct ag_out *o, struct ag_cookies *ck)
{
	struct dp_ag_state_end e = { 0 };
	struct dirent *de;
	DIR *d = opendir("/proc");
	uint32_t self = (uint32_t)getpid();
	int err = 0;

	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || !pid || pid == self)
			continue;
		err = ag_out_pace(o);
		if (!err)
			err = send_comms(o, (uint32_t)pid, &e.nr_tasks);
		if (!err)
			err = send_maps(o, ck, (uint32_t)pid, &e.nr_mmaps);
	}
	closedir(d);
	if (err)
		return err;
	e.time_ns = ag_now_ns();
	return AG_PUT(o, ap_put_state_end, &e);
}
