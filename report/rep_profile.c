/* The profile a collection builds (rep_collect.h): its memory. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rep_collect.h"
#include "util/du_array.h"

void rep_profile_free(struct rep_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nclasses; i++)
		free(p->classes[i].event);
	free(p->classes);
	for (size_t i = 0; i < p->ngroups; i++) {
		struct rep_group *g = &p->groups[i];

		free(g->domain);
		free(g->app.name);
		free(g->dep.name);
	}
	free(p->groups);
	free(p->rows);
	free(p->arcs);
	free(p->totals);
	free(p->arena);
	for (size_t i = 0; i < p->nnotes; i++)
		free(p->notes[i]);
	free(p->notes);
	free(p);
}

size_t rep_profile_arena_alloc(struct rep_profile *p)
{
	size_t n = p->nclasses, off;

	if (DU_GROW(p->arena, p->arena_cap, p->arena_used + n, 4096))
		return SIZE_MAX;
	off = p->arena_used;
	memset(p->arena + off, 0, n * sizeof(*p->arena));
	p->arena_used += n;
	return off;
}
