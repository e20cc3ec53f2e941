/*
 * libFuzzer target for the agent protocol decoder and path sanitizer
 * (lib/agent).
 *
 * The input is decoded whole with ap_decode(), then again in two pieces
 * split where its last byte says; both must see the same frames and
 * counters.  Every MMAP path, every COMM name and the raw input itself go
 * through ap_sanitize_path(), whose result must be absolute, contain no
 * NUL, no "//", no "." or ".." component, fit AP_PATH_MAX, and be its own
 * sanitization.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"

struct seen {
	uint64_t h;
	char out[AP_PATH_MAX + 1], again[AP_PATH_MAX + 1];
};

static void mix(struct seen *s, uint64_t v)
{
	s->h = (s->h ^ v) * 0x100000001b3ULL;
	s->h ^= s->h >> 29;
}

static void mix_bytes(struct seen *s, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i;

	mix(s, n);
	for (i = 0; i < n; i++)
		mix(s, b[i]);
}

static void check_path(struct seen *s, const char *in, size_t len)
{
	ssize_t n = ap_sanitize_path(in, len, s->out), m;
	size_t i;

	if (n == -ENAMETOOLONG)
		return;
	if (n < 1 || n > AP_PATH_MAX || s->out[0] != '/' || strlen(s->out) != (size_t)n)
		abort();
	if (n > 1 && s->out[n - 1] == '/')
		abort();
	for (i = 0; i < (size_t)n; i++) {
		const char *c = s->out + i;

		if (*c != '/')
			continue;
		if (c[1] == '/' ||
		    (c[1] == '.' && (c[2] == '/' || c[2] == '\0')) ||
		    (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0')))
			abort();
	}
	m = ap_sanitize_path(s->out, (size_t)n, s->again);
	if (m != n || memcmp(s->out, s->again, (size_t)n + 1))
		abort();
}

static int f_hello(void *ctx, const struct dp_ag_hello *h, const char *rel, size_t n)
{
	mix(ctx, 1); mix_bytes(ctx, h, sizeof(*h)); mix_bytes(ctx, rel, n);
	return 0;
}

static int f_text(void *ctx, const char *t, size_t n)
{
	mix(ctx, 2); mix_bytes(ctx, t, n);
	return 0;
}

static int f_tend(void *ctx, const struct dp_ag_table_end *e)
{
	mix(ctx, 3); mix_bytes(ctx, e, sizeof(*e));
	return 0;
}

static int f_switch(void *ctx, uint32_t cpu, const struct dp_ag_switch *sw)
{
	mix(ctx, 4); mix(ctx, cpu); mix_bytes(ctx, sw, sizeof(*sw));
	return 0;
}

static int f_mmap(void *ctx, const struct dp_ag_mmap *m, const char *path, size_t n)
{
	if (n > DP_AG_MAX_PATH || m->path_len != n || m->build_id_size > DP_AG_BUILD_ID_MAX)
		abort();
	mix(ctx, 5); mix_bytes(ctx, m, sizeof(*m)); mix_bytes(ctx, path, n);
	check_path(ctx, path, n);
	return 0;
}

static int f_comm(void *ctx, const struct dp_ag_comm *c, const char *name, size_t n)
{
	if (n > DP_AG_MAX_COMM)
		abort();
	mix(ctx, 6); mix_bytes(ctx, c, sizeof(*c)); mix_bytes(ctx, name, n);
	check_path(ctx, name, n);
	return 0;
}

static int f_task(void *ctx, const struct dp_ag_task *t)
{
	mix(ctx, 7); mix_bytes(ctx, t, sizeof(*t));
	return 0;
}

static int f_lost(void *ctx, const struct dp_ag_lost *l)
{
	mix(ctx, 8); mix_bytes(ctx, l, sizeof(*l));
	return 0;
}

static int f_pong(void *ctx, const struct dp_ag_pong *p)
{
	mix(ctx, 9); mix_bytes(ctx, p, sizeof(*p));
	return 0;
}

static int f_idata(void *ctx, const struct dp_ag_image_data *d, const uint8_t *b, size_t n)
{
	if (!n || n > DP_AG_MAX_PAYLOAD)
		abort();
	mix(ctx, 10); mix_bytes(ctx, d, sizeof(*d)); mix_bytes(ctx, b, n);
	return 0;
}

static int f_iend(void *ctx, const struct dp_ag_image_end *e)
{
	mix(ctx, 11); mix_bytes(ctx, e, sizeof(*e));
	return 0;
}

static int f_send(void *ctx, const struct dp_ag_state_end *e)
{
	mix(ctx, 12); mix_bytes(ctx, e, sizeof(*e));
	return 0;
}

static int f_hhello(void *ctx, const struct dp_ag_host_hello *h)
{
	mix(ctx, 13); mix_bytes(ctx, h, sizeof(*h));
	return 0;
}

static int f_ping(void *ctx, const struct dp_ag_ping *p)
{
	mix(ctx, 14); mix_bytes(ctx, p, sizeof(*p));
	return 0;
}

static int f_ireq(void *ctx, const struct dp_ag_image_request *r)
{
	mix(ctx, 15); mix_bytes(ctx, r, sizeof(*r));
	return 0;
}

static int f_config(void *ctx, const struct dp_ag_config *c)
{
	mix(ctx, 16); mix_bytes(ctx, c, sizeof(*c));
	return 0;
}

static int f_join(void *ctx, const struct dp_ag_host_join *j)
{
	mix(ctx, 17); mix_bytes(ctx, j, sizeof(*j));
	return 0;
}

static int f_ack(void *ctx, const struct dp_ag_host_ack *a)
{
	mix(ctx, 18); mix_bytes(ctx, a, sizeof(*a));
	return 0;
}

static const struct ap_ops ops = {
	.hello = f_hello, .kallsyms = f_text, .kallsyms_end = f_tend, .modules = f_text,
	.modules_end = f_tend, .task_switch = f_switch, .mmap = f_mmap, .comm = f_comm,
	.fork = f_task, .exit = f_task, .lost = f_lost, .pong = f_pong, .image_data = f_idata,
	.image_end = f_iend, .state_end = f_send, .host_hello = f_hhello, .ping = f_ping,
	.image_request = f_ireq, .config = f_config, .host_join = f_join, .host_ack = f_ack,
};

/* Good frames of every known type: by_type covers them all, so a type
 * added to the protocol is counted here without a change. */
static uint64_t sum_by_type(const struct ap_stats *st)
{
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(st->by_type) / sizeof(st->by_type[0]); i++)
		n += st->by_type[i];
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct seen a, b;
	struct ap_stats sa = { 0 }, sb = { 0 };
	size_t ua = 0, ub1 = 0, ub2 = 0, split;
	int ea, eb;

	a.h = b.h = 0;
	ea = ap_decode(&ops, &a, data, size, &ua, &sa);
	if (ua > size || (ea && ea != -EBADMSG))
		abort();
	if (!ea && size - ua >= sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD)
		abort();
	if (sa.bytes != ua || sa.frames != sa.unknown_type + sa.bad_payload + sum_by_type(&sa))
		abort();

	/* The same bytes in two pieces: a copy of the first piece exactly, so
	 * a read past it is caught. */
	split = size ? data[size - 1] * size / 256 : 0;
	{
		uint8_t *first = malloc(split ? split : 1);

		memcpy(first, data, split);
		eb = ap_decode(&ops, &b, first, split, &ub1, &sb);
		free(first);
	}
	if (!eb)
		eb = ap_decode(&ops, &b, data + ub1, size - ub1, &ub2, &sb);
	if (eb != ea || ub1 + ub2 != ua || a.h != b.h || sa.frames != sb.frames ||
	    sa.bad_payload != sb.bad_payload || sa.unknown_type != sb.unknown_type ||
	    sa.switches != sb.switches)
		abort();

	check_path(&a, (const char *)data, size);
	(void)ap_find_hello(data, size);
	return 0;
}
