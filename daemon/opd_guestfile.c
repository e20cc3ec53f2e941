#include "config.h"

#include <string.h>

#include "domprof/raw.h"
#include "opd_guestfile.h"

static void file_guest(void *ctx, struct opd_image *domain, const struct opd_guest_sample *s,
		       const struct opd_guest_res *r)
{
	struct opd_trans *t = ctx;
	unsigned int sep = t->conf->separate;
	struct opd_sfile_key k;
	struct odb *db;

	memset(&k, 0, sizeof(k));
	k.domain = domain;
	k.event = s->event;
	k.dep = r->dep;
	k.image = r->dep;
	if (r->resolved && r->mode == DP_MODE_GUEST_USER && (sep & OPD_SEP_LIB))
		k.image = r->image;
	k.tgid = k.tid = SFN_ALL;
	if ((sep & OPD_SEP_THREAD) && r->pid)
		k.tgid = k.tid = r->pid;
	k.cpu = (sep & OPD_SEP_CPU) ? (int64_t)s->cpu : SFN_ALL;
	db = opd_sfile_get(t->sfiles, &k);
	if (opd_sfiles_evictions(t->sfiles) != t->sfile_evictions) {
		/* cached odb pointers of the hot path may be stale now */
		t->sfile_evictions = opd_sfiles_evictions(t->sfiles);
		opd_trans_invalidate(t);
	}
	if (!db)
		return;
	if (odb_add(db, r->key, 1))
		t->st->sample_file_errors++;
	else
		t->st->samples_filed++;
}

bool opd_trans_defer_guest(struct opd_trans *t, const struct opd_dom *dom, int vcpu, uint64_t pc,
			   uint32_t event)
{
	struct opd_guest_sample s;
	struct opd_guest *g = opd_agents_guest(t->agents, dom);

	if (!g) {
		if (t->mode == DP_MODE_GUEST_USER)
			t->st->guest_user_unresolved_no_agent++;
		else
			t->st->guest_kernel_unresolved++;
		return false;
	}
	s.host_ns = t->now_ns;
	s.pc = pc;
	s.event = event;
	s.cpu = t->cpu;
	s.vcpu = vcpu;
	s.mode = (uint8_t)t->mode;
	opd_agents_defer(t->agents, g, &s, file_guest, t);
	return true;
}

size_t opd_trans_drain_guests(struct opd_trans *t, uint64_t now_ns, bool all)
{
	if (!t->agents)
		return 0;
	return opd_agents_drain(t->agents, now_ns, all, file_guest, t);
}
