/*
 * opreport's selections after collection: -x (only the applications' own
 * images), -e and -i (symbols left out or kept).  What is left out is
 * out of the profile: its samples leave the totals too, so percentages
 * are of what is reported, as OProfile's are.
 */
#ifndef REP_FILTER_H
#define REP_FILTER_H

#include <stdbool.h>

struct rep_opts;
struct rep_profile;

/*
 * Apply @o's -x, -e, -i to @p: groups and symbol rows left out are
 * removed (rows, arcs and group indexes renumbered), the groups' counts
 * and the totals made the sums of what is left.  With @gmap (may be NULL)
 * *@gmap gets a malloc'd [old ngroups] table: each old group's new index,
 * or -1 when removed.  0 or -ENOMEM (@p then unchanged).
 */
int rep_filter(const struct rep_opts *o, struct rep_profile *p, long **gmap);

/* Whether @name is in the comma list @list (exact names). */
bool rep_filter_in_list(const char *list, const char *name);

#endif
