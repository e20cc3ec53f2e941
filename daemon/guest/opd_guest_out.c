#include "config.h"

#include <string.h>

#include "opd_guest_out.h"

void opd_gout_init(struct opd_gout *o, uint64_t *dropped)
{
	o->len = 0;
	o->dropped = dropped;
}

void opd_gout_clear(struct opd_gout *o)
{
	o->len = 0;
}

static void account(struct opd_gout *o, ssize_t n)
{
	if (n > 0)
		o->len += (size_t)n;
	else
		(*o->dropped)++;
}

void opd_gout_host_hello(struct opd_gout *o, const struct dp_ag_host_hello *hh)
{
	account(o, ap_put_host_hello(o->buf + o->len, sizeof(o->buf) - o->len, hh));
}

void opd_gout_config(struct opd_gout *o, const struct dp_ag_config *cfg)
{
	account(o, ap_put_config(o->buf + o->len, sizeof(o->buf) - o->len, cfg));
}

void opd_gout_ping(struct opd_gout *o, uint64_t token)
{
	account(o, ap_put_ping(o->buf + o->len, sizeof(o->buf) - o->len, token));
}

void opd_gout_image_request(struct opd_gout *o, uint32_t cookie)
{
	account(o, ap_put_image_request(o->buf + o->len, sizeof(o->buf) - o->len, cookie));
}

void opd_gout_host_join(struct opd_gout *o, uint64_t token)
{
	account(o, ap_put_host_join(o->buf + o->len, sizeof(o->buf) - o->len, token));
}

void opd_gout_host_ack(struct opd_gout *o, uint64_t bytes)
{
	account(o, ap_put_host_ack(o->buf + o->len, sizeof(o->buf) - o->len, bytes));
}

size_t opd_gout_take(struct opd_gout *o, void *buf, size_t size)
{
	size_t n = 0;

	/* whole frames only: walk headers */
	while (n + sizeof(struct dp_ag_frame) <= o->len) {
		struct dp_ag_frame f;

		memcpy(&f, o->buf + n, sizeof(f));
		if (n + sizeof(f) + f.len > size)
			break;
		n += sizeof(f) + f.len;
	}
	memcpy(buf, o->buf, n);
	memmove(o->buf, o->buf + n, o->len - n);
	o->len -= n;
	return n;
}
