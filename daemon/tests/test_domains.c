/*
 * Daemon with live domains: a fake proc tree holds QEMU processes with
 * vCPU threads (as domains/test_dom.c builds them), guest and host samples
 * are fed in memory, and the sample files, stats and info files that come
 * out are checked.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odb/odb.h"
#include "opd_daemon.h"
#include "opd_dkeys.h"
#include "raw/raw_stream.h"
#include "sfname/sfname.h"
#include "util/du_log.h"
#include "util/du_test.h"
#include "dom_testproc.h"
#include "dom_backend.h"
#include "domprof/agent.h"
#include "test_fixture.h"

#define QEMU "/usr/bin/qemu-system-x86_64"
#define UUID_A "6b1b1d6e-0000-4000-8000-00000000000a"
#define UUID_B "7c2c2e7f-0000-4000-8000-00000000000b"
#define KSTART 0xffffffff81000000ULL
#define QEMU_TEXT 0x555555554000ULL

static struct tfx fx;

/* ---- fake proc tree ---- */

/* A QEMU process @pid named @name (-uuid @uuid unless NULL) with vCPU
 * threads pid+1 .. pid+nvcpu and an I/O thread pid+100. */
static void fake_qemu(int pid, const char *name, const char *uuid, int nvcpu)
{
	const char *argv[] = { QEMU, "-enable-kvm", "-name", NULL, "-uuid", uuid, NULL };
	char namearg[128];

	tp_pathf(namearg, sizeof(namearg), "%s,debug-threads=on", name);
	argv[3] = namearg;
	if (!uuid)
		argv[4] = NULL;
	tfx_qemu(&fx, pid, argv, false);
	for (int i = 0; i < nvcpu; i++) {
		char c[32];

		tp_pathf(c, sizeof(c), "CPU %d/KVM", i);
		tp_thread(fx.proc, pid, pid + 1 + i, c);
	}
	tp_thread(fx.proc, pid, pid + 100, "IO mon_iothread");
}

/* ---- daemon fixture ---- */

/* The backend the next setup() gives the daemon; NULL: procfs by name. */
static const struct dom_backend_ops *setup_backend;

static void setup(const char *domains)
{
	struct dp_raw_event ev;

	tfx_tmpdir(&fx, "test_domains", true);
	tfx_mkdirs(&fx);
	tfx_conf(&fx);
	fx.conf.domains = domains;
	fx.conf.domain_backend_ops = setup_backend;
	tfx_event_clk(&ev);
	tfx_start(&fx, &ev, 1, KSTART);
}

static void put_qemu_map(uint32_t pid)
{
	struct dp_raw_mmap m;

	memset(&m, 0, sizeof(m));
	m.pid = m.tid = pid;
	m.start = QEMU_TEXT;
	m.len = 0x100000;
	m.pgoff = 0;
	m.prot = 5;
	CU_ASSERT(raw_put_mmap(fx.w, &m, QEMU, strlen(QEMU)) == 0);
}

static void samples(uint64_t pc, int n)
{
	for (int i = 0; i < n; i++)
		CU_ASSERT(raw_put_sample(fx.w, pc, 0) == 0);
}

/* Count of @key in the sample file at @rel (below samples/current/, the
 * event part appended); -1 if the file does not exist or open. */
static int64_t count_in(const char *rel, uint64_t key)
{
	char path[512];
	uint64_t n;

	tp_pathf(path, sizeof(path), "%s/samples/current/%s/CPU_CLK_UNHALTED.100000.0.all.all.all",
	      fx.session, rel);
	return odb_read_count(path, key, &n) ? -1 : (int64_t)n;
}

static uint64_t stat_key(const char *key)
{
	uint64_t v = ~0ULL;

	CU_ASSERT(opd_stats_read_key(fx.session, key, &v) == 0);
	return v;
}

/* Value of @key in SESSION/domains/@name/info, or "" */
static const char *info_key(const char *name, const char *key)
{
	return tfx_dom_value(&fx, name, "info", key);
}

#define GUEST_USER "{domain}/web/{anon:guest-user}/{dep}/{anon:guest-user}"
#define GUEST_KERN "{domain}/web/{anon:guest-kernel}/{dep}/{anon:guest-kernel}"
#define VMM_USER "{domain}/web/{vmm}/{root}/usr/bin/qemu-system-x86_64/{dep}/{root}/usr/bin/qemu-system-x86_64"
#define VMM_KERN "{domain}/web/{vmm}/{kern}/vmlinux/{dep}/{kern}/vmlinux"
#define HOST_QEMU "{root}/usr/bin/qemu-system-x86_64/{dep}/{root}/usr/bin/qemu-system-x86_64"

/* ---- tests ---- */

static void test_guest_and_vmm(void)
{
	setup(NULL);
	fake_qemu(4242, "web", UUID_A, 2);
	tfx_scan(&fx);
	put_qemu_map(4242);
	/* vCPU 1 runs guest user code, then guest kernel code */
	tfx_put_ctx(&fx, 4242, 4244, DP_MODE_GUEST_USER);
	samples(0x401000, 3);
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_KERNEL) == 0);
	samples(0xffffffff81234567ULL, 2);
	/* the I/O thread emulates a device: host user in QEMU, then a VM exit in the kernel */
	tfx_put_ctx(&fx, 4242, 4342, DP_MODE_HOST_USER);
	samples(QEMU_TEXT + 0x1230, 4);
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_HOST_KERNEL) == 0);
	samples(KSTART + 0x500, 1);
	/* a DOMAIN record names the hypervisor directly */
	CU_ASSERT(raw_put_task(fx.w, 4243, 4243) == 0);
	CU_ASSERT(raw_put_mode(fx.w, DP_MODE_GUEST_USER) == 0);
	CU_ASSERT(raw_put_domain(fx.w, 4242, 0) == 0);
	samples(0x402000, 1);
	tfx_finish(&fx);

	CU_ASSERT(count_in(GUEST_USER, 0x401000) == 3);
	CU_ASSERT(count_in(GUEST_USER, 0x402000) == 1);
	CU_ASSERT(count_in(GUEST_KERN, 0xffffffff81234567ULL) == 2);
	CU_ASSERT(count_in(VMM_USER, 0x1230) == 4);
	CU_ASSERT(count_in(VMM_KERN, 0x500) == 1);
	CU_ASSERT(count_in(HOST_QEMU, 0x1230) == -1);
	CU_ASSERT(stat_key("samples_vmm") == 5);
	CU_ASSERT(stat_key("samples_guest_user") == 4);
	CU_ASSERT(stat_key("samples_guest_kernel") == 2);
	CU_ASSERT(stat_key("samples_filed") == 11);
	CU_ASSERT(stat_key("domains_seen") == 1);
	CU_ASSERT(stat_key("domains_running") == 1);
	CU_ASSERT(stat_key("unresolved_no_domain") == 0);
	tfx_teardown(&fx);
}

static void test_unknown_domain(void)
{
	setup("all");
	fake_qemu(4242, "web", UUID_A, 1);
	tfx_scan(&fx);
	tfx_put_ctx(&fx, 999, 999, DP_MODE_GUEST_KERNEL);
	samples(0xffffffff81000010ULL, 2);
	tfx_finish(&fx);
	CU_ASSERT(count_in("{domain}/unknown/{anon:guest-kernel}/{dep}/{anon:guest-kernel}",
			   0xffffffff81000010ULL) == 2);
	CU_ASSERT(stat_key("unresolved_no_domain") == 2);
	CU_ASSERT(stat_key("samples_filed") == 2);
	tfx_teardown(&fx);
}

static void test_selection(void)
{
	setup("db," UUID_B);
	fake_qemu(4242, "web", UUID_A, 1);
	fake_qemu(5252, "other", UUID_B, 1);	/* selected by UUID */
	tfx_scan(&fx);
	put_qemu_map(4242);
	tfx_put_ctx(&fx, 4242, 4243, DP_MODE_GUEST_USER);
	samples(0x401000, 3);
	tfx_put_ctx(&fx, 4242, 4342, DP_MODE_HOST_USER);
	samples(QEMU_TEXT + 0x10, 2);
	tfx_put_ctx(&fx, 5252, 5253, DP_MODE_GUEST_USER);
	samples(0x401000, 1);
	tfx_finish(&fx);
	CU_ASSERT(count_in(GUEST_USER, 0x401000) == -1);
	CU_ASSERT(count_in("{domain}/other/{anon:guest-user}/{dep}/{anon:guest-user}", 0x401000) == 1);
	/* an unselected domain's QEMU work is plain host work */
	CU_ASSERT(count_in(VMM_USER, 0x10) == -1);
	CU_ASSERT(count_in(HOST_QEMU, 0x10) == 2);
	CU_ASSERT(stat_key("samples_domain_unselected") == 5);
	CU_ASSERT(stat_key("samples_filed") == 3);
	CU_ASSERT(stat_key("samples_received") == 6);
	CU_ASSERT(stat_key("samples_vmm") == 0);
	tfx_teardown(&fx);
}

static void test_removal_and_info(void)
{
	setup(NULL);
	fake_qemu(4242, "web", UUID_A, 2);
	fake_qemu(5252, "db", NULL, 1);
	tfx_scan(&fx);
	CU_ASSERT_STRING_EQUAL(info_key("web", "name"), "web");
	CU_ASSERT_STRING_EQUAL(info_key("web", "uuid"), UUID_A);
	CU_ASSERT_STRING_EQUAL(info_key("web", "uuid_source"), "cmdline");
	CU_ASSERT_STRING_EQUAL(info_key("web", "hypervisor"), "qemu");
	CU_ASSERT_STRING_EQUAL(info_key("web", "pid"), "4242");
	CU_ASSERT_STRING_EQUAL(info_key("web", "vcpus"), "2");
	CU_ASSERT_STRING_EQUAL(info_key("web", "agent_path"), "-");
	CU_ASSERT_STRING_EQUAL(info_key("web", "state"), "running");
	CU_ASSERT_STRING_EQUAL(info_key("db", "uuid_source"), "derived");
	/* no agent yet; then its HELLO: guest text escaped, cut at the bound */
	CU_ASSERT_STRING_EQUAL(info_key("web", "agent_version"), "-");
	CU_ASSERT_STRING_EQUAL(info_key("web", "guest_release"), "-");
	{
		const struct opd_dom *d = opd_domains_next(fx.d.domains, NULL);
		char long_rel[DP_AG_MAX_RELEASE + 40];

		while (d && strcmp(d->name->name, "web"))
			d = opd_domains_next(fx.d.domains, d);
		CU_ASSERT_FATAL(d != NULL);
		CU_ASSERT(opd_domains_set_guest(fx.d.domains, d, 0x010203, "6.1\nstate x\\") == 0);
		CU_ASSERT_STRING_EQUAL(info_key("web", "agent_version"), "1.2.3");
		CU_ASSERT_STRING_EQUAL(info_key("web", "guest_release"), "6.1\\x0astate x\\x5c");
		CU_ASSERT_STRING_EQUAL(info_key("web", "state"), "running");
		memset(long_rel, 'r', sizeof(long_rel) - 1);
		long_rel[sizeof(long_rel) - 1] = '\0';
		CU_ASSERT(opd_domains_set_guest(fx.d.domains, d, 0x010204, long_rel) == 0);
		CU_ASSERT(strlen(info_key("web", "guest_release")) == DP_AG_MAX_RELEASE);
		CU_ASSERT_STRING_EQUAL(info_key("web", "agent_version"), "1.2.4");
		CU_ASSERT(opd_domains_set_guest(fx.d.domains, d, 0x010203, "6.1") == 0);
	}
	tfx_put_ctx(&fx, 4242, 4243, DP_MODE_GUEST_USER);
	samples(0x401000, 2);
	tfx_put_ctx(&fx, 5252, 5253, DP_MODE_GUEST_USER);
	samples(0x401000, 1);
	tfx_scan(&fx);
	CU_ASSERT(du_test_count_maps("{domain}/web/") == 1);
	CU_ASSERT(du_test_count_maps("{domain}/db/") == 1);

	tp_kill(fx.proc, 4242);
	tfx_scan(&fx);
	CU_ASSERT(du_test_count_maps("{domain}/web/") == 0);
	CU_ASSERT(du_test_count_maps("{domain}/db/") == 1);
	CU_ASSERT_STRING_EQUAL(info_key("web", "state"), "stopped");
	CU_ASSERT_STRING_EQUAL(info_key("web", "guest_release"), "6.1");	/* kept */
	CU_ASSERT(fx.d.st.domains_running == 1);
	/* samples still in the rings after the scan: filed under web */
	tfx_put_ctx(&fx, 4242, 4243, DP_MODE_GUEST_USER);
	samples(0x401000, 1);
	/* the other domain goes on */
	tfx_put_ctx(&fx, 5252, 5253, DP_MODE_GUEST_USER);
	samples(0x401000, 4);
	tfx_finish(&fx);
	CU_ASSERT(count_in(GUEST_USER, 0x401000) == 3);
	CU_ASSERT(count_in("{domain}/db/{anon:guest-user}/{dep}/{anon:guest-user}", 0x401000) == 5);
	CU_ASSERT(stat_key("domains_seen") == 2);
	CU_ASSERT(stat_key("domains_running") == 1);
	CU_ASSERT(stat_key("unresolved_no_domain") == 0);
	tfx_teardown(&fx);
}

/* A scan @secs seconds from now: past the grace of what stopped. */
static void scan_later(unsigned int secs)
{
	struct timespec ts;

	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	CU_ASSERT(opd_domains_scan(fx.d.domains, (uint64_t)(ts.tv_sec + secs) * 1000000000ULL +
				   (uint64_t)ts.tv_nsec, (int64_t)time(NULL)) >= 0);
	opd_trans_invalidate(fx.d.trans);
}

/* Domain "web" (UUID_A) samples twice and stops; it comes back as pid 4300
 * with @uuid and samples once (another UUID takes the name only once the
 * old one's grace is over). */
static void restart_web(const char *uuid)
{
	setup(NULL);
	fake_qemu(4242, "web", UUID_A, 1);
	tfx_scan(&fx);
	tfx_put_ctx(&fx, 4242, 4243, DP_MODE_GUEST_USER);
	samples(0x401000, 2);
	tp_kill(fx.proc, 4242);
	tfx_scan(&fx);
	fake_qemu(4300, "web", uuid, 1);
	tfx_scan(&fx);
	if (strcmp(uuid, UUID_A))
		scan_later(6);
	tfx_put_ctx(&fx, 4300, 4301, DP_MODE_GUEST_USER);
	samples(0x401000, 1);
	tfx_finish(&fx);
}

static void test_uuid_change(void)
{
	struct stat sb;
	char p[256];

	/* restarted under the same name, another UUID */
	restart_web(UUID_B);
	CU_ASSERT(count_in(GUEST_USER, 0x401000) == 1);
	CU_ASSERT(count_in("{domain}/web.6b1b1d6e/{anon:guest-user}/{dep}/{anon:guest-user}",
			   0x401000) == 2);
	tp_pathf(p, sizeof(p), "%s/domains/web.6b1b1d6e/info", fx.session);
	CU_ASSERT(stat(p, &sb) == 0);
	CU_ASSERT_STRING_EQUAL(info_key("web", "uuid"), UUID_B);
	tfx_teardown(&fx);

	/* the same UUID again appends */
	restart_web(UUID_A);
	CU_ASSERT(count_in(GUEST_USER, 0x401000) == 3);
	tfx_teardown(&fx);
}

/*
 * Issue 23 item 7: a name held by a verified domain is not taken by a
 * second process that passes the identity checks.  While web runs, a
 * second "web" (another UUID) is refused; when web's QEMU restarts, the
 * second one, though now alone, is refused still: the name waits for web's
 * UUID, whose new QEMU takes it and gets its samples.
 */
static void test_name_hold(void)
{
	setup(NULL);
	fake_qemu(4242, "web", UUID_A, 1);
	tfx_scan(&fx);
	fake_qemu(4100, "web", UUID_B, 1);
	tfx_scan(&fx);
	CU_ASSERT(fx.d.st.domain_refused == 1);
	tp_kill(fx.proc, 4242);	/* web's QEMU restarts */
	tfx_scan(&fx);
	fake_qemu(4300, "web", UUID_A, 1);
	tfx_scan(&fx);
	tfx_put_ctx(&fx, 4300, 4301, DP_MODE_GUEST_USER);
	samples(0x401000, 3);
	tfx_put_ctx(&fx, 4100, 4101, DP_MODE_GUEST_USER);
	samples(0x401000, 5);
	/* long after: web runs, the name is still its own */
	scan_later(6);
	tfx_put_ctx(&fx, 4100, 4101, DP_MODE_GUEST_USER);
	samples(0x401000, 7);
	tfx_finish(&fx);
	CU_ASSERT(count_in(GUEST_USER, 0x401000) == 3);
	CU_ASSERT_STRING_EQUAL(info_key("web", "uuid"), UUID_A);
	CU_ASSERT(stat_key("domain_refused") == 1);	/* said once */
	CU_ASSERT(stat_key("unresolved_no_domain") == 12);
	tfx_teardown(&fx);
}

static void test_replay_keeps_pid_names(void)
{
	setup(NULL);
	opd_trans_set_domains(fx.d.trans, NULL);	/* as in replay */
	tfx_put_ctx(&fx, 4242, 4243, DP_MODE_GUEST_USER);
	samples(0x401000, 1);
	tfx_finish(&fx);
	CU_ASSERT(count_in("{domain}/pid-4242/{anon:guest-user}/{dep}/{anon:guest-user}", 0x401000) == 1);
	tfx_teardown(&fx);
}

/* ---- a fake backend: it only reports; the registry looks domains up ---- */

#define XEN_DOMID 7
#define XG_DM 4343		/* its device model's pid */
#define XG_BACKEND 950		/* a dom0 back-end thread of it */

static struct {
	struct dom_domain *dom;
	bool reported;
	bool change;		/* say it changed at the next refresh */
	bool vcpus;		/* say its vCPUs changed at the next refresh */
	bool stop, stopped;	/* stop: say it removed at the next refresh */
} fb;

static int fb_open(const struct dom_config *cfg, void **state)
{
	(void)cfg;
	*state = &fb;
	return 0;
}

static int fb_fd(void *state)
{
	(void)state;
	return -1;
}

static int fb_refresh(void *state, const struct dom_ops *ops, void *ctx)
{
	(void)state;
	if (!fb.reported && ops && ops->added)
		ops->added(ctx, fb.dom);
	fb.reported = true;
	if (fb.change && !fb.stopped && ops && ops->changed)
		ops->changed(ctx, fb.dom);
	fb.change = false;
	if (fb.vcpus && !fb.stopped && ops && ops->vcpus_changed)
		ops->vcpus_changed(ctx, fb.dom);
	fb.vcpus = false;
	if (fb.stop && !fb.stopped && ops && ops->removed)
		ops->removed(ctx, fb.dom);
	fb.stopped |= fb.stop;
	return 0;
}

static void fb_close(void *state)
{
	(void)state;
}

static const struct dom_backend_ops fake_backend = {
	.name = "fake", .open = fb_open, .fd = fb_fd, .refresh = fb_refresh, .close = fb_close,
};

#define XG_KERN "{domain}/xg/{anon:guest-kernel}/{dep}/{anon:guest-kernel}"

/* A Xen domain as the xenctrl backend declares it: keyed by its domid,
 * two vCPUs Xen counts (threads given here for the lookup by thread), a
 * device model of pid @dm if not 0. */
static void fake_xen_domain(pid_t dm)
{
	const pid_t tids[2] = { 900, 901 };

	memset(&fb, 0, sizeof(fb));
	fb.dom = dom_domain_new("xg");
	CU_ASSERT_FATAL(fb.dom != NULL);
	dom_domain_set_hypervisor(fb.dom, "xen");
	dom_domain_set_id(fb.dom, XEN_DOMID);
	dom_domain_set_id_ns(fb.dom, DP_DOMKEY_XEN_DOMID);
	CU_ASSERT(dom_domain_set_uuid(fb.dom, UUID_B) == 0);
	CU_ASSERT(dom_domain_set_vcpus(fb.dom, tids, 2) == 0);
	dom_domain_set_vcpus_exact(fb.dom, true);
	dom_domain_set_pid(fb.dom, dm);
	setup_backend = &fake_backend;
	setup(NULL);
	setup_backend = NULL;
	tfx_scan(&fx);
}

/* The registry looks a sample's domain up by the keys its backend
 * declared, and its vCPU as recorded (bounded by the count the
 * hypervisor says) or by host thread. */
static void test_registry_lookup(void)
{
	const struct opd_dom *d;
	int v;

	fake_xen_domain(0);
	CU_ASSERT_STRING_EQUAL(info_key("xg", "hypervisor"), "xen");
	CU_ASSERT_STRING_EQUAL(info_key("xg", "uuid"), UUID_B);
	CU_ASSERT_STRING_EQUAL(info_key("xg", "state"), "running");
	d = opd_domains_lookup(fx.d.domains, DP_DOMKEY_XEN_DOMID, XEN_DOMID, 1, 0, &v);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(d->name->name, "xg");
	CU_ASSERT_EQUAL(v, 1);
	d = opd_domains_lookup(fx.d.domains, DP_DOMKEY_XEN_DOMID, XEN_DOMID, DP_RAW_VCPU_UNKNOWN,
			       901, &v);
	CU_ASSERT(d && v == 1);
	/* past the two vCPUs Xen says: the domain's, no vCPU of it */
	d = opd_domains_lookup(fx.d.domains, DP_DOMKEY_XEN_DOMID, XEN_DOMID, 2, 900, &v);
	CU_ASSERT(d && v == -1);
	/* the same number in another namespace, or in the registry's own */
	CU_ASSERT_PTR_NULL(opd_domains_lookup(fx.d.domains, DP_DOMKEY_HOST_PID, XEN_DOMID, 0, 0,
					      &v));
	CU_ASSERT_EQUAL(v, -1);
	CU_ASSERT_PTR_NULL(opd_domains_lookup(fx.d.domains, 0x80000001u, XEN_DOMID, 0, 0, &v));
	CU_ASSERT_PTR_NULL(opd_domains_lookup(fx.d.domains, DP_DOMKEY_XEN_DOMID,
					      XEN_DOMID + (1ULL << 32), 0, 0, &v));
	CU_ASSERT_PTR_NULL(opd_domains_lookup_pid(fx.d.domains, XEN_DOMID, XEN_DOMID, &v));
	/* through the sample path: vCPU recorded, or by thread */
	tfx_put_ctx(&fx, 100, 100, DP_MODE_GUEST_KERNEL);
	CU_ASSERT(raw_put_domain_ns(fx.w, DP_DOMKEY_XEN_DOMID, XEN_DOMID, 1) == 0);
	samples(0xffffffff81000100ULL, 3);
	CU_ASSERT(raw_put_task(fx.w, 100, 901) == 0);
	CU_ASSERT(raw_put_domain_ns(fx.w, DP_DOMKEY_XEN_DOMID, XEN_DOMID, DP_RAW_VCPU_UNKNOWN) == 0);
	samples(0xffffffff81200000ULL, 2);
	/* the same number as a host pid is another domain: none here */
	CU_ASSERT(raw_put_domain(fx.w, XEN_DOMID, 0) == 0);
	samples(0xffffffff81000300ULL, 4);
	tfx_finish(&fx);
	CU_ASSERT(count_in(XG_KERN, 0xffffffff81000100ULL) == 3);
	CU_ASSERT(count_in(XG_KERN, 0xffffffff81200000ULL) == 2);
	CU_ASSERT(count_in(XG_KERN, 0xffffffff81000300ULL) == 0);
	CU_ASSERT(stat_key("unresolved_no_domain") == 4);
	tfx_teardown(&fx);
	dom_domain_free(fb.dom);
}

/*
 * A device model and a back-end thread that come after the domain (libxl
 * starts them after xenstore introduced it): the registry learns the new
 * keys from the change, and the late samples keyed by the device model's
 * pid after the domain stopped are still the domain's.
 */
static void test_registry_late_keys(void)
{
	const pid_t backend = XG_BACKEND;
	const struct opd_dom *d;
	int v;

	fake_xen_domain(0);
	CU_ASSERT_PTR_NULL(opd_domains_lookup(fx.d.domains, DP_DOMKEY_HOST_PID, XG_DM, 0, 0, &v));
	dom_domain_set_pid(fb.dom, XG_DM);
	dom_domain_set_helpers(fb.dom, &backend, 1);
	fb.change = true;
	tfx_scan(&fx);
	d = opd_domains_lookup(fx.d.domains, DP_DOMKEY_HOST_PID, XG_DM, 0, 0, &v);
	CU_ASSERT(d && !strcmp(d->name->name, "xg") && d->pid == XG_DM);
	/* its {vmm} work: the device model, the back-end thread */
	CU_ASSERT_PTR_EQUAL(opd_domains_lookup_pid(fx.d.domains, XG_DM, XG_DM + 1, &v), d);
	CU_ASSERT_EQUAL(v, -1);
	CU_ASSERT_PTR_EQUAL(opd_domains_lookup_pid(fx.d.domains, XG_BACKEND, XG_BACKEND, &v), d);
	/* a back-end thread keys no DOMAIN record */
	CU_ASSERT_PTR_NULL(opd_domains_lookup(fx.d.domains, DP_DOMKEY_HOST_PID, XG_BACKEND, 0, 0,
					      &v));
	fb.stop = true;
	tfx_scan(&fx);
	CU_ASSERT_STRING_EQUAL(info_key("xg", "state"), "stopped");
	/* stopped moments ago: its keys as it last declared them */
	d = opd_domains_lookup(fx.d.domains, DP_DOMKEY_HOST_PID, XG_DM, 0, 0, &v);
	CU_ASSERT(d && !strcmp(d->name->name, "xg") && !d->running);
	d = opd_domains_lookup(fx.d.domains, DP_DOMKEY_XEN_DOMID, XEN_DOMID, 0, 0, &v);
	CU_ASSERT(d && !strcmp(d->name->name, "xg") && !d->running);
	tfx_finish(&fx);
	tfx_teardown(&fx);
	dom_domain_free(fb.dom);
}

/* A QEMU process found after its domain was reported (libvirt: its pid
 * not in /proc yet), said with its vCPU threads: the registry keys the
 * domain by it from then on, its threads map to vCPUs. */
static void test_registry_pid_with_vcpus(void)
{
	const pid_t tids[2] = { 5001, 5002 };
	const struct opd_dom *d;
	int v;

	memset(&fb, 0, sizeof(fb));
	fb.dom = dom_domain_new("lv");
	CU_ASSERT_FATAL(fb.dom != NULL);
	setup_backend = &fake_backend;
	setup(NULL);
	setup_backend = NULL;
	tfx_scan(&fx);
	CU_ASSERT_STRING_EQUAL(info_key("lv", "state"), "running");
	CU_ASSERT_PTR_NULL(opd_domains_lookup(fx.d.domains, DP_DOMKEY_HOST_PID, 5000, 0, 0, &v));
	dom_domain_set_pid(fb.dom, 5000);
	CU_ASSERT(dom_domain_set_vcpus(fb.dom, tids, 2) == 0);
	fb.vcpus = true;
	tfx_scan(&fx);
	d = opd_domains_lookup(fx.d.domains, DP_DOMKEY_HOST_PID, 5000, DP_RAW_VCPU_UNKNOWN, 5002,
			       &v);
	CU_ASSERT(d && !strcmp(d->name->name, "lv") && d->pid == 5000 && v == 1);
	CU_ASSERT_PTR_EQUAL(opd_domains_lookup_pid(fx.d.domains, 5000, 5001, &v), d);
	CU_ASSERT_EQUAL(v, 0);
	tfx_finish(&fx);
	tfx_teardown(&fx);
	dom_domain_free(fb.dom);
}

/*
 * A Xen HVM domain has a device model (a host pid) when it is found, and
 * the xen collector keys its samples by domid: the samples it sends after
 * the domain stopped (a late look) are still the domain's, not "unknown".
 */
static void test_xen_late_samples(void)
{
	fake_xen_domain(XG_DM);
	tfx_put_ctx(&fx, 100, 100, DP_MODE_GUEST_KERNEL);
	CU_ASSERT(raw_put_domain_ns(fx.w, DP_DOMKEY_XEN_DOMID, XEN_DOMID, 0) == 0);
	samples(0xffffffff81000100ULL, 3);
	CU_ASSERT_FATAL(raw_writer_flush(fx.w) == 0);
	fb.stop = true;
	tfx_scan(&fx);
	CU_ASSERT_STRING_EQUAL(info_key("xg", "state"), "stopped");
	/* looked at before it stopped, filed after: by domid */
	CU_ASSERT(raw_put_domain_ns(fx.w, DP_DOMKEY_XEN_DOMID, XEN_DOMID, 0) == 0);
	samples(0xffffffff81000200ULL, 5);
	tfx_finish(&fx);
	CU_ASSERT(count_in(XG_KERN, 0xffffffff81000100ULL) == 3);
	CU_ASSERT(count_in(XG_KERN, 0xffffffff81000200ULL) == 5);
	CU_ASSERT(stat_key("unresolved_no_domain") == 0);
	tfx_teardown(&fx);
	dom_domain_free(fb.dom);
}

/* The registry's index: many owners (the table grows), a set replaced
 * whole, a key two owners claim (the later one wins until it goes). */
static void test_dkeys(void)
{
	static int owner[3000];
	static struct opd_dkey_set *set[3000];
	struct opd_dkeys ix;
	uint32_t ns[2] = { DP_DOMKEY_HOST_PID, DP_DOMKEY_XEN_DOMID };
	uint64_t key[2];
	int bad = 0;

	CU_ASSERT_FATAL(opd_dkeys_init(&ix) == 0);
	for (int i = 0; i < 3000; i++) {
		key[0] = 1000 + (uint64_t)i;
		key[1] = (uint64_t)i;
		CU_ASSERT_FATAL(opd_dkeys_put(&ix, &set[i], &owner[i], ns, key, 2) == 0);
	}
	for (int i = 0; i < 3000; i++)
		bad += opd_dkeys_find(&ix, DP_DOMKEY_HOST_PID, 1000 + (uint64_t)i) != &owner[i] ||
		       opd_dkeys_find(&ix, DP_DOMKEY_XEN_DOMID, (uint64_t)i) != &owner[i];
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT(ix.tab.mask + 1 >= 6000);
	CU_ASSERT_PTR_NULL(opd_dkeys_find(&ix, DP_DOMKEY_XEN_DOMID, 1000 + 3000));
	/* owner 5 now answers to another pid only */
	key[0] = 99999;
	CU_ASSERT(opd_dkeys_put(&ix, &set[5], &owner[5], ns, key, 1) == 0);
	CU_ASSERT_PTR_NULL(opd_dkeys_find(&ix, DP_DOMKEY_HOST_PID, 1005));
	CU_ASSERT_PTR_NULL(opd_dkeys_find(&ix, DP_DOMKEY_XEN_DOMID, 5));
	CU_ASSERT_PTR_EQUAL(opd_dkeys_find(&ix, DP_DOMKEY_HOST_PID, 99999), &owner[5]);
	/* owner 6 claims it too, then goes */
	CU_ASSERT(opd_dkeys_put(&ix, &set[6], &owner[6], ns, key, 1) == 0);
	CU_ASSERT_PTR_EQUAL(opd_dkeys_find(&ix, DP_DOMKEY_HOST_PID, 99999), &owner[6]);
	opd_dkeys_drop(&ix, &set[6]);
	CU_ASSERT_PTR_NULL(set[6]);
	CU_ASSERT_PTR_EQUAL(opd_dkeys_find(&ix, DP_DOMKEY_HOST_PID, 99999), &owner[5]);
	/* no keys at all */
	CU_ASSERT(opd_dkeys_put(&ix, &set[7], &owner[7], ns, key, 0) == 0);
	CU_ASSERT_PTR_NULL(set[7]);
	CU_ASSERT_PTR_NULL(opd_dkeys_find(&ix, DP_DOMKEY_HOST_PID, 1007));
	for (int i = 0; i < 3000; i++)
		opd_dkeys_drop(&ix, &set[i]);
	CU_ASSERT_EQUAL(ix.tab.count, 0);
	opd_dkeys_fini(&ix);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "guest and vmm samples of a domain", test_guest_and_vmm },
		{ "guest sample of no domain", test_unknown_domain },
		{ "--domains selection", test_selection },
		{ "removal closes files; info file", test_removal_and_info },
		{ "restart with another uuid", test_uuid_change },
		{ "a held name is not taken by a second process", test_name_hold },
		{ "replay: pid-<key> domains", test_replay_keeps_pid_names },
		{ "the registry's lookups by declared keys and vCPUs", test_registry_lookup },
		{ "keys declared late, kept after the stop", test_registry_late_keys },
		{ "a host pid found late, with the vCPUs", test_registry_pid_with_vcpus },
		{ "the registry's index of keys", test_dkeys },
		{ "a Xen HVM domain's late samples, by domid", test_xen_late_samples },
	};

	du_log_set_level(DU_LOG_WARN);
	return du_test_main("daemon domains", tests, DU_TEST_N(tests), NULL, NULL);
}
