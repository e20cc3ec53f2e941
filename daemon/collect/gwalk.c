/*
 * gwalk.h over host-kmod/dp_walk.c, compiled in user space with the kernel
 * collector's user-space header stand-ins (host-kmod/tests/ushim), the
 * same way its unit test builds it.
 */
#include "domprof.h"
#include "gwalk.h"

void gwalk(const struct gwalk_req *r, uint64_t *out, unsigned int max, struct gwalk_res *res)
{
	struct dp_walk w = {
		.read = r->read,
		.ctx = r->ctx,
		.root = r->root,
		.levels = r->levels,
		.out = out,
		.max = max,
	};

	res->nr_kernel = 0;
	dp_walk_fp(&w, r->fp, r->sp, r->user);
	if (!r->user) {
		res->nr_kernel = w.n;
		dp_walk_user_tail(&w, r->sp);
	}
	res->nr = w.n;
	res->truncated = w.truncated;
}

int gwalk_read_kernel(const struct gwalk_req *r, uint64_t gva, uint64_t *val)
{
	struct dp_walk w = {
		.read = r->read,
		.ctx = r->ctx,
		.root = r->root,
		.levels = r->levels,
	};

	return dp_walk_read_kernel(&w, gva, val);
}
