#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "rep_filter.h"
#include "rep_opts.h"
#include "rep_sym.h"

bool rep_filter_in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list;;) {
		size_t len = strcspn(p, ",");

		if (len == n && !strncmp(p, name, n))
			return true;
		if (!p[len])
			return false;
		p += len + 1;
	}
}

static bool same_image(const struct sfn_image *a, const struct sfn_image *b)
{
	return a->kind == b->kind && !strcmp(a->name, b->name);
}

static bool keep_symbol(const struct rep_opts *o, const struct rep_symrow *r)
{
	const struct rep_sym *s = r->sym >= 0 ? rep_bin_sym(r->bin, (size_t)r->sym) : NULL;
	const char *name = s ? s->name : "(no symbols)";

	if (o->include_syms && !rep_filter_in_list(o->include_syms, name))
		return false;
	return !(o->exclude_syms && rep_filter_in_list(o->exclude_syms, name));
}

/* Symbol rows: drop those of dropped groups and those -e/-i leave out,
 * taking their samples off their group; renumber rows and arcs. */
static void filter_rows(const struct rep_opts *o, struct rep_profile *p, const long *gmap,
			long *rmap)
{
	size_t nr = 0, na = 0;

	for (size_t i = 0; i < p->nrows; i++) {
		struct rep_symrow *r = &p->rows[i];

		rmap[i] = -1;
		if (gmap[r->group] < 0)
			continue;
		if (!keep_symbol(o, r)) {
			uint64_t *gc = rep_counts(p, p->groups[r->group].counts);

			for (size_t c = 0; c < p->nclasses; c++)
				gc[c] -= rep_counts(p, r->counts)[c];
			continue;
		}
		rmap[i] = (long)nr;
		p->rows[nr] = *r;
		p->rows[nr++].group = (size_t)gmap[r->group];
	}
	p->nrows = nr;
	for (size_t a = 0; a < p->narcs; a++) {
		struct rep_arc arc = p->arcs[a];

		if (rmap[arc.from] < 0 || rmap[arc.to] < 0)
			continue;
		arc.from = (size_t)rmap[arc.from];
		arc.to = (size_t)rmap[arc.to];
		p->arcs[na++] = arc;
	}
	p->narcs = na;
}

/* Groups: drop -x's dependent images (the group's counts stay where
 * they are in the arena). */
static void filter_groups(struct rep_profile *p, long *gmap)
{
	size_t ng = 0;

	for (size_t i = 0; i < p->ngroups; i++) {
		struct rep_group *g = &p->groups[i];

		if (gmap[i] < 0) {
			free(g->domain);
			free(g->app.name);
			free(g->dep.name);
			continue;
		}
		gmap[i] = (long)ng;
		p->groups[ng++] = *g;
	}
	p->ngroups = ng;
}

/* Totals and flags again from what is left. */
static void recount(struct rep_profile *p)
{
	memset(p->totals, 0, p->nclasses * sizeof(*p->totals));
	p->has_domain = p->separate_lib = false;
	for (size_t i = 0; i < p->ngroups; i++) {
		const struct rep_group *g = &p->groups[i];

		for (size_t c = 0; c < p->nclasses; c++)
			p->totals[c] += rep_counts(p, g->counts)[c];
		p->has_domain |= g->domain != NULL;
		p->separate_lib |= !same_image(&g->app, &g->dep);
	}
}

int rep_filter(const struct rep_opts *o, struct rep_profile *p, long **gmap)
{
	long *map = malloc((p->ngroups ? p->ngroups : 1) * sizeof(*map));
	long *rmap = malloc((p->nrows ? p->nrows : 1) * sizeof(*rmap));

	if (!map || !rmap) {
		free(map);
		free(rmap);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->ngroups; i++)
		map[i] = o->exclude_dependent &&
			 !same_image(&p->groups[i].app, &p->groups[i].dep) ? -1 : 0;
	filter_groups(p, map);
	filter_rows(o, p, map, rmap);
	recount(p);
	free(rmap);
	if (gmap)
		*gmap = map;
	else
		free(map);
	return 0;
}
