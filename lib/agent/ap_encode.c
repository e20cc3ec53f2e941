/*
 * Agent frame encoder: whole frames into a caller's buffer.  Every frame is
 * a header and up to two pieces (a fixed struct and a variable tail).
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "agent/agent.h"

static ssize_t put2(void *buf, size_t size, uint16_t type, const void *a, size_t alen,
		    const void *b, size_t blen)
{
	struct dp_ag_frame f = { .magic = DP_AG_MAGIC, .type = type };
	uint8_t *p = buf;

	if (alen > DP_AG_MAX_PAYLOAD || blen > DP_AG_MAX_PAYLOAD - alen)
		return -EINVAL;
	f.len = (uint32_t)(alen + blen);
	if (size < sizeof(f) + f.len)
		return -ENOSPC;
	memcpy(p, &f, sizeof(f));
	if (alen)
		memcpy(p + sizeof(f), a, alen);
	if (blen)
		memcpy(p + sizeof(f) + alen, b, blen);
	return (ssize_t)(sizeof(f) + f.len);
}

ssize_t ap_put_frame(void *buf, size_t size, uint16_t type, const void *payload, size_t len)
{
	return put2(buf, size, type, payload, len, NULL, 0);
}

ssize_t ap_put_hello(void *buf, size_t size, const struct dp_ag_hello *h, const char *release, size_t len)
{
	struct dp_ag_hello c = *h;

	if (len > DP_AG_MAX_RELEASE)
		return -EINVAL;
	c.release_len = (uint16_t)len;
	return put2(buf, size, DP_AG_HELLO, &c, sizeof(c), release, len);
}

ssize_t ap_put_text(void *buf, size_t size, uint16_t type, const char *text, size_t len)
{
	if ((type != DP_AG_KALLSYMS && type != DP_AG_MODULES) || !len)
		return -EINVAL;
	return put2(buf, size, type, text, len, NULL, 0);
}

ssize_t ap_put_table_end(void *buf, size_t size, uint16_t type, const struct dp_ag_table_end *e)
{
	if (type != DP_AG_KALLSYMS_END && type != DP_AG_MODULES_END)
		return -EINVAL;
	return put2(buf, size, type, e, sizeof(*e), NULL, 0);
}

ssize_t ap_put_switches(void *buf, size_t size, uint32_t cpu, const struct dp_ag_switch *s, uint32_t nr)
{
	struct dp_ag_switch_hdr h = { .cpu = cpu, .nr = nr };

	if (!nr || nr > DP_AG_MAX_SWITCH)
		return -EINVAL;
	return put2(buf, size, DP_AG_SWITCH, &h, sizeof(h), s, (size_t)nr * sizeof(*s));
}

ssize_t ap_put_mmap(void *buf, size_t size, const struct dp_ag_mmap *m, const char *path, size_t len)
{
	struct dp_ag_mmap c = *m;

	if (len > DP_AG_MAX_PATH || m->build_id_size > DP_AG_BUILD_ID_MAX)
		return -EINVAL;
	c.path_len = (uint16_t)len;
	return put2(buf, size, DP_AG_MMAP, &c, sizeof(c), path, len);
}

ssize_t ap_put_comm(void *buf, size_t size, const struct dp_ag_comm *c, const char *name, size_t len)
{
	struct dp_ag_comm m = *c;

	if (len > DP_AG_MAX_COMM)
		return -EINVAL;
	m.name_len = (uint16_t)len;
	return put2(buf, size, DP_AG_COMM, &m, sizeof(m), name, len);
}

ssize_t ap_put_task(void *buf, size_t size, uint16_t type, const struct dp_ag_task *t)
{
	if (type != DP_AG_FORK && type != DP_AG_EXIT)
		return -EINVAL;
	return put2(buf, size, type, t, sizeof(*t), NULL, 0);
}

ssize_t ap_put_lost(void *buf, size_t size, const struct dp_ag_lost *l)
{
	return put2(buf, size, DP_AG_LOST, l, sizeof(*l), NULL, 0);
}

ssize_t ap_put_tsc(void *buf, size_t size, const struct dp_ag_tsc *t)
{
	return put2(buf, size, DP_AG_TSC, t, sizeof(*t), NULL, 0);
}

ssize_t ap_put_task_layout(void *buf, size_t size, const struct dp_ag_task_layout *l)
{
	return put2(buf, size, DP_AG_TASK_LAYOUT, l, sizeof(*l), NULL, 0);
}

ssize_t ap_put_pong(void *buf, size_t size, const struct dp_ag_pong *p)
{
	return put2(buf, size, DP_AG_PONG, p, sizeof(*p), NULL, 0);
}

ssize_t ap_put_image_data(void *buf, size_t size, const struct dp_ag_image_data *d, const void *bytes, size_t len)
{
	if (!len)
		return -EINVAL;
	return put2(buf, size, DP_AG_IMAGE_DATA, d, sizeof(*d), bytes, len);
}

ssize_t ap_put_image_end(void *buf, size_t size, const struct dp_ag_image_end *e)
{
	if (e->build_id_size > DP_AG_BUILD_ID_MAX)
		return -EINVAL;
	return put2(buf, size, DP_AG_IMAGE_END, e, sizeof(*e), NULL, 0);
}

ssize_t ap_put_state_end(void *buf, size_t size, const struct dp_ag_state_end *e)
{
	return put2(buf, size, DP_AG_STATE_END, e, sizeof(*e), NULL, 0);
}

ssize_t ap_put_host_hello(void *buf, size_t size, const struct dp_ag_host_hello *h)
{
	return put2(buf, size, DP_AG_HOST_HELLO, h, sizeof(*h), NULL, 0);
}

ssize_t ap_put_ping(void *buf, size_t size, uint64_t token)
{
	struct dp_ag_ping p = { .token = token };

	return put2(buf, size, DP_AG_PING, &p, sizeof(p), NULL, 0);
}

ssize_t ap_put_image_request(void *buf, size_t size, uint32_t cookie)
{
	struct dp_ag_image_request r = { .cookie = cookie };

	return put2(buf, size, DP_AG_IMAGE_REQUEST, &r, sizeof(r), NULL, 0);
}

ssize_t ap_put_config(void *buf, size_t size, const struct dp_ag_config *c)
{
	return put2(buf, size, DP_AG_CONFIG, c, sizeof(*c), NULL, 0);
}

ssize_t ap_put_host_join(void *buf, size_t size, uint64_t token)
{
	struct dp_ag_host_join j = { .token = token };

	return put2(buf, size, DP_AG_HOST_JOIN, &j, sizeof(j), NULL, 0);
}

ssize_t ap_put_host_ack(void *buf, size_t size, uint64_t bytes)
{
	struct dp_ag_host_ack a = { .bytes = bytes };

	return put2(buf, size, DP_AG_HOST_ACK, &a, sizeof(a), NULL, 0);
}
