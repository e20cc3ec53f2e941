/*
 * How the daemon was asked to run.  Filled once by option parsing (or by a
 * test) and then passed as a const pointer to every module.
 */
#ifndef OPD_CONF_H
#define OPD_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "domprof/raw.h"
#include "events/ev.h"

struct dom_backend_ops;

/* --separate bits (OProfile semantics) */
#define OPD_SEP_LIB	0x1
#define OPD_SEP_KERNEL	0x2	/* implies OPD_SEP_LIB */
#define OPD_SEP_THREAD	0x4
#define OPD_SEP_CPU	0x8
#define OPD_SEP_ALL	(OPD_SEP_LIB | OPD_SEP_KERNEL | OPD_SEP_THREAD | OPD_SEP_CPU)

struct opd_conf {
	const char *session_dir;
	const char *collector;		/* --collector NAME (opd_collector.h) */
	const char *input;		/* --input, for the file collector */
	const char *record;		/* --record, NULL if not recording */
	const char *events_dir;
	/* the events table's CPU type (borrowed from it), for session.conf;
	 * NULL when no table was loaded */
	const char *cpu_type;
	const char *domains;		/* --domains: "all" or NAME,...; NULL = all */
	/* Live system: follow the domains running on it (domains/ procfs
	 * backend) and attribute guest and {vmm} samples to them by name.
	 * Off in replay, whose pids are another time's. */
	bool track_domains;
	const char *domain_backend;	/* --domain-backend NAME; NULL: auto */
	const char *libvirt_uri;	/* --libvirt-uri; NULL: the backend's default */
	/* Tests: this backend instead of the one named (a fake). */
	const struct dom_backend_ops *domain_backend_ops;
	const char *domains_proc_root;	/* NULL: "/proc" (tests: a fake tree) */
	/* --hypervisor-user: comma list of the users QEMU runs as besides
	 * root (dom.h: check_identity); names that do not exist are skipped */
	const char *vm_users;
	/* The injected backend's argument (dom_config.backend_arg). */
	void *domain_backend_arg;
	/* privsep (the default; --no-privsep turns it off): after setup the
	 * loop runs as @privsep_user (NULL: a "domprof" user if there is
	 * one, else nobody) under seccomp, with a root monitor beside it
	 * (opd_privsep.h).  Only as root. */
	bool privsep;
	const char *privsep_user;
	const char *separate_str;	/* as given, for session.conf */
	unsigned int separate;		/* OPD_SEP_* */
	bool foreground;
	bool verbose;
	/* Live system: a process first seen in a sample may be looked up in
	 * /proc once.  Never in replay, where /proc is another time's. */
	bool live_proc_lookup;
	unsigned int max_open_files;	/* sample files open at once */
	uint64_t exit_linger_ns;	/* keep exited processes this long */
	unsigned int exit_linger_max;	/* ...and at most this many */
	unsigned int perf_pages;	/* ring buffer data pages per CPU */
	/* --callgraph: call chains of at most this many frames, 0: off.
	 * Collectors that can walk stacks ask for them (OPD_CAP_CALLCHAIN);
	 * the daemon files any DP_RAW_CALLCHAIN a stream carries. */
	unsigned int callgraph_depth;
	/* the xen collector samples dom0's own work too, through the perf
	 * collector in the same stream (default; --no-dom0 turns it off) */
	bool xen_dom0;
	/* --xen-read-budget: the share of a vCPU's time the xen collector's
	 * context reads may hold it, in parts per million (-1: the
	 * collector's default, cx_engine_set_budget) */
	int xen_read_budget_ppm;
	/* --guest-cpu: daemon CPU a second each domain's agent frames may
	 * take (ms; 0: opd_guest_limits_default's) */
	unsigned int guest_cpu_ms;
	/* --guest-cpu-total: the same for all domains together, shared
	 * fairly (ms; 0: opd_guest_limits_default's) */
	unsigned int guest_cpu_total_ms;
	struct ev_spec events[DP_RAW_MAX_EVENTS];	/* perf collector */
	unsigned int nr_events;
};

/* Defaults for everything but the session dir and the events. */
void opd_conf_defaults(struct opd_conf *c);

/* Parse a --separate list into OPD_SEP_* bits: 0 or -EINVAL. */
int opd_parse_separate(const char *s, unsigned int *out);

#endif
