/*
 * CUnit tests of the xenctrl backend's logic (dom_xen.c) over a fake Xen:
 * a domain list and a xenstore held in memory.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "domprof/raw.h"
#include "dom_backend.h"
#include "dom_testproc.h"
#include "dom_xen.h"
#include "util/du_test.h"

/* A fake proc tree for dom0's back-end threads (empty unless a test puts
 * threads in it), so that no test reads the machine's own /proc. */
static char proc_root[PATH_MAX];

#define FAKE_MAX 16

struct fake_xen {
	struct dom_xen_info doms[FAKE_MAX];
	size_t ndom;
	const char *keys[64], *vals[64];
	size_t nkv;
	int list_err;
	int *closed;
};

static int fake_list(void *src, struct dom_xen_info *out, size_t max)
{
	struct fake_xen *f = src;

	if (f->list_err)
		return f->list_err;
	for (size_t i = 0; i < f->ndom && i < max; i++)
		out[i] = f->doms[i];
	return (int)(f->ndom < max ? f->ndom : max);
}

static char *fake_read(void *src, const char *path)
{
	struct fake_xen *f = src;

	for (size_t i = 0; i < f->nkv; i++)
		if (strcmp(f->keys[i], path) == 0)
			return strdup(f->vals[i]);
	return NULL;
}

static int fake_events(void *src)
{
	return 0;
}

static int fake_fd(void *src)
{
	return -1;
}

static void fake_close(void *src)
{
	struct fake_xen *f = src;

	if (f && f->closed)
		(*f->closed)++;
}

static const struct dom_xen_src_ops fake_ops = {
	.list = fake_list, .read = fake_read, .events = fake_events,
	.fd = fake_fd, .close = fake_close,
};

static void fake_put(struct fake_xen *f, const char *k, const char *v)
{
	f->keys[f->nkv] = k;
	f->vals[f->nkv] = v;
	f->nkv++;
}

static void fake_dom(struct fake_xen *f, uint32_t domid, uint8_t tag, unsigned int nvcpu,
		     unsigned int flags)
{
	struct dom_xen_info *in = &f->doms[f->ndom++];

	memset(in, 0, sizeof(*in));
	in->domid = domid;
	memset(in->handle, tag, sizeof(in->handle));
	in->nr_vcpus = nvcpu;
	in->flags = flags;
}

static void fake_drop(struct fake_xen *f, uint32_t domid)
{
	for (size_t i = 0; i < f->ndom; i++) {
		if (f->doms[i].domid == domid) {
			f->doms[i] = f->doms[--f->ndom];
			return;
		}
	}
}

/* What the callbacks saw, as "+name" / "-name" / "~name" in order, and
 * the domains reported and not removed (what a registry would hold). */
struct seen {
	char log[512];
	const struct dom_domain *doms[FAKE_MAX];
	size_t n;
};

static void seen_add(struct seen *s, char c, const struct dom_domain *d)
{
	size_t l = strlen(s->log);

	snprintf(s->log + l, sizeof(s->log) - l, "%c%s ", c, dom_domain_name(d));
}

static void cb_added(void *ctx, const struct dom_domain *d)
{
	struct seen *s = ctx;

	seen_add(s, '+', d);
	CU_ASSERT_FATAL(s->n < FAKE_MAX);
	s->doms[s->n++] = d;
}

static void cb_removed(void *ctx, const struct dom_domain *d)
{
	struct seen *s = ctx;

	seen_add(s, '-', d);
	for (size_t i = 0; i < s->n; i++)
		if (s->doms[i] == d)
			s->doms[i] = s->doms[--s->n];
}

static void cb_vcpus(void *ctx, const struct dom_domain *d) { seen_add(ctx, '~', d); }
static void cb_changed(void *ctx, const struct dom_domain *d) { seen_add(ctx, '*', d); }

static const struct dom_ops cb_ops = {
	.added = cb_added, .removed = cb_removed, .vcpus_changed = cb_vcpus,
	.changed = cb_changed,
};

/* The reported domain that declared Xen domid @domid as its key. */
static const struct dom_domain *by_domid(const struct seen *s, uint64_t domid)
{
	for (size_t i = 0; i < s->n; i++)
		if (dom_domain_id_ns(s->doms[i]) == DP_DOMKEY_XEN_DOMID &&
		    dom_domain_id(s->doms[i]) == domid)
			return s->doms[i];
	return NULL;
}

/* Whether @d declares host thread @tid one of its helpers. */
static bool has_helper(const struct dom_domain *d, pid_t tid)
{
	const pid_t *tids;
	unsigned int n = dom_domain_helpers(d, &tids);

	for (unsigned int i = 0; i < n; i++)
		if (tids[i] == tid)
			return true;
	return false;
}

/* The reported domain whose device model or back-end thread @pid is. */
static const struct dom_domain *by_pid(const struct seen *s, pid_t pid)
{
	for (size_t i = 0; i < s->n && pid > 0; i++)
		if (dom_domain_pid(s->doms[i]) == pid || has_helper(s->doms[i], pid))
			return s->doms[i];
	return NULL;
}

/* What a recorded vCPU @vcpu of @d stands for (-1: no vCPU of it). */
static int rec_vcpu(const struct dom_domain *d, uint32_t vcpu)
{
	int v = -1;

	dom_vcpu_recorded(vcpu, dom_vcpu_limit(d), &v);
	return v;
}

static void *open_fake(struct fake_xen *f, const char *const *names)
{
	struct dom_config cfg = { .names = names, .proc_root = proc_root };
	void *st = NULL;

	CU_ASSERT_EQUAL_FATAL(dom_xen_open_src(&fake_ops, f, &cfg, &st), 0);
	return st;
}

static void lab_like(struct fake_xen *f)
{
	memset(f, 0, sizeof(*f));
	fake_dom(f, 0, 0, 2, 0);
	fake_dom(f, 1, 0xd1, 1, 0);
	fake_dom(f, 2, 0xe2, 2, 0);
	fake_put(f, "/local/domain/0/name", "Domain-0");
	fake_put(f, "/local/domain/1/name", "db");
	fake_put(f, "/local/domain/2/name", "web");
}

static void test_added_not_dom0(void)
{
	struct fake_xen f;
	struct seen s = { .n = 0 };
	const struct dom_domain *d;
	void *st;

	lab_like(&f);
	st = open_fake(&f, NULL);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web ");
	CU_ASSERT_EQUAL(s.n, 2);
	d = by_domid(&s, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_hypervisor(d), "xen");
	CU_ASSERT_EQUAL(dom_domain_id(d), 1);
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(d), "d1d1d1d1-d1d1-d1d1-d1d1-d1d1d1d1d1d1");
	CU_ASSERT_TRUE(dom_domain_has_uuid(d));
	CU_ASSERT_EQUAL(dom_domain_pid(d), 0);
	/* a second refresh with nothing new reports nothing */
	s.log[0] = '\0';
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "");
	dom_backend_xenctrl.close(st);
}

/* A Xen domain's keys and vCPUs as the backend declares them: the xen
 * collector's domid, the vCPU count Xen says (a recorded vCPU past it is
 * none); no host pid unless a device model runs. */
static void test_keys(void)
{
	struct fake_xen f;
	struct seen s = { .n = 0 };
	const struct dom_domain *d;
	void *st;

	lab_like(&f);
	st = open_fake(&f, NULL);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	d = by_domid(&s, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "web");
	CU_ASSERT_EQUAL(dom_domain_id_ns(d), DP_DOMKEY_XEN_DOMID);
	CU_ASSERT_TRUE(dom_domain_vcpus_exact(d));
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 2);
	CU_ASSERT_EQUAL(rec_vcpu(d, 1), 1);
	/* a vCPU the domain does not have, or none recorded */
	CU_ASSERT_EQUAL(rec_vcpu(d, 2), -1);
	CU_ASSERT_EQUAL(rec_vcpu(d, DP_RAW_VCPU_UNKNOWN), -1);
	/* Xen vCPUs run on no host thread */
	CU_ASSERT_EQUAL(dom_domain_vcpu_tid(d, 0), -1);
	CU_ASSERT_EQUAL(dom_domain_pid(d), 0);
	d = by_domid(&s, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "db");
	CU_ASSERT_EQUAL(rec_vcpu(d, 1), -1);
	/* dom0 is the host, not a domain */
	CU_ASSERT_PTR_NULL(by_domid(&s, 0));
	dom_backend_xenctrl.close(st);
}

/* xl destroy web; xl create web: a new domid and UUID, a removed then an
 * added; a domid reused for another domain is the same. */
static void test_recreate(void)
{
	struct fake_xen f;
	struct seen s = { .n = 0 };
	const struct dom_domain *d;
	void *st;

	lab_like(&f);
	st = open_fake(&f, NULL);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	s.log[0] = '\0';
	/* dying: gone already, while Xen still lists it */
	f.doms[2].flags |= DOM_XEN_F_DYING;
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "-web ");
	fake_drop(&f, 2);
	fake_dom(&f, 3, 0xe3, 1, 0);
	fake_put(&f, "/local/domain/3/name", "web");
	s.log[0] = '\0';
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+web ");
	CU_ASSERT_PTR_NULL(by_domid(&s, 2));
	d = by_domid(&s, 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(d), "e3e3e3e3-e3e3-e3e3-e3e3-e3e3e3e3e3e3");
	/* db's domid now names another domain (new handle) */
	memset(f.doms[1].handle, 0xaa, 16);
	s.log[0] = '\0';
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "-db +db ");
	dom_backend_xenctrl.close(st);
}

static void test_vcpus_state_errors(void)
{
	struct fake_xen f;
	struct seen s = { .n = 0 };
	const struct dom_domain *d;
	int closed = 0;
	void *st;

	lab_like(&f);
	f.closed = &closed;
	st = open_fake(&f, NULL);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	s.log[0] = '\0';
	f.doms[2].nr_vcpus = 4;
	f.doms[1].flags |= DOM_XEN_F_PAUSED;
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "~web ");
	d = by_domid(&s, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(rec_vcpu(d, 3), 3);
	d = by_domid(&s, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(dom_domain_state(d), DOM_STATE_PAUSED);
	/* a failing hypervisor call leaves the set as it was */
	f.list_err = -EPERM;
	s.log[0] = '\0';
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), -EPERM);
	CU_ASSERT_STRING_EQUAL(s.log, "");
	CU_ASSERT_PTR_NOT_NULL(by_domid(&s, 2));
	CU_ASSERT_EQUAL(rec_vcpu(by_domid(&s, 2), 3), 3);
	dom_backend_xenctrl.close(st);
	CU_ASSERT_EQUAL(closed, 1);
	dom_backend_xenctrl.close(NULL);
}

/* Names from xenstore (a new domain without one waits for it, then
 * xen-DOMID after 5 s: not tested here), the agent channel, the
 * device model's pid, and the selection. */
static void test_xenstore_facts(void)
{
	static const char *const only_web[] = { "web", NULL };
	struct fake_xen f;
	struct seen s = { .n = 0 };
	const struct dom_domain *d;
	void *st;

	lab_like(&f);
	fake_dom(&f, 5, 0x55, 1, 0);	/* no name in xenstore */
	fake_put(&f, "/local/domain/2/device/console/1/name", "org.other");
	fake_put(&f, "/local/domain/2/device/console/2/name", DOM_AGENT_PORT);
	fake_put(&f, "/local/domain/2/device/console/2/backend",
		 "/local/domain/0/backend/console/2/2");
	fake_put(&f, "/local/domain/0/backend/console/2/2/connection", "socket");
	fake_put(&f, "/local/domain/0/backend/console/2/2/path", "/run/domprof/web.agent");
	fake_put(&f, "/local/domain/1/image/device-model-pid", "4242");
	st = open_fake(&f, only_web);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	d = by_domid(&s, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_agent_path(d), "/run/domprof/web.agent");
	CU_ASSERT_TRUE(dom_domain_selected(d));
	d = by_domid(&s, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_PTR_NULL(dom_domain_agent_path(d));
	CU_ASSERT_FALSE(dom_domain_selected(d));
	/* its device model: a host pid key besides the domid */
	CU_ASSERT_EQUAL(dom_domain_pid(d), 4242);
	CU_ASSERT_EQUAL(dom_domain_id_ns(d), DP_DOMKEY_XEN_DOMID);
	CU_ASSERT_PTR_EQUAL(by_pid(&s, 4242), d);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 4243), -1);
	CU_ASSERT_PTR_NULL(by_pid(&s, 99));
	/* domain 5 has no name yet: being built (xl names it as it builds
	 * it), so it waits for its name instead of taking xen-5 */
	CU_ASSERT_PTR_NULL(by_domid(&s, 5));
	fake_put(&f, "/local/domain/5/name", "late");
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	d = by_domid(&s, 5);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "late");
	dom_backend_xenctrl.close(st);
}

/* libxl adds the channel and starts the device model after the domain is
 * introduced: a domain seen before them gets them at a later refresh (the
 * registry is told once), and a domain that never has them is looked at a
 * bounded number of times. */
static void test_late_channel(void)
{
	struct fake_xen f;
	struct seen s = { .n = 0 };
	const struct dom_domain *d;
	void *st;

	lab_like(&f);
	st = open_fake(&f, NULL);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web ");
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web ");
	fake_put(&f, "/local/domain/2/device/console/1/name", DOM_AGENT_PORT);
	fake_put(&f, "/local/domain/2/device/console/1/backend",
		 "/local/domain/0/backend/console/2/1");
	fake_put(&f, "/local/domain/0/backend/console/2/1/connection", "socket");
	fake_put(&f, "/local/domain/0/backend/console/2/1/path", "/run/domprof/web.agent");
	fake_put(&f, "/local/domain/2/image/device-model-pid", "777");
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web *web ");
	d = by_domid(&s, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(dom_domain_pid(d), 777);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dom_domain_agent_path(d));
	CU_ASSERT_STRING_EQUAL(dom_domain_agent_path(d), "/run/domprof/web.agent");
	/* nothing new: no more news */
	for (int i = 0; i < 100; i++)
		CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web *web ");
	/* db never got a channel; after the bounded looks one appearing is
	 * not seen (its next start is) */
	fake_put(&f, "/local/domain/1/device/console/1/name", DOM_AGENT_PORT);
	fake_put(&f, "/local/domain/1/device/console/1/backend",
		 "/local/domain/0/backend/console/1/1");
	fake_put(&f, "/local/domain/0/backend/console/1/1/connection", "socket");
	fake_put(&f, "/local/domain/0/backend/console/1/1/path", "/run/domprof/db.agent");
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web *web ");
	dom_backend_xenctrl.close(st);
}

/* /proc/PID/stat of a task named @comm with @flags (its ninth field). */
static void put_task(int pid, const char *comm, unsigned long flags)
{
	char path[PATH_MAX + 32], line[256];
	int n;

	tp_pathf(path, sizeof(path), "%s/%d", proc_root, pid);
	mkdir(path, 0755);
	tp_pathf(path, sizeof(path), "%s/%d/stat", proc_root, pid);
	n = snprintf(line, sizeof(line), "%d (%s) S 2 0 0 0 -1 %lu 0 0 0 0 0 0 0 0 20 0 1 0 5\n",
		     pid, comm, flags);
	tp_write_file(path, line, (size_t)n);
}

#define KTHREAD_FLAGS 0x208040UL	/* PF_KTHREAD | PF_NOFREEZE | PF_FORKNOEXEC */
#define USER_FLAGS 0x400100UL		/* PF_RANDOMIZE | PF_SUPERPRIV */

static void test_backend_names(void)
{
	uint32_t id = 0;

	CU_ASSERT_TRUE(dom_xenback_domid("4.xvda-0", &id) && id == 4);
	CU_ASSERT_TRUE(dom_xenback_domid("12345.xvdaa-1", &id) && id == 12345);
	CU_ASSERT_TRUE(dom_xenback_domid("blkback.12.xvda", &id) && id == 12);
	CU_ASSERT_TRUE(dom_xenback_domid("blkback.3.xvdb-", &id) && id == 3);
	CU_ASSERT_TRUE(dom_xenback_domid("vif7.0-q0-guest", &id) && id == 7);
	CU_ASSERT_TRUE(dom_xenback_domid("vif7.1-dealloc", &id) && id == 7);
	CU_ASSERT_TRUE(dom_xenback_domid("vif1.0-q0-guest-rx", &id) && id == 1);	/* whole */
	CU_ASSERT_TRUE(dom_xenback_domid("vif32751.0-q0-g", &id) && id == 32751);
	id = 99;
	CU_ASSERT_FALSE(dom_xenback_domid("vif0.0-q0-guest", &id));	/* dom0 */
	CU_ASSERT_FALSE(dom_xenback_domid("vif32752.0", &id));	/* reserved */
	CU_ASSERT_FALSE(dom_xenback_domid("vif07.0", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("vif.0", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("vif123456.0", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("blkback.3", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("blkback.x.xvda", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("virtio0", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("kworker/0:1", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("4.0-q0", &id));	/* no letter after the dot */
	CU_ASSERT_FALSE(dom_xenback_domid("4.", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("0.xvda-0", &id));
	CU_ASSERT_FALSE(dom_xenback_domid("4xvda", &id));
	CU_ASSERT_EQUAL(id, 99);
}

/* dom0's blkback and netback threads are their domain's: found by name
 * among kernel threads only, followed as they come and go (the registry
 * told: changed), and looked up like the device model. */
static void test_backend_threads(void)
{
	struct fake_xen f;
	struct seen s = { .n = 0 };
	const struct dom_domain *d;
	const pid_t *tids;
	void *st;

	lab_like(&f);
	put_task(300, "2.xvda-0", KTHREAD_FLAGS);
	put_task(301, "vif2.0-q0-guest", KTHREAD_FLAGS);
	put_task(302, "blkback.1.xvda", USER_FLAGS);	/* a process naming itself */
	put_task(303, "vif9.0-q0-guest", KTHREAD_FLAGS);	/* no such domain */
	put_task(304, "kworker/0:1", KTHREAD_FLAGS);
	put_task(305, "blkback.1.x) S", KTHREAD_FLAGS);	/* ')' in the name */
	put_task(307, "vif2.0-q0-dealloc", KTHREAD_FLAGS);	/* a whole name */
	st = open_fake(&f, NULL);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web ");
	d = by_pid(&s, 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "web");
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 300), -1);
	d = by_pid(&s, 301);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "web");
	CU_ASSERT_EQUAL(dom_domain_helpers(d, &tids), 3);
	d = by_pid(&s, 305);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "db");
	CU_ASSERT_PTR_NULL(by_pid(&s, 302));
	CU_ASSERT_PTR_NULL(by_pid(&s, 303));
	CU_ASSERT_PTR_NULL(by_pid(&s, 304));
	/* nothing new: nothing said */
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web ");
	/* web's disk goes, db gets one */
	tp_kill(proc_root, 300);
	put_task(306, "blkback.1.xvdb", KTHREAD_FLAGS);
	CU_ASSERT_EQUAL(dom_backend_xenctrl.refresh(st, &cb_ops, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.log, "+db +web *db *web ");
	CU_ASSERT_PTR_NULL(by_pid(&s, 300));
	d = by_pid(&s, 306);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "db");
	CU_ASSERT_EQUAL(dom_domain_helpers(d, &tids), 2);
	for (int pid = 301; pid <= 307; pid++)
		tp_kill(proc_root, pid);
	dom_backend_xenctrl.close(st);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "added, dom0 left out", test_added_not_dom0 },
		{ "keys and vCPUs declared", test_keys },
		{ "destroyed and created again", test_recreate },
		{ "vCPUs, state, errors", test_vcpus_state_errors },
		{ "names, agent channel, device model, selection", test_xenstore_facts },
		{ "a channel and device model that come late", test_late_channel },
		{ "back-end thread names", test_backend_names },
		{ "dom0's back-end threads are their domain's", test_backend_threads },
	};
	int rc;

	snprintf(proc_root, sizeof(proc_root), "/tmp/test_dom_xen.XXXXXX");
	if (!mkdtemp(proc_root))
		return 1;
	rc = du_test_main("dom_xen", tests, DU_TEST_N(tests), NULL, NULL);
	rmdir(proc_root);
	return rc;
}
