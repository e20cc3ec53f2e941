#include "config.h"

#include <string.h>

#include "domprof/raw.h"
#include "opd_conf.h"
#include "opd_guestfile.h"

void opd_guestfile_key(unsigned int separate, struct opd_image *domain,
		       const struct opd_guest_sample *s, const struct opd_guest_res *r,
		       struct opd_sfile_key *k)
{
	memset(k, 0, sizeof(*k));
	k->domain = domain;
	k->event = s->event;
	k->dep = r->dep;
	k->image = r->dep;
	if (r->resolved && r->mode == DP_MODE_GUEST_USER && (separate & OPD_SEP_LIB))
		k->image = r->image;
	k->tgid = k->tid = SFN_ALL;
	if ((separate & OPD_SEP_THREAD) && r->pid)
		k->tgid = k->tid = r->pid;
	k->cpu = (separate & OPD_SEP_CPU) ? (int64_t)s->cpu : SFN_ALL;
}
