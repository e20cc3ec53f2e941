#include "config.h"

#include <string.h>

#include "opd_trans_int.h"

int opd_tr_callchain(void *ctx, uint32_t nr, uint32_t nk, uint32_t flags,
			   const uint8_t *frames)
{
	struct opd_trans *t = ctx;

	if (t->chain.nr)
		t->st->cc_chains_orphan++;	/* no sample took the last one */
	t->st->cc_chains++;
	t->st->cc_frames += nr;
	if (flags & DP_RAW_CC_TRUNCATED)
		t->st->cc_chains_truncated++;
	if (flags & DP_RAW_CC_GUEST)
		t->st->cc_chains_guest++;
	for (uint32_t i = 0; i < nr; i++)
		t->chain.f[i] = raw_cc_frame(frames, i);
	t->chain.nr = nr;
	t->chain.nk = nk;
	t->chain.flags = flags;
	return 0;
}

/*
 * Address @a (@kernel: against the kernel ranges, else the task's
 * mappings) as a sample's pc would be resolved: binary, dep and key into
 * @f; true if nothing explained it.  Remembered per context and region as
 * samples are, so the frames of the next chains cost a range check.
 * -errno (out of memory) as opd_tr_resolve_user.
 */
static int resolve_addr(struct opd_trans *t, uint64_t a, bool kernel, struct opd_cc_frame *f,
			bool *unresolved)
{
	struct opd_trans_frame none, *e = t->ctx ? &t->ctx->frames[region_slot(a)] : &none;
	struct resolution r;
	int ret = 0;

	if (e != &none && e->gen == t->gen && e->kernel == kernel && a - e->start < e->len)
		goto out;
	memset(&r, 0, sizeof(r));
	r.unresolved = &t->dummy;
	if (kernel)
		opd_tr_resolve_kernel(t, a, &r);
	else
		ret = opd_tr_resolve_user(t, a, &r);
	if (ret)
		return ret;
	e->gen = t->gen;
	e->start = r.start;
	e->len = r.len;
	e->delta = r.delta;
	e->image = r.key.image;
	e->dep = r.key.dep;
	e->kernel = kernel;
	e->unresolved = r.unresolved != &t->dummy;
out:
	f->image = e->image;
	f->dep = e->dep;
	f->off = a + e->delta;
	*unresolved = e->unresolved;
	return 0;
}

/*
 * A host frame as the sample's pc would be resolved (@kernel: against the
 * kernel ranges, else the task's mappings).  A return address is the
 * instruction after the call: the call site is one byte before it.
 * False if it could not be resolved (no memory: filed as unknown).
 */
static bool resolve_frame(struct opd_trans *t, uint64_t ret, bool kernel, struct opd_cc_frame *f)
{
	uint64_t a = ret - 1;
	bool unresolved = false;

	if (resolve_addr(t, a, kernel, f, &unresolved)) {
		f->image = f->dep = t->anon_unknown;
		f->off = a;
		return false;
	}
	if (unresolved)
		t->st->cc_frames_unresolved++;
	return true;
}

/*
 * The callers of the chain of the sample being filed into t->lastcc.f[1..]:
 * as they are when they are the last chain's (same return addresses,
 * context and generation), else resolved one by one.
 */
static void resolve_callers(struct opd_trans *t)
{
	struct opd_trans_lastcc *l = &t->lastcc;
	const struct opd_cc_chain *ch = &t->chain;
	uint64_t unres = t->st->cc_frames_unresolved;
	bool ok = true;

	if (l->nr && l->nr == ch->nr && l->nk == ch->nk && l->ctx == t->ctx &&
	    l->gen == t->gen && !memcmp(l->ret, ch->f, ch->nr * sizeof(ch->f[0]))) {
		t->st->cc_frames_unresolved += l->unresolved;
		return;
	}
	l->gen = t->gen;
	for (uint32_t i = 0; i < ch->nr; i++)
		ok &= resolve_frame(t, ch->f[i], i < ch->nk, &l->f[i + 1]);
	/* not kept if resolving failed or changed the generation, or
	 * without a context (nothing to say it still holds) */
	l->nr = ok && t->ctx && l->gen == t->gen ? ch->nr : 0;
	l->nk = ch->nk;
	l->ctx = t->ctx;
	l->unresolved = (uint32_t)(t->st->cc_frames_unresolved - unres);
	memcpy(l->ret, ch->f, ch->nr * sizeof(ch->f[0]));
}

/* The chain of the host sample (@pc, @event) just filed. */
static void file_host_chain(struct opd_trans *t, uint64_t pc, uint32_t event)
{
	struct opd_cc_frame *f = t->lastcc.f;
	struct resolution r;
	bool unresolved;

	memset(&r, 0, sizeof(r));
	r.key.event = event;
	r.unresolved = &t->dummy;
	r.extra = &t->dummy;
	if (resolve_addr(t, pc, t->mode == DP_MODE_HOST_KERNEL, &f[0], &unresolved))
		return;
	r.key.image = f[0].image;
	r.key.dep = f[0].dep;
	opd_tr_sep_ids(t, &r.key);
	opd_tr_mark_vmm(t, &r);
	resolve_callers(t);
	opd_cc_file(t->cc, &r.key, f, 1 + (size_t)t->chain.nr);
}

/* A sample with a call chain: filed as any sample, then its chain. */
int opd_tr_sample_chain(struct opd_trans *t, uint64_t pc, uint32_t event)
{
	uint32_t mode = t->mode;
	bool host = mode == DP_MODE_HOST_KERNEL || mode == DP_MODE_HOST_USER;
	int ret;

	/* the sample itself takes the usual path; a guest's takes its chain
	 * along when it is held (defer_guest) */
	t->chain_busy = true;
	t->chain_held = false;
	ret = opd_tr_sample(t, pc, event);
	t->chain_busy = false;
	if (!ret && t->cc && event < t->nr_events && host &&
	    !(t->chain.flags & DP_RAW_CC_GUEST)) {
		file_host_chain(t, pc, event);
		files_check(t);
	} else if (!t->chain_held) {
		/* a guest sample filed without its agent (replay, no channel,
		 * an unselected domain), or frames of the other side */
		t->st->cc_chains_dropped++;
	}
	t->chain.nr = 0;
	return ret;
}
