#include "config.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dom_backend.h"
#include "opd_domain_int.h"
#include "sfname/sfname.h"
#include "util/du_log.h"

/* Samples of a stopped domain may still sit in the collector's rings. */
#define GRACE_NS (5ULL * 1000 * 1000 * 1000)
#define SCAN_NS (1000ULL * 1000 * 1000)
#define SCAN_WANTED_NS (200ULL * 1000 * 1000)
#define OPD_MAX_VM_USERS 8

static void free_names(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

/* "all", NULL or "" select everything (NULL); else the comma list. */
static int parse_selection(const char *s, char ***out)
{
	size_t n = 1, i = 0;
	char **names;

	*out = NULL;
	if (!s || !*s)
		return 0;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	names = calloc(n + 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	while (*s) {
		size_t len = strcspn(s, ",");

		if (len == 3 && !strncmp(s, "all", 3)) {
			free_names(names);
			return 0;
		}
		if (len) {
			names[i] = strndup(s, len);
			if (!names[i]) {
				free_names(names);
				return -ENOMEM;
			}
			i++;
		}
		s += len;
		if (*s == ',')
			s++;
	}
	*out = names;
	return 0;
}

/* The uids of the users in the comma list @users that exist, up to @max. */
static size_t vm_uids(const char *users, uid_t *out, size_t max)
{
	char name[64];
	size_t n = 0;

	while (users && *users && n < max) {
		size_t len = strcspn(users, ",");
		struct passwd *pw;

		if (len && len < sizeof(name)) {
			memcpy(name, users, len);
			name[len] = '\0';
			pw = getpwnam(name);
			if (pw)
				out[n++] = pw->pw_uid;
		}
		users += len;
		if (*users == ',')
			users++;
	}
	return n;
}

/* Open the backend @conf names (or injects) over @names, into @ds's. */
static int open_backend(const struct opd_conf *conf, char **names,
			const struct dom_backend_ops **be, void **bstate)
{
	uid_t uids[OPD_MAX_VM_USERS];
	struct dom_config dc;

	memset(&dc, 0, sizeof(dc));
	dc.proc_root = conf->domains_proc_root;
	dc.names = (const char *const *)names;
	dc.libvirt_uri = conf->libvirt_uri;
	dc.names_all = conf->domains && !names;	/* --domains=all given */
	dc.nr_vm_uids = vm_uids(conf->vm_users, uids, OPD_MAX_VM_USERS);
	dc.vm_uids = uids;
	dc.backend_arg = conf->domain_backend_arg;
	if (conf->domain_backend_ops) {
		*be = conf->domain_backend_ops;
		return (*be)->open(&dc, bstate);
	}
	return dom_backend_open(conf->domain_backend, &dc, be, bstate);
}

int opd_domains_open_backend(const struct opd_conf *conf, const struct dom_backend_ops **be,
			     void **bstate)
{
	char **names = NULL;
	int ret = parse_selection(conf->domains, &names);

	if (!ret)
		ret = open_backend(conf, names, be, bstate);
	free_names(names);
	return ret;
}

struct opd_domains *opd_domains_new(const struct opd_conf *conf, struct opd_stats *st,
				    struct opd_images *images, struct opd_sfiles *sfiles)
{
	struct opd_domains *ds = calloc(1, sizeof(*ds));
	int ret;

	if (!ds)
		return NULL;
	ds->conf = conf;
	ds->st = st;
	ds->images = images;
	ds->sfiles = sfiles;
	ret = opd_dkeys_init(&ds->index);
	if (ret)
		goto out_free;
	ret = parse_selection(conf->domains, &ds->names);
	if (ret)
		goto out_free;
	ret = open_backend(conf, ds->names, &ds->be, &ds->bstate);
	if (ret) {
		du_err("no domain backend %s: %s", conf->domain_backend ? conf->domain_backend : "(auto)",
		       strerror(-ret));
		ds->be = NULL;
		goto out_free;
	}
	du_info("domain backend: %s", ds->be->name);
	return ds;

out_free:
	free_names(ds->names);
	opd_dkeys_fini(&ds->index);
	free(ds);
	errno = -ret;
	return NULL;
}

static void dentry_free(struct dentry *e)
{
	free(e->agent_path);
	free(e->esc);
	free(e);
}

void opd_domains_free(struct opd_domains *ds)
{
	struct dentry *e, *next;

	if (!ds)
		return;
	for (e = ds->list; e; e = next) {
		next = e->next;
		opd_dkeys_drop(&ds->index, &e->keys);
		dentry_free(e);
	}
	opd_dkeys_fini(&ds->index);
	if (ds->be)
		ds->be->close(ds->bstate);
	free_names(ds->names);
	free(ds);
}

static struct dentry *find_live(struct opd_domains *ds, const struct dom_domain *d)
{
	for (struct dentry *e = ds->list; e; e = e->next)
		if (e->d == d)
			return e;
	return NULL;
}

static void unlink_entry(struct opd_domains *ds, struct dentry *e)
{
	for (struct dentry **pp = &ds->list; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			return;
		}
	}
}

/* The keys DOMAIN records use for @d, as its backend declared them, into
 * @ns/@key[2]: its host pid if it has a process, and its id in the
 * namespace the backend said (a Xen HVM guest has both: the xen collector
 * keys it by domid whether or not its device model runs).  How many. */
static unsigned int domain_keys(const struct dom_domain *d, uint32_t *ns, uint64_t *key)
{
	unsigned int n = 0;

	if (dom_domain_pid(d) > 0) {
		ns[n] = DP_DOMKEY_HOST_PID;
		key[n++] = (uint64_t)dom_domain_pid(d);
	}
	if (dom_domain_id_ns(d) != DOM_ID_NS_NONE) {
		ns[n] = dom_domain_id_ns(d);
		key[n++] = dom_domain_id(d);
	}
	return n;
}

/* Index running entry @e under the keys @d declares now and its helper
 * threads (a device model that came late, a back end that started). */
static void index_entry(struct opd_domains *ds, struct dentry *e, const struct dom_domain *d)
{
	uint32_t ns[2 + DOM_HELPER_MAX];
	uint64_t key[2 + DOM_HELPER_MAX];
	const pid_t *tids;
	unsigned int n, nh = dom_domain_helpers(d, &tids);

	e->nkeys = domain_keys(d, e->key_ns, e->key);
	e->pub.id_ns = dom_domain_id_ns(d);
	e->pub.id = dom_domain_id(d);
	for (n = 0; n < e->nkeys; n++) {
		ns[n] = e->key_ns[n];
		key[n] = e->key[n];
	}
	for (unsigned int i = 0; i < nh && i < DOM_HELPER_MAX; i++, n++) {
		ns[n] = OPD_DKEY_HELPER;
		key[n] = (uint64_t)tids[i];
	}
	if (opd_dkeys_put(&ds->index, &e->keys, e, ns, key, n))
		du_err("domain %s: out of memory for its keys; its new keys resolve no samples",
		       e->pub.name->name);
}

/* Does stopped entry @o answer to key @ns/@key? */
static bool has_key(const struct dentry *o, uint32_t ns, uint64_t key)
{
	for (unsigned int i = 0; i < o->nkeys; i++)
		if (o->key_ns[i] == ns && o->key[i] == key)
			return true;
	return false;
}

/*
 * Stopped domains that @d replaces are gone for good: the same domain
 * started again (same UUID), or another one that now holds its key (a
 * reused pid or domid), whose late samples would be misfiled.
 */
static void drop_stopped(struct opd_domains *ds, const struct dom_domain *d)
{
	struct dentry *o, *next;
	uint32_t ns[2];
	uint64_t key[2];
	unsigned int n = domain_keys(d, ns, key);

	for (o = ds->list; o; o = next) {
		bool same = !strcasecmp(o->uuid, dom_domain_uuid(d));

		next = o->next;
		if (o->pub.running)
			continue;
		for (unsigned int i = 0; i < n && !same; i++)
			same = has_key(o, ns[i], key[i]);
		if (!same)
			continue;
		opd_sfiles_close_domain(ds->sfiles, o->pub.name);
		unlink_entry(ds, o);
		dentry_free(o);
	}
}

/*
 * The domain that holds the name of @d: a running one of that name (two
 * processes never share a tree), or one that stopped within the grace
 * period with another UUID, whose name waits for its restart (the same
 * UUID coming back), not for a second process that passed the identity
 * checks meanwhile.  NULL: the name is free for @d.
 */
static const struct dentry *name_held(struct opd_domains *ds, const struct dom_domain *d)
{
	for (struct dentry *e = ds->list; e; e = e->next)
		if (!strcmp(e->pub.name->name, dom_domain_name(d)) &&
		    (e->pub.running || strcasecmp(e->uuid, dom_domain_uuid(d))))
			return e;
	return NULL;
}

/* dom0's back-end threads working for @d (dom_domain_set_helpers), in the
 * log when their set changes. */
static void log_helpers(struct dentry *e, const struct dom_domain *d)
{
	const pid_t *tids;
	unsigned int n = dom_domain_helpers(d, &tids), i;
	char list[160];
	size_t len = 0;

	if (n == e->helpers && !memcmp(tids, e->helper, n * sizeof(*tids)))
		return;
	memcpy(e->helper, tids, n * sizeof(*tids));
	e->helpers = n;
	list[0] = '\0';
	for (i = 0; i < n && len + 16 < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, " %d", (int)tids[i]);
	du_info("domain %s: %u back-end threads in dom0, its {vmm} work:%s%s", e->pub.name->name, n,
		n ? list : " none", i < n ? " ..." : "");
}

/* The name as a log line may hold it: control bytes as \xNN, cut. */
static void log_name(const char *name, char *buf, size_t size)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)name; *p && o + 5 < size; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", *p);
		else
			buf[o++] = (char)*p;
	}
	buf[o] = '\0';
}

static void on_refused(void *ctx, pid_t pid, const char *name, const char *why)
{
	struct opd_domains *ds = ctx;
	char safe[256];

	log_name(name, safe, sizeof(safe));
	ds->st->domain_refused++;
	du_warn("pid %d claims to be domain \"%s\" but %s: refused", (int)pid, safe, why);
}

/* What a report of running entry @e may have changed of its keys: a
 * device model started after its domain (Xen), a QEMU process found late
 * (libvirt), back-end threads.  Its host process's work is the domain's
 * {vmm} and it serves the agent socket. */
static void follow_keys(struct opd_domains *ds, struct dentry *e, const struct dom_domain *d)
{
	if (e->pub.pid != dom_domain_pid(d)) {
		e->pub.pid = dom_domain_pid(d);
		du_info("domain %s: host process pid %d", e->pub.name->name, (int)e->pub.pid);
	}
	index_entry(ds, e, d);
}

static void on_added(void *ctx, const struct dom_domain *d)
{
	struct opd_domains *ds = ctx;
	const char *name = dom_domain_name(d);
	const char *agent = dom_domain_agent_path(d);
	const struct dentry *twin;
	struct dentry *e;
	char esc[ESC_MAX];

	twin = name_held(ds, d);
	if (twin) {
		char why[128];

		snprintf(why, sizeof(why), "pid %d %s", (int)twin->pub.pid, twin->pub.running ?
			 "runs a domain of that name" : "ran a domain of that name and another "
			 "UUID moments ago (the name waits for its restart)");
		if (opd_dpend_add(&ds->pending, d))	/* said once */
			on_refused(ds, dom_domain_pid(d), name, why);
		return;
	}
	opd_dpend_del(&ds->pending, d);
	drop_stopped(ds, d);
	if (dom_domain_safe_name(d, esc, sizeof(esc)) < 0) {
		du_warn("domain of pid %d: name cannot be escaped; ignored", (int)dom_domain_pid(d));
		return;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		goto out_nomem;
	e->esc = strdup(esc);
	e->pub.name = opd_image_get(ds->images, SFN_ANON, name, strlen(name));
	if (agent)
		e->agent_path = strdup(agent);
	if (!e->esc || !e->pub.name || (agent && !e->agent_path))
		goto out_nomem;
	e->d = d;
	e->pub.esc = e->esc;
	e->pub.agent_path = e->agent_path;
	e->pub.agent_root_listener = ds->be->agent_root_listener;
	e->pub.pid = dom_domain_pid(d);
	index_entry(ds, e, d);
	e->hypervisor = dom_domain_hypervisor(d);
	e->state = dom_domain_state(d);
	e->pub.selected = dom_domain_selected(d);
	e->pub.running = true;
	snprintf(e->uuid, sizeof(e->uuid), "%s", dom_domain_uuid(d));
	e->uuid_cmdline = dom_domain_has_uuid(d);
	e->pub.uuid = e->uuid;
	e->vcpus = dom_domain_nr_vcpus(d);
	e->first_seen = e->last_seen = ds->wall;
	e->next = ds->list;
	ds->list = e;
	ds->st->domains_seen++;
	ds->st->domains_running++;
	ds->changes++;
	opd_dinfo_rename_old_tree(ds, e);
	opd_dinfo_write(ds, e);
	du_info("domain %s started: pid %d, uuid %s (%s), %u vcpus, %s", name, (int)e->pub.pid,
		e->uuid, e->uuid_cmdline ? "cmdline" : "derived", e->vcpus,
		e->pub.selected ? "profiled" : "not selected");
	log_helpers(e, d);
	return;

out_nomem:
	du_err("domain %s: out of memory; its samples count as unknown", name);
	if (e)
		dentry_free(e);
}

static void on_removed(void *ctx, const struct dom_domain *d)
{
	struct opd_domains *ds = ctx;
	struct dentry *e = find_live(ds, d);
	size_t n;

	opd_dpend_del(&ds->pending, d);
	if (!e)
		return;
	/* its keys stay in e->key_ns/key for late samples (find_stopped) */
	opd_dkeys_drop(&ds->index, &e->keys);
	e->d = NULL;
	e->pub.running = false;
	e->last_seen = ds->wall;
	e->stopped_ns = ds->now_ns;
	ds->st->domains_running--;
	ds->changes++;
	n = opd_sfiles_close_domain(ds->sfiles, e->pub.name);
	opd_dinfo_write(ds, e);
	du_info("domain %s stopped (pid %d): %zu sample files closed", e->pub.name->name,
		(int)e->pub.pid, n);
}

static void on_vcpus(void *ctx, const struct dom_domain *d)
{
	struct opd_domains *ds = ctx;
	struct dentry *e = find_live(ds, d);

	if (!e)
		return;
	follow_keys(ds, e, d);	/* cheap; whatever else came with it */
	if (e->vcpus == dom_domain_nr_vcpus(d))
		return;
	e->vcpus = dom_domain_nr_vcpus(d);
	e->last_seen = ds->wall;
	opd_dinfo_write(ds, e);
	du_debug("domain %s: %u vcpus", e->pub.name->name, e->vcpus);
}

/* Selection (libvirt metadata), agent channel or state of a running
 * domain changed: samples from now on follow the new selection, and the
 * agents are synced after the scan. */
static void on_changed(void *ctx, const struct dom_domain *d)
{
	struct opd_domains *ds = ctx;
	struct dentry *e = find_live(ds, d);
	const char *agent = dom_domain_agent_path(d);
	bool sel = dom_domain_selected(d);

	if (!e)
		return;
	if ((agent == NULL) != (e->agent_path == NULL) ||
	    (agent && strcmp(agent, e->agent_path))) {
		char *copy = agent ? strdup(agent) : NULL;

		if (agent && !copy) {
			du_err("domain %s: out of memory for its agent path", e->pub.name->name);
			return;
		}
		free(e->agent_path);
		e->agent_path = copy;
		e->pub.agent_path = copy;
		du_info("domain %s: agent channel %s", e->pub.name->name, agent ? agent : "removed");
	}
	if (sel != e->pub.selected) {
		e->pub.selected = sel;
		du_info("domain %s: profiling %s", e->pub.name->name, sel ? "on" : "off");
		/* the files of a domain no longer profiled are complete */
		if (!sel)
			opd_sfiles_close_domain(ds->sfiles, e->pub.name);
	}
	log_helpers(e, d);
	follow_keys(ds, e, d);
	e->state = dom_domain_state(d);
	e->last_seen = ds->wall;
	ds->changes++;
	opd_dinfo_write(ds, e);
}

static const struct dom_ops ops = {
	.added = on_added,
	.removed = on_removed,
	.vcpus_changed = on_vcpus,
	.changed = on_changed,
	.refused = on_refused,
};

int opd_domains_fd(const struct opd_domains *ds)
{
	return ds->be->fd ? ds->be->fd(ds->bstate) : -1;
}

int opd_domains_scan(struct opd_domains *ds, uint64_t mono_ns, int64_t wall)
{
	struct dentry *e, *next;
	int ret;

	ds->now_ns = mono_ns;
	ds->wall = wall;
	ds->changes = 0;
	ds->last_scan_ns = mono_ns;
	ds->scanned = true;
	ds->wanted = false;
	ret = ds->be->refresh(ds->bstate, &ops, ds);
	if (ret)
		return ret;
	for (e = ds->list; e; e = next) {
		next = e->next;
		if (e->pub.running || mono_ns - e->stopped_ns < GRACE_NS)
			continue;
		/* late samples may have reopened some files */
		if (opd_sfiles_close_domain(ds->sfiles, e->pub.name))
			ds->changes++;
		unlink_entry(ds, e);
		dentry_free(e);
		ds->changes++;
	}
	/* claimants whose name is free now, in turn (on_added unpends) */
	for (size_t i = 0; i < ds->pending.n;) {
		const struct dom_domain *d = ds->pending.d[i];

		if (name_held(ds, d)) {
			i++;
			continue;
		}
		on_added(ds, d);
	}
	return ds->changes;
}

/* A domain that stopped moments ago, by its key. */
static const struct opd_dom *find_stopped(struct opd_domains *ds, uint32_t key_ns, uint64_t key)
{
	for (struct dentry *e = ds->list; e; e = e->next)
		if (!e->pub.running && has_key(e, key_ns, key))
			return &e->pub;
	return NULL;
}

const struct opd_dom *opd_domains_lookup(struct opd_domains *ds, uint32_t key_ns, uint64_t key,
					 uint32_t vcpu, uint32_t tid, int *vcpu_out)
{
	struct dentry *e = NULL;

	*vcpu_out = -1;
	/* a record's namespace, never the registry's own (helpers) */
	if (key_ns == DP_DOMKEY_HOST_PID || key_ns == DP_DOMKEY_XEN_DOMID)
		e = opd_dkeys_find(&ds->index, key_ns, key);
	if (!e)
		return find_stopped(ds, key_ns, key);
	*vcpu_out = dom_domain_vcpu_of_tid(e->d, (pid_t)tid);
	dom_vcpu_recorded(vcpu, dom_vcpu_limit(e->d), vcpu_out);
	return &e->pub;
}

const struct opd_dom *opd_domains_lookup_pid(struct opd_domains *ds, uint32_t pid, uint32_t tid,
					     int *vcpu)
{
	struct dentry *e = opd_dkeys_find(&ds->index, DP_DOMKEY_HOST_PID, pid);

	*vcpu = -1;
	if (e) {
		*vcpu = dom_domain_vcpu_of_tid(e->d, (pid_t)tid);
		return &e->pub;
	}
	/* a dom0 back-end thread: its pid is its tid */
	e = opd_dkeys_find(&ds->index, OPD_DKEY_HELPER, pid);
	if (e)
		return &e->pub;
	return find_stopped(ds, DP_DOMKEY_HOST_PID, pid);
}

const struct opd_dom *opd_domains_next(struct opd_domains *ds, const struct opd_dom *prev)
{
	/* pub is the first member of struct dentry */
	const struct dentry *e = prev ? ((const struct dentry *)prev)->next : ds->list;

	return e ? &e->pub : NULL;
}

int opd_domains_set_guest(struct opd_domains *ds, const struct opd_dom *d,
			  uint32_t agent_version, const char *release)
{
	/* pub is the first member of struct dentry */
	struct dentry *e = (struct dentry *)d;
	size_t len = strnlen(release, DP_AG_MAX_RELEASE);

	if (e->agent_seen && e->agent_version == agent_version &&
	    strlen(e->release) == len && !memcmp(e->release, release, len))
		return 0;
	e->agent_seen = true;
	e->agent_version = agent_version;
	memcpy(e->release, release, len);
	e->release[len] = '\0';
	return opd_dinfo_write(ds, e);
}

void opd_domains_want_scan(struct opd_domains *ds)
{
	ds->wanted = true;
}

bool opd_domains_scan_due(const struct opd_domains *ds, uint64_t mono_ns)
{
	uint64_t since = mono_ns - ds->last_scan_ns;

	return !ds->scanned || since >= SCAN_NS || (ds->wanted && since >= SCAN_WANTED_NS);
}

void opd_domains_finish(struct opd_domains *ds, int64_t wall)
{
	/* a stopped domain's file was final at its removal, and a namesake
	 * may have replaced it since */
	for (struct dentry *e = ds->list; e; e = e->next) {
		if (!e->pub.running)
			continue;
		e->last_seen = wall;
		opd_dinfo_write(ds, e);
	}
}
