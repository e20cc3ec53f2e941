/*
 * Where a resolved guest sample is filed (the sample file key; the guest
 * pipeline, opd_gpipe.h, files it through the filer host samples go
 * through, opd_filer.h):
 *
 *   user   {domain}/NAME/{root}/MAIN/{dep}/{root}/LIB, key = file offset
 *          (--separate=none: image = dep = the binary the pc is in)
 *   kernel {domain}/NAME/{kern}/vmlinux (key = pc - guest _text) or
 *          {kern}/MODULE (key = pc - module start)
 *   else   {domain}/NAME/{anon:guest-user|guest-kernel}, key = pc,
 *          counted by reason (guest_user_unresolved_*)
 */
#ifndef OPD_GUESTFILE_H
#define OPD_GUESTFILE_H

#include "opd_guest.h"
#include "opd_sfile.h"

/* The sample file key of @s, resolved as @r, in domain @domain under
 * --separate flags @separate (OPD_SEP_*). */
void opd_guestfile_key(unsigned int separate, struct opd_image *domain,
		       const struct opd_guest_sample *s, const struct opd_guest_res *r,
		       struct opd_sfile_key *k);

#endif
