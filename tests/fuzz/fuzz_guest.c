/*
 * libFuzzer target for a domain's whole guest state machine (daemon/
 * opd_guest*.c, the image cache, the guest kernel tables): not the frame
 * decoder alone (fuzz_agent does that) but what the host does with a
 * sequence of frames, with host samples, pings and reconnects in between.
 *
 * The input is a program of operations, one opcode byte and its operands
 * each (short inputs read as zeros):
 *   0 RAW      n:u16, n bytes fed as they are (split where the guest said)
 *   1 HELLO    fields; always a version the host speaks half the time
 *   2 MMAP     pid, start, len, pgoff, cookie, build id byte, path
 *   3 FORK     pid, ppid, repeat: the frame repeat+1 times
 *   4 EXIT / COMM(exec)
 *   5 SWITCH   cpu, nr (1..64) switches from a seed
 *   6 PONG / TSC / LOST with the guest's values, huge or not
 *   7 IMAGE_DATA / IMAGE_END for the cookie last requested
 *   8 KALLSYMS / MODULES text and END
 *   9 a host sample (pc, vcpu, mode), then what is ready filed
 *  10 host time passes, a PING goes out, output is taken
 *  11 a new connection (reset_input)
 *  12 BULK MMAP: up to 1024 mappings in one task, ascending or descending
 * Frames are well-formed except for RAW, so the state behind the decoder
 * is what is explored.  The per-input time limit (-timeout) is the test
 * for amplification: what a frame costs must not grow with the state.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "domprof/raw.h"
#include "opd_guest.h"
#include "opd_imgcache.h"
#include "util/du_log.h"

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++) {
		v |= (uint64_t)(in->n ? *in->p : 0) << (8 * i);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

/* A value that is often an edge of its range. */
static uint64_t val64(struct in *in)
{
	switch (take(in, 1) & 7) {
	case 0: return 0;
	case 1: return UINT64_MAX - take(in, 1);
	case 2: return (1ULL << 63) + take(in, 2);
	case 3: return take(in, 2) * 1000000ULL;	/* ms */
	default: return take(in, 8);
	}
}

struct fz {
	struct opd_guest *g;
	uint64_t host_ns;
	uint32_t last_cookie;
	uint8_t frame[sizeof(struct dp_ag_frame) + DP_AG_MAX_PAYLOAD];
};

static struct opd_images *images;
static struct opd_imgcache *cache;
static struct opd_stats st;
static char session[64];

static void feed(struct fz *f, ssize_t len)
{
	if (len > 0 && opd_guest_feed(f->g, f->frame, (size_t)len, f->host_ns) == -EBADMSG)
		opd_guest_reset_input(f->g);
}

static void op_raw(struct fz *f, struct in *in)
{
	size_t n = take(in, 2) % 2048, split;

	if (n > in->n)
		n = in->n;
	split = n ? in->p[0] % (n + 1) : 0;
	if (opd_guest_feed(f->g, in->p, split, f->host_ns) == -EBADMSG ||
	    opd_guest_feed(f->g, in->p + split, n - split, f->host_ns) == -EBADMSG)
		opd_guest_reset_input(f->g);
	in->p += n;
	in->n -= n;
}

static void op_hello(struct fz *f, struct in *in)
{
	struct dp_ag_hello h = { 0 };
	uint8_t v = (uint8_t)take(in, 1);

	h.proto_min = v & 1 ? (uint32_t)take(in, 1) : 1;
	h.proto_max = v & 1 ? (uint32_t)take(in, 1) : 2;
	h.flags = (uint32_t)take(in, 1);
	h.nr_cpus = (uint32_t)take(in, 2);
	h.now_ns = v & 2 ? val64(in) : f->host_ns;
	h.instance = take(in, 1);
	feed(f, ap_put_hello(f->frame, sizeof(f->frame), &h, "6.1.0", 5));
}

static void op_mmap(struct fz *f, struct in *in)
{
	struct dp_ag_mmap m = { 0 };
	char path[64];
	size_t plen;

	m.time_ns = val64(in);
	m.cpu = take(in, 1) & 1 ? DP_AG_CPU_UNKNOWN : (uint32_t)take(in, 1);
	m.pid = m.tid = (uint32_t)take(in, 2);
	m.start = take(in, 1) & 1 ? val64(in) : take(in, 2) << 12;
	m.len = take(in, 1) & 1 ? val64(in) : (take(in, 1) + 1) << 12;
	m.pgoff = take(in, 2) << 12;
	m.cookie = (uint32_t)take(in, 1);
	m.build_id_size = (uint8_t)(take(in, 1) % (DP_AG_BUILD_ID_MAX + 1));
	memset(m.build_id, (int)take(in, 1), sizeof(m.build_id));
	plen = (size_t)snprintf(path, sizeof(path), "/lib/x%u/../b%u.so", (unsigned)take(in, 1),
				(unsigned)take(in, 1));
	if (take(in, 1) & 1)
		plen = (size_t)snprintf(path, sizeof(path), "[vdso]");
	feed(f, ap_put_mmap(f->frame, sizeof(f->frame), &m, path, plen));
}

static void op_fork(struct fz *f, struct in *in)
{
	struct dp_ag_task t = { 0 };
	unsigned rep = (unsigned)take(in, 1);

	t.time_ns = val64(in);
	t.pid = t.tid = (uint32_t)take(in, 2);
	t.ppid = t.ptid = (uint32_t)take(in, 2);
	for (unsigned i = 0; i <= rep; i++)
		feed(f, ap_put_task(f->frame, sizeof(f->frame), DP_AG_FORK, &t));
}

static void op_exit_comm(struct fz *f, struct in *in)
{
	struct dp_ag_task t = { 0 };
	struct dp_ag_comm c = { 0 };

	if (take(in, 1) & 1) {
		t.time_ns = val64(in);
		t.pid = t.tid = (uint32_t)take(in, 2);
		feed(f, ap_put_task(f->frame, sizeof(f->frame), DP_AG_EXIT, &t));
		return;
	}
	c.time_ns = val64(in);
	c.pid = c.tid = (uint32_t)take(in, 2);
	c.flags = (uint32_t)take(in, 1);
	feed(f, ap_put_comm(f->frame, sizeof(f->frame), &c, "x", 1));
}

static void op_switch(struct fz *f, struct in *in)
{
	struct dp_ag_switch s[64];
	uint32_t cpu = (uint32_t)take(in, 1), nr = (uint32_t)(take(in, 1) % 64) + 1;
	uint64_t t = val64(in), step = take(in, 2) * 1000;

	for (uint32_t i = 0; i < nr; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].time_ns = t + i * step;
		s[i].prev_pid = s[i].prev_tid = (uint32_t)take(in, 1);
		s[i].next_pid = s[i].next_tid = (uint32_t)take(in, 1);
	}
	feed(f, ap_put_switches(f->frame, sizeof(f->frame), cpu, s, nr));
}

static void op_clock(struct fz *f, struct in *in)
{
	uint8_t k = (uint8_t)take(in, 1) % 3;

	if (k == 0) {
		struct dp_ag_pong p = { .token = take(in, 1) };

		p.recv_ns = val64(in);
		p.send_ns = take(in, 1) & 1 ? val64(in) : p.recv_ns + take(in, 2);
		feed(f, ap_put_pong(f->frame, sizeof(f->frame), &p));
	} else if (k == 1) {
		struct dp_ag_tsc t = { .time_ns = val64(in), .tsc = val64(in) };

		t.cpu = (uint32_t)take(in, 2);
		t.window_tsc = (uint32_t)take(in, 4);
		feed(f, ap_put_tsc(f->frame, sizeof(f->frame), &t));
	} else {
		struct dp_ag_lost l = { .time_ns = val64(in), .count = val64(in) };

		feed(f, ap_put_lost(f->frame, sizeof(f->frame), &l));
	}
}

/* The last IMAGE_REQUEST's cookie, from the guest's output. */
static void drain_output(struct fz *f)
{
	uint8_t out[4096];
	size_t n;

	while ((n = opd_guest_output(f->g, out, sizeof(out))) > 0) {
		for (size_t o = 0; o + sizeof(struct dp_ag_frame) <= n;) {
			struct dp_ag_frame h;

			memcpy(&h, out + o, sizeof(h));
			if (h.type == DP_AG_IMAGE_REQUEST && o + 16 <= n)
				memcpy(&f->last_cookie, out + o + 12, 4);
			o += sizeof(h) + h.len;
		}
	}
}

static void op_image(struct fz *f, struct in *in)
{
	uint8_t data[256];
	size_t n = take(in, 1);

	drain_output(f);
	if (take(in, 1) & 1) {
		struct dp_ag_image_data d = { .cookie = f->last_cookie, .offset = take(in, 2) };

		for (size_t i = 0; i < n; i++)
			data[i] = (uint8_t)take(in, 1);
		if (n)
			feed(f, ap_put_image_data(f->frame, sizeof(f->frame), &d, data, n));
	} else {
		struct dp_ag_image_end e = { .cookie = f->last_cookie };

		e.status = (uint32_t)take(in, 1) % 6;
		e.size = take(in, 2);
		e.build_id_size = (uint8_t)(take(in, 1) % 24);
		memset(e.build_id, (int)take(in, 1), sizeof(e.build_id));
		feed(f, ap_put_image_end(f->frame, sizeof(f->frame), &e));
	}
}

static void op_table(struct fz *f, struct in *in)
{
	static const char *lines[] = {
		"ffffffff81000000 T _text\n", "ffffffff81000100 t do_work\n",
		"ffffffffc0000000 t modfn\t[mod%u]\n", "mod%u 16384 0 - Live 0xffffffffc0000000\n",
		"kvm%u 4096 1 - Live 0xffffffffc%07x\n", "garbage %u\n",
	};
	uint8_t k = (uint8_t)take(in, 1);
	uint16_t type = k & 1 ? DP_AG_MODULES : DP_AG_KALLSYMS;
	char text[2048];
	size_t len = 0;

	if (k & 2) {
		struct dp_ag_table_end e = { .status = (uint32_t)take(in, 1) % 5 };

		e.total_bytes = take(in, 2);
		e.chunks = (uint32_t)take(in, 1);
		feed(f, ap_put_table_end(f->frame, sizeof(f->frame), type + 1, &e));
		return;
	}
	for (unsigned i = (unsigned)take(in, 1) % 32 + 1; i && len < sizeof(text) - 64; i--) {
		unsigned x = (unsigned)take(in, 1);

		len += (size_t)snprintf(text + len, sizeof(text) - len, lines[x % 6], x, x << 12);
	}
	feed(f, ap_put_text(f->frame, sizeof(f->frame), type, text, len));
}

static void op_sample(struct fz *f, struct in *in)
{
	struct opd_guest_sample s = { 0 }, out;
	struct opd_guest_res r;

	s.host_ns = f->host_ns;
	s.pc = take(in, 1) & 1 ? val64(in) : 0x400000 + (take(in, 2) << 4);
	s.vcpu = (int32_t)(take(in, 1) % 6) - 1;
	s.mode = take(in, 1) & 1 ? DP_MODE_GUEST_KERNEL : DP_MODE_GUEST_USER;
	if (opd_guest_defer(f->g, &s, &out, &r) && !r.image)
		abort();
	while (opd_guest_next(f->g, f->host_ns, false, &out, &r))
		if (!r.image || !r.counter)
			abort();
}

static void op_time(struct fz *f, struct in *in)
{
	f->host_ns += take(in, 2) * 1000000ULL;
	opd_guest_ping(f->g, f->host_ns);
	drain_output(f);
}

/* Many mappings of one task in one op: the costliest MMAP pattern a guest
 * can send (descending starts) without the fuzzer writing each. */
static void op_bulk(struct fz *f, struct in *in)
{
	struct dp_ag_mmap m = { 0 };
	unsigned n = (unsigned)(take(in, 2) % 1024) + 1;
	bool down = take(in, 1) & 1;

	m.pid = m.tid = (uint32_t)take(in, 2);
	m.cpu = DP_AG_CPU_UNKNOWN;
	m.len = 0x1000;
	for (unsigned i = 0; i < n; i++) {
		m.start = 0x10000000ULL + (uint64_t)(down ? n - i : i) * 0x2000;
		feed(f, ap_put_mmap(f->frame, sizeof(f->frame), &m, "/bin/bulk", 9));
	}
}

static void setup(void)
{
	du_log_set_level(DU_LOG_ERR);
	snprintf(session, sizeof(session), "/tmp/fuzz_guest.%d", (int)getpid());
	mkdir(session, 0700);
	images = opd_images_new();
	cache = opd_imgcache_new(session, &st);
	if (!images || !cache)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz f;
	struct opd_guest_limits lim;
	struct in in = { data, size };
	char dir[PATH_MAX];

	if (!images)
		setup();
	opd_guest_limits_default(&lim);
	lim.max_tasks = 256;
	lim.max_maps = 16384;
	lim.max_bytes = 8u << 20;
	lim.max_images = 16;
	lim.max_image_bytes = 1u << 20;
	lim.max_cpus = 8;
	lim.ring = 64;
	lim.queue = 32;
	snprintf(dir, sizeof(dir), "%s/domains/d", session);
	f.g = opd_guest_new("d", dir, &lim, images, cache, &st);
	if (!f.g)
		abort();
	f.host_ns = 1000000000ULL;
	f.last_cookie = 0;
	while (in.n) {
		switch (take(&in, 1) % 13) {
		case 0: op_raw(&f, &in); break;
		case 1: op_hello(&f, &in); break;
		case 2: op_mmap(&f, &in); break;
		case 3: op_fork(&f, &in); break;
		case 4: op_exit_comm(&f, &in); break;
		case 5: op_switch(&f, &in); break;
		case 6: op_clock(&f, &in); break;
		case 7: op_image(&f, &in); break;
		case 8: op_table(&f, &in); break;
		case 9: op_sample(&f, &in); break;
		case 10: op_time(&f, &in); break;
		case 11: opd_guest_reset_input(f.g); break;
		default: op_bulk(&f, &in); break;
		}
		if (opd_guest_bytes(f.g) > lim.max_bytes || opd_guest_nr_maps(f.g) > lim.max_maps ||
		    opd_guest_nr_tasks(f.g) > lim.max_tasks)
			abort();
	}
	{
		struct opd_guest_sample out;
		struct opd_guest_res r;

		while (opd_guest_next(f.g, f.host_ns, true, &out, &r))
			;
	}
	opd_guest_free(f.g);
	f.g = NULL;
	return 0;
}
