/*
 * CUnit tests of opagent's Xen channel: the xenstore answer parser (ag_xen.c)
 * on good and hostile answers, the hvc numbering, and the agent itself on
 * a tty (a pty stands in for /dev/hvcN; this test plays the host on the
 * master side): nothing is sent before HOST_JOIN, HELLO and the state
 * after it, the frames arrive unmangled (raw mode), and a second JOIN
 * starts it over.  $OPAGENT names the binary (the tty tests are skipped
 * without it).
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ag.h"
#include "util/du_test.h"

/* An answer: header and payload. */
static size_t answer(uint8_t *buf, uint32_t type, uint32_t id, const void *p, uint32_t n)
{
	struct ag_xs_hdr h = { .type = type, .req_id = id, .len = n };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), p, n);
	return sizeof(h) + n;
}

static void test_xs_request(void)
{
	uint8_t buf[64];
	struct ag_xs_hdr h;
	char big[AG_XS_PAYLOAD_MAX + 1];

	CU_ASSERT_EQUAL(ag_xs_request(buf, sizeof(buf), AG_XS_READ, 7, "device/console/1/name"),
			16 + 22);
	memcpy(&h, buf, sizeof(h));
	CU_ASSERT(h.type == AG_XS_READ && h.req_id == 7 && h.tx_id == 0 && h.len == 22);
	CU_ASSERT_STRING_EQUAL((char *)buf + 16, "device/console/1/name");
	CU_ASSERT_EQUAL(ag_xs_request(buf, 20, AG_XS_READ, 7, "device/console/1/name"), -ENOSPC);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CU_ASSERT_EQUAL(ag_xs_request(buf, sizeof(buf), AG_XS_READ, 7, big), -ENAMETOOLONG);
}

static void test_xs_parse(void)
{
	uint8_t buf[sizeof(struct ag_xs_hdr) + AG_XS_PAYLOAD_MAX + 8];
	struct ag_xs_hdr h;
	char out[32];
	size_t n;

	/* a value, with or without its NUL */
	n = answer(buf, AG_XS_READ, 3, "org.domprof.agent.0", 19);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), 19);
	CU_ASSERT_STRING_EQUAL(out, DP_AG_PORT_NAME);
	n = answer(buf, AG_XS_READ, 3, "abc", 4);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), 3);
	CU_ASSERT_STRING_EQUAL(out, "abc");
	n = answer(buf, AG_XS_READ, 3, "", 0);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), 0);
	/* every cut is "more to come" */
	n = answer(buf, AG_XS_READ, 3, "org.domprof.agent.0", 19);
	for (size_t k = 0; k < n; k++)
		CU_ASSERT_EQUAL(ag_xs_parse_read(buf, k, 3, out, sizeof(out)), -EAGAIN);
	/* errors by name */
	n = answer(buf, AG_XS_ERROR, 3, "ENOENT", 7);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), -ENOENT);
	n = answer(buf, AG_XS_ERROR, 3, "EACCES", 6);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), -EACCES);
	n = answer(buf, AG_XS_ERROR, 3, "ENOENTX", 7);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), -EIO);
	/* not this answer: another id, another type, bytes after it */
	n = answer(buf, AG_XS_READ, 4, "abc", 3);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), -EPROTO);
	n = answer(buf, 15 /* XS_WATCH_EVENT */, 3, "abc", 3);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), -EPROTO);
	n = answer(buf, AG_XS_READ, 3, "abcd", 4);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n - 1 + 1, 3, out, sizeof(out)), 4);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n + 1, 3, out, sizeof(out)), -EPROTO);
	/* a length over the protocol's limit, even before its bytes came */
	h = (struct ag_xs_hdr){ .type = AG_XS_READ, .req_id = 3, .len = AG_XS_PAYLOAD_MAX + 1 };
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, sizeof(h), 3, out, sizeof(out)), -EPROTO);
	h.len = UINT32_MAX;
	memcpy(buf, &h, sizeof(h));
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, sizeof(h), 3, out, sizeof(out)), -EPROTO);
	/* values that do not fit, or hold a NUL */
	n = answer(buf, AG_XS_READ, 3, "0123456789012345678901234567890123456789", 40);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), -EMSGSIZE);
	n = answer(buf, AG_XS_READ, 3, "ab\0cd", 5);
	CU_ASSERT_EQUAL(ag_xs_parse_read(buf, n, 3, out, sizeof(out)), -EMSGSIZE);
	/* the largest answer the protocol allows is read whole */
	memset(buf + sizeof(h), 'x', AG_XS_PAYLOAD_MAX);
	h.len = AG_XS_PAYLOAD_MAX;
	memcpy(buf, &h, sizeof(h));
	{
		char *big = malloc(AG_XS_PAYLOAD_MAX + 1);

		CU_ASSERT_FATAL(big != NULL);
		CU_ASSERT_EQUAL(ag_xs_parse_read(buf, sizeof(h) + AG_XS_PAYLOAD_MAX, 3, big,
						 AG_XS_PAYLOAD_MAX + 1), AG_XS_PAYLOAD_MAX);
		free(big);
	}
}

static bool odd_bound(unsigned int k)
{
	return k & 1;
}

static bool all_bound(unsigned int k)
{
	return true;
}

static void test_hvc_index(void)
{
	CU_ASSERT_EQUAL(ag_xen_hvc_index(1, all_bound), 1);
	CU_ASSERT_EQUAL(ag_xen_hvc_index(3, all_bound), 3);
	/* console 2 has no tty: console 3 is the second channel, hvc2 */
	CU_ASSERT_EQUAL(ag_xen_hvc_index(3, odd_bound), 2);
}

/* ---- the agent on a tty ---- */

static int master = -1;
static pid_t agent = -1;

struct got {
	unsigned int hello, state_end, join;
	uint64_t instance;
	size_t since_hello;	/* bytes from the first HELLO on */
	size_t ks_bytes;	/* of symbol table chunks */
};

static int g_hello(void *ctx, const struct dp_ag_hello *h, const char *rel, size_t len)
{
	struct got *g = ctx;

	g->hello++;
	g->instance = h->instance;
	return 0;
}

static int g_state_end(void *ctx, const struct dp_ag_state_end *e)
{
	((struct got *)ctx)->state_end++;
	return 0;
}

static int g_text(void *ctx, const char *text, size_t len)
{
	(void)text;
	((struct got *)ctx)->ks_bytes += len;
	return 0;
}

static const struct ap_ops got_ops = { .hello = g_hello, .state_end = g_state_end,
				       .kallsyms = g_text };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The first frame header in @buf (a read that starts mid-stream may
 * begin inside a frame the last read cut); @len if none. */
static size_t first_frame(const uint8_t *buf, size_t len)
{
	for (size_t i = 0; i + sizeof(struct dp_ag_frame) <= len; i++) {
		struct dp_ag_frame f;

		memcpy(&f, buf + i, sizeof(f));
		if (f.magic == DP_AG_MAGIC && f.len <= DP_AG_MAX_PAYLOAD && f.type >= 1 &&
		    f.type <= DP_AG_TYPE_LAST)
			return i;
	}
	return len;
}

/* What a read of the agent waits for (then reads @settle_ms more). */
enum until { UNTIL_NONE, UNTIL_STATE, UNTIL_HELLO, UNTIL_BULK };

static bool until_met(enum until u, const struct got *t)
{
	return (u == UNTIL_STATE && t->state_end) || (u == UNTIL_HELLO && t->hello) ||
	       (u == UNTIL_BULK && t->ks_bytes);
}

/* Read what the agent sends for @ms, or until @u is met and @settle_ms
 * more have passed (a loaded machine runs the agent late: what it must
 * send is waited for, not given a fixed time), and decode it as a whole:
 * it must be clean frames from its first byte (from its first HELLO when
 * @from_hello: a read that joins the stream). */
static size_t read_agent(struct got *g, unsigned int ms, enum until u, unsigned int settle_ms,
			 bool from_hello, int *decode_err)
{
	static uint8_t buf[8 << 20];
	size_t len = 0, used = 0;
	uint64_t end = now_ms() + ms;
	bool met = false;


	memset(g, 0, sizeof(*g));
	*decode_err = 0;
	while (now_ms() < end && len < sizeof(buf)) {
		struct pollfd pfd = { .fd = master, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		n = read(master, buf + len, sizeof(buf) - len);
		/* EIO: no one has the pty's other side open (yet, or again) */
		if (n < 0 && errno == EIO) {
			usleep(20 * 1000);
			continue;
		}
		if (n <= 0)
			break;
		len += (size_t)n;
		if (u != UNTIL_NONE && !met) {
			struct got t = { 0 };
			size_t o = from_hello ? ap_find_hello(buf, len) : first_frame(buf, len);

			used = 0;
			if (ap_decode(&got_ops, &t, buf + o, len - o, &used, NULL) == 0 &&
			    until_met(u, &t)) {
				met = true;
				end = now_ms() + settle_ms;
			}
		}
	}
	used = 0;
	{
		size_t o = from_hello ? ap_find_hello(buf, len) : first_frame(buf, len);

		*decode_err = ap_decode(&got_ops, g, buf + o, len - o, &used, NULL);
		g->since_hello = len - o;
	}
	return len;
}

static void send_join(uint64_t token)
{
	uint8_t f[64];
	ssize_t n = ap_put_host_join(f, sizeof(f), token);

	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_FATAL(write(master, f, (size_t)n) == n);
}

static void send_ack(uint64_t bytes)
{
	uint8_t f[64];
	ssize_t n = ap_put_host_ack(f, sizeof(f), bytes);

	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_FATAL(write(master, f, (size_t)n) == n);
}

/* opagent on a new pty, with @window as its --tty-window (NULL: the
 * default). */
static int tty_start(const char *window)
{
	const char *bin = getenv("OPAGENT");
	char *slave;

	if (!bin || access(bin, X_OK))
		return 0;
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) || unlockpt(master) || !(slave = ptsname(master)))
		return -1;
	agent = fork();
	if (agent < 0)
		return -1;
	if (!agent) {
		char port[128];
		int null = open("/dev/null", O_RDWR);

		snprintf(port, sizeof(port), "--port=%s", slave);
		dup2(null, 0);
		execl(bin, "opagent", port, "--no-tsc", "--duration=60", window, (char *)NULL);
		_exit(127);
	}
	return 0;
}

static int tty_setup(void)
{
	return tty_start(NULL);
}

static int tty_setup_small(void)
{
	return tty_start("--tty-window=4096");
}

static int tty_teardown(void)
{
	if (agent > 0) {
		kill(agent, SIGTERM);
		waitpid(agent, NULL, 0);
	}
	if (master >= 0)
		close(master);
	return 0;
}

static void test_tty_join(void)
{
	struct got g;
	uint64_t first;
	size_t n;
	int err;

	if (agent <= 0) {
		fprintf(stderr, "(no $OPAGENT: skipped) ");
		return;
	}
	/* no host has said JOIN: the agent sends nothing */
	n = read_agent(&g, 1500, UNTIL_NONE, 0, false, &err);
	CU_ASSERT_EQUAL(n, 0);
	/* JOIN: HELLO and the state, clean frames from the first byte (a tty
	 * left cooked would turn a 0x0a into 0x0d 0x0a, or hold the JOIN
	 * back until a newline) */
	send_join(1);
	n = read_agent(&g, 20000, UNTIL_STATE, 0, false, &err);
	CU_ASSERT(n > 0);
	CU_ASSERT_EQUAL(err, 0);
	CU_ASSERT_EQUAL(g.hello, 1);
	CU_ASSERT_EQUAL(g.state_end, 1);
	first = g.instance;
	/* another JOIN (no HOST_HELLO came): the same agent starts over */
	send_join(2);
	read_agent(&g, 20000, UNTIL_STATE, 0, true, &err);
	CU_ASSERT_EQUAL(err, 0);
	CU_ASSERT_EQUAL(g.hello, 1);
	CU_ASSERT_EQUAL(g.state_end, 1);
	CU_ASSERT_EQUAL(g.instance, first);
	/* the same JOIN again (the host says it until it sees a HELLO): not
	 * a new host, no new HELLO */
	send_join(2);
	read_agent(&g, 1500, UNTIL_NONE, 0, true, &err);
	CU_ASSERT_EQUAL(g.hello, 0);
	/* a frame the last host cut short and a new host's JOIN, come
	 * together: the agent finds the JOIN past the cut frame's bytes and
	 * starts over at once, not when the host next sends (the JOIN's
	 * repeat, which a host sends until it sees a HELLO, is not needed,
	 * and does not start it over again) */
	{
		uint8_t f[128];
		ssize_t fl = ap_put_host_join(f, sizeof(f), 99), jl;

		CU_ASSERT_FATAL(fl > 10);
		jl = ap_put_host_join(f + 10, sizeof(f) - 10, 3);
		CU_ASSERT_FATAL(jl > 0);
		CU_ASSERT_FATAL(write(master, f, (size_t)(10 + jl)) == 10 + jl);
	}
	read_agent(&g, 20000, UNTIL_STATE, 0, true, &err);
	CU_ASSERT_EQUAL(err, 0);
	CU_ASSERT_EQUAL(g.hello, 1);
	CU_ASSERT_EQUAL(g.state_end, 1);
	send_join(3);
	read_agent(&g, 1500, UNTIL_NONE, 0, true, &err);
	CU_ASSERT_EQUAL(g.hello, 0);
}

/*
 * A tty loses what the host has not read beyond its back end's limit:
 * after HELLO the agent sends no bulk (the symbol table) until the host's
 * first HOST_ACK; then at most a window (256 KiB, and the chunk that
 * crossed it) ahead of what the host acknowledged; a later ACK lets more
 * go.
 */
static void test_tty_window(void)
{
	struct got g;
	size_t first;
	int err;

	if (agent <= 0) {
		fprintf(stderr, "(no $OPAGENT: skipped) ");
		return;
	}
	send_join(40);
	read_agent(&g, 20000, UNTIL_HELLO, 500, true, &err);
	CU_ASSERT_EQUAL(g.hello, 1);
	CU_ASSERT_EQUAL(g.ks_bytes, 0);	/* no ACK yet: no bulk (it waits 2 s) */
	first = g.since_hello;
	send_ack(0);
	read_agent(&g, 20000, UNTIL_BULK, 1500, false, &err);
	/* the ACK lets the bulk go, unless a busy machine's sideband (not
	 * held: counted in the window all the same) filled the window first:
	 * then it waits for the next ACK, as it must */
	CU_ASSERT(g.ks_bytes > 0 || first + g.since_hello >= (256u << 10));
	/* the bulk stays within the window, one chunk over (the sideband
	 * is not held, and on a busy machine it is much: not counted) */
	CU_ASSERT(g.ks_bytes <= (256u << 10) + DP_AG_MAX_PAYLOAD);
	printf("\n  window: %zu symbol table bytes (%zu in all) after HELLO before the second ACK\n",
	       g.ks_bytes, first + g.since_hello);
	send_ack(1u << 30);
	read_agent(&g, 20000, UNTIL_BULK, 0, false, &err);
	CU_ASSERT(g.ks_bytes > 0);
}

/* The largest /proc/PID/maps on this machine, in bytes: about what one
 * process's mapping frames in a snapshot take (an ASan program has
 * thousands of mappings). */
static size_t biggest_maps(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	size_t most = 0;

	while (d && (de = readdir(d))) {
		char path[300], buf[65536];
		size_t sz = 0;
		ssize_t n;
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			sz += (size_t)n;
		close(fd);
		if (sz > most)
			most = sz;
	}
	if (d)
		closedir(d);
	return most;
}

/*
 * The snapshot of the tasks that exist (a process at a time) keeps to the
 * window too: a guest with many processes would otherwise put megabytes
 * on the console at once.  With a 4 KiB window: no state end before the
 * first ACK, the snapshot in several acknowledged steps, and the whole of
 * it as the ACKs come.  Each step is a window, the process that crossed
 * it and the sideband, which is not held (the agent's perf records of a
 * busy test machine: bounded loosely).
 */
static void test_tty_snapshot_window(void)
{
	struct got g;
	size_t total, n, most = 0;
	unsigned int steps = 0;
	int err;

	if (agent <= 0) {
		fprintf(stderr, "(no $OPAGENT: skipped) ");
		return;
	}
	/* a JOIN before the agent opened its side is lost: said again, as
	 * the host does, until a HELLO comes */
	for (int i = 0; i < 10; i++) {
		send_join(50);
		read_agent(&g, 1000, UNTIL_NONE, 0, true, &err);
		if (g.hello)
			break;
	}
	CU_ASSERT_EQUAL(g.hello, 1);
	CU_ASSERT_EQUAL(g.state_end, 0);	/* held for the first ACK */
	total = g.since_hello;
	while (steps++ < 400) {
		send_ack(total);
		n = read_agent(&g, 300, UNTIL_STATE, 0, false, &err);
		total += n;
		if (n > most)
			most = n;
		if (g.state_end)
			break;
	}
	printf("\n  snapshot: %zu bytes after HELLO in %u acknowledged steps, at most %zu a step\n",
	       total, steps, most);
	CU_ASSERT_EQUAL(g.state_end, 1);
	CU_ASSERT(steps > 1);	/* the test machine's snapshot is over 4 KiB */
	/* a window, the process that crossed it (at most twice the largest
	 * maps file's bytes) and a loose 512 KiB of sideband */
	CU_ASSERT(most <= 4096 + 2 * biggest_maps() + 512 * 1024);
}

int main(void)
{
	static const struct du_test xs[] = {
		{ "xenstore request", test_xs_request },
		{ "xenstore answers, good and hostile", test_xs_parse },
		{ "hvc numbering", test_hvc_index },
	};
	static const struct du_test tty[] = {
		{ "nothing before JOIN, raw frames after, JOIN starts over, once", test_tty_join },
		{ "bulk within the window the host's ACKs open", test_tty_window },
	};
	static const struct du_test tty_small[] = {
		{ "the snapshot within the window", test_tty_snapshot_window },
	};
	static const struct du_test_suite suites[] = {
		{ "opagent xen channel", NULL, NULL, xs, DU_TEST_N(xs) },
		{ "opagent on a tty", tty_setup, tty_teardown, tty, DU_TEST_N(tty) },
		{ "opagent on a tty, a 4 KiB window", tty_setup_small, tty_teardown,
		  tty_small, DU_TEST_N(tty_small) },
	};

	return du_test_run(suites, DU_TEST_N(suites));
}
