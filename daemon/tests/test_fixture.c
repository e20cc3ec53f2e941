#include "config.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dom_testproc.h"
#include "raw/raw_stream.h"
#include "test_fixture.h"
#include "util/du_kv.h"
#include "util/du_fs.h"

#define TFX_QEMU_EXE "/usr/bin/qemu-system-x86_64"

void tfx_tmpdir(struct tfx *fx, const char *name, bool proc_tree)
{
	memset(fx, 0, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/%s.XXXXXX", name);
	CU_ASSERT_FATAL(mkdtemp(fx->dir) != NULL);
	if (!proc_tree) {
		snprintf(fx->session, sizeof(fx->session), "%s", fx->dir);
		return;
	}
	tp_pathf(fx->session, sizeof(fx->session), "%s/session", fx->dir);
	tp_pathf(fx->proc, sizeof(fx->proc), "%s/proc", fx->dir);
}

void tfx_mkdirs(struct tfx *fx)
{
	CU_ASSERT_FATAL(mkdir(fx->proc, 0755) == 0);
	CU_ASSERT_FATAL(mkdir(fx->session, 0755) == 0);
}

void tfx_conf(struct tfx *fx)
{
	opd_conf_defaults(&fx->conf);
	fx->conf.session_dir = fx->session;
	fx->conf.collector = "file";
	if (fx->proc[0]) {
		fx->conf.track_domains = true;
		fx->conf.domains_proc_root = fx->proc;
	}
}

void tfx_event_clk(struct dp_raw_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	strcpy(ev->name, "CPU_CLK_UNHALTED");
	ev->count = 100000;
	ev->flags = DP_RAW_EV_KERNEL | DP_RAW_EV_USER;
}

void tfx_start(struct tfx *fx, const struct dp_raw_event *ev, uint32_t nr_ev, uint64_t kstart)
{
	CU_ASSERT_FATAL(opd_daemon_init(&fx->d, &fx->conf, "test") == 0);
	fx->w = raw_writer_new(opd_daemon_sink, &fx->d, 4096);
	CU_ASSERT_FATAL(fx->w != NULL);
	CU_ASSERT_FATAL(raw_put_header(fx->w, DP_RAW_F_TIMESTAMPS, DP_RAW_COLLECTOR_GEN, 0, ev,
				       nr_ev) == 0);
	if (kstart)
		CU_ASSERT_FATAL(raw_put_kmod(fx->w, kstart, 0x1000000, "vmlinux", 7) == 0);
}

void tfx_scan(struct tfx *fx)
{
	CU_ASSERT_FATAL(raw_writer_flush(fx->w) == 0);
	CU_ASSERT(opd_daemon_scan_domains(&fx->d) == 0);
}

void tfx_finish(struct tfx *fx)
{
	CU_ASSERT(raw_writer_close(fx->w) == 0);
	fx->w = NULL;
	CU_ASSERT(opd_stream_finish(fx->d.stream) == 0);
	CU_ASSERT(opd_daemon_stop(&fx->d) == 0);
}

void tfx_teardown(struct tfx *fx)
{
	raw_writer_close(fx->w);
	fx->w = NULL;
	opd_daemon_fini(&fx->d);
	du_rm_tree(fx->dir);
}

void tfx_put_ctx(struct tfx *fx, uint32_t pid, uint32_t tid, uint32_t mode)
{
	CU_ASSERT(raw_put_cpu(fx->w, 0) == 0);
	CU_ASSERT(raw_put_task(fx->w, pid, tid) == 0);
	CU_ASSERT(raw_put_mode(fx->w, mode) == 0);
}

/* exe, comm and stat of @pid, as a real QEMU has them */
static void qemu_files(struct tfx *fx, int pid)
{
	char p[256], stat[256];

	tp_pathf(p, sizeof(p), "%s/%d/exe", fx->proc, pid);
	CU_ASSERT_FATAL(symlink(TFX_QEMU_EXE, p) == 0);
	tp_pathf(p, sizeof(p), "%s/%d/comm", fx->proc, pid);
	tp_write_file(p, "qemu-system-x86\n", 16);
	tp_pathf(p, sizeof(p), "%s/%d/stat", fx->proc, pid);
	tp_pathf(stat, sizeof(stat),
		 "%d (qemu-system-x86) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid,
		 1000 + pid);
	tp_write_file(p, stat, strlen(stat));
}

void tfx_qemu(struct tfx *fx, int pid, const char *const *argv, bool bare)
{
	char p[256], cmd[1024];
	size_t n = 0;

	for (const char *const *a = argv; *a; a++) {
		size_t l = strlen(*a) + 1;

		if (l > sizeof(cmd) - n)
			CU_FAIL_FATAL("fake QEMU command line too long");
		memcpy(cmd + n, *a, l);
		n += l;
	}
	tp_pathf(p, sizeof(p), "%s/%d", fx->proc, pid);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	tp_pathf(p, sizeof(p), "%s/%d/task", fx->proc, pid);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	if (!bare)
		qemu_files(fx, pid);
	tp_pathf(p, sizeof(p), "%s/%d/cmdline", fx->proc, pid);
	tp_write_file(p, cmd, n);
	tp_thread(fx->proc, pid, pid, "qemu-system-x86");
}

const char *tfx_dom_value(const struct tfx *fx, const char *domain, const char *file,
			  const char *key)
{
	static char val[1024];
	char path[256];
	struct du_kv *kv;
	const char *v;

	val[0] = '\0';
	tp_pathf(path, sizeof(path), "%s/domains/%s/%s", fx->session, domain, file);
	kv = du_kv_load(path);
	v = du_kv_get(kv, key);
	if (v)
		snprintf(val, sizeof(val), "%s", v);
	du_kv_free(kv);
	return val;
}

void tgs_setup(struct tgs *gs, const char *name)
{
	char d[256];

	memset(gs, 0, sizeof(*gs));
	snprintf(gs->top, sizeof(gs->top), "/tmp/%s.XXXXXX", name);
	CU_ASSERT_FATAL(mkdtemp(gs->top) != NULL);
	snprintf(gs->session, sizeof(gs->session), "%s/session", gs->top);
	CU_ASSERT_FATAL(mkdir(gs->session, 0755) == 0);
	snprintf(d, sizeof(d), "%s/samples", gs->session);
	CU_ASSERT_FATAL(mkdir(d, 0755) == 0);
	snprintf(d, sizeof(d), "%s/samples/current", gs->session);
	CU_ASSERT_FATAL(mkdir(d, 0755) == 0);
	gs->images = opd_images_new();
	gs->cache = opd_imgcache_new(gs->session, &gs->st);
	CU_ASSERT_FATAL(gs->images && gs->cache);
}

void tgs_teardown(struct tgs *gs)
{
	opd_imgcache_free(gs->cache);
	opd_images_free(gs->images);
	du_rm_tree(gs->top);
}
