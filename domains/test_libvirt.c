/*
 * Tests for the libvirt backend against libvirt's own test driver
 * (test:///default: an in-process hypervisor with one running domain,
 * "test", that emits real lifecycle and metadata events), with a fake
 * /proc tree and pid-file directory standing in for its QEMU process.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>
#include <libvirt/libvirt.h>

#include "dom_backend.h"
#include "dom_libvirt.h"
#include "domprof/raw.h"
#include "dom_lvxml.h"
#include "dom_testproc.h"
#include "util/du_test.h"
#include "util/du_fs.h"

#define TEST_URI "test:///default"
#define TEST_UUID "6695eb01-f6a4-8304-79aa-97f2502e193f"
#define TEST_PID 4242

static char root[64], proc[96], piddir[96];

/* What the backend reported: counts, the last added domain's facts, and
 * the domains added and not removed since. */
struct seen {
	int added, removed, changed;
	unsigned int what;
	char name[64];
	pid_t pid;
	bool selected;
	const struct lvdom *live[4];
	int nr_live;
};

static void on_added(void *ctx, const struct lvdom *d)
{
	struct seen *s = ctx;

	s->added++;
	snprintf(s->name, sizeof(s->name), "%s", dom_lv_dom_name(d));
	s->pid = dom_lv_dom_pid(d);
	s->selected = dom_lv_dom_selected(d);
	CU_ASSERT_FATAL(s->nr_live < (int)(sizeof(s->live) / sizeof(s->live[0])));
	s->live[s->nr_live++] = d;
}

/* A removed domain must be one reported added and not removed yet. */
static void on_removed(void *ctx, const struct lvdom *d)
{
	struct seen *s = ctx;
	int i;

	s->removed++;
	for (i = 0; i < s->nr_live && s->live[i] != d; i++)
		;
	CU_ASSERT_FATAL(i < s->nr_live);
	s->live[i] = s->live[--s->nr_live];
}

static void on_changed(void *ctx, const struct lvdom *d, unsigned int what)
{
	struct seen *s = ctx;

	s->changed++;
	s->what |= what;
	s->selected = dom_lv_dom_selected(d);
}

static const struct dom_lv_ops ops = {
	.added = on_added, .removed = on_removed, .changed = on_changed,
};

/* The domain reported (added, not removed) whose QEMU is @pid; NULL if
 * none. */
static const struct lvdom *find(const struct seen *s, pid_t pid)
{
	for (int i = 0; i < s->nr_live; i++)
		if (dom_lv_dom_pid(s->live[i]) == pid)
			return s->live[i];
	return NULL;
}

static int rm_tree(void)
{
	return du_rm_tree(root);
}

/* A fresh tree for each test: the test domain's QEMU with two vCPUs. */
static void make_tree(void)
{
	char p[256], cmd[256];
	int n;

	if (root[0])
		rm_tree();
	snprintf(root, sizeof(root), "/tmp/test_libvirt.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(piddir, sizeof(piddir), "%s/run", root);
	CU_ASSERT_FATAL(mkdir(proc, 0755) == 0 && mkdir(piddir, 0755) == 0);
	snprintf(p, sizeof(p), "%s/%d", proc, TEST_PID);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/%d/task", proc, TEST_PID);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	n = snprintf(cmd, sizeof(cmd), "/usr/bin/qemu-system-x86_64%c-name%cguest=test,"
		     "debug-threads=on%c-uuid%c" TEST_UUID "%c", 0, 0, 0, 0, 0);
	snprintf(p, sizeof(p), "%s/%d/cmdline", proc, TEST_PID);
	tp_write_file(p, cmd, (size_t)n);
	snprintf(p, sizeof(p), "%s/test.pid", piddir);
	tp_write_file(p, "4242", 4);
	tp_thread(proc, TEST_PID, TEST_PID, "qemu-system-x86");
	tp_thread(proc, TEST_PID, TEST_PID + 1, "CPU 0/KVM");
	tp_thread(proc, TEST_PID, TEST_PID + 2, "CPU 1/KVM");
}

static int teardown(void)
{
	return root[0] ? rm_tree() : 0;
}

/* Wait (bounded) for the backend's fd, then refresh. */
static int pump(struct dom_lv *lv, struct seen *s, int ms)
{
	struct pollfd pfd = { .fd = dom_lv_fd(lv), .events = POLLIN };

	poll(&pfd, 1, ms);
	return dom_lv_refresh(lv, &ops, s);
}

static void test_lifecycle(void)
{
	struct dom_lv_config cfg = { .uri = TEST_URI, .proc_root = proc, .pid_dir = piddir };
	struct seen s = { 0 };
	const struct lvdom *d;
	virConnectPtr c;
	virDomainPtr dom;
	struct dom_lv *lv;

	make_tree();
	CU_ASSERT_EQUAL_FATAL(dom_lv_open(&cfg, &lv), 0);
	CU_ASSERT_EQUAL(dom_lv_refresh(lv, &ops, &s), 1);
	CU_ASSERT_EQUAL(s.added, 1);
	CU_ASSERT_STRING_EQUAL(s.name, "test");
	CU_ASSERT_EQUAL(s.pid, TEST_PID);
	CU_ASSERT(!s.selected);		/* no metadata, no --domains */
	/* which thread runs which vCPU: test_backend_ops and
	 * test_backend_restart, on the domain the daemon is given */
	d = find(&s, TEST_PID);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_lv_dom_uuid(d), TEST_UUID);
	CU_ASSERT_EQUAL(dom_lv_dom_nr_vcpus(d), 2);
	CU_ASSERT_STRING_EQUAL(dom_lv_dom_state(d), "running");
	CU_ASSERT_PTR_NULL(find(&s, TEST_PID + 9));

	/* a second client of the same (shared) test hypervisor drives it */
	c = virConnectOpen(TEST_URI);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	dom = virDomainLookupByName(c, "test");
	CU_ASSERT_PTR_NOT_NULL_FATAL(dom);

	/* metadata on: followed through the metadata-change event */
	CU_ASSERT_EQUAL(virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT,
					     dom_lvxml_profile_element(true), DOM_LV_NS_PREFIX,
					     DOM_LV_NS_URI, VIR_DOMAIN_AFFECT_LIVE), 0);
	for (int i = 0; i < 20 && !s.changed; i++)
		pump(lv, &s, 100);
	CU_ASSERT_EQUAL(s.changed, 1);
	CU_ASSERT(s.what & DOM_LV_CHANGED_SELECTED);
	CU_ASSERT(s.selected);
	/* another tool's element changes nothing of ours */
	CU_ASSERT_EQUAL(virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, "<x/>", "other",
					     "https://example.invalid/x", VIR_DOMAIN_AFFECT_LIVE), 0);
	pump(lv, &s, 300);
	CU_ASSERT_EQUAL(s.changed, 1);
	/* and off again */
	CU_ASSERT_EQUAL(virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT,
					     dom_lvxml_profile_element(false), DOM_LV_NS_PREFIX,
					     DOM_LV_NS_URI, VIR_DOMAIN_AFFECT_LIVE), 0);
	for (int i = 0; i < 20 && s.changed < 2; i++)
		pump(lv, &s, 100);
	CU_ASSERT_EQUAL(s.changed, 2);
	CU_ASSERT(!s.selected);

	/* stop: removed; start: added again with a new libvirt id */
	CU_ASSERT_EQUAL(virDomainDestroy(dom), 0);
	for (int i = 0; i < 20 && !s.removed; i++)
		pump(lv, &s, 100);
	CU_ASSERT_EQUAL(s.removed, 1);
	CU_ASSERT_EQUAL(s.nr_live, 0);
	CU_ASSERT_EQUAL(virDomainCreate(dom), 0);
	for (int i = 0; i < 20 && s.added < 2; i++)
		pump(lv, &s, 100);
	CU_ASSERT_EQUAL(s.added, 2);
	CU_ASSERT_EQUAL(s.removed, 1);
	d = find(&s, TEST_PID);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(dom_lv_dom_nr_vcpus(d), 2);

	virDomainFree(dom);
	virConnectClose(c);
	dom_lv_close(lv);
}

static void test_selection_and_pid(void)
{
	static const char *const names[] = { "TEST", TEST_UUID, NULL };
	struct dom_lv_config cfg = {
		.uri = TEST_URI, .proc_root = proc, .pid_dir = "/nonexistent", .names = names,
	};
	struct seen s = { 0 };
	struct dom_lv *lv;
	char p[256];

	make_tree();
	/* named by UUID in --domains: selected without metadata; no pid file,
	 * but /proc has the QEMU with its -uuid */
	CU_ASSERT_EQUAL_FATAL(dom_lv_open(&cfg, &lv), 0);
	dom_lv_refresh(lv, &ops, &s);
	CU_ASSERT_EQUAL(s.added, 1);
	CU_ASSERT(s.selected);
	CU_ASSERT_EQUAL(s.pid, TEST_PID);
	dom_lv_close(lv);

	/* a pid file naming a process with another -uuid is not believed */
	memset(&s, 0, sizeof(s));
	cfg.names = NULL;
	cfg.select_all = true;
	cfg.pid_dir = piddir;
	snprintf(p, sizeof(p), "%s/%d/cmdline", proc, TEST_PID);
	tp_write_file(p, "qemu-system-x86_64\0-uuid\0" "11111111-2222-4333-8444-555555555555",
		      62);
	CU_ASSERT_EQUAL_FATAL(dom_lv_open(&cfg, &lv), 0);
	dom_lv_refresh(lv, &ops, &s);
	CU_ASSERT_EQUAL(s.added, 1);
	CU_ASSERT(s.selected);
	CU_ASSERT_EQUAL(s.pid, 0);
	CU_ASSERT_PTR_NULL(find(&s, TEST_PID));
	dom_lv_close(lv);
}

/* Issue 23 item 7: whatever names the QEMU (its pid file, its -uuid), a
 * process of a user other than root and the hypervisor's is not it; and
 * the listener rule is the backend's property, not its name's. */
static void test_qemu_owner(void)
{
	static const uid_t vm_uid[] = { 64055 };
	struct dom_lv_config cfg = { .uri = TEST_URI, .proc_root = proc, .pid_dir = piddir,
				     .select_all = true, .check_identity = true,
				     .vm_uids = vm_uid, .nr_vm_uids = 1 };
	static const char *const uids[] = { "1000\t1000\t1000\t1000", "0\t0\t0\t0",
					    "64055\t64055\t64055\t64055", "0\t1000\t0\t0" };
	static const pid_t want[] = { 0, TEST_PID, TEST_PID, 0 };

	for (size_t i = 0; i < sizeof(uids) / sizeof(uids[0]); i++) {
		struct seen s = { 0 };
		struct dom_lv *lv;
		char p[256], st[128];
		int n;

		make_tree();
		snprintf(p, sizeof(p), "%s/%d/status", proc, TEST_PID);
		n = snprintf(st, sizeof(st), "Name:\tqemu\nUid:\t%s\nGid:\t0\t0\t0\t0\n", uids[i]);
		tp_write_file(p, st, (size_t)n);
		CU_ASSERT_EQUAL_FATAL(dom_lv_open(&cfg, &lv), 0);
		dom_lv_refresh(lv, &ops, &s);
		CU_ASSERT_EQUAL(s.added, 1);
		CU_ASSERT_EQUAL(s.pid, want[i]);
		dom_lv_close(lv);
	}
	CU_ASSERT(dom_backend_libvirt.agent_root_listener);
	CU_ASSERT(!dom_backend_procfs.agent_root_listener);
}

/* What the daemon sees: the domain-backend ops and dom_ops. */
struct bseen {
	int added, removed, vcpus, changed;
	bool selected;
	const struct dom_domain *d;
};

static void b_added(void *ctx, const struct dom_domain *d)
{
	struct bseen *s = ctx;

	s->added++;
	s->d = d;
	s->selected = dom_domain_selected(d);
}

static void b_removed(void *ctx, const struct dom_domain *d)
{
	struct bseen *s = ctx;

	(void)d;
	s->removed++;
	s->d = NULL;
}

static void b_vcpus(void *ctx, const struct dom_domain *d)
{
	(void)d;
	((struct bseen *)ctx)->vcpus++;
}

static void b_changed(void *ctx, const struct dom_domain *d)
{
	struct bseen *s = ctx;

	s->changed++;
	s->selected = dom_domain_selected(d);
}

static const struct dom_ops bops = {
	.added = b_added, .removed = b_removed, .vcpus_changed = b_vcpus, .changed = b_changed,
};

/* Refresh backend @be's @st whenever its fd says, until *@count (a
 * counter of @s) is @want, or 2 s passed. */
static void be_pump(const struct dom_backend_ops *be, void *st, struct bseen *s,
		    const int *count, int want)
{
	for (int i = 0; i < 20 && *count != want; i++) {
		struct pollfd pfd = { .fd = be->fd(st), .events = POLLIN };

		poll(&pfd, 1, 100);
		be->refresh(st, &bops, s);
	}
}

static void test_backend_ops(void)
{
	struct dom_config cfg = { .proc_root = NULL, .libvirt_uri = TEST_URI };
	const struct dom_backend_ops *be = dom_backend_find("libvirt");
	struct bseen s = { 0 };
	virConnectPtr c;
	virDomainPtr dom;
	void *st;
	int vcpu;

	make_tree();
	CU_ASSERT_PTR_NOT_NULL_FATAL(be);
	cfg.proc_root = proc;
	CU_ASSERT_EQUAL_FATAL(be->open(&cfg, &st), 0);
	CU_ASSERT(be->fd(st) >= 0);
	CU_ASSERT_EQUAL(be->refresh(st, &bops, &s), 0);
	CU_ASSERT_EQUAL_FATAL(s.added, 1);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(s.d), "test");
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(s.d), TEST_UUID);
	CU_ASSERT(dom_domain_has_uuid(s.d));
	CU_ASSERT_STRING_EQUAL(dom_domain_hypervisor(s.d), "qemu");
	CU_ASSERT(dom_domain_id(s.d) > 0);
	/* the test driver has no pid file under /run: /proc gives the pid */
	CU_ASSERT_EQUAL(dom_domain_pid(s.d), TEST_PID);
	/* its keys: the host pid alone (libvirt's id keys no records) */
	CU_ASSERT_EQUAL(dom_domain_id_ns(s.d), DOM_ID_NS_NONE);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(s.d, TEST_PID + 2), 1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(s.d, TEST_PID), -1);
	/* a recorded vCPU wins over the thread's; one no domain can have is
	 * no vCPU, as with every backend (the thread's is not kept) */
	CU_ASSERT_FALSE(dom_domain_vcpus_exact(s.d));
	vcpu = 1;
	dom_vcpu_recorded(0, dom_vcpu_limit(s.d), &vcpu);
	CU_ASSERT_EQUAL(vcpu, 0);
	dom_vcpu_recorded(DOM_VCPU_MAX, dom_vcpu_limit(s.d), &vcpu);
	CU_ASSERT_EQUAL(vcpu, -1);
	/* whatever metadata the last test left: set it on, then off */
	c = virConnectOpen(TEST_URI);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	dom = virDomainLookupByName(c, "test");
	CU_ASSERT_PTR_NOT_NULL_FATAL(dom);
	for (int on = 1; on >= 0; on--) {
		int before = s.changed;

		CU_ASSERT_EQUAL(virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT,
						     dom_lvxml_profile_element(on), DOM_LV_NS_PREFIX,
						     DOM_LV_NS_URI, VIR_DOMAIN_AFFECT_LIVE), 0);
		be_pump(be, st, &s, &s.changed, before + 1);
		CU_ASSERT_EQUAL(s.changed, before + 1);
		CU_ASSERT_EQUAL(s.selected, on);
		CU_ASSERT_EQUAL(dom_domain_selected(s.d), on);
	}
	CU_ASSERT_EQUAL(s.removed, 0);
	virDomainFree(dom);
	virConnectClose(c);
	be->close(st);
	be->close(NULL);
}

/* Stopped, then started again: the domain the daemon was given is
 * removed, and the new one declares its QEMU's pid and which of its
 * threads runs which vCPU. */
static void test_backend_restart(void)
{
	struct dom_config cfg = { .proc_root = proc, .libvirt_uri = TEST_URI };
	const struct dom_backend_ops *be = &dom_backend_libvirt;
	struct bseen s = { 0 };
	virConnectPtr c;
	virDomainPtr dom;
	void *st;

	make_tree();
	CU_ASSERT_EQUAL_FATAL(be->open(&cfg, &st), 0);
	CU_ASSERT_EQUAL(be->refresh(st, &bops, &s), 0);
	CU_ASSERT_EQUAL_FATAL(s.added, 1);
	c = virConnectOpen(TEST_URI);
	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	dom = virDomainLookupByName(c, "test");
	CU_ASSERT_PTR_NOT_NULL_FATAL(dom);
	CU_ASSERT_EQUAL(virDomainDestroy(dom), 0);
	be_pump(be, st, &s, &s.removed, 1);
	CU_ASSERT_EQUAL(s.removed, 1);
	CU_ASSERT_PTR_NULL(s.d);
	CU_ASSERT_EQUAL(virDomainCreate(dom), 0);
	be_pump(be, st, &s, &s.added, 2);
	CU_ASSERT_EQUAL_FATAL(s.added, 2);
	CU_ASSERT_EQUAL(s.removed, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s.d);
	CU_ASSERT_EQUAL(dom_domain_pid(s.d), TEST_PID);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(s.d, TEST_PID + 1), 0);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(s.d, TEST_PID + 2), 1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(s.d, TEST_PID), -1);
	virDomainFree(dom);
	virConnectClose(c);
	be->close(st);
}

static void test_no_libvirtd(void)
{
	struct dom_lv_config cfg = { .uri = "qemu+unix:///system?socket=/nonexistent/sock" };
	struct dom_lv *lv = (struct dom_lv *)1;

	CU_ASSERT_EQUAL(dom_lv_open(&cfg, &lv), -ECONNREFUSED);
	CU_ASSERT_PTR_NULL(lv);
	dom_lv_close(NULL);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "lifecycle and metadata events", test_lifecycle },
		{ "selection, pid file checked", test_selection_and_pid },
		{ "a QEMU of another user is not the domain's", test_qemu_owner },
		{ "backend ops", test_backend_ops },
		{ "backend ops: a restart", test_backend_restart },
		{ "no libvirtd", test_no_libvirtd },
	};

	return du_test_main("libvirt backend", tests, DU_TEST_N(tests), NULL, teardown);
}
