/*
 * The daemon's one sample sink for guest samples: a live domain with an
 * agent channel (a fake proc tree holds its QEMU, a unix socket stands in
 * for the virtio-serial port), guest kernel samples fed in memory, held
 * until the agent's kallsyms explains them, then queued in the same batch
 * as host samples (not written to their file on the side) and in their
 * sample file once the batch is applied; a dump writes the domain's
 * statistics (SESSION/domains/web/stats).
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/agent.h"
#include "dom_testproc.h"
#include "odb/odb.h"
#include "opd_daemon.h"
#include "raw/raw_stream.h"
#include "test_fixture.h"
#include "util/du_log.h"
#include "util/du_test.h"

#define QEMU "/usr/bin/qemu-system-x86_64"
#define KTEXT 0xffffffff81000000ULL
#define GUEST_VMLINUX "{domain}/web/{kern}/vmlinux/{dep}/{kern}/vmlinux"

static struct tfx fx;
static char sock[128];	/* the agent port */
static int lfd;		/* its listener */
static uint8_t buf[65600];

static void quiet_log(enum du_log_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
}

/* QEMU @pid "web" with one vCPU thread and the agent port on @sock. */
static void fake_qemu(int pid)
{
	char chr[256];
	const char *argv[] = { QEMU, "-enable-kvm", "-name", "web,debug-threads=on",
			       "-chardev", chr, "-device",
			       "virtserialport,chardev=c1,name=" DP_AG_PORT_NAME, NULL };

	tp_pathf(chr, sizeof(chr), "socket,id=c1,path=%s,server=on,wait=off", sock);
	tfx_qemu(&fx, pid, argv, false);
	tp_thread(fx.proc, pid, pid + 1, "CPU 0/KVM");
}

static void setup(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dp_raw_event ev;

	tfx_tmpdir(&fx, "test_guest_sink", true);
	tp_pathf(sock, sizeof(sock), "%s/web.agent", fx.dir);
	tfx_mkdirs(&fx);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(lfd >= 0);
	strcpy(sa.sun_path, sock);
	CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(lfd, 4) == 0);
	fake_qemu(getpid());	/* the agent socket's listener (SO_PEERCRED) */
	tfx_conf(&fx);
	tfx_event_clk(&ev);
	tfx_start(&fx, &ev, 1, 0);
}

static void teardown(void)
{
	tfx_teardown(&fx);
	close(lfd);
}

/* The agent's side: HELLO and a kallsyms table naming _text. */
static void agent_says_hello(int fd)
{
	static const char ks[] = "ffffffff81000000 T _text\nffffffff81000100 T do_work\n";
	struct dp_ag_hello h = { .proto_min = 1, .proto_max = 1, .nr_cpus = 1, .clock_id = 1,
				 .flags = DP_AG_HELLO_F_PERF, .now_ns = 1, .instance = 1 };
	struct dp_ag_table_end e = { .total_bytes = sizeof(ks) - 1, .chunks = 1 };
	ssize_t n;

	n = ap_put_hello(buf, sizeof(buf), &h, "6.1", 3);
	CU_ASSERT(n > 0 && send(fd, buf, (size_t)n, 0) == n);
	n = ap_put_text(buf, sizeof(buf), DP_AG_KALLSYMS, ks, sizeof(ks) - 1);
	CU_ASSERT(n > 0 && send(fd, buf, (size_t)n, 0) == n);
	n = ap_put_table_end(buf, sizeof(buf), DP_AG_KALLSYMS_END, &e);
	CU_ASSERT(n > 0 && send(fd, buf, (size_t)n, 0) == n);
}

/* Count of @key in the sample file @rel; -1 if it cannot be opened. */
static int64_t count_in(const char *rel, uint64_t key)
{
	char path[512];
	uint64_t n;

	tp_pathf(path, sizeof(path), "%s/samples/current/%s/CPU_CLK_UNHALTED.100000.0.all.all.all",
		 fx.session, rel);
	return odb_read_count(path, key, &n) ? -1 : (int64_t)n;
}

/* Value of @key in SESSION/domains/web/stats, or "". */
static const char *dom_stat(const char *key)
{
	return tfx_dom_value(&fx, "web", "stats", key);
}

/* Held guest kernel samples, once explained, go through the batch. */
static void test_guest_samples_batched(void)
{
	int fd;

	setup();
	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	CU_ASSERT_FATAL(opd_daemon_scan_domains(&fx.d) == 0);
	opd_daemon_polled(&fx.d, NULL, 0);	/* connects */
	fd = accept(lfd, NULL, NULL);
	CU_ASSERT_FATAL(fd >= 0);
	agent_says_hello(fd);
	opd_daemon_polled(&fx.d, NULL, 0);	/* reads HELLO and kallsyms */
	/* five guest kernel samples on the vCPU thread of QEMU (this process) */
	CU_ASSERT(raw_put_cpu(fx.w, 0) == 0);
	CU_ASSERT(raw_put_task(fx.w, (uint32_t)getpid(), (uint32_t)getpid() + 1) == 0);
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_KERNEL) == 0);
	CU_ASSERT(raw_put_domain(fx.w, (uint64_t)getpid(), 0) == 0);
	for (int i = 0; i < 5; i++)
		CU_ASSERT(raw_put_sample(fx.w, KTEXT + 0x123, 0) == 0);
	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	CU_ASSERT(opd_batch_pending(fx.d.batch) == 0);	/* held, not filed */
	opd_daemon_polled(&fx.d, NULL, 0);	/* drains: _text is known */
	/* in the batch, like host samples, and not in the file yet */
	CU_ASSERT(opd_batch_pending(fx.d.batch) == 5);
	CU_ASSERT(count_in(GUEST_VMLINUX, 0x123) <= 0);
	CU_ASSERT(opd_batch_flush(fx.d.batch) == 0);
	CU_ASSERT(count_in(GUEST_VMLINUX, 0x123) == 5);
	/* a dump writes the domain's own statistics beside the daemon's */
	CU_ASSERT(opd_daemon_dump(&fx.d) == 0);
	CU_ASSERT_STRING_EQUAL(dom_stat("samples_received"), "5");
	CU_ASSERT_STRING_EQUAL(dom_stat("samples_resolved"), "5");
	CU_ASSERT_STRING_EQUAL(dom_stat("agent_connected"), "1");
	CU_ASSERT_STRING_EQUAL(dom_stat("clock_method"), "hello");
	close(fd);
	teardown();
}

/* A guest chain (raw type 14, DP_RAW_CC_GUEST) waits with its held
 * sample; once the agent's kallsyms explain it, each frame resolves like a
 * guest kernel pc: the arc _text -> do_work lands in the domain's {cg}
 * file.  A chain without the guest flag on a guest sample is not filed. */
static void test_guest_chain(void)
{
	const uint64_t fr[2] = { KTEXT + 0x11, 0x401000 };
	char cg[256];
	uint64_t v = 0;
	int fd;

	setup();
	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	CU_ASSERT_FATAL(opd_daemon_scan_domains(&fx.d) == 0);
	opd_daemon_polled(&fx.d, NULL, 0);
	fd = accept(lfd, NULL, NULL);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(raw_put_cpu(fx.w, 0) == 0);
	CU_ASSERT(raw_put_task(fx.w, (uint32_t)getpid(), (uint32_t)getpid() + 1) == 0);
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_KERNEL) == 0);
	CU_ASSERT(raw_put_domain(fx.w, (uint64_t)getpid(), 0) == 0);
	for (int i = 0; i < 3; i++) {
		CU_ASSERT(raw_put_callchain(fx.w, 2, 1, DP_RAW_CC_GUEST, fr) == 0);
		CU_ASSERT(raw_put_sample(fx.w, KTEXT + 0x123, 0) == 0);
	}
	CU_ASSERT(raw_put_callchain(fx.w, 1, 1, 0, fr) == 0);	/* not flagged guest */
	CU_ASSERT(raw_put_sample(fx.w, KTEXT + 0x123, 0) == 0);
	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	/* held until the agent speaks: its kallsyms come after the samples */
	agent_says_hello(fd);
	opd_daemon_polled(&fx.d, NULL, 0);
	CU_ASSERT(opd_daemon_dump(&fx.d) == 0);
	CU_ASSERT(count_in(GUEST_VMLINUX, 0x123) == 4);
	snprintf(cg, sizeof(cg), "%s/{cg}/{kern}/vmlinux", GUEST_VMLINUX);
	CU_ASSERT(count_in(cg, 0x10ULL << 32 | 0x123) == 3);
	CU_ASSERT(opd_stats_read_key(fx.session, "cc_chains_guest", &v) == 0 && v == 3);
	CU_ASSERT(opd_stats_read_key(fx.session, "cc_chains_dropped", &v) == 0 && v == 1);
	CU_ASSERT(opd_stats_read_key(fx.session, "cc_stacks", &v) == 0 && v == 1);
	close(fd);
	teardown();
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "guest samples go through the batch", test_guest_samples_batched },
		{ "guest call chains wait with their samples", test_guest_chain },
	};

	du_log_set(quiet_log);
	return du_test_main("guest sample sink", tests, DU_TEST_N(tests), NULL, NULL);
}
