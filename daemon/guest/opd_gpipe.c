#include "config.h"

#include <stdlib.h>

#include "domprof/raw.h"
#include "opd_gpipe.h"
#include "opd_guestfile.h"

struct opd_gpipe {
	const struct opd_conf *conf;
	struct opd_agents *agents;
	struct opd_cc *cc;
	struct opd_filer filer;
};

struct opd_gpipe *opd_gpipe_new(const struct opd_conf *conf, struct opd_agents *agents,
				const struct opd_filer *filer)
{
	struct opd_gpipe *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->conf = conf;
	p->agents = agents;
	p->filer = *filer;
	return p;
}

void opd_gpipe_free(struct opd_gpipe *p)
{
	free(p);
}

void opd_gpipe_set_cc(struct opd_gpipe *p, struct opd_cc *cc)
{
	p->cc = cc;
}

/*
 * The chain of guest sample @s (filed under @k): each frame resolved like
 * a guest pc of that sample (the guest kernel's symbols, or the sampled
 * guest process's mappings), then arcs and the stack (opd_cc.h).
 */
static void file_chain(struct opd_gpipe *p, struct opd_guest *g,
		       const struct opd_guest_sample *s, const struct opd_guest_res *r,
		       const struct opd_sfile_key *k, const struct opd_cc_chain *ch)
{
	struct opd_cc_frame f[DP_RAW_CC_MAX + 1];
	size_t n = 1;

	f[0].image = k->image;
	f[0].dep = k->dep;
	f[0].off = r->key;
	for (uint32_t i = 0; i < ch->nr && i < DP_RAW_CC_MAX; i++) {
		struct opd_guest_sample fs = *s;
		struct opd_guest_res fr;
		struct opd_sfile_key fk;

		/* a return address: the call is the byte before it */
		fs.pc = ch->f[i] - 1;
		fs.mode = i < ch->nk ? DP_MODE_GUEST_KERNEL : DP_MODE_GUEST_USER;
		fs.cc = 0;
		opd_guest_resolve(g, &fs, &fr);
		if (!fr.resolved)
			p->filer.st->cc_frames_unresolved++;
		opd_guestfile_key(p->conf->separate, k->domain, &fs, &fr, &fk);
		f[n].image = fk.image;
		f[n].dep = fk.dep;
		f[n++].off = fr.key;
	}
	opd_cc_file(p->cc, k, f, n);
}

/* Sample @s of guest @g, resolved as @r, into its sample file. */
static void file_sample(struct opd_gpipe *p, struct opd_guest *g,
			const struct opd_guest_sample *s, const struct opd_guest_res *r)
{
	struct opd_cc_chain ch;
	struct opd_sfile_key k;
	struct odb *db;
	uint32_t id;

	opd_guestfile_key(p->conf->separate, opd_guest_domain(g), s, r, &k);
	if (opd_filer_file(&p->filer, &k, &db, &id))
		opd_filer_add(&p->filer, db, id, r->key);
	if (s->cc && p->cc && opd_cc_take(p->cc, s->cc, &ch))
		file_chain(p, g, s, r, &k, &ch);
}

bool opd_gpipe_take(struct opd_gpipe *p, const struct opd_dom *dom,
		    const struct opd_guest_sample *s, const struct opd_cc_chain *chain,
		    bool *chain_held)
{
	struct opd_guest *g = opd_agents_guest(p->agents, dom);
	struct opd_guest_sample in = *s, out;
	struct opd_guest_res r;

	*chain_held = false;
	if (!g) {
		if (s->mode == DP_MODE_GUEST_USER)
			p->filer.st->guest_user_unresolved_no_agent++;
		else
			p->filer.st->guest_kernel_unresolved++;
		return false;
	}
	/* the sample's guest chain waits with it */
	*chain_held = chain && p->cc;
	in.cc = *chain_held ? opd_cc_hold(p->cc, chain) : 0;
	p->filer.st->guest_samples_held++;
	if (opd_guest_defer(g, &in, &out, &r))
		file_sample(p, g, &out, &r);
	return true;
}

void opd_gpipe_guest_tsc(struct opd_gpipe *p, const struct opd_dom *dom,
			 const struct dp_raw_guest_tsc *rec)
{
	struct opd_guest *g = opd_agents_guest(p->agents, dom);

	if (g)
		opd_gtscline_note(&opd_guest_gclock(g)->line, rec);
}

size_t opd_gpipe_drain(struct opd_gpipe *p, uint64_t now_ns, bool all)
{
	struct opd_guest_sample s;
	struct opd_guest_res r;
	struct opd_guest *g;
	void *cur = NULL;
	size_t n = 0;
	bool gone;

	while ((g = opd_agents_next(p->agents, &cur, &gone))) {
		/* a domain that left will say no more: its last drain */
		while (opd_guest_next(g, now_ns, all || gone, &s, &r)) {
			file_sample(p, g, &s, &r);
			n++;
		}
	}
	opd_agents_reap(p->agents);
	return n;
}
