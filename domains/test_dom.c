/*
 * Tests for domains/: the command-line parsers on their own, and the
 * procfs backend against fake proc trees built in a temporary directory.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CUnit/CUnit.h>

#include "dom_backend.h"
#include "dom_proc.h"
#include "dom_procfs.h"
#include "domprof/raw.h"
#include "dom_testproc.h"
#include "dom_cmdline.h"
#include "util/du_test.h"
#include "util/du_fs.h"

#define UUID_WEB "6e0d3ac2-5f1b-4c9e-9a7d-0b1c2d3e4f50"
#define AGENT_WEB "/var/lib/libvirt/qemu/channel/target/domain-1-web/org.domprof.agent.0"

static char root[64];

/* ---- fake proc tree ----------------------------------------------------- */

static void fake_stat(int pid, char state, unsigned long long start)
{
	char p[256], s[256];

	tp_pathf(p, sizeof(p), "%s/%d/stat", root, pid);
	/* A comm with ") " in it: fields are counted from the last ')'. */
	tp_pathf(s, sizeof(s),
	      "%d (x) y) %c 1 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n",
	      pid, state, start);
	tp_write_file(p, s, strlen(s));
}

/*
 * A process @pid: @exe the target of its exe link (NULL: none, as for a
 * kernel thread or an unreadable link), @comm, and @cmdline of @len bytes.
 */
static void fake_proc(int pid, const char *exe, const char *comm,
		      const char *cmdline, size_t len)
{
	char p[256];

	tp_pathf(p, sizeof(p), "%s/%d", root, pid);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	tp_pathf(p, sizeof(p), "%s/%d/task", root, pid);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	if (exe) {
		tp_pathf(p, sizeof(p), "%s/%d/exe", root, pid);
		CU_ASSERT_FATAL(symlink(exe, p) == 0);
	}
	tp_pathf(p, sizeof(p), "%s/%d/cmdline", root, pid);
	tp_write_file(p, cmdline, len);
	tp_pathf(p, sizeof(p), "%s/%d/comm", root, pid);
	tp_write_file(p, comm, strlen(comm));
	tp_thread(root, pid, pid, comm);
}

/* NUL-joined argv, as /proc/PID/cmdline holds it. */
static size_t join_argv(char *buf, size_t size, const char *const *argv)
{
	size_t n = 0;

	for (; *argv; argv++) {
		size_t l = strlen(*argv) + 1;

		CU_ASSERT_FATAL(n + l <= size);
		memcpy(buf + n, *argv, l);
		n += l;
	}
	return n;
}

static void fake_qemu(int pid, const char *const *argv)
{
	char buf[8192];
	size_t n = join_argv(buf, sizeof(buf), argv);

	fake_proc(pid, "/usr/bin/qemu-system-x86_64", "qemu-system-x86", buf, n);
}

static int setup(void)
{
	strcpy(root, "/tmp/test_dom.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

static void reset_root(void)
{
	CU_ASSERT_FATAL(du_rm_tree(root) == 0);
	CU_ASSERT_FATAL(mkdir(root, 0700) == 0);
}

static int teardown(void)
{
	return du_rm_tree(root);
}

/* ---- callback recorder ------------------------------------------------ */

struct event {
	char kind;	/* '+', '-', '~' */
	int pid;
	char name[64];
};

struct refusals {
	int n;
	int pid[8];
	char name[8][32];
};

/* What the backend reported, which is all the daemon's registry learns of
 * its domains: each event, the domains added and not removed since, and
 * the processes refused. */
struct recorder {
	struct event ev[512];
	int n;
	const struct dom_domain *last_added;
	const struct dom_domain *live[512];
	int nr_live;
	struct refusals refused;
};

static void rec(struct recorder *r, char kind, const struct dom_domain *d)
{
	CU_ASSERT_FATAL(r->n < (int)(sizeof(r->ev) / sizeof(r->ev[0])));
	r->ev[r->n].kind = kind;
	r->ev[r->n].pid = (int)dom_domain_pid(d);
	snprintf(r->ev[r->n].name, sizeof(r->ev[r->n].name), "%s",
		 dom_domain_name(d));
	r->n++;
}

static void on_added(void *ctx, const struct dom_domain *d)
{
	struct recorder *r = ctx;

	rec(r, '+', d);
	r->last_added = d;
	CU_ASSERT_FATAL(r->nr_live < (int)(sizeof(r->live) / sizeof(r->live[0])));
	r->live[r->nr_live++] = d;
}

/* A removed domain must be one reported added and not removed yet. */
static void on_removed(void *ctx, const struct dom_domain *d)
{
	struct recorder *r = ctx;
	int i;

	rec(r, '-', d);
	for (i = 0; i < r->nr_live && r->live[i] != d; i++)
		;
	CU_ASSERT_FATAL(i < r->nr_live);
	r->live[i] = r->live[--r->nr_live];
}

static void on_vcpus(void *ctx, const struct dom_domain *d) { rec(ctx, '~', d); }

static void on_refused(void *ctx, pid_t pid, const char *name, const char *why)
{
	struct refusals *r = &((struct recorder *)ctx)->refused;

	(void)why;
	CU_ASSERT_FATAL(r->n < 8);
	r->pid[r->n] = (int)pid;
	snprintf(r->name[r->n], sizeof(r->name[0]), "%s", name);
	r->n++;
}

static const struct dom_ops rec_ops = {
	.added = on_added, .removed = on_removed, .vcpus_changed = on_vcpus,
	.refused = on_refused,
};

static struct dom_table *new_table(const char *const *names)
{
	struct dom_config cfg = { .proc_root = root, .names = names };
	struct dom_table *t = dom_table_new(&cfg);

	CU_ASSERT_FATAL(t != NULL);
	return t;
}

/* The domain reported (added, not removed) whose host process is @pid,
 * its DP_DOMKEY_HOST_PID key; NULL if none.  Two would share a key. */
static const struct dom_domain *find(const struct recorder *r, int pid)
{
	const struct dom_domain *d = NULL;

	for (int i = 0; i < r->nr_live; i++) {
		if (dom_domain_pid(r->live[i]) != pid)
			continue;
		CU_ASSERT_PTR_NULL(d);
		d = r->live[i];
	}
	return d;
}

/* ---- pure parsers ------------------------------------------------------ */

static void test_vcpu_comm(void)
{
	static const struct { const char *s; bool ok; unsigned int v; } c[] = {
		{ "CPU 0/KVM\n", true, 0 },
		{ "CPU 0/KVM", true, 0 },
		{ "CPU 17/KVM\n", true, 17 },
		{ "CPU 4095/KVM\n", true, 4095 },
		{ "CPU 4096/KVM\n", false, 0 },
		{ "CPU 99999999999999/KVM\n", false, 0 },
		{ "CPU 01/KVM\n", false, 0 },
		{ "CPU /KVM\n", false, 0 },
		{ "CPU -1/KVM\n", false, 0 },
		{ "CPU 1/TCG\n", false, 0 },
		{ "CPU 1/KVMx\n", false, 0 },
		{ "CPU 1/KVM\n\n", false, 0 },
		{ "cpu 1/KVM\n", false, 0 },
		{ "qemu-system-x86\n", false, 0 },
		{ "", false, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		unsigned int v = 12345;
		bool ok = dom_parse_vcpu_comm(c[i].s, strlen(c[i].s), &v);

		CU_ASSERT_EQUAL(ok, c[i].ok);
		if (ok && c[i].ok)
			CU_ASSERT_EQUAL(v, c[i].v);
	}
}

/* The vCPU map the procfs and libvirt backends build from thread names. */
static void test_vcpu_map_add(void)
{
	pid_t *map = NULL;
	unsigned int cap = 0, nr = 0;

	CU_ASSERT(dom_vcpu_map_add(&map, &cap, &nr, 2, 300) == 0);
	CU_ASSERT(nr == 3 && cap >= 3);
	CU_ASSERT(map[0] == -1 && map[1] == -1 && map[2] == 300);
	/* two threads claim index 2: the lower tid, whatever the order */
	CU_ASSERT(dom_vcpu_map_add(&map, &cap, &nr, 2, 200) == 0);
	CU_ASSERT(dom_vcpu_map_add(&map, &cap, &nr, 2, 250) == 0);
	CU_ASSERT(map[2] == 200);
	CU_ASSERT(dom_vcpu_map_add(&map, &cap, &nr, 0, 100) == 0);
	CU_ASSERT(nr == 3 && map[0] == 100);
	/* grown past the first size; new slots empty */
	CU_ASSERT(dom_vcpu_map_add(&map, &cap, &nr, 40, 4000) == 0);
	CU_ASSERT(nr == 41 && cap > 40);
	CU_ASSERT(map[39] == -1 && map[40] == 4000 && map[2] == 200);
	free(map);
}

static void test_uuid_parse(void)
{
	static const struct { const char *s; const char *out; } c[] = {
		{ "6E0D3AC2-5F1B-4C9E-9A7D-0B1C2D3E4F50", UUID_WEB },
		{ UUID_WEB, UUID_WEB },
		{ "6e0d3ac2-5f1b-4c9e-9a7d-0b1c2d3e4f5", "" },
		{ "6e0d3ac2-5f1b-4c9e-9a7d-0b1c2d3e4f500", "" },
		{ "6e0d3ac2-5f1b-4c9e-9a7d-0b1c2d3e4f5g", "" },
		{ "6e0d3ac2x5f1b-4c9e-9a7d-0b1c2d3e4f50", "" },
		{ "6e0d3ac25f1b4c9e9a7d0b1c2d3e4f50----", "" },
		{ "1234", "" },
		{ "", "" },
	};
	char out[DOM_UUID_STRLEN + 1];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		bool ok = dom_uuid_parse(c[i].s, strlen(c[i].s), out);

		CU_ASSERT_EQUAL(ok, c[i].out[0] != '\0');
		CU_ASSERT_STRING_EQUAL(out, c[i].out);
	}
}

static void test_qemu_names(void)
{
	static const struct { const char *s; bool ok; } p[] = {
		{ "/usr/bin/qemu-system-x86_64", true },
		{ "/usr/bin/qemu-system-x86_64 (deleted)", true },
		{ "/usr/libexec/qemu-kvm", true },
		{ "/usr/libexec/qemu-kvm (deleted)", true },
		{ "/usr/libexec/qemu-kvm (deleted) (deleted)", false },
		{ "qemu-system-aarch64", true },
		{ "/usr/bin/qemu-system-", false },
		{ "/usr/bin/qemu-img", false },
		{ "/usr/bin/qemu-kvm2", false },
		{ "/usr/bin/qemu-system-x86_64/", false },
		{ "/qemu-system-x86_64/bash", false },
		{ "", false },
	};
	size_t i;

	for (i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		CU_ASSERT_EQUAL(dom_is_qemu_path(p[i].s, strlen(p[i].s)), p[i].ok);
	CU_ASSERT_TRUE(dom_is_qemu_comm("qemu-system-x86\n", 16));
	CU_ASSERT_TRUE(dom_is_qemu_comm("qemu-kvm\n", 9));
	CU_ASSERT_FALSE(dom_is_qemu_comm("bash\n", 5));
	CU_ASSERT_FALSE(dom_is_qemu_comm("CPU 0/KVM\n", 10));
}

static void parse_argv(const char *const *argv, struct dom_cmdline *cl)
{
	char buf[8192];
	size_t n = join_argv(buf, sizeof(buf), argv);

	CU_ASSERT_FATAL(dom_cmdline_parse(buf, n, false, cl) == 0);
}

static void test_cmdline_forms(void)
{
	struct dom_cmdline cl;

	/* libvirt's -name, and a comma escaped as ",,". */
	{
		const char *a[] = { "qemu-system-x86_64", "-name",
			"guest=a,,b,debug-threads=on", NULL };
		parse_argv(a, &cl);
		CU_ASSERT_STRING_EQUAL(cl.name, "a,b");
		dom_cmdline_release(&cl);
	}
	/* The implied key, and --name; the last -name wins. */
	{
		const char *a[] = { "qemu-system-x86_64", "-name", "first",
			"--name", "second,process=foo", NULL };
		parse_argv(a, &cl);
		CU_ASSERT_STRING_EQUAL(cl.name, "second");
		dom_cmdline_release(&cl);
	}
	/* -name without guest keeps nothing; empty name is absent. */
	{
		const char *a[] = { "qemu-system-x86_64", "-name",
			"debug-threads=on", "-name", "guest=", NULL };
		parse_argv(a, &cl);
		CU_ASSERT_PTR_NULL(cl.name);
		dom_cmdline_release(&cl);
	}
	/* JSON -device (libvirt with QEMU >= 6.x), with an escaped name,
	 * a nested member, and a decoy port before it. */
	{
		const char *a[] = { "qemu-system-x86_64",
			"-chardev", "socket,id=decoy,path=/tmp/decoy",
			"-chardev", "socket,id=chan,path=/run/agent.sock,server=on,wait=off",
			"-device", "{\"driver\":\"virtserialport\",\"chardev\":\"decoy\",\"name\":\"org.qemu.guest_agent.0\"}",
			"-device", "{\"driver\":\"virtserialport\",\"bus\":\"virtio-serial0.0\",\"nr\":1,"
				   "\"x\":{\"y\":[1,{\"z\":\"}\"}]},\"chardev\":\"chan\","
				   "\"id\":\"channel0\",\"name\":\"org\\u002edomprof.agent.0\"}",
			NULL };
		parse_argv(a, &cl);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cl.agent_path);
		CU_ASSERT_STRING_EQUAL(cl.agent_path, "/run/agent.sock");
		dom_cmdline_release(&cl);
	}
	/* Malformed JSON and a non-socket chardev yield nothing. */
	{
		const char *a[] = { "qemu-system-x86_64",
			"-chardev", "file,id=c1,path=/tmp/f",
			"-device", "{\"driver\":\"virtserialport\",\"chardev\":\"c1\",\"name\":\"org.domprof.agent.0\"",
			"-device", "virtserialport,chardev=c1,name=org.domprof.agent.0",
			NULL };
		parse_argv(a, &cl);
		CU_ASSERT_PTR_NULL(cl.agent_path);
		CU_ASSERT_EQUAL(cl.agent_fd, -1);
		dom_cmdline_release(&cl);
	}
	/* libvirt passing a pre-opened listening socket: fd=N. */
	{
		const char *a[] = { "qemu-system-x86_64",
			"-chardev", "socket,id=charchannel0,fd=34,server=on,wait=off",
			"-device", "virtserialport,bus=virtio-serial0.0,nr=1,chardev=charchannel0,id=channel0,name=org.domprof.agent.0",
			NULL };
		parse_argv(a, &cl);
		CU_ASSERT_PTR_NULL(cl.agent_path);
		CU_ASSERT_EQUAL(cl.agent_fd, 34);
		dom_cmdline_release(&cl);
	}
}

/* Hostile bytes straight into the parser: no crash, nothing believed. */
static void test_cmdline_hostile(void)
{
	static const char *const bad[] = {
		"{", "{\"", "{\"a\"", "{\"a\":", "{\"a\":\"\\", "{\"a\":\"\\u12",
		"{\"a\":\"\\ud800\"}", "{\"a\":\"\\u0000\"}", "{\"a\":[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]}",
		"{\"driver\":\"virtserialport\"}}", ",,,,,,", "=", ",=,", "guest",
	};
	struct dom_cmdline cl;
	char buf[512];
	size_t i, n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = { "qemu", "-device", bad[i], "-name", bad[i],
			"-chardev", bad[i], "-uuid", bad[i], NULL };

		n = join_argv(buf, sizeof(buf), a);
		CU_ASSERT_FATAL(dom_cmdline_parse(buf, n, false, &cl) == 0);
		CU_ASSERT_PTR_NULL(cl.agent_path);
		CU_ASSERT_STRING_EQUAL(cl.uuid, "");
		dom_cmdline_release(&cl);
		/* Every prefix, truncated or not. */
		for (size_t k = 0; k <= n; k++) {
			CU_ASSERT_FATAL(dom_cmdline_parse(buf, k, k & 1, &cl) == 0);
			dom_cmdline_release(&cl);
		}
	}
	/* A truncated read drops the unterminated last argument. */
	{
		static const char c[] = "qemu\0-name\0guest=abc";

		CU_ASSERT_FATAL(dom_cmdline_parse(c, sizeof(c) - 1, true, &cl) == 0);
		CU_ASSERT_PTR_NULL(cl.name);
		dom_cmdline_release(&cl);
		CU_ASSERT_FATAL(dom_cmdline_parse(c, sizeof(c) - 1, false, &cl) == 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(cl.name);
		CU_ASSERT_STRING_EQUAL(cl.name, "abc");
		dom_cmdline_release(&cl);
	}
}

static void test_uuid_from_name(void)
{
	char a[DOM_UUID_STRLEN + 1], b[DOM_UUID_STRLEN + 1];
	char chk[DOM_UUID_STRLEN + 1];

	dom_uuid_from_name("web", a);
	/* Pinned: the derivation is documented and must not drift. */
	CU_ASSERT_STRING_EQUAL(a, "4b926ac6-accb-8af4-98c3-aafcba0d3ff3");
	CU_ASSERT_TRUE(dom_uuid_parse(a, strlen(a), chk));
	CU_ASSERT_EQUAL(a[14], '8');
	dom_uuid_from_name("web2", b);
	CU_ASSERT_STRING_NOT_EQUAL(a, b);
	CU_ASSERT_TRUE(strchr("89ab", b[19]) != NULL);
}

/* ---- procfs backend ---------------------------------------------------- */

static const char *const libvirt_argv[] = {
	"/usr/bin/qemu-system-x86_64",
	"-name", "guest=web,debug-threads=on",
	"-S",
	"-object", "{\"qom-type\":\"secret\",\"id\":\"masterKey0\",\"format\":\"raw\",\"file\":\"/var/lib/libvirt/qemu/domain-1-web/master-key.aes\"}",
	"-machine", "pc-q35-7.2,usb=off,vmport=off,dump-guest-core=off,memory-backend=pc.ram",
	"-accel", "kvm",
	"-m", "1024",
	"-smp", "2,sockets=2,cores=1,threads=1",
	"-uuid", "6E0D3AC2-5F1B-4C9E-9A7D-0B1C2D3E4F50",
	"-no-user-config", "-nodefaults",
	"-chardev", "socket,id=charmonitor,fd=31,server=on,wait=off",
	"-mon", "chardev=charmonitor,id=monitor,mode=control",
	"-device", "virtio-serial-pci,id=virtio-serial0,bus=pci.3,addr=0x0",
	"-chardev", "socket,id=charchannel0,path=" AGENT_WEB ",server=on,wait=off",
	"-device", "virtserialport,bus=virtio-serial0.0,nr=1,chardev=charchannel0,id=channel0,name=org.domprof.agent.0",
	"-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
	"-msg", "timestamp=on",
	NULL,
};

static void test_libvirt_domain(void)
{
	struct recorder r = { .n = 0 };
	const struct dom_domain *d;
	struct dom_table *t;

	reset_root();
	fake_qemu(1000, libvirt_argv);
	fake_stat(1000, 'S', 4242);
	tp_thread(root, 1000, 1003, "CPU 0/KVM");
	tp_thread(root, 1000, 1004, "CPU 1/KVM");
	tp_thread(root, 1000, 1001, "qemu-system-x86");
	tp_thread(root, 1000, 1002, "IO mon_iothread");
	t = new_table(NULL);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 1);
	CU_ASSERT_EQUAL(r.ev[0].kind, '+');
	CU_ASSERT_EQUAL(dom_table_count(t), 1);
	d = find(&r, 1000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "web");
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(d), UUID_WEB);
	CU_ASSERT_TRUE(dom_domain_has_uuid(d));
	CU_ASSERT_EQUAL(dom_domain_pid(d), 1000);
	CU_ASSERT_TRUE(dom_domain_selected(d));
	CU_ASSERT_PTR_NOT_NULL_FATAL(dom_domain_agent_path(d));
	CU_ASSERT_STRING_EQUAL(dom_domain_agent_path(d), AGENT_WEB);
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 2);
	CU_ASSERT_EQUAL(dom_domain_vcpu_tid(d, 0), 1003);
	CU_ASSERT_EQUAL(dom_domain_vcpu_tid(d, 1), 1004);
	CU_ASSERT_EQUAL(dom_domain_vcpu_tid(d, 2), -1);

	/* Which thread runs which vCPU, as the domain declares it: QEMU's
	 * other threads (I/O, main loop) run none. */
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 1004), 1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 1003), 0);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 1002), -1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 1000), -1);
	/* A vCPU thread is no domain's host process. */
	CU_ASSERT_PTR_NULL(find(&r, 1003));

	/* A second scan with nothing changed reports nothing. */
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 1);
	dom_table_free(t);
}

/* The procfs backend through its ops, as the daemon uses it: its domains
 * declare host-pid keys only, and a vCPU count from threads that may
 * still be starting (a recorded vCPU is bounded by DOM_VCPU_MAX only). */
static void test_procfs_ops(void)
{
	const struct dom_backend_ops *ops = NULL;
	/* auto must fall back to procfs: a libvirt URI whose daemon is absent */
	struct dom_config cfg = { .proc_root = root,
				  .libvirt_uri = "qemu:///system?socket=/nonexistent/libvirt-sock" };
	struct recorder r = { .n = 0 };
	const struct dom_domain *d;
	void *st = NULL;
	char names[64];
	int vcpu;

	reset_root();
	fake_qemu(1000, libvirt_argv);
	tp_thread(root, 1000, 1003, "CPU 0/KVM");
	tp_thread(root, 1000, 1004, "CPU 1/KVM");
	CU_ASSERT_EQUAL(dom_backend_open("nope", &cfg, &ops, &st), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(dom_backend_open("auto", &cfg, &ops, &st), 0);
	CU_ASSERT_PTR_EQUAL(ops, &dom_backend_procfs);
	CU_ASSERT_PTR_EQUAL(dom_backend_find("procfs"), &dom_backend_procfs);
	CU_ASSERT_PTR_NULL(dom_backend_find("auto"));
	dom_backend_names(names, sizeof(names));
	/* xenctrl first (absent off Xen's dom0), libvirt where built, procfs */
#ifdef HAVE_LIBVIRT
	CU_ASSERT_STRING_EQUAL(names, "xenctrl|libvirt|procfs");
#else
	CU_ASSERT_STRING_EQUAL(names, "xenctrl|procfs");
#endif
	CU_ASSERT_EQUAL(ops->fd(st), -1);
	CU_ASSERT_EQUAL(ops->refresh(st, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 1);
	d = r.last_added;
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_hypervisor(d), "qemu");
	CU_ASSERT_EQUAL(dom_domain_state(d), DOM_STATE_RUNNING);
	CU_ASSERT_EQUAL(dom_domain_pid(d), 1000);
	CU_ASSERT_EQUAL(dom_domain_id_ns(d), DOM_ID_NS_NONE);
	CU_ASSERT_FALSE(dom_domain_vcpus_exact(d));
	CU_ASSERT_EQUAL(dom_vcpu_limit(d), DOM_VCPU_MAX);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 1004), 1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 1003), 0);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 1000), -1);
	/* a recorded vCPU past the two threads seen is still one */
	vcpu = dom_domain_vcpu_of_tid(d, 1004);
	dom_vcpu_recorded(5, dom_vcpu_limit(d), &vcpu);
	CU_ASSERT_EQUAL(vcpu, 5);
	dom_vcpu_recorded(DOM_VCPU_MAX, dom_vcpu_limit(d), &vcpu);
	CU_ASSERT_EQUAL(vcpu, -1);
	ops->close(st);
	ops->close(NULL);
}

/* The neutral domain: constructor defaults, setters, selection, vCPUs. */
static void test_neutral_domain(void)
{
	const pid_t tids[3] = { 50, -1, 52 };
	const char *sel_uuid[] = { "6E0D3AC2-5F1B-4C9E-9A7D-0B1C2D3E4F50", NULL };
	const char *sel_other[] = { "web2", NULL };
	char derived[DOM_UUID_STRLEN + 1];
	struct dom_domain *d = dom_domain_new("web");

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	dom_uuid_from_name("web", derived);
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(d), derived);
	CU_ASSERT_FALSE(dom_domain_has_uuid(d));
	CU_ASSERT_STRING_EQUAL(dom_domain_hypervisor(d), "qemu");
	CU_ASSERT_EQUAL(dom_domain_pid(d), 0);
	CU_ASSERT_EQUAL(dom_domain_id(d), 0);
	CU_ASSERT_TRUE(dom_domain_selected(d));
	CU_ASSERT_EQUAL(dom_domain_set_uuid(d, "6e0d3ac2-5f1b-4c9e-9a7d-0b1c2d3e4f5"), -EINVAL);
	CU_ASSERT_EQUAL(dom_domain_set_uuid(d, "6e0d3ac2x5f1b-4c9e-9a7d-0b1c2d3e4f50"), -EINVAL);
	CU_ASSERT_FALSE(dom_domain_has_uuid(d));
	CU_ASSERT_EQUAL(dom_domain_set_uuid(d, "6E0D3AC2-5F1B-4C9E-9A7D-0B1C2D3E4F50"), 0);
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(d), UUID_WEB);
	CU_ASSERT_TRUE(dom_domain_has_uuid(d));
	dom_domain_set_hypervisor(d, "xen");
	dom_domain_set_id(d, 12);
	dom_domain_set_state(d, DOM_STATE_PAUSED);
	CU_ASSERT_STRING_EQUAL(dom_domain_hypervisor(d), "xen");
	CU_ASSERT_EQUAL(dom_domain_id(d), 12);
	CU_ASSERT_STRING_EQUAL(dom_state_name(dom_domain_state(d)), "paused");
	dom_domain_select(d, sel_other);
	CU_ASSERT_FALSE(dom_domain_selected(d));
	dom_domain_select(d, sel_uuid);
	CU_ASSERT_TRUE(dom_domain_selected(d));
	CU_ASSERT_EQUAL(dom_domain_set_agent_path(d, "/run/a.sock"), 0);
	CU_ASSERT_STRING_EQUAL(dom_domain_agent_path(d), "/run/a.sock");
	CU_ASSERT_EQUAL(dom_domain_set_agent_path(d, NULL), 0);
	CU_ASSERT_PTR_NULL(dom_domain_agent_path(d));
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 50), -1);
	CU_ASSERT_EQUAL(dom_domain_set_vcpus(d, tids, 3), 0);
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 3);
	CU_ASSERT_EQUAL(dom_domain_vcpu_tid(d, 1), -1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 52), 2);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 50), 0);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 51), -1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, -1), -1);
	CU_ASSERT_EQUAL(dom_domain_set_vcpus(d, tids, DOM_VCPU_MAX + 1), -EINVAL);
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 3);
	CU_ASSERT_EQUAL(dom_domain_set_vcpus(d, NULL, 0), 0);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 52), -1);
	dom_domain_free(d);
	dom_domain_free(NULL);
}

static void test_plain_and_unnamed(void)
{
	static const char *const plain[] = { "qemu-system-x86_64", "-enable-kvm",
		"-m", "512", "-smp", "2", "-name", "plain", "-drive",
		"file=disk.img,if=virtio", NULL };
	static const char *const noname[] = { "qemu-system-x86_64", "-m", "256",
		"-uuid", "6e0d3ac2-5f1b-4c9e-9a7d-0b1c2d3e4f5g", NULL };
	static const char *const badname[] = { "qemu-system-x86_64",
		"-uuid", "1234", "-name", NULL };
	char want[DOM_UUID_STRLEN + 1];
	struct recorder r = { .n = 0 };
	const struct dom_domain *d;
	struct dom_table *t;

	reset_root();
	fake_qemu(2000, plain);
	fake_qemu(2100, noname);
	fake_qemu(2200, badname);
	t = new_table(NULL);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(dom_table_count(t), 3);

	d = find(&r, 2000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "plain");
	CU_ASSERT_FALSE(dom_domain_has_uuid(d));
	dom_uuid_from_name("plain", want);
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(d), want);
	CU_ASSERT_PTR_NULL(dom_domain_agent_path(d));
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 0);

	d = find(&r, 2100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "qemu-2100");
	CU_ASSERT_FALSE(dom_domain_has_uuid(d));
	dom_uuid_from_name("qemu-2100", want);
	CU_ASSERT_STRING_EQUAL(dom_domain_uuid(d), want);

	d = find(&r, 2200);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "qemu-2200");
	CU_ASSERT_FALSE(dom_domain_has_uuid(d));
	dom_table_free(t);
}

static void test_hostile_procs(void)
{
	const size_t big = 3 * DOM_CMDLINE_MAX;
	char *buf = malloc(big);
	char longname[DOM_NAME_MAX + 64];
	struct recorder r = { .n = 0 };
	const struct dom_domain *d;
	struct dom_table *t;
	size_t i, n;

	CU_ASSERT_FATAL(buf != NULL);
	reset_root();
	/* Huge, no NULs, every byte value but NUL. */
	for (i = 0; i < big; i++)
		buf[i] = (char)(1 + i % 255);
	fake_proc(3000, "/usr/bin/qemu-system-x86_64", "qemu-system-x86", buf, big);
	/* Huge with NULs: a valid name far past the read bound is unseen. */
	memset(buf, 'A', big);
	for (i = 100; i < big; i += 100)
		buf[i] = '\0';
	memcpy(buf + big - 20, "-name\0late\0", 11);
	fake_proc(3100, "/usr/bin/qemu-system-x86_64", "qemu-system-x86", buf, big - 9);
	/* A name with '/', newline and high bytes is kept as is. */
	{
		static const char c[] = "qemu-kvm\0-name\0guest=../x/\n\xff\xfe";

		fake_proc(3200, "/usr/libexec/qemu-kvm", "qemu-kvm", c, sizeof(c));
	}
	/* A name over DOM_NAME_MAX is refused. */
	memset(longname, 'n', sizeof(longname));
	n = (size_t)snprintf(buf, big, "qemu-system-x86_64%c-name%c", 0, 0);
	memcpy(buf + n, longname, sizeof(longname));
	n += sizeof(longname);
	buf[n++] = '\0';
	fake_proc(3300, "/usr/bin/qemu-system-x86_64", "qemu-system-x86", buf, n);
	/* Empty cmdline (a process that cleared it), recognised by exe. */
	fake_proc(3400, "/usr/bin/qemu-system-x86_64 (deleted)", "qemu-system-x86", "", 0);
	/* Thread dirs that are not numbers, a vCPU comm without newline. */
	tp_thread(root, 3400, 3401, "CPU 0/KVM");
	{
		char p[256];

		tp_pathf(p, sizeof(p), "%s/3400/task/notanumber", root);
		mkdir(p, 0755);
		tp_pathf(p, sizeof(p), "%s/3400/task/0", root);
		mkdir(p, 0755);
	}

	t = new_table(NULL);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(dom_table_count(t), 5);
	d = find(&r, 3000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "qemu-3000");
	CU_ASSERT_PTR_NULL(dom_domain_agent_path(d));
	d = find(&r, 3100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "qemu-3100");
	d = find(&r, 3200);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "../x/\n\xff\xfe");
	{
		char safe[256];
		int len = dom_domain_safe_name(d, safe, sizeof(safe));

		CU_ASSERT_FATAL(len > 0);
		CU_ASSERT_EQUAL((size_t)len, strlen(safe));
		CU_ASSERT_PTR_NULL(strchr(safe, '/'));
		CU_ASSERT_PTR_NULL(strchr(safe, '\n'));
		CU_ASSERT_STRING_NOT_EQUAL(safe, "..");
		CU_ASSERT_EQUAL(dom_domain_safe_name(d, safe, 3), -ENAMETOOLONG);
	}
	d = find(&r, 3300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "qemu-3300");
	d = find(&r, 3400);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_tid(d, 0), 3401);
	dom_table_free(t);
	free(buf);
}

static void test_recognition(void)
{
	static const char bash_argv[] = "bash\0-name\0evil";
	static const char img_argv[] = "/usr/bin/qemu-img\0convert";
	static const char argv0[] = "/opt/qemu/bin/qemu-system-aarch64\0-name\0arm";
	static const char renamed[] = "whatever\0-name\0bycomm";
	struct recorder r = { .n = 0 };
	const struct dom_domain *d;
	struct dom_table *t;

	reset_root();
	fake_proc(4000, "/usr/bin/bash", "bash", bash_argv, sizeof(bash_argv));
	fake_proc(4001, "/usr/bin/qemu-img", "qemu-img", img_argv, sizeof(img_argv));
	fake_proc(4002, NULL, "kworker/0:1", "", 0);		/* kernel thread */
	fake_proc(4003, "/usr/bin/qemu-system-", "qemu-system-", "x", 2);
	fake_proc(4004, NULL, "qemu-system-aar", argv0, sizeof(argv0));	/* unreadable exe */
	fake_proc(4005, NULL, "python3", argv0, sizeof(argv0));		/* argv[0] only */
	fake_proc(4006, "/usr/bin/bash", "qemu-system-x86", renamed, sizeof(renamed));
	/* Entries of a proc root that are not processes. */
	{
		char p[256];

		tp_pathf(p, sizeof(p), "%s/self", root);
		mkdir(p, 0755);
		tp_pathf(p, sizeof(p), "%s/0", root);
		mkdir(p, 0755);
		tp_pathf(p, sizeof(p), "%s/99999999999", root);
		mkdir(p, 0755);
		tp_pathf(p, sizeof(p), "%s/12a", root);
		mkdir(p, 0755);
	}
	/* A QEMU zombie (exited, not yet reaped) is no domain. */
	fake_proc(4007, "/usr/bin/qemu-system-x86_64", "qemu-system-x86", argv0, sizeof(argv0));
	fake_stat(4007, 'Z', 5);
	t = new_table(NULL);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(dom_table_count(t), 3);
	CU_ASSERT_PTR_NULL(find(&r, 4007));
	CU_ASSERT_PTR_NULL(find(&r, 4000));
	CU_ASSERT_PTR_NULL(find(&r, 4001));
	CU_ASSERT_PTR_NULL(find(&r, 4002));
	CU_ASSERT_PTR_NULL(find(&r, 4003));
	d = find(&r, 4004);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "arm");
	CU_ASSERT_PTR_NOT_NULL(find(&r, 4005));
	d = find(&r, 4006);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_STRING_EQUAL(dom_domain_name(d), "bycomm");
	dom_table_free(t);
}

static void test_lifecycle(void)
{
	static const char *const a[] = { "qemu-system-x86_64", "-name", "a", NULL };
	static const char *const b[] = { "qemu-system-x86_64", "-name", "b", NULL };
	static const char *const c[] = { "qemu-system-x86_64", "-name", "c", NULL };
	struct recorder r = { .n = 0 };
	struct dom_table *t;

	reset_root();
	fake_qemu(5000, a);
	fake_qemu(5100, b);
	t = new_table(NULL);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 2);
	CU_ASSERT_EQUAL(r.ev[0].kind, '+');
	CU_ASSERT_EQUAL(r.ev[1].kind, '+');

	/* b exits, c starts. */
	r.n = 0;
	tp_kill(root, 5100);
	fake_qemu(5200, c);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.n, 2);
	CU_ASSERT_EQUAL(r.ev[0].kind, '-');
	CU_ASSERT_EQUAL(r.ev[0].pid, 5100);
	CU_ASSERT_STRING_EQUAL(r.ev[0].name, "b");
	CU_ASSERT_EQUAL(r.ev[1].kind, '+');
	CU_ASSERT_EQUAL(r.ev[1].pid, 5200);
	CU_ASSERT_STRING_EQUAL(r.ev[1].name, "c");
	CU_ASSERT_PTR_NULL(find(&r, 5100));
	CU_ASSERT_EQUAL(dom_table_count(t), 2);

	/* a restarts under a new pid: remove, then add. */
	r.n = 0;
	tp_kill(root, 5000);
	fake_qemu(5300, a);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.n, 2);
	CU_ASSERT_EQUAL(r.ev[0].kind, '-');
	CU_ASSERT_EQUAL(r.ev[0].pid, 5000);
	CU_ASSERT_EQUAL(r.ev[1].kind, '+');
	CU_ASSERT_EQUAL(r.ev[1].pid, 5300);
	CU_ASSERT_STRING_EQUAL(r.ev[1].name, "a");

	/* Pid reuse: same pid, new start time, new domain behind it. */
	r.n = 0;
	fake_stat(5200, 'S', 100);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 0);	/* first stat seen: no start time known before */
	tp_kill(root, 5200);
	fake_qemu(5200, b);
	fake_stat(5200, 'S', 200);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.n, 2);
	CU_ASSERT_EQUAL(r.ev[0].kind, '-');
	CU_ASSERT_STRING_EQUAL(r.ev[0].name, "c");
	CU_ASSERT_EQUAL(r.ev[1].kind, '+');
	CU_ASSERT_STRING_EQUAL(r.ev[1].name, "b");
	CU_ASSERT_EQUAL(r.ev[1].pid, 5200);

	/* A zombie is gone. */
	r.n = 0;
	fake_stat(5200, 'Z', 200);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.n, 1);
	CU_ASSERT_EQUAL(r.ev[0].kind, '-');
	CU_ASSERT_EQUAL(r.ev[0].pid, 5200);
	CU_ASSERT_EQUAL(dom_table_count(t), 1);
	dom_table_free(t);
}

static void test_vcpus_appear(void)
{
	static const char *const a[] = { "qemu-system-x86_64", "-name", "v", NULL };
	struct recorder r = { .n = 0 };
	struct dom_table *t;
	const struct dom_domain *d;
	int i;

	reset_root();
	fake_qemu(6000, a);
	t = new_table(NULL);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 1);
	d = find(&r, 6000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 0);

	/* A vCPU thread appears. */
	tp_thread(root, 6000, 6002, "CPU 0/KVM");
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.n, 2);
	CU_ASSERT_EQUAL(r.ev[1].kind, '~');
	CU_ASSERT_EQUAL(r.ev[1].pid, 6000);
	CU_ASSERT_PTR_EQUAL(find(&r, 6000), d);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 6002), 0);

	/* A thread created before its name is set: named without a change of
	 * thread count, still picked up while the table settles. */
	tp_thread(root, 6000, 6003, "qemu-system-x86");
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 2);
	tp_thread(root, 6000, 6003, "CPU 1/KVM");
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.n, 3);
	CU_ASSERT_EQUAL(r.ev[2].kind, '~');
	CU_ASSERT_EQUAL(r.ev[2].pid, 6000);
	CU_ASSERT_PTR_EQUAL(find(&r, 6000), d);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 6003), 1);
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 2);

	/* Once settled, an unchanged thread count is not re-read. */
	for (i = 0; i < 5; i++)
		CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	tp_thread(root, 6000, 6003, "CPU 7/KVM");
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 3);
	CU_ASSERT_EQUAL(dom_domain_vcpu_tid(d, 1), 6003);

	/* Hot-unplug: the thread goes, the count changes, the map follows. */
	tp_thread(root, 6000, 6003, "CPU 1/KVM");
	{
		char p[256];

		tp_pathf(p, sizeof(p), "%s/6000/task/6003", root);
		CU_ASSERT_FATAL(du_rm_tree(p) == 0);
	}
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL_FATAL(r.n, 4);
	CU_ASSERT_EQUAL(r.ev[3].kind, '~');
	CU_ASSERT_EQUAL(r.ev[3].pid, 6000);
	CU_ASSERT_PTR_EQUAL(find(&r, 6000), d);
	CU_ASSERT_EQUAL(dom_domain_nr_vcpus(d), 1);
	CU_ASSERT_EQUAL(dom_domain_vcpu_of_tid(d, 6003), -1);
	dom_table_free(t);
}

/* Whether the reported domain of host pid @pid is selected (there must
 * be one). */
static bool selected(const struct recorder *r, int pid)
{
	const struct dom_domain *d = find(r, pid);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	return dom_domain_selected(d);
}

static void test_selection(void)
{
	static const char *const web[] = { "qemu-system-x86_64", "-name", "web",
		"-uuid", UUID_WEB, NULL };
	static const char *const db[] = { "qemu-system-x86_64", "-name", "db",
		"-uuid", "11111111-2222-3333-4444-555555555555", NULL };
	static const char *const other[] = { "qemu-system-x86_64", "-name", "webx", NULL };
	const char *const sel[] = { "web", "11111111-2222-3333-4444-555555555555", NULL };
	const char *const sel_uuid[] = { "6E0D3AC2-5F1B-4C9E-9A7D-0B1C2D3E4F50", NULL };
	const char *const none[] = { NULL };
	struct recorder r = { .n = 0 };
	struct dom_table *t;

	reset_root();
	fake_qemu(7000, web);
	fake_qemu(7100, db);
	fake_qemu(7200, other);
	t = new_table(sel);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(dom_table_count(t), 3);
	CU_ASSERT_TRUE(selected(&r, 7000));
	CU_ASSERT_TRUE(selected(&r, 7100));
	CU_ASSERT_FALSE(selected(&r, 7200));
	dom_table_free(t);

	memset(&r, 0, sizeof(r));
	t = new_table(sel_uuid);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_TRUE(selected(&r, 7000));
	CU_ASSERT_FALSE(selected(&r, 7100));
	dom_table_free(t);

	memset(&r, 0, sizeof(r));
	t = new_table(none);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_FALSE(selected(&r, 7000));
	dom_table_free(t);
}

/* Enough domains to grow the pid hash: each is reported once, and a
 * rescan finds the known ones again (only the gone are reported). */
static void test_many(void)
{
	static const char *const a[] = { "qemu-system-x86_64", NULL };
	struct recorder r = { .n = 0 };
	struct dom_table *t;
	int i;

	reset_root();
	for (i = 0; i < 300; i++)
		fake_qemu(10000 + i, a);
	t = new_table(NULL);
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(dom_table_count(t), 300);
	CU_ASSERT_EQUAL(r.n, 300);
	CU_ASSERT_EQUAL(r.nr_live, 300);
	for (i = 0; i < 300; i++)
		CU_ASSERT_PTR_NOT_NULL(find(&r, 10000 + i));
	CU_ASSERT_PTR_NULL(find(&r, 10300));
	for (i = 0; i < 300; i += 2)
		tp_kill(root, 10000 + i);
	r.n = 0;
	CU_ASSERT_EQUAL(dom_scan(t, &rec_ops, &r), 0);
	CU_ASSERT_EQUAL(r.n, 150);
	for (i = 0; i < r.n; i++)
		CU_ASSERT_EQUAL(r.ev[i].kind, '-');
	CU_ASSERT_EQUAL(r.nr_live, 150);
	CU_ASSERT_EQUAL(dom_table_count(t), 150);
	CU_ASSERT_PTR_NULL(find(&r, 10000));
	CU_ASSERT_PTR_NOT_NULL(find(&r, 10001));
	dom_table_free(t);
}

/* ---- identity: a KVM VM fd and an allowed owner ------------------------ */

static void fake_owner(int pid, const char *uids)
{
	char p[256], s[256];

	tp_pathf(p, sizeof(p), "%s/%d/status", root, pid);
	tp_pathf(s, sizeof(s), "Name:\tqemu\nUmask:\t0022\nUid:\t%s\nGid:\t0\t0\t0\t0\n", uids);
	tp_write_file(p, s, strlen(s));
}

static void fake_fd(int pid, int fd, const char *target)
{
	char p[256];

	tp_pathf(p, sizeof(p), "%s/%d/fd", root, pid);
	mkdir(p, 0755);
	tp_pathf(p, sizeof(p), "%s/%d/fd/%d", root, pid, fd);
	CU_ASSERT_FATAL(symlink(target, p) == 0);
}

static void fake_named_qemu(int pid, const char *name, const char *uids, const char *fd3)
{
	const char *argv[] = { "qemu-system-x86_64", "-name", name, "-enable-kvm", NULL };

	fake_qemu(pid, argv);
	if (uids)
		fake_owner(pid, uids);
	if (fd3)
		fake_fd(pid, 3, fd3);
}

static void test_identity(void)
{
	static const uid_t hv[] = { 107 };
	struct dom_config cfg = { .proc_root = root, .check_identity = true,
				  .vm_uids = hv, .nr_vm_uids = 1 };
	struct recorder r = { .n = 0 };
	struct dom_table *t;

	reset_root();
	fake_named_qemu(100, "real", "0\t0\t0\t0", "anon_inode:kvm-vm");
	fake_named_qemu(200, "victim", "65534\t65534\t65534\t65534", "anon_inode:kvm-vm");
	fake_named_qemu(300, "novm", "0\t0\t0\t0", "anon_inode:kvm-vcpu:0");
	fake_fd(300, 4, "/dev/null");
	fake_named_qemu(400, "hvuser", "107\t107\t107\t107", "anon_inode:kvm-vm");
	fake_named_qemu(500, "mixed", "0\t65534\t0\t0", "anon_inode:kvm-vm");
	fake_named_qemu(600, "nostatus", NULL, "anon_inode:kvm-vm");
	fake_named_qemu(700, "nofds", "0\t0\t0\t0", NULL);
	t = dom_table_new(&cfg);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT(dom_scan(t, &rec_ops, &r) == 0);
	CU_ASSERT(dom_table_count(t) == 2);
	CU_ASSERT(find(&r, 100) != NULL && find(&r, 400) != NULL);
	CU_ASSERT(find(&r, 200) == NULL && find(&r, 300) == NULL && find(&r, 500) == NULL);
	CU_ASSERT(r.refused.n == 0);		/* not said before a few scans */
	CU_ASSERT(dom_scan(t, &rec_ops, &r) == 0);
	CU_ASSERT(r.refused.n == 0);
	CU_ASSERT(dom_scan(t, &rec_ops, &r) == 0);
	CU_ASSERT(r.refused.n == 5);
	for (int i = 0; i < r.refused.n; i++) {
		int pid = r.refused.pid[i];

		CU_ASSERT(pid == 200 || pid == 300 || pid == 500 || pid == 600 || pid == 700);
	}
	CU_ASSERT(dom_scan(t, &rec_ops, &r) == 0);
	CU_ASSERT(r.refused.n == 5);		/* once per process */
	/* QEMU that opens its VM late is taken then */
	fake_fd(300, 5, "anon_inode:kvm-vm");
	CU_ASSERT(dom_scan(t, &rec_ops, &r) == 0);
	CU_ASSERT(find(&r, 300) != NULL);
	CU_ASSERT(dom_table_count(t) == 3);
	dom_table_free(t);

	/* a fake tree without the opt-in is taken at its word (other tests) */
	cfg.check_identity = false;
	t = dom_table_new(&cfg);
	CU_ASSERT_FATAL(t != NULL);
	CU_ASSERT(dom_scan(t, NULL, NULL) == 0);
	CU_ASSERT(dom_table_count(t) == 7);
	dom_table_free(t);
}

/* The proc tree's pid names and stat lines (dom_proc.h), good and bad. */
static void test_proc_stat(void)
{
	static const char *const bad[] = {
		"",
		"12 x S 1",				/* no parentheses */
		"12 (x",				/* no ')' */
		"12 x) (y S 1 1 1 0 -1 64 0 0 0 0 0 0 0 0 20 0 1 0 5", /* ")" before "(" */
		"12 (x)",				/* nothing after */
		"12 (x) S 1 1 1 0 -1 64 0 0",		/* cut before field 22 */
	};
	struct dom_pstat st;
	char p[256], line[512], comm[200];
	int fd;

	CU_ASSERT_EQUAL(dom_proc_pid("1"), 1);
	CU_ASSERT_EQUAL(dom_proc_pid("4194304"), 4194304);
	CU_ASSERT_EQUAL(dom_proc_pid("2147483647"), 2147483647);
	CU_ASSERT_EQUAL(dom_proc_pid("2147483648"), 0);
	CU_ASSERT_EQUAL(dom_proc_pid("99999999999999999999"), 0);
	CU_ASSERT_EQUAL(dom_proc_pid("0"), 0);
	CU_ASSERT_EQUAL(dom_proc_pid("01"), 0);
	CU_ASSERT_EQUAL(dom_proc_pid("-1"), 0);
	CU_ASSERT_EQUAL(dom_proc_pid("12a"), 0);
	CU_ASSERT_EQUAL(dom_proc_pid("self"), 0);
	CU_ASSERT_EQUAL(dom_proc_pid(""), 0);

	reset_root();
	fd = open(root, O_RDONLY | O_DIRECTORY);
	CU_ASSERT_FATAL(fd >= 0);
	tp_pathf(p, sizeof(p), "%s/12", root);
	CU_ASSERT_FATAL(mkdir(p, 0755) == 0);
	tp_pathf(p, sizeof(p), "%s/12/stat", root);
	/* a comm with ") S" in it, then fields 3 to 22 and more */
	snprintf(line, sizeof(line),
		 "12 (a) R (b) S 1 1 1 0 -1 2097216 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
	tp_write_file(p, line, strlen(line));
	CU_ASSERT_EQUAL(dom_proc_stat(fd, 12, &st), 0);
	CU_ASSERT_STRING_EQUAL(st.comm, "a) R (b");
	CU_ASSERT_EQUAL(st.state, 'S');
	CU_ASSERT_EQUAL(st.flags, 2097216UL);
	CU_ASSERT_EQUAL(st.start, 777ULL);
	/* a name longer than the field: cut, the rest still read */
	memset(comm, 'n', sizeof(comm) - 1);
	comm[sizeof(comm) - 1] = '\0';
	snprintf(line, sizeof(line), "12 (%s) Z 1 1 1 0 -1 5 0 0 0 0 0 0 0 0 20 0 1 0 9\n", comm);
	tp_write_file(p, line, strlen(line));
	CU_ASSERT_EQUAL(dom_proc_stat(fd, 12, &st), 0);
	CU_ASSERT_EQUAL(strlen(st.comm), sizeof(st.comm) - 1);
	CU_ASSERT_EQUAL(st.state, 'Z');
	CU_ASSERT_EQUAL(st.flags, 5UL);
	CU_ASSERT_EQUAL(st.start, 9ULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tp_write_file(p, bad[i], strlen(bad[i]));
		CU_ASSERT_EQUAL(dom_proc_stat(fd, 12, &st), -EINVAL);
	}
	CU_ASSERT_EQUAL(dom_proc_stat(fd, 13, &st), -ENOENT);
	close(fd);
}

static void test_bad_root(void)
{
	struct dom_config cfg = { .proc_root = "/nonexistent/proc" };

	dom_table_free(NULL);
	errno = 0;
	CU_ASSERT_PTR_NULL(dom_table_new(&cfg));
	CU_ASSERT_EQUAL(errno, ENOENT);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "vcpu thread names", test_vcpu_comm },
		{ "vcpu map from thread names", test_vcpu_map_add },
		{ "uuid parse", test_uuid_parse },
		{ "qemu exe/comm names", test_qemu_names },
		{ "cmdline forms", test_cmdline_forms },
		{ "cmdline hostile", test_cmdline_hostile },
		{ "uuid from name", test_uuid_from_name },
		{ "libvirt domain", test_libvirt_domain },
		{ "plain, unnamed, bad uuid", test_plain_and_unnamed },
		{ "hostile processes", test_hostile_procs },
		{ "recognition", test_recognition },
		{ "lifecycle", test_lifecycle },
		{ "vcpus appear", test_vcpus_appear },
		{ "selection", test_selection },
		{ "many domains", test_many },
		{ "bad root", test_bad_root },
		{ "proc tree pids and stat lines", test_proc_stat },
		{ "identity: KVM VM fd and owner", test_identity },
		{ "procfs through the backend ops", test_procfs_ops },
		{ "neutral domain", test_neutral_domain },
	};

	return du_test_main("domains", tests, DU_TEST_N(tests), setup, teardown);
}
