/*
 * A hostile guest for the lab's hostile-guest scenario (issue 9): in place
 * of opagent it speaks the agent protocol on the virtio port and replays
 * attacks on the host's daemon.
 *
 *   hostile-agent busy SECONDS
 *       burn the CPU only (the baseline: same load, no frames)
 *   hostile-agent attack SECONDS VICTIM [PORT]
 *       HELLO, then:
 *       - clock: PONG, TSC, LOST and SWITCH values at the ends of their
 *         ranges (on a vCPU of their own, so the timeline below holds);
 *       - fork: a parent with 131,072 mappings, then FORK frames;
 *       - chains: 32,767 tasks whose pids share pid % 4096, 40,000 paths;
 *       - poison: its own text mapped as VICTIM's path with VICTIM's build
 *         id (read from VICTIM), switches that put its samples there, and
 *         junk bytes (with the marker DOMPROF-POISON) uploaded when the host
 *         asks for that image;
 *       - flood: FORK frames copying the big parent, without end.
 *       It answers PINGs all along and prints, at the end, one line
 *       "HOSTILE pings=N max_ping_gap_ms=G requests=R bytes=B".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"

#define PORT "/dev/virtio-ports/" DP_AG_PORT_NAME
#define OUT_MAX (1u << 20)

static int fd = -1;
static uint8_t out[OUT_MAX + 70000];
static size_t out_len;
static uint64_t bytes, pings, requests, last_ping, max_gap, last_switch;
static uint8_t victim_bid[DP_AG_BUILD_ID_MAX];
static uint8_t victim_bid_size;
static uint64_t text_start, text_end;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void burn(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		for (int i = 0; i < 10000; i++)
			sink += (uint64_t)i * 2654435761u;
}

static void pump(int timeout_ms);

/* Queue one frame (@n from an ap_put_*), pumping while the queue is full. */
static void put(ssize_t n)
{
	if (n <= 0) {
		fprintf(stderr, "hostile: encode failed\n");
		exit(1);
	}
	out_len += (size_t)n;
	while (out_len > OUT_MAX / 2)
		pump(10);
}

#define ROOM (sizeof(out) - out_len)
#define AT (out + out_len)

static void handle(const uint8_t *p, size_t n);

static void pump(int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN | (out_len ? POLLOUT : 0) };
	static uint8_t in[65536 + 16];
	static size_t in_len;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return;
	if (pfd.revents & POLLIN) {
		ssize_t r = read(fd, in + in_len, sizeof(in) - in_len);

		if (r > 0) {
			size_t used = 0;

			in_len += (size_t)r;
			handle(in, in_len);
			/* frames from the host are small: keep a partial one */
			for (size_t o = 0; o + 12 <= in_len;) {
				struct dp_ag_frame f;

				memcpy(&f, in + o, sizeof(f));
				if (o + 12 + f.len > in_len)
					break;
				o += 12 + f.len;
				used = o;
			}
			memmove(in, in + used, in_len - used);
			in_len -= used;
		}
	}
	if ((pfd.revents & POLLOUT) && out_len) {
		ssize_t w = write(fd, out, out_len);

		if (w > 0) {
			memmove(out, out + w, out_len - (size_t)w);
			out_len -= (size_t)w;
			bytes += (uint64_t)w;
		}
	}
}

static void answer_image(uint32_t cookie)
{
	static uint8_t junk[4096];
	/* put() pumps, and a request read meanwhile must not put its frames
	 * between this one's DATA and END: it waits its turn */
	static bool busy;
	static uint32_t pending;

	requests++;
	if (busy) {
		pending = cookie;
		return;
	}
	busy = true;
	memset(junk, 'x', sizeof(junk));
	for (size_t i = 0; i + 15 < sizeof(junk); i += 64)
		memcpy(junk + i, "DOMPROF-POISON", 14);
	for (;;) {
		struct dp_ag_image_data d = { .cookie = cookie };
		struct dp_ag_image_end e = { .cookie = cookie, .status = DP_AG_IMAGE_SENT,
					     .size = sizeof(junk) };

		put(ap_put_image_data(AT, ROOM, &d, junk, sizeof(junk)));
		e.build_id_size = victim_bid_size;
		memcpy(e.build_id, victim_bid, victim_bid_size);
		put(ap_put_image_end(AT, ROOM, &e));
		printf("HOSTILE-UPLOADED cookie=%u\n", cookie);
		fflush(stdout);
		if (!pending)
			break;
		cookie = pending;
		pending = 0;
	}
	busy = false;
}

/* PINGs get PONGs (a daemon that stops pinging shows as a gap); image
 * requests get the junk. */
static void handle(const uint8_t *p, size_t n)
{
	for (size_t o = 0; o + 12 <= n;) {
		struct dp_ag_frame f;

		memcpy(&f, p + o, sizeof(f));
		if (f.magic != DP_AG_MAGIC || o + 12 + f.len > n)
			return;
		if (f.type == DP_AG_PING && f.len >= 8) {
			struct dp_ag_pong pg;
			uint64_t t = now_ns();

			memcpy(&pg.token, p + o + 12, 8);
			pg.recv_ns = pg.send_ns = t;
			if (last_ping && t - last_ping > max_gap)
				max_gap = t - last_ping;
			last_ping = t;
			pings++;
			if (ROOM > 100) {
				out_len += (size_t)ap_put_pong(AT, ROOM, &pg);
			}
		} else if (f.type == DP_AG_IMAGE_REQUEST && f.len >= 4) {
			uint32_t cookie;

			memcpy(&cookie, p + o + 12, 4);
			answer_image(cookie);
		}
		o += 12 + f.len;
	}
}

/* Keep the host's timeline of vCPU 0 saying this process runs. */
static void switch_in(void)
{
	struct dp_ag_switch s = { .time_ns = now_ns(), .next_pid = (uint32_t)getpid(),
				  .next_tid = (uint32_t)getpid() };

	if (s.time_ns - last_switch < 20000000ULL)
		return;
	last_switch = s.time_ns;
	put(ap_put_switches(AT, ROOM, 0, &s, 1));
}

static void read_victim(const char *path)
{
	static uint8_t buf[1 << 16];
	int vfd = open(path, O_RDONLY);
	ssize_t n = vfd >= 0 ? read(vfd, buf, sizeof(buf)) : -1;

	if (vfd >= 0)
		close(vfd);
	for (ssize_t i = 0; i + 16 + 20 <= n; i++) {
		uint32_t nsz, dsz, type;

		memcpy(&nsz, buf + i, 4);
		memcpy(&dsz, buf + i + 4, 4);
		memcpy(&type, buf + i + 8, 4);
		if (nsz == 4 && type == 3 && dsz >= 8 && dsz <= 20 && !memcmp(buf + i + 12, "GNU", 4)) {
			victim_bid_size = (uint8_t)dsz;
			memcpy(victim_bid, buf + i + 16, dsz);
			return;
		}
	}
	fprintf(stderr, "hostile: no build id in %s\n", path);
	exit(1);
}

static void read_text(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long a, b;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 && perms[2] == 'x') {
			text_start = a;
			text_end = b;
			break;
		}
	}
	if (f)
		fclose(f);
}

static void attack_clock(void)
{
	struct dp_ag_pong pg = { .token = 12345, .recv_ns = (1ULL << 63) + 7,
				 .send_ns = UINT64_MAX };
	struct dp_ag_tsc t = { .time_ns = UINT64_MAX, .tsc = UINT64_MAX, .cpu = 0,
			       .window_tsc = UINT32_MAX };
	struct dp_ag_lost l = { .time_ns = UINT64_MAX, .count = UINT64_MAX };
	struct dp_ag_switch s[2] = {
		{ .time_ns = (1ULL << 63) - 1, .next_pid = 1 },
		{ .time_ns = UINT64_MAX, .next_pid = 2 },
	};

	put(ap_put_pong(AT, ROOM, &pg));
	put(ap_put_tsc(AT, ROOM, &t));
	put(ap_put_lost(AT, ROOM, &l));
	put(ap_put_switches(AT, ROOM, 5, s, 2));	/* vCPU 5: its own timeline */
}

static void mmap_one(uint32_t pid, uint64_t start, uint64_t len, uint32_t cookie,
		     const char *path, size_t plen, int with_bid)
{
	struct dp_ag_mmap m = { .time_ns = now_ns(), .cpu = DP_AG_CPU_UNKNOWN, .pid = pid,
				.tid = pid, .cookie = cookie, .start = start, .len = len };

	if (with_bid) {
		m.build_id_size = victim_bid_size;
		memcpy(m.build_id, victim_bid, victim_bid_size);
	}
	put(ap_put_mmap(AT, ROOM, &m, path, plen));
}

static void fork_one(uint32_t pid, uint32_t ppid)
{
	struct dp_ag_task t = { .time_ns = now_ns(), .pid = pid, .ppid = ppid, .tid = pid,
				.ptid = ppid };

	put(ap_put_task(AT, ROOM, DP_AG_FORK, &t));
}

static void attack_fork_chains(void)
{
	char path[32];

	for (uint64_t i = 131072; i > 0; i--) {
		mmap_one(100, 0x10000000ULL + i * 0x2000, 0x1000, 0, "/lib/a.so", 9, 0);
		if (!(i & 1023))
			switch_in();
	}
	for (uint32_t c = 101; c <= 103; c++)
		fork_one(c, 100);
	/* paths first: once the task cap is reached, no MMAP gets as far */
	for (uint32_t k = 0; k < 40000; k++)
		mmap_one(99, 0x20000000ULL + k * 0x2000ULL, 0x1000, 0, path,
			 (size_t)snprintf(path, sizeof(path), "/p/%u", k), 0);
	for (uint32_t k = 1; k < 32768; k++)
		mmap_one(k * 4096, 0x400000, 0x1000, 0, "/bin/x", 6, 0);
	printf("HOSTILE-FORK-CHAINS-SENT\n");
	fflush(stdout);
}

static void attack(double seconds, const char *victim)
{
	struct dp_ag_hello h = { .proto_min = 1, .proto_max = 2, .nr_cpus = 1, .clock_id = 1,
				 .flags = DP_AG_HELLO_F_PERF | DP_AG_HELLO_F_SWITCH |
					  DP_AG_HELLO_F_IMAGES,
				 .page_size = 4096 };
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);
	uint32_t child = 300;

	read_victim(victim);
	read_text();
	h.now_ns = now_ns();
	h.instance = (uint64_t)getpid() * 7919;
	put(ap_put_hello(AT, ROOM, &h, "hostile", 7));
	put(ap_put_task(AT, ROOM, DP_AG_FORK, &(struct dp_ag_task){ .pid = (uint32_t)getpid() }));
	/* its own text under the victim's path and build id */
	mmap_one((uint32_t)getpid(), text_start, text_end - text_start, 1, victim,
		 strlen(victim), 1);
	switch_in();
	attack_clock();
	attack_fork_chains();
	while (now_ns() < end) {
		switch_in();
		fork_one(child, 100);
		child = child < 399 ? child + 1 : 300;
		if (out_len > OUT_MAX / 4)
			pump(1);
		else
			burn(100000);
	}
	printf("HOSTILE pings=%llu max_ping_gap_ms=%llu requests=%llu bytes=%llu\n",
	       (unsigned long long)pings, (unsigned long long)(max_gap / 1000000),
	       (unsigned long long)requests, (unsigned long long)bytes);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "busy")) {
		burn((uint64_t)(atof(argv[2]) * 1e9));
		printf("HOSTILE-BUSY-DONE\n");
		return 0;
	}
	if (argc < 4 || strcmp(argv[1], "attack")) {
		fprintf(stderr, "usage: hostile-agent busy SECONDS | attack SECONDS VICTIM [PORT]\n");
		return 2;
	}
	fd = open(argc > 4 ? argv[4] : PORT, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		perror(argc > 4 ? argv[4] : PORT);
		return 1;
	}
	attack(atof(argv[2]), argv[3]);
	return 0;
}
