#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "opd_gpipe.h"
#include "util/du_log.h"

#include "opd_trans_int.h"

/* The {anon:guest-user:asN} bucket of the current ASID in @domain, for
 * guest-user samples filed without an agent channel; NULL: the one
 * {anon:guest-user} bucket (no ASID, a table full, out of memory). */
static struct opd_image *asid_bucket(struct opd_trans *t, struct opd_image *domain)
{
	struct opd_gasid *a;

	if (!t->asid)
		return NULL;
	if (!t->asid_doms)
		t->asid_doms = opd_gasid_doms_new(t->images);
	a = t->asid_doms ? opd_gasid_doms_get(t->asid_doms, domain) : NULL;
	return a ? opd_gasid_bucket(a, t->asid) : NULL;
}

void opd_tr_sep_ids(const struct opd_trans *t, struct opd_sfile_key *k)
{
	unsigned int sep = t->conf->separate;

	k->tgid = k->tid = SFN_ALL;
	if ((sep & OPD_SEP_THREAD) && t->have_task) {
		k->tgid = t->pid;
		k->tid = t->tid;
	}
	k->cpu = (sep & OPD_SEP_CPU) ? (int64_t)t->cpu : SFN_ALL;
}

/*
 * Hand the sample (@pc, @event) of the current context, in @dom whose
 * vCPU is @vcpu (-1 unknown), to the guest pipeline, with its guest chain.
 * False when @dom has no agent channel: the caller files it as before.
 */
static bool defer_guest(struct opd_trans *t, const struct opd_dom *dom, int vcpu, uint64_t pc,
			uint32_t event)
{
	struct opd_guest_sample s = { 0 };
	bool chain = t->chain_busy && (t->chain.flags & DP_RAW_CC_GUEST);
	bool taken, held;

	s.host_ns = t->now_ns;
	s.spread_us = t->time_spread_ns >= (uint64_t)UINT32_MAX * 1000 ? UINT32_MAX :
		      (uint32_t)((t->time_spread_ns + 999) / 1000);
	s.pc = pc;
	s.event = event;
	s.cpu = t->cpu;
	s.vcpu = vcpu;
	s.mode = (uint8_t)t->mode;
	s.asid = t->asid;
	s.witness = t->witness;	/* set and cleared around it: sample_witnessed */
	taken = opd_gpipe_take(t->gpipe, dom, &s, chain ? &t->chain : NULL, &held);
	if (held)
		t->chain_held = true;
	/* an older sample filed to make room may have released files */
	files_check(t);
	return taken;
}

/*
 * Guest samples: the domain is the DOMAIN record's key (the hypervisor's
 * pid) when the collector gave one, else the sampled task's process (the
 * vCPU thread's QEMU).  Until the guest agent's sideband exists they are
 * filed as {anon:guest-kernel|guest-user} of the domain, key = pc, so that
 * later symbolization can still place them.  Replay has no domain table:
 * domain "pid-<key>".  A pid that is no domain: domain "unknown", counted.
 */
int opd_tr_resolve_guest(struct opd_trans *t, uint64_t pc, struct resolution *r)
{
	uint64_t key = t->domain_key ? t->domain_key : (t->have_task ? t->pid : 0);
	const struct opd_dom *dom = NULL;
	char name[32];
	int vcpu;

	(void)pc;
	if (t->domains) {
		if (key)
			dom = opd_domains_lookup(t->domains,
						 t->domain_key ? t->domain_key_ns : DP_DOMKEY_HOST_PID, key,
						 t->domain_key ? t->vcpu : DP_RAW_VCPU_UNKNOWN, t->tid, &vcpu);
		if (!dom) {
			r->key.domain = t->dom_unknown;
			r->unresolved = &t->st->unresolved_no_domain;
			opd_domains_want_scan(t->domains);
		} else if (!dom->selected) {
			t->st->samples_domain_unselected++;
			r->skip = true;
			return 0;
		} else {
			r->key.domain = dom->name;
			/* held until the agent's sideband explains it */
			if (t->gpipe && defer_guest(t, dom, vcpu, pc, r->key.event)) {
				r->skip = true;
				return 0;
			}
		}
	} else {
		if (key)
			snprintf(name, sizeof(name), t->domain_key_ns == DP_DOMKEY_XEN_DOMID ? "domid-%llu" :
				 "pid-%llu", (unsigned long long)key);
		else
			snprintf(name, sizeof(name), "unknown");
		r->key.domain = opd_image_get(t->images, SFN_ANON, name, strlen(name));
		if (!r->key.domain)
			return -ENOMEM;
	}
	r->key.image = r->key.dep = t->mode == DP_MODE_GUEST_KERNEL ? t->guest_kernel : t->guest_user;
	if (t->mode == DP_MODE_GUEST_USER) {
		struct opd_image *b = asid_bucket(t, r->key.domain);

		if (b)
			r->key.image = r->key.dep = b;
	}
	opd_tr_sep_ids(t, &r->key);
	r->key.tgid = r->key.tid = SFN_ALL;	/* host ids say nothing inside a guest */
	r->start = 0;
	r->len = UINT64_MAX;
	r->delta = 0;
	return 0;
}

/*
 * Host work in a domain's QEMU process (any thread, user or kernel mode)
 * is that domain's virtualization overhead: resolved like any host sample,
 * filed under {domain}/NAME/{vmm}/.  An unselected domain's stays host work.
 */
void opd_tr_mark_vmm(struct opd_trans *t, struct resolution *r)
{
	const struct opd_dom *dom;
	int vcpu;

	if (!t->domains || !t->have_task)
		return;
	dom = opd_domains_lookup_pid(t->domains, t->pid, t->tid, &vcpu);
	if (!dom)
		return;
	if (!dom->selected) {
		r->extra = &t->st->samples_domain_unselected;
		return;
	}
	r->key.domain = dom->name;
	r->key.vmm = true;
	r->extra = &t->st->samples_vmm;
}

static struct opd_proc *current_proc(struct opd_trans *t)
{
	if (!t->have_task)
		return NULL;
	if (!t->proc)
		t->proc = opd_proc_find(t->procs, t->pid);
	return t->proc;
}

void opd_tr_resolve_kernel(struct opd_trans *t, uint64_t pc, struct resolution *r)
{
	const struct opd_kernel_range *kr;
	uint64_t gs = 0, ge = UINT64_MAX;
	struct opd_proc *p;

	kr = opd_kernel_find(t->kernel, pc, &gs, &ge);
	if (kr) {
		r->key.dep = kr->image;
		r->start = kr->start;
		r->len = kr->end - kr->start;
		r->delta = -kr->start;
	} else {
		/* Documented choice: pcs outside every kernel range go to
		 * {anon:kernel} keyed by pc, counted unresolved_kernel. */
		r->key.dep = t->anon_kernel;
		r->start = gs;
		r->len = ge - gs;
		r->delta = 0;
		r->unresolved = &t->st->unresolved_kernel;
	}
	r->key.image = r->key.dep;
	if ((t->conf->separate & OPD_SEP_KERNEL) && (p = current_proc(t)) && opd_proc_main_image(p))
		r->key.image = opd_proc_main_image(p);
	opd_tr_sep_ids(t, &r->key);
}

int opd_tr_resolve_user(struct opd_trans *t, uint64_t pc, struct resolution *r)
{
	const struct opd_map *m = NULL;
	uint64_t gs = 0, ge = UINT64_MAX;
	struct opd_proc *p = NULL;

	if (!t->have_task) {
		r->unresolved = &t->st->unresolved_no_task;
	} else {
		p = current_proc(t);
		if (!p) {
			p = opd_proc_get(t->procs, t->pid);
			if (!p)
				return -ENOMEM;
			t->proc = p;
		}
		if (!opd_proc_nr_maps(p) && t->conf->live_proc_lookup && t->maps_src)
			opd_proc_lookup_via(t->procs, p, pc, t->maps_src, t->maps_ctx);
		else if (!opd_proc_nr_maps(p) && t->conf->live_proc_lookup)
			opd_proc_lookup_live(t->procs, p, t->proc_root);
		m = opd_proc_find_map(p, pc, &gs, &ge);
		if (!m) {
			r->unresolved = &t->st->unresolved_no_mapping;
			du_debug("pid %u: pc %#llx in no mapping (%zu mappings)", t->pid,
				 (unsigned long long)pc, opd_proc_nr_maps(p));
		}
	}
	if (m) {
		r->key.dep = m->image;
		r->start = m->start;
		r->len = m->end - m->start;
		r->delta = m->image->kind == SFN_ROOT ? m->pgoff - m->start : 0;
	} else {
		r->key.dep = t->anon_unknown;
		r->start = gs;
		r->len = ge - gs;
		r->delta = 0;
	}
	r->key.image = r->key.dep;
	if ((t->conf->separate & OPD_SEP_LIB) && p && opd_proc_main_image(p))
		r->key.image = opd_proc_main_image(p);
	opd_tr_sep_ids(t, &r->key);
	return 0;
}
