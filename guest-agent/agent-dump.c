/*
 * agent-dump: decode a file of agent frames (opagent --output=FILE) and
 * print what it holds.  Summary by default; -v prints every MMAP, COMM,
 * FORK, EXIT and table end.  Exit status 1 when the file is not a clean
 * sequence of frames or its tables do not add up.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"

struct dump {
	bool verbose;
	uint64_t ksyms_bytes, mods_bytes;
	uint32_t ksyms_chunks, mods_chunks;
	bool tables_ok;
	uint64_t switches;
	char out[AP_PATH_MAX + 1];
};

static int d_hello(void *ctx, const struct dp_ag_hello *h, const char *rel, size_t n)
{
	printf("hello proto %u-%u agent %06x flags %#x cpus %u page %u clock %u release %.*s\n",
	       h->proto_min, h->proto_max, h->agent_version, h->flags, h->nr_cpus, h->page_size,
	       h->clock_id, (int)n, rel);
	return 0;
}

static int d_ksyms(void *ctx, const char *t, size_t n)
{
	struct dump *d = ctx;

	d->ksyms_bytes += n;
	d->ksyms_chunks++;
	return 0;
}

static int d_mods(void *ctx, const char *t, size_t n)
{
	struct dump *d = ctx;

	d->mods_bytes += n;
	d->mods_chunks++;
	return 0;
}

static void table_end(struct dump *d, const char *what, uint64_t bytes, uint32_t chunks,
		      const struct dp_ag_table_end *e)
{
	printf("%s bytes %llu chunks %u status %u\n", what, (unsigned long long)e->total_bytes,
	       e->chunks, e->status);
	if (e->total_bytes != bytes || e->chunks != chunks)
		d->tables_ok = false;
}

static int d_kend(void *ctx, const struct dp_ag_table_end *e)
{
	struct dump *d = ctx;

	table_end(d, "kallsyms", d->ksyms_bytes, d->ksyms_chunks, e);
	d->ksyms_bytes = d->ksyms_chunks = 0;
	return 0;
}

static int d_mend(void *ctx, const struct dp_ag_table_end *e)
{
	struct dump *d = ctx;

	table_end(d, "modules", d->mods_bytes, d->mods_chunks, e);
	d->mods_bytes = d->mods_chunks = 0;
	return 0;
}

static int d_mmap(void *ctx, const struct dp_ag_mmap *m, const char *path, size_t n)
{
	struct dump *d = ctx;
	unsigned int i;

	if (!d->verbose)
		return 0;
	if (ap_sanitize_path(path, n, d->out) < 0)
		strcpy(d->out, "(too long)");
	printf("mmap %llu cpu %d pid %u tid %u %#llx+%#llx pgoff %#llx cookie %u bid ",
	       (unsigned long long)m->time_ns, (int)m->cpu, m->pid, m->tid,
	       (unsigned long long)m->start, (unsigned long long)m->len,
	       (unsigned long long)m->pgoff, m->cookie);
	for (i = 0; i < m->build_id_size; i++)
		printf("%02x", m->build_id[i]);
	printf("%s %s\n", m->build_id_size ? "" : "-", d->out);
	return 0;
}

static int d_comm(void *ctx, const struct dp_ag_comm *c, const char *name, size_t n)
{
	struct dump *d = ctx;

	if (d->verbose)
		printf("comm %llu pid %u tid %u%s %.*s\n", (unsigned long long)c->time_ns, c->pid,
		       c->tid, c->flags & DP_AG_COMM_EXEC ? " exec" : "", (int)n, name);
	return 0;
}

static int d_task(void *ctx, const struct dp_ag_task *t)
{
	struct dump *d = ctx;

	if (d->verbose)
		printf("task %llu pid %u ppid %u tid %u ptid %u\n", (unsigned long long)t->time_ns,
		       t->pid, t->ppid, t->tid, t->ptid);
	return 0;
}

static int d_lost(void *ctx, const struct dp_ag_lost *l)
{
	printf("lost cpu %u source %u count %llu\n", l->cpu, l->source, (unsigned long long)l->count);
	return 0;
}

static int d_state_end(void *ctx, const struct dp_ag_state_end *e)
{
	printf("state tasks %u mmaps %u\n", e->nr_tasks, e->nr_mmaps);
	return 0;
}

static int d_tsc(void *ctx, const struct dp_ag_tsc *t)
{
	printf("tsc cpu %u time %llu tsc %llu window %u\n", t->cpu, (unsigned long long)t->time_ns,
	       (unsigned long long)t->tsc, t->window_tsc);
	return 0;
}

static int d_layout(void *ctx, const struct dp_ag_task_layout *l)
{
	printf("task_layout current %#llx tgid_off %u flags %#x\n", (unsigned long long)l->current,
	       l->tgid_off, l->flags);
	return 0;
}

static const struct ap_ops dump_ops = {
	.hello = d_hello, .kallsyms = d_ksyms, .kallsyms_end = d_kend, .modules = d_mods,
	.modules_end = d_mend, .mmap = d_mmap, .comm = d_comm, .fork = d_task, .exit = d_task,
	.lost = d_lost, .state_end = d_state_end, .tsc = d_tsc, .task_layout = d_layout,
};

int main(int argc, char **argv)
{
	struct dump d = { .tables_ok = true };
	struct ap_stats st = { 0 };
	struct stat sb;
	size_t used = 0;
	void *map = NULL;
	int fd, err, t, ret = 1;

	if (argc > 1 && !strcmp(argv[1], "-v")) {
		d.verbose = true;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: agent-dump [-v] FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &sb)) {
		perror(argv[1]);
		return 2;
	}
	if (sb.st_size) {
		map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			perror("mmap");
			close(fd);
			return 2;
		}
	}
	err = ap_decode(&dump_ops, &d, map, (size_t)sb.st_size, &used, &st);
	printf("frames %llu bytes %llu unknown %llu bad %llu switches %llu\n",
	       (unsigned long long)st.frames, (unsigned long long)st.bytes,
	       (unsigned long long)st.unknown_type, (unsigned long long)st.bad_payload,
	       (unsigned long long)st.switches);
	for (t = 0; t <= DP_AG_TYPE_LAST; t++)
		if (st.by_type[t])
			printf("type %s %llu\n", ap_type_name(t), (unsigned long long)st.by_type[t]);
	if (err)
		fprintf(stderr, "agent-dump: decode error %s at byte %zu\n", strerror(-err), used);
	else if (used != (size_t)sb.st_size)
		fprintf(stderr, "agent-dump: %zu bytes of a cut-off frame at the end\n",
			(size_t)sb.st_size - used);
	else if (!d.tables_ok)
		fprintf(stderr, "agent-dump: a table's END does not match its chunks\n");
	else
		ret = 0;
	if (map)
		munmap(map, (size_t)sb.st_size);
	close(fd);
	return ret;
}
