/* Unit tests for lib/agent: frame encoder, decoder and path sanitizer. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CUnit/CUnit.h>

#include "agent/agent.h"
#include "util/du_test.h"

/* ---- a recorder: every callback appends one line ------------------------- */

struct rec {
	char *s;
	size_t len, cap;
	int fail_on;		/* the mmap handler fails on this call (1-based) */
	int nmmap;
};

static void rec_add(struct rec *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4096;

		while (cap < r->len + n + 1)
			cap *= 2;
		r->s = realloc(r->s, cap);
		r->cap = cap;
	}
	memcpy(r->s + r->len, line, n + 1);
	r->len += n;
}

static void rec_free(struct rec *r)
{
	free(r->s);
	memset(r, 0, sizeof(*r));
}

/* A digest of a byte range, so long strings compare in one line. */
static unsigned long long dig(const void *p, size_t n)
{
	const unsigned char *b = p;
	unsigned long long h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *b++) * 1099511628211ULL;
	return h;
}

static int r_hello(void *ctx, const struct dp_ag_hello *h, const char *rel, size_t n)
{
	rec_add(ctx, "hello %u-%u v%x f%x cpus %u pg %u clk %u now %llu inst %llx boot %02x..%02x rel %.*s\n",
		h->proto_min, h->proto_max, h->agent_version, h->flags, h->nr_cpus, h->page_size,
		h->clock_id, (unsigned long long)h->now_ns, (unsigned long long)h->instance,
		h->boot_id[0], h->boot_id[15], (int)n, rel);
	return 0;
}

static int r_ksyms(void *ctx, const char *t, size_t n)
{
	rec_add(ctx, "ksyms %zu %llx\n", n, dig(t, n));
	return 0;
}

static int r_mods(void *ctx, const char *t, size_t n)
{
	rec_add(ctx, "mods %zu %llx\n", n, dig(t, n));
	return 0;
}

static int r_kend(void *ctx, const struct dp_ag_table_end *e)
{
	rec_add(ctx, "ksyms_end %llu %u %u\n", (unsigned long long)e->total_bytes, e->chunks, e->status);
	return 0;
}

static int r_mend(void *ctx, const struct dp_ag_table_end *e)
{
	rec_add(ctx, "mods_end %llu %u %u\n", (unsigned long long)e->total_bytes, e->chunks, e->status);
	return 0;
}

static int r_switch(void *ctx, uint32_t cpu, const struct dp_ag_switch *s)
{
	rec_add(ctx, "switch %u %llu %u/%u -> %u/%u\n", cpu, (unsigned long long)s->time_ns,
		s->prev_pid, s->prev_tid, s->next_pid, s->next_tid);
	return 0;
}

static int r_mmap(void *ctx, const struct dp_ag_mmap *m, const char *path, size_t n)
{
	struct rec *r = ctx;

	r->nmmap++;
	if (r->fail_on && r->nmmap == r->fail_on)
		return -ECANCELED;
	rec_add(ctx, "mmap %llu cpu %u %u/%u c%u %llx+%llx @%llx p%x f%x bid%u:%02x path %zu %llx\n",
		(unsigned long long)m->time_ns, m->cpu, m->pid, m->tid, m->cookie,
		(unsigned long long)m->start, (unsigned long long)m->len,
		(unsigned long long)m->pgoff, m->prot, m->flags, m->build_id_size,
		m->build_id[m->build_id_size ? m->build_id_size - 1 : 0], n, dig(path, n));
	return 0;
}

static int r_comm(void *ctx, const struct dp_ag_comm *c, const char *name, size_t n)
{
	rec_add(ctx, "comm %llu %u/%u f%x %.*s\n", (unsigned long long)c->time_ns, c->pid, c->tid,
		c->flags, (int)n, name);
	return 0;
}

static void r_task(void *ctx, const char *what, const struct dp_ag_task *t)
{
	rec_add(ctx, "%s %llu %u %u %u %u\n", what, (unsigned long long)t->time_ns, t->pid,
		t->ppid, t->tid, t->ptid);
}

static int r_fork(void *ctx, const struct dp_ag_task *t)
{
	r_task(ctx, "fork", t);
	return 0;
}

static int r_exit(void *ctx, const struct dp_ag_task *t)
{
	r_task(ctx, "exit", t);
	return 0;
}

static int r_lost(void *ctx, const struct dp_ag_lost *l)
{
	rec_add(ctx, "lost %llu %u %u %llu\n", (unsigned long long)l->time_ns, l->cpu, l->source,
		(unsigned long long)l->count);
	return 0;
}

static int r_pong(void *ctx, const struct dp_ag_pong *p)
{
	rec_add(ctx, "pong %llx %llu %llu\n", (unsigned long long)p->token,
		(unsigned long long)p->recv_ns, (unsigned long long)p->send_ns);
	return 0;
}

static int r_tsc(void *ctx, const struct dp_ag_tsc *t)
{
	rec_add(ctx, "tsc %llu %llu %u %u\n", (unsigned long long)t->time_ns,
		(unsigned long long)t->tsc, t->cpu, t->window_tsc);
	return 0;
}

static int r_layout(void *ctx, const struct dp_ag_task_layout *l)
{
	rec_add(ctx, "layout %llx %u %x\n", (unsigned long long)l->current, l->tgid_off, l->flags);
	return 0;
}

static int r_idata(void *ctx, const struct dp_ag_image_data *d, const uint8_t *b, size_t n)
{
	rec_add(ctx, "idata c%u @%llu %zu %llx\n", d->cookie, (unsigned long long)d->offset, n, dig(b, n));
	return 0;
}

static int r_iend(void *ctx, const struct dp_ag_image_end *e)
{
	rec_add(ctx, "iend c%u s%u %llu bid%u\n", e->cookie, e->status, (unsigned long long)e->size,
		e->build_id_size);
	return 0;
}

static int r_send(void *ctx, const struct dp_ag_state_end *e)
{
	rec_add(ctx, "state_end %llu %u %u\n", (unsigned long long)e->time_ns, e->nr_tasks, e->nr_mmaps);
	return 0;
}

static int r_hhello(void *ctx, const struct dp_ag_host_hello *h)
{
	rec_add(ctx, "host_hello %u %x\n", h->proto_version, h->flags);
	return 0;
}

static int r_ping(void *ctx, const struct dp_ag_ping *p)
{
	rec_add(ctx, "ping %llx\n", (unsigned long long)p->token);
	return 0;
}

static int r_ireq(void *ctx, const struct dp_ag_image_request *q)
{
	rec_add(ctx, "ireq c%u\n", q->cookie);
	return 0;
}

static int r_join(void *ctx, const struct dp_ag_host_join *j)
{
	rec_add(ctx, "join %llx\n", (unsigned long long)j->token);
	return 0;
}

static int r_ack(void *ctx, const struct dp_ag_host_ack *a)
{
	rec_add(ctx, "ack %llu\n", (unsigned long long)a->bytes);
	return 0;
}

static int r_config(void *ctx, const struct dp_ag_config *c)
{
	rec_add(ctx, "config %llu %u %u\n", (unsigned long long)c->image_budget, c->image_rate, c->image_max);
	return 0;
}

static const struct ap_ops rec_ops = {
	.hello = r_hello, .kallsyms = r_ksyms, .kallsyms_end = r_kend, .modules = r_mods,
	.modules_end = r_mend, .task_switch = r_switch, .mmap = r_mmap, .comm = r_comm,
	.fork = r_fork, .exit = r_exit, .lost = r_lost, .pong = r_pong, .tsc = r_tsc,
	.task_layout = r_layout, .image_data = r_idata, .image_end = r_iend, .state_end = r_send,
	.host_hello = r_hhello, .ping = r_ping, .image_request = r_ireq, .config = r_config,
	.host_join = r_join, .host_ack = r_ack,
};

/* ---- a buffer with one frame of every type ------------------------------ */

struct obuf {
	uint8_t *p;
	size_t len, cap;
};

static void ob_put(struct obuf *b, ssize_t n)
{
	CU_ASSERT_FATAL(n > 0);
	b->len += (size_t)n;
}

#define PUT(b, fn, ...) ob_put((b), fn((b)->p + (b)->len, (b)->cap - (b)->len, __VA_ARGS__))

static const char ksyms_text[] = "ffffffff81000000 T _stext\nffffffff81001000 t do_one_initcall\n";
static const char mods_text[] = "virtio_net 61440 0 - Live 0xffffffffc0300000\n";

static void build_all(struct obuf *b)
{
	struct dp_ag_hello h = { .proto_min = 1, .proto_max = 1, .agent_version = 0x000100,
				 .flags = 7, .nr_cpus = 4, .page_size = 4096, .clock_id = 1,
				 .now_ns = 123456789, .instance = 0xabcdef };
	struct dp_ag_table_end ke = { .total_bytes = sizeof(ksyms_text) - 1, .chunks = 1 };
	struct dp_ag_table_end me = { .total_bytes = sizeof(mods_text) - 1, .chunks = 1 };
	struct dp_ag_switch sw[3] = {
		{ 100, 0, 0, 42, 43 }, { 200, 42, 43, 7, 7 }, { 300, 7, 7, 0, 0 },
	};
	struct dp_ag_mmap m = { .time_ns = 150, .cpu = 1, .pid = 42, .tid = 43, .cookie = 5,
				.start = 0x400000, .len = 0x2000, .pgoff = 0x1000, .prot = 5,
				.flags = 2, .build_id_size = 20 };
	struct dp_ag_comm c = { .time_ns = 160, .pid = 42, .tid = 43, .flags = DP_AG_COMM_EXEC };
	struct dp_ag_task fk = { 170, 44, 42, 44, 43 }, ex = { 180, 44, 42, 44, 43 };
	struct dp_ag_lost l = { 190, 1, DP_AG_LOST_KERNEL, 17 };
	struct dp_ag_pong pg = { 0x1122334455667788ULL, 1000, 1005 };
	struct dp_ag_image_data id = { .cookie = 5, .offset = 65536 };
	struct dp_ag_image_end ie = { .cookie = 5, .status = DP_AG_IMAGE_SENT, .size = 65540,
				      .build_id_size = 20 };
	struct dp_ag_state_end se = { 999, 12, 34 };
	struct dp_ag_tsc ts = { 500, 0x123456789aULL, 2, 40 };
	struct dp_ag_task_layout tl = { 0x1fdc0, 2404, 0 };
	struct dp_ag_host_hello hh = { 1, 0 };
	struct dp_ag_config cf = { 1 << 20, 4096, 1 << 16 };
	int i;

	memset(h.boot_id, 0x5a, sizeof(h.boot_id));
	for (i = 0; i < 20; i++)
		m.build_id[i] = (uint8_t)i;
	b->cap = 1 << 16;
	b->p = calloc(1, b->cap);
	b->len = 0;
	PUT(b, ap_put_hello, &h, "6.1.0-test", 10);
	PUT(b, ap_put_text, DP_AG_KALLSYMS, ksyms_text, sizeof(ksyms_text) - 1);
	PUT(b, ap_put_table_end, DP_AG_KALLSYMS_END, &ke);
	PUT(b, ap_put_text, DP_AG_MODULES, mods_text, sizeof(mods_text) - 1);
	PUT(b, ap_put_table_end, DP_AG_MODULES_END, &me);
	PUT(b, ap_put_switches, 1, sw, 3);
	PUT(b, ap_put_mmap, &m, "/usr/bin/make", 13);
	PUT(b, ap_put_comm, &c, "make", 4);
	PUT(b, ap_put_task, DP_AG_FORK, &fk);
	PUT(b, ap_put_task, DP_AG_EXIT, &ex);
	PUT(b, ap_put_lost, &l);
	PUT(b, ap_put_pong, &pg);
	PUT(b, ap_put_image_data, &id, "\x7f" "ELF", 4);
	PUT(b, ap_put_image_end, &ie);
	PUT(b, ap_put_state_end, &se);
	PUT(b, ap_put_tsc, &ts);
	PUT(b, ap_put_task_layout, &tl);
	PUT(b, ap_put_host_hello, &hh);
	PUT(b, ap_put_ping, 0xfeedULL);
	PUT(b, ap_put_image_request, 5);
	PUT(b, ap_put_config, &cf);
	PUT(b, ap_put_host_join, 0x1234567890abcdefULL);
	PUT(b, ap_put_host_ack, 1048577ULL);
}

static const char *all_expected_head =
	"hello 1-1 v100 f7 cpus 4 pg 4096 clk 1 now 123456789 inst abcdef boot 5a..5a rel 6.1.0-test\n";

static void test_roundtrip(void)
{
	struct obuf b;
	struct rec r = { 0 };
	struct ap_stats st = { 0 };
	size_t used = 0;
	int t;

	build_all(&b);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, b.p, b.len, &used, &st), 0);
	CU_ASSERT_EQUAL(used, b.len);
	CU_ASSERT_EQUAL(st.frames, 23);
	CU_ASSERT_EQUAL(st.bytes, b.len);
	CU_ASSERT_EQUAL(st.switches, 3);
	CU_ASSERT_EQUAL(st.unknown_type, 0);
	CU_ASSERT_EQUAL(st.bad_payload, 0);
	for (t = 1; t <= DP_AG_TYPE_LAST; t++)
		if (strcmp(ap_type_name(t), "?"))
			CU_ASSERT_EQUAL(st.by_type[t], 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.s);
	CU_ASSERT_EQUAL(strncmp(r.s, all_expected_head, strlen(all_expected_head)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(r.s, "switch 1 100 0/0 -> 42/43\nswitch 1 200 42/43 -> 7/7\n"
					 "switch 1 300 7/7 -> 0/0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.s, "mmap 150 cpu 1 42/43 c5 400000+2000 @1000 p5 f2 bid20:13 path 13 "));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.s, "comm 160 42/43 f1 make\nfork 170 44 42 44 43\n"
					 "exit 180 44 42 44 43\nlost 190 1 0 17\n"
					 "pong 1122334455667788 1000 1005\nidata c5 @65536 4 "));
	CU_ASSERT_PTR_NOT_NULL(strstr(r.s, "iend c5 s0 65540 bid20\nstate_end 999 12 34\n"
					 "tsc 500 78187493530 2 40\nlayout 1fdc0 2404 0\nhost_hello 1 0\nping feed\nireq c5\nconfig 1048576 4096 65536\n"
					 "join 1234567890abcdef\nack 1048577\n"));
	CU_ASSERT_STRING_EQUAL(ap_type_name(DP_AG_MMAP), "MMAP");
	CU_ASSERT_STRING_EQUAL(ap_type_name(DP_AG_TASK_LAYOUT), "TASK_LAYOUT");
	CU_ASSERT_STRING_EQUAL(ap_type_name(999), "?");
	rec_free(&r);
	free(b.p);
}

/* Cut the stream at every byte: the first call takes whole frames only, the
 * second the rest; together they see exactly what one call sees. */
static void test_truncation(void)
{
	struct obuf b;
	struct rec whole = { 0 };
	size_t used, k;

	build_all(&b);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &whole, b.p, b.len, &used, NULL), 0);
	for (k = 0; k <= b.len; k++) {
		struct rec r = { 0 };
		struct ap_stats st = { 0 };
		size_t u1 = 0, u2 = 0;
		uint8_t *cut = malloc(k ? k : 1);

		/* A copy of exactly k bytes, so ASan sees any read past it. */
		memcpy(cut, b.p, k);
		CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, cut, k, &u1, &st), 0);
		CU_ASSERT(u1 <= k);
		CU_ASSERT(k - u1 < sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD);
		CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, b.p + u1, b.len - u1, &u2, &st), 0);
		CU_ASSERT_EQUAL(u1 + u2, b.len);
		CU_ASSERT_EQUAL(st.frames, 23);
		CU_ASSERT_EQUAL(st.bad_payload, 0);
		CU_ASSERT_STRING_EQUAL(r.s ? r.s : "", whole.s);
		rec_free(&r);
		free(cut);
	}
	rec_free(&whole);
	free(b.p);
}

/* ---- hostile input ------------------------------------------------------ */

static size_t raw_frame(uint8_t *buf, uint32_t magic, uint16_t type, uint32_t len,
			const void *payload, size_t plen)
{
	struct dp_ag_frame f = { .magic = magic, .type = type, .len = len };

	memcpy(buf, &f, sizeof(f));
	if (plen)
		memcpy(buf + sizeof(f), payload, plen);
	return sizeof(f) + plen;
}

static void test_bad_magic_and_length(void)
{
	uint8_t buf[64];
	size_t n, used = 99;
	struct ap_stats st = { 0 };
	struct rec r = { 0 };

	n = raw_frame(buf, 0x12345678, DP_AG_PING, 8, "12345678", 8);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, buf, n, &used, &st), -EBADMSG);
	CU_ASSERT_EQUAL(used, 0);
	/* An oversized length is refused from the header alone. */
	n = raw_frame(buf, DP_AG_MAGIC, DP_AG_KALLSYMS, DP_AG_MAX_PAYLOAD + 1, NULL, 0);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, buf, n, &used, &st), -EBADMSG);
	n = raw_frame(buf, DP_AG_MAGIC, DP_AG_KALLSYMS, 0xffffffffU, NULL, 0);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, buf, n, &used, &st), -EBADMSG);
	/* A good frame before a bad one is used, and consumed says so. */
	n = raw_frame(buf, DP_AG_MAGIC, DP_AG_PING, 8, "12345678", 8);
	n += raw_frame(buf + n, 0, 0, 0, NULL, 0);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, buf, n, &used, &st), -EBADMSG);
	CU_ASSERT_EQUAL(used, 20);
	CU_ASSERT_EQUAL(st.by_type[DP_AG_PING], 1);
	/* Nothing at all. */
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, NULL, 0, &used, NULL), 0);
	CU_ASSERT_EQUAL(used, 0);
	CU_ASSERT_STRING_EQUAL(r.s, "ping 3837363534333231\n");
	rec_free(&r);
}

static void test_unknown_types(void)
{
	uint8_t buf[256];
	size_t n = 0, used;
	struct ap_stats st = { 0 };
	struct rec r = { 0 };

	n += raw_frame(buf + n, DP_AG_MAGIC, 0, 3, "abc", 3);
	n += raw_frame(buf + n, DP_AG_MAGIC, 18, 0, NULL, 0);
	n += raw_frame(buf + n, DP_AG_MAGIC, 63, 5, "hello", 5);
	n += raw_frame(buf + n, DP_AG_MAGIC, 0xffff, 1, "x", 1);
	n += raw_frame(buf + n, DP_AG_MAGIC, DP_AG_PING, 8, "\x01\0\0\0\0\0\0\0", 8);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, buf, n, &used, &st), 0);
	CU_ASSERT_EQUAL(used, n);
	CU_ASSERT_EQUAL(st.unknown_type, 4);
	CU_ASSERT_EQUAL(st.frames, 5);
	CU_ASSERT_STRING_EQUAL(r.s, "ping 1\n");
	rec_free(&r);
}

/* Each payload is wrong in one way; none reaches a handler. */
static void test_bad_payloads(void)
{
	uint8_t buf[8192], pl[4096];
	size_t n = 0, used;
	struct ap_stats st = { 0 };
	struct rec r = { 0 };
	struct dp_ag_mmap m = { .path_len = 5 };
	struct dp_ag_comm c = { .name_len = 4 };
	struct dp_ag_hello h = { .release_len = 3 };
	struct dp_ag_switch_hdr sh = { .cpu = 0, .nr = 0xffffffffU };
	struct dp_ag_image_end ie = { .build_id_size = 21 };
	struct dp_ag_image_data id = { .offset = UINT64_MAX };
	unsigned int expect = 0;

#define ADD(type, plen) do { n += raw_frame(buf + n, DP_AG_MAGIC, (type), (plen), pl, (plen)); expect++; } while (0)
	/* mmap: path one short, one long; path_len over the cap; build id too big */
	memcpy(pl, &m, sizeof(m)); memcpy(pl + sizeof(m), "/bin/", 5);
	ADD(DP_AG_MMAP, sizeof(m) + 4);
	ADD(DP_AG_MMAP, sizeof(m) + 6);
	ADD(DP_AG_MMAP, sizeof(m) - 1);
	m.path_len = DP_AG_MAX_PATH + 1;
	memcpy(pl, &m, sizeof(m));
	ADD(DP_AG_MMAP, sizeof(m) + 5);
	m.path_len = 5; m.build_id_size = 21;
	memcpy(pl, &m, sizeof(m));
	ADD(DP_AG_MMAP, sizeof(m) + 5);
	/* comm: name_len disagrees; over the cap */
	memcpy(pl, &c, sizeof(c)); memcpy(pl + sizeof(c), "make", 4);
	ADD(DP_AG_COMM, sizeof(c) + 3);
	c.name_len = DP_AG_MAX_COMM + 1;
	memcpy(pl, &c, sizeof(c)); memset(pl + sizeof(c), 'a', DP_AG_MAX_COMM + 1);
	ADD(DP_AG_COMM, sizeof(c) + DP_AG_MAX_COMM + 1);
	/* hello: release_len disagrees; over the cap */
	memcpy(pl, &h, sizeof(h)); memcpy(pl + sizeof(h), "6.1", 3);
	ADD(DP_AG_HELLO, sizeof(h) + 4);
	h.release_len = DP_AG_MAX_RELEASE + 1;
	memcpy(pl, &h, sizeof(h)); memset(pl + sizeof(h), '6', DP_AG_MAX_RELEASE + 1);
	ADD(DP_AG_HELLO, sizeof(h) + DP_AG_MAX_RELEASE + 1);
	/* switch: giant count, zero count, count one more than the bytes */
	memcpy(pl, &sh, sizeof(sh)); memset(pl + sizeof(sh), 0, 48);
	ADD(DP_AG_SWITCH, sizeof(sh) + 48);
	sh.nr = 0; memcpy(pl, &sh, sizeof(sh));
	ADD(DP_AG_SWITCH, sizeof(sh));
	sh.nr = 3; memcpy(pl, &sh, sizeof(sh));
	ADD(DP_AG_SWITCH, sizeof(sh) + 48);
	ADD(DP_AG_SWITCH, sizeof(sh) + 49);
	/* ... and fewer than the bytes: trailing bytes are as bad as missing */
	sh.nr = 2; memcpy(pl, &sh, sizeof(sh));
	ADD(DP_AG_SWITCH, sizeof(sh) + 49);
	sh.nr = 1; memcpy(pl, &sh, sizeof(sh));
	ADD(DP_AG_SWITCH, sizeof(sh) + 48);
	/* fixed-size types one byte short and one byte long */
	memset(pl, 0, 64);
	ADD(DP_AG_PING, 7);
	ADD(DP_AG_PING, 9);
	ADD(DP_AG_FORK, 23);
	ADD(DP_AG_EXIT, 25);
	ADD(DP_AG_LOST, 0);
	ADD(DP_AG_PONG, 23);
	ADD(DP_AG_STATE_END, 17);
	ADD(DP_AG_TASK_LAYOUT, 15);
	ADD(DP_AG_TASK_LAYOUT, 17);
	ADD(DP_AG_KALLSYMS_END, 15);
	ADD(DP_AG_MODULES_END, 17);
	ADD(DP_AG_HOST_HELLO, 4);
	ADD(DP_AG_IMAGE_REQUEST, 12);
	ADD(DP_AG_CONFIG, 8);
	ADD(DP_AG_HOST_JOIN, 7);
	ADD(DP_AG_HOST_JOIN, 9);
	ADD(DP_AG_HOST_ACK, 7);
	ADD(DP_AG_HOST_ACK, 9);
	memcpy(pl, &ie, sizeof(ie));
	ADD(DP_AG_IMAGE_END, sizeof(ie));
	/* image data: none, or running past 2^64 */
	memcpy(pl, &id, sizeof(id));
	ADD(DP_AG_IMAGE_DATA, sizeof(id));
	ADD(DP_AG_IMAGE_DATA, sizeof(id) + 1);
	/* empty text chunk */
	ADD(DP_AG_KALLSYMS, 0);
	ADD(DP_AG_MODULES, 0);
#undef ADD
	CU_ASSERT_FATAL(n <= sizeof(buf));
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, buf, n, &used, &st), 0);
	CU_ASSERT_EQUAL(used, n);
	CU_ASSERT_EQUAL(st.bad_payload, expect);
	CU_ASSERT_EQUAL(st.frames, expect);
	CU_ASSERT_EQUAL(st.switches, 0);
	CU_ASSERT_PTR_NULL(r.s);
	rec_free(&r);
}

/* Hostile paths pass the decoder verbatim; the sanitizer makes them safe. */
static void test_hostile_paths(void)
{
	static const char p1[] = "../../etc/passwd";
	static const char p2[] = "/a/{root}/%2e%2e/b\nc";
	static const char p3[] = "/a\0/../../../b";
	struct dp_ag_mmap m = { .pid = 1 };
	size_t cap = 2 * DP_AG_MAX_PAYLOAD, n = 0, used;
	uint8_t *buf = malloc(cap);
	char *big = malloc(DP_AG_MAX_PAYLOAD), out[AP_PATH_MAX + 1];
	struct rec r = { 0 };
	struct ap_stats st = { 0 };

	n += ap_put_mmap(buf + n, cap - n, &m, p1, sizeof(p1) - 1);
	n += ap_put_mmap(buf + n, cap - n, &m, p2, sizeof(p2) - 1);
	n += ap_put_mmap(buf + n, cap - n, &m, p3, sizeof(p3) - 1);
	CU_ASSERT_EQUAL(ap_decode(&rec_ops, &r, buf, n, &used, &st), 0);
	CU_ASSERT_EQUAL(st.by_type[DP_AG_MMAP], 3);
	/* 64 KiB of text cannot be an MMAP path (the encoder refuses it) ... */
	memset(big, 'A', DP_AG_MAX_PAYLOAD);
	CU_ASSERT_EQUAL(ap_put_mmap(buf, cap, &m, big, DP_AG_MAX_PATH + 1), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_mmap(buf, cap, &m, big, DP_AG_MAX_PATH), sizeof(struct dp_ag_frame) + sizeof(m) + DP_AG_MAX_PATH);
	/* ... nor a frame ... */
	CU_ASSERT_EQUAL(ap_put_text(buf, cap, DP_AG_KALLSYMS, big, DP_AG_MAX_PAYLOAD), sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD);
	CU_ASSERT_EQUAL(ap_put_image_data(buf, cap, &(struct dp_ag_image_data){ 0 }, big, DP_AG_MAX_PAYLOAD), -EINVAL);
	/* ... and the sanitizer refuses it too. */
	CU_ASSERT_EQUAL(ap_sanitize_path(big, DP_AG_MAX_PAYLOAD, out), -ENAMETOOLONG);
	rec_free(&r);
	free(big);
	free(buf);
}

/* 200k MMAP frames: linear time, exact counts, a handler error stops at
 * the right frame. */
static void test_mmap_flood(void)
{
	const size_t nr = 200000;
	struct dp_ag_mmap m = { .cookie = 1 };
	size_t fsz = sizeof(struct dp_ag_frame) + sizeof(m) + 9, cap = nr * fsz, n = 0, i, used;
	uint8_t *buf = malloc(cap);
	struct ap_stats st = { 0 };
	struct rec r = { .fail_on = 0 };
	struct timespec t0, t1;
	double secs;
	static const struct ap_ops count_ops = { .mmap = r_mmap };

	for (i = 0; i < nr; i++) {
		m.pid = (uint32_t)i;
		n += ap_put_mmap(buf + n, cap - n, &m, "/bin/true", 9);
	}
	CU_ASSERT_EQUAL(n, cap);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CU_ASSERT_EQUAL(ap_decode(NULL, NULL, buf, n, &used, &st), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	CU_ASSERT(secs < 1.0);
	CU_ASSERT_EQUAL(used, n);
	CU_ASSERT_EQUAL(st.frames, nr);
	CU_ASSERT_EQUAL(st.by_type[DP_AG_MMAP], nr);
	CU_ASSERT_EQUAL(st.bytes, n);

	/* The handler fails on the 1000th: consumed covers exactly 1000. */
	r.fail_on = 1000;
	CU_ASSERT_EQUAL(ap_decode(&count_ops, &r, buf, n, &used, NULL), -ECANCELED);
	CU_ASSERT_EQUAL(used, 1000 * fsz);
	rec_free(&r);
	free(buf);
}

static void test_find_hello(void)
{
	uint8_t buf[128];
	struct dp_ag_hello h = { 0 };
	ssize_t n;

	memset(buf, 0x47, 37);
	n = ap_put_hello(buf + 37, sizeof(buf) - 37, &h, "", 0);
	CU_ASSERT_EQUAL(n, 76);
	CU_ASSERT_EQUAL(ap_find_hello(buf, 37 + n), 37);
	CU_ASSERT_EQUAL(ap_find_hello(buf, 37 + 11), 37 + 11);
	CU_ASSERT_EQUAL(ap_find_hello(buf, 3), 3);
	CU_ASSERT_EQUAL(ap_find_hello(NULL, 0), 0);
}

static void test_encoder_limits(void)
{
	uint8_t buf[256];
	struct dp_ag_switch sw = { 0 };
	struct dp_ag_comm c = { 0 };
	struct dp_ag_mmap m = { .build_id_size = 21 };

	CU_ASSERT_EQUAL(ap_put_ping(buf, 19, 1), -ENOSPC);
	CU_ASSERT_EQUAL(ap_put_ping(buf, 20, 1), 20);
	CU_ASSERT_EQUAL(ap_put_switches(buf, sizeof(buf), 0, &sw, 0), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_switches(buf, sizeof(buf), 0, &sw, DP_AG_MAX_SWITCH + 1), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_comm(buf, sizeof(buf), &c, "x", DP_AG_MAX_COMM + 1), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_mmap(buf, sizeof(buf), &m, "/", 1), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_text(buf, sizeof(buf), DP_AG_MMAP, "x", 1), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_text(buf, sizeof(buf), DP_AG_KALLSYMS, "x", 0), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_task(buf, sizeof(buf), DP_AG_LOST, &(struct dp_ag_task){ 0 }), -EINVAL);
	CU_ASSERT_EQUAL(ap_put_frame(buf, sizeof(buf), 200, NULL, 0), 12);
	CU_ASSERT_EQUAL(DP_AG_MAX_SWITCH, 2730);
}

/* ---- path sanitizer ----------------------------------------------------- */

static const struct {
	const char *in;
	size_t len;		/* 0: strlen(in) */
	const char *out;
} path_cases[] = {
	{ "", 0, "/" },
	{ "/", 0, "/" },
	{ "//", 0, "/" },
	{ ".", 0, "/" },
	{ "..", 0, "/" },
	{ "/usr/bin/make", 0, "/usr/bin/make" },
	{ "usr/bin/make", 0, "/usr/bin/make" },
	{ "/usr//bin///make/", 0, "/usr/bin/make" },
	{ "/usr/./bin/./make/.", 0, "/usr/bin/make" },
	{ "/usr/lib/../bin/make", 0, "/usr/bin/make" },
	{ "../../etc/passwd", 0, "/etc/passwd" },
	{ "/../../../../etc/passwd", 0, "/etc/passwd" },
	{ "/a/b/../../../../c", 0, "/c" },
	{ "/a/b/..", 0, "/a" },
	{ "/a/b/../..", 0, "/" },
	{ "/...", 0, "/..." },
	{ "/..a/a..", 0, "/..a/a.." },
	{ "/.hidden/.x", 0, "/.hidden/.x" },
	{ "/{root}/{kern}/x", 0, "/{root}/{kern}/x" },
	{ "/50%/%2e%2e/%00", 0, "/50%/%2e%2e/%00" },
	{ "/a\nb/c\r\td", 0, "/a\nb/c\r\td" },
	{ "/a\0b", 4, "/ab" },
	{ "/.\0./x", 6, "/x" },
	{ "/a/\0/b", 6, "/a/b" },
	{ "\0\0\0", 3, "/" },
	{ "/\xff\xfe/\x80", 0, "/\xff\xfe/\x80" },
	{ "/memfd:foo (deleted)", 0, "/memfd:foo (deleted)" },
	{ "[vdso]", 0, "/[vdso]" },
};

static void test_sanitize_table(void)
{
	char out[AP_PATH_MAX + 1];
	size_t i;

	for (i = 0; i < sizeof(path_cases) / sizeof(path_cases[0]); i++) {
		size_t len = path_cases[i].len ? path_cases[i].len : strlen(path_cases[i].in);
		ssize_t n = ap_sanitize_path(path_cases[i].in, len, out);

		CU_ASSERT_EQUAL(n, (ssize_t)strlen(path_cases[i].out));
		CU_ASSERT_STRING_EQUAL(out, path_cases[i].out);
		if (n < 0 || strcmp(out, path_cases[i].out))
			fprintf(stderr, "case %zu: got %zd '%s'\n", i, n, n >= 0 ? out : "");
	}
}

static void test_sanitize_limits(void)
{
	char out[AP_PATH_MAX + 1];
	size_t big = 65536, i;
	char *in = malloc(big + 8);

	/* 4096 bytes exactly fit; one more does not. */
	in[0] = '/';
	memset(in + 1, 'a', AP_PATH_MAX - 1);
	CU_ASSERT_EQUAL(ap_sanitize_path(in, AP_PATH_MAX, out), AP_PATH_MAX);
	CU_ASSERT_EQUAL(out[AP_PATH_MAX], '\0');
	in[AP_PATH_MAX] = 'a';
	CU_ASSERT_EQUAL(ap_sanitize_path(in, AP_PATH_MAX + 1, out), -ENAMETOOLONG);
	/* 64 KiB that collapses ("/x/.." repeated) is fine and linear. */
	for (i = 0; i + 5 <= big; i += 5)
		memcpy(in + i, "/x/..", 5);
	memcpy(in + i, "/ok", 3);
	CU_ASSERT_EQUAL(ap_sanitize_path(in, i + 3, out), 3);
	CU_ASSERT_STRING_EQUAL(out, "/ok");
	/* 64 KiB of slashes and dots. */
	memset(in, '/', big);
	CU_ASSERT_EQUAL(ap_sanitize_path(in, big, out), 1);
	for (i = 0; i < big; i++)
		in[i] = (i % 3 == 2) ? '/' : '.';
	CU_ASSERT_EQUAL(ap_sanitize_path(in, big, out), 1);
	CU_ASSERT_STRING_EQUAL(out, "/");
	/* 64 KiB of text with braces, %, newlines: too long, not a crash. */
	for (i = 0; i < big; i++)
		in[i] = "{}%\n/ab"[i % 7];
	CU_ASSERT_EQUAL(ap_sanitize_path(in, big, out), -ENAMETOOLONG);
	free(in);
}

int main(void)
{
	static const struct du_test tests[] = {
		{ "round trip of every frame type", test_roundtrip },
		{ "truncation at every byte", test_truncation },
		{ "bad magic and lengths", test_bad_magic_and_length },
		{ "unknown types skipped", test_unknown_types },
		{ "malformed payloads counted", test_bad_payloads },
		{ "hostile paths", test_hostile_paths },
		{ "mmap flood", test_mmap_flood },
		{ "find hello", test_find_hello },
		{ "encoder limits", test_encoder_limits },
		{ "sanitize table", test_sanitize_table },
		{ "sanitize limits", test_sanitize_limits },
	};

	return du_test_main("agent", tests, DU_TEST_N(tests), NULL, NULL);
}
