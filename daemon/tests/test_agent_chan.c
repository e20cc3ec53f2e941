/*
 * CUnit tests of the agent channels (opd_agent): a listening unix socket
 * stands in for QEMU's chardev server, and the test plays opagent on the
 * connection the daemon makes to it.  Host time is passed in, so back-offs
 * and pings are stepped, not waited for.
 */
#include "config.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "agent/agent.h"
#include "domprof/raw.h"
#include "opd_agent.h"
#include "opd_image.h"
#include "sfname/sfname.h"
#include "util/du_log.h"
#include "util/du_test.h"
#include "test_stats_doc.h"
#include "util/du_fs.h"

#define MS 1000000ULL
#define S (1000 * MS)

static char top[64], session[128], sock_path[128];
static struct opd_stats st;
static struct opd_images *images;
static struct opd_agents *agents;
static struct opd_dom dom;
static int lfd = -1;
static uint8_t buf[2 * 65600];

static void quiet_log(enum du_log_level level, const char *fmt, va_list ap)
{
}

static void setup(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(top, sizeof(top), "/tmp/test_agent_chan.XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(top) != NULL);
	snprintf(session, sizeof(session), "%s/session", top);
	CU_ASSERT_FATAL(mkdir(session, 0755) == 0);
	snprintf(sock_path, sizeof(sock_path), "%s/web.agent", top);
	memset(&st, 0, sizeof(st));
	images = opd_images_new();
	CU_ASSERT_FATAL(images != NULL);
	agents = opd_agents_new(session, NULL, images, &st);
	CU_ASSERT_FATAL(agents != NULL);

	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(lfd >= 0);
	strcpy(sa.sun_path, sock_path);
	CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CU_ASSERT_FATAL(listen(lfd, 4) == 0);

	dom = (struct opd_dom){
		.name = opd_image_get(images, SFN_ANON, "web", 3),
		.pid = getpid(),	/* the listener is this process (SO_PEERCRED) */
		.selected = true,
		.running = true,
		.esc = "web",
		.agent_path = sock_path,
	};
}

static void teardown(void)
{
	opd_agents_free(agents);
	opd_images_free(images);
	if (lfd >= 0)
		close(lfd);
	lfd = -1;
	du_rm_tree(top);
}

/* The connection the daemon made, if it made one. */
static int accept_daemon(void)
{
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

static void send_all(int fd, const void *p, size_t n)
{
	CU_ASSERT_FATAL(write(fd, p, n) == (ssize_t)n);
}

static size_t agent_hello(int fd, uint64_t guest_now)
{
	struct dp_ag_hello h = { .proto_min = 1, .proto_max = 1, .nr_cpus = 1, .clock_id = 1,
				 .flags = DP_AG_HELLO_F_PERF | DP_AG_HELLO_F_SWITCH,
				 .now_ns = guest_now, .instance = 9 };
	ssize_t n = ap_put_hello(buf, sizeof(buf), &h, "6.1", 3);

	CU_ASSERT_FATAL(n > 0);
	send_all(fd, buf, (size_t)n);
	return (size_t)n;
}

/* What the daemon sent the agent, decoded. */
struct seen {
	unsigned int host_hello, config, ping, join, ack;
	uint64_t ping_token, join_token, ack_bytes;
	uint16_t first_type;	/* of the first frame read */
};

static int s_ack(void *ctx, const struct dp_ag_host_ack *a)
{
	struct seen *s = ctx;

	s->ack++;
	s->ack_bytes = a->bytes;
	return 0;
}

static int s_join(void *ctx, const struct dp_ag_host_join *j)
{
	struct seen *s = ctx;

	s->join++;
	s->join_token = j->token;
	return 0;
}

static int s_host_hello(void *ctx, const struct dp_ag_host_hello *h)
{
	(void)h;
	((struct seen *)ctx)->host_hello++;
	return 0;
}

static int s_config(void *ctx, const struct dp_ag_config *c)
{
	(void)c;
	((struct seen *)ctx)->config++;
	return 0;
}

static int s_ping(void *ctx, const struct dp_ag_ping *p)
{
	struct seen *s = ctx;

	s->ping++;
	s->ping_token = p->token;
	return 0;
}

static const struct ap_ops host_side = {
	.host_hello = s_host_hello,
	.config = s_config,
	.ping = s_ping,
	.host_join = s_join, .host_ack = s_ack,
};

static void read_daemon(int fd, struct seen *s)
{
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	size_t used = 0;

	memset(s, 0, sizeof(*s));
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(struct dp_ag_frame))
		s->first_type = ((struct dp_ag_frame *)buf)->type;
	CU_ASSERT(ap_decode(&host_side, s, buf, (size_t)n, &used, NULL) == 0);
	CU_ASSERT(used == (size_t)n);
}

/* One turn of the daemon's loop at host time @now. */
static void turn(uint64_t now)
{
	struct pollfd pfd[4];
	size_t n = opd_agents_pollfds(agents, pfd, 4);

	if (n)
		CU_ASSERT(poll(pfd, n, 100) >= 0);
	opd_agents_io(agents, pfd, n, now);
}

/* Take the connection the daemon made at host time @now (it must have
 * made one), say HELLO with the guest clock at @guest_now, and read what
 * the daemon answered two turns later into @s.  Returns the connection. */
static int agent_session(uint64_t now, uint64_t guest_now, struct seen *s)
{
	int fd = accept_daemon();

	CU_ASSERT_FATAL(fd >= 0);
	agent_hello(fd, guest_now);
	turn(now + 1 * MS);
	turn(now + 2 * MS);
	read_daemon(fd, s);
	return fd;
}

/* Connect, HELLO, the daemon's answer, a ping and its pong: the clock. */
static void test_connect_and_clock(void)
{
	struct opd_guest *g = opd_agents_guest(agents, &dom);
	struct dp_ag_pong pong;
	struct seen s;
	int64_t off;
	uint64_t rtt;
	ssize_t n;
	int fd;

	CU_ASSERT_FATAL(g != NULL);
	CU_ASSERT(opd_agents_guest(agents, &dom) == g);	/* one per domain */
	turn(1 * S);
	CU_ASSERT(st.agent_connects == 1 && st.agent_channels == 1);
	fd = agent_session(1 * S, 101 * S, &s);
	CU_ASSERT(s.host_hello == 1 && s.config == 1);
	CU_ASSERT(s.ping == 1);
	CU_ASSERT(opd_guest_has_agent(g));
	/* HELLO gives a rough offset (its own time against ours), with a
	 * wide uncertainty */
	CU_ASSERT_FATAL(opd_guest_offset(g, &off, &rtt));
	CU_ASSERT(off == (int64_t)(100 * S - 1 * MS));
	CU_ASSERT(rtt >= 100 * MS);

	/* the ping left at 1.001 s; the agent's clock said 101.052 s when it
	 * answered, read back at 1.003 s: the guest is 100.050 s ahead */
	pong.token = s.ping_token;
	pong.recv_ns = 101 * S + 52 * MS;
	pong.send_ns = pong.recv_ns;
	n = ap_put_pong(buf, sizeof(buf), &pong);
	CU_ASSERT_FATAL(n > 0);
	send_all(fd, buf, (size_t)n);
	turn(1 * S + 3 * MS);
	CU_ASSERT_FATAL(opd_guest_offset(g, &off, &rtt));
	CU_ASSERT(off >= (int64_t)(100 * S + 48 * MS) && off <= (int64_t)(100 * S + 52 * MS));
	CU_ASSERT(rtt <= 3 * MS);

	/* no new ping before the interval, one after it */
	turn(1 * S + 4 * MS);
	read_daemon(fd, &s);
	CU_ASSERT(s.ping == 0);
	turn(1 * S + 3 * MS + OPD_AGENT_PING_NS);
	read_daemon(fd, &s);
	CU_ASSERT(s.ping == 1);
	close(fd);
}

/* QEMU or the agent went away: the daemon reconnects after its back-off
 * and starts the conversation again. */
static void test_reconnect(void)
{
	struct opd_guest *g = opd_agents_guest(agents, &dom);
	struct seen s;
	int fd;

	turn(1 * S);
	fd = accept_daemon();
	CU_ASSERT_FATAL(fd >= 0);
	agent_hello(fd, 1 * S);
	turn(1 * S + 1 * MS);
	close(fd);
	turn(1 * S + 2 * MS);
	CU_ASSERT(st.agent_disconnects == 1 && st.agent_channels == 0);
	/* within the back-off: no new connection */
	turn(1 * S + 500 * MS);
	CU_ASSERT(st.agent_connects == 1);
	CU_ASSERT(accept_daemon() < 0);
	/* after it: a new one, and a new HELLO is answered again */
	turn(3 * S);
	CU_ASSERT(st.agent_connects == 2 && st.agent_channels == 1);
	fd = agent_session(3 * S, 3 * S, &s);
	CU_ASSERT(s.host_hello == 1 && s.config == 1);
	CU_ASSERT(opd_guest_has_agent(g));
	close(fd);
}

/*
 * Every connection begins with HOST_JOIN, before anything else: an agent
 * on a channel without hang-up (a Xen PV console) starts over on it.  The
 * answer comes into a stream joined midway (the tail of frames sent before
 * the host connected): the daemon skips to the next HELLO, and serves it.
 */
static void test_join_and_midway(void)
{
	struct opd_guest *g = opd_agents_guest(agents, &dom);
	struct dp_ag_mmap m = { .pid = 1, .start = 0x400000, .len = 4096 };
	struct dp_ag_frame f = { .magic = DP_AG_MAGIC, .type = DP_AG_COMM, .len = 40 };
	struct seen s;
	uint64_t token;
	size_t hello_len;
	ssize_t n;
	int fd;

	CU_ASSERT_FATAL(g != NULL);
	turn(1 * S);
	fd = accept_daemon();
	CU_ASSERT_FATAL(fd >= 0);
	turn(1 * S + 1 * MS);
	read_daemon(fd, &s);
	CU_ASSERT(s.first_type == DP_AG_HOST_JOIN);
	CU_ASSERT(s.join == 1 && s.join_token != 0);
	CU_ASSERT(s.host_hello == 0);
	token = s.join_token;
	/* no HELLO for a second: the same JOIN again (a partial frame the
	 * last connection left in a tty can swallow one) */
	turn(2 * S + 1 * MS);
	read_daemon(fd, &s);
	CU_ASSERT(s.join == 1 && s.join_token == token);
	/* the tail of an MMAP frame, a whole MMAP, a header cut short, then
	 * the agent's answer to the JOIN */
	n = ap_put_mmap(buf, sizeof(buf), &m, "/usr/bin/make", 13);
	CU_ASSERT_FATAL(n > 30);
	send_all(fd, buf + 30, (size_t)n - 30);
	send_all(fd, buf, (size_t)n);
	send_all(fd, &f, 7);
	hello_len = agent_hello(fd, 2 * S);
	turn(2 * S + 2 * MS);
	turn(2 * S + 3 * MS);
	read_daemon(fd, &s);
	CU_ASSERT(s.host_hello == 1 && s.config == 1);
	/* the HELLO found: the bytes from its first on, acknowledged */
	CU_ASSERT(s.ack >= 1 && s.ack_bytes == (uint64_t)hello_len);
	CU_ASSERT(opd_guest_has_agent(g));
	CU_ASSERT(st.agent_closed_bad == 0);
	CU_ASSERT(st.agent_skipped_bytes == (uint64_t)(n - 30 + n + 7));
	/* a HELLO came: no more JOINs */
	turn(4 * S);
	read_daemon(fd, &s);
	CU_ASSERT(s.join == 0);
	close(fd);
	/* the next connection: a JOIN again, the next token */
	turn(4 * S + 4 * MS);
	turn(6 * S);
	fd = accept_daemon();
	CU_ASSERT_FATAL(fd >= 0);
	turn(6 * S + 1 * MS);
	read_daemon(fd, &s);
	CU_ASSERT(s.first_type == DP_AG_HOST_JOIN && s.join_token == token + 1);
	close(fd);
}

/* Bytes that are not the protocol close the channel (counted) and earn a
 * longer back-off; the daemon comes back, and a good agent is served. */
static void test_hostile_bytes(void)
{
	struct dp_ag_frame f = { .magic = DP_AG_MAGIC, .type = DP_AG_MMAP, .len = 1u << 30 };
	struct seen s;
	int fd;

	CU_ASSERT_FATAL(opd_agents_guest(agents, &dom) != NULL);
	turn(1 * S);
	fd = accept_daemon();
	CU_ASSERT_FATAL(fd >= 0);
	agent_hello(fd, 1 * S);
	send_all(fd, &f, sizeof(f));
	turn(1 * S + 1 * MS);
	CU_ASSERT(st.agent_closed_bad == 1);
	CU_ASSERT(st.agent_channels == 0);
	close(fd);
	/* the ordinary one-second back-off is not enough after that */
	turn(2 * S + 500 * MS);
	CU_ASSERT(accept_daemon() < 0);
	turn(7 * S);
	fd = agent_session(7 * S, 7 * S, &s);
	CU_ASSERT(s.host_hello == 1);
	close(fd);
}

/* A domain that stopped has its channel closed and not retried; one with
 * no agent socket gets no guest state. */
static void test_stopped_and_absent(void)
{
	struct opd_dom none = dom;
	int fd;

	none.pid = 4343;
	none.agent_path = NULL;
	CU_ASSERT(opd_agents_guest(agents, &none) == NULL);

	CU_ASSERT_FATAL(opd_agents_guest(agents, &dom) != NULL);
	turn(1 * S);
	fd = accept_daemon();
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	turn(1 * S + 1 * MS);
	CU_ASSERT(st.agent_disconnects == 1);
	/* no socket at all any more: connects fail quietly, nothing counted */
	CU_ASSERT(unlink(sock_path) == 0);
	turn(5 * S);
	turn(9 * S);
	CU_ASSERT(st.agent_connects == 1);
	CU_ASSERT(st.agent_channels == 0);
}

/* Value of @key in the file @path of "key value" lines, or NULL. */
static const char *kv(const char *path, const char *key)
{
	static char line[256];
	FILE *f = fopen(path, "r");
	size_t n = strlen(key);
	const char *v = NULL;

	if (!f)
		return NULL;
	while (!v && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ') {
			line[strcspn(line, "\n")] = '\0';
			v = line + n + 1;
		}
	fclose(f);
	return v;
}

/* A domain that left the registry: its held samples come out first (all
 * of them: no more sideband will explain them), then its state is freed
 * and its last statistics stay in SESSION/domains/<esc>/stats. */
static void test_gone_domain(void)
{
	struct opd_guest *g = opd_agents_guest(agents, &dom);
	struct opd_guest_sample smp = { .host_ns = 1 * S, .pc = 0x400000, .vcpu = 0,
					.mode = DP_MODE_GUEST_USER }, out;
	struct opd_guest_res r;
	struct opd_conf conf;
	struct opd_domains *none;
	char path[400], proc[300];
	bool gone = true;
	void *cur = NULL;

	CU_ASSERT_FATAL(g != NULL);
	CU_ASSERT(!opd_guest_defer(g, &smp, &out, &r));
	CU_ASSERT(!opd_guest_defer(g, &smp, &out, &r));
	/* still in the registry: kept */
	CU_ASSERT(opd_agents_next(agents, &cur, &gone) == g && !gone);
	CU_ASSERT(opd_agents_reap(agents) == 0);
	/* an empty registry (no process under an empty /proc) */
	snprintf(proc, sizeof(proc), "%s/proc", top);
	CU_ASSERT_FATAL(mkdir(proc, 0755) == 0);
	opd_conf_defaults(&conf);
	conf.domains_proc_root = proc;
	none = opd_domains_new(&conf, &st, images, NULL);
	CU_ASSERT_FATAL(none != NULL);
	opd_agents_sync(agents, none);
	cur = NULL;
	CU_ASSERT(opd_agents_next(agents, &cur, &gone) == g && gone);
	/* what it holds is filed before it goes */
	CU_ASSERT(opd_agents_reap(agents) == 0);
	CU_ASSERT(opd_guest_next(g, 1 * S, true, &out, &r));
	CU_ASSERT(opd_guest_next(g, 1 * S, true, &out, &r));
	CU_ASSERT(!opd_guest_next(g, 1 * S, true, &out, &r));
	CU_ASSERT(opd_agents_reap(agents) == 1);
	cur = NULL;
	CU_ASSERT(opd_agents_next(agents, &cur, &gone) == NULL);
	snprintf(path, sizeof(path), "%s/domains/web/stats", session);
	CU_ASSERT_EQUAL(stats_keys_undocumented(path), 0);
	CU_ASSERT(kv(path, "samples_received") && !strcmp(kv(path, "samples_received"), "2"));
	CU_ASSERT(kv(path, "samples_anon") && !strcmp(kv(path, "samples_anon"), "2"));
	CU_ASSERT(kv(path, "samples_user_resolved") &&
		  !strcmp(kv(path, "samples_user_resolved"), "0"));
	CU_ASSERT(kv(path, "samples_user_unresolved") &&
		  !strcmp(kv(path, "samples_user_unresolved"), "2"));
	CU_ASSERT(kv(path, "samples_held") && !strcmp(kv(path, "samples_held"), "0"));
	CU_ASSERT(kv(path, "agent_connected") && !strcmp(kv(path, "agent_connected"), "0"));
	CU_ASSERT(kv(path, "clock_method") && !strcmp(kv(path, "clock_method"), "none"));
	opd_domains_free(none);
}

/* Per-domain statistics: the agent connected, its clock and samples. */
static void test_domain_stats(void)
{
	struct opd_guest *g = opd_agents_guest(agents, &dom);
	struct opd_guest_sample smp = { .host_ns = 1 * S, .pc = 0x400000, .vcpu = 0,
					.mode = DP_MODE_GUEST_USER }, out;
	struct opd_guest_res r;
	char path[400];
	struct seen s;
	int fd;

	CU_ASSERT_FATAL(g != NULL);
	turn(1 * S);
	fd = agent_session(1 * S, 101 * S, &s);
	CU_ASSERT(!opd_guest_defer(g, &smp, &out, &r));
	opd_agents_write_stats(agents);
	snprintf(path, sizeof(path), "%s/domains/web/stats", session);
	CU_ASSERT(kv(path, "agent_connected") && !strcmp(kv(path, "agent_connected"), "1"));
	CU_ASSERT(kv(path, "agent_seen") && !strcmp(kv(path, "agent_seen"), "1"));
	CU_ASSERT(kv(path, "clock_method") && !strcmp(kv(path, "clock_method"), "hello"));
	CU_ASSERT(kv(path, "samples_received") && !strcmp(kv(path, "samples_received"), "1"));
	CU_ASSERT(kv(path, "samples_held") && !strcmp(kv(path, "samples_held"), "1"));
	close(fd);
}

/* A socket whose listener is not the domain's process gets no connection
 * (a local user posing as QEMU), unless its path came from libvirt. */
static void test_wrong_listener(void)
{
	struct opd_dom fake = dom;
	int fd;

	fake.pid = 1;
	CU_ASSERT_FATAL(opd_agents_guest(agents, &fake) != NULL);
	turn(1 * S);
	CU_ASSERT(st.agent_connects == 0 && st.agent_channels == 0);
	CU_ASSERT(st.privsep_agent_refused == 1);
	fd = accept(lfd, NULL, NULL);	/* the probe connection was closed */
	if (fd >= 0) {
		CU_ASSERT(recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 0);
		close(fd);
	}
	turn(2 * S);			/* backs off: no second try yet */
	CU_ASSERT(st.privsep_agent_refused == 1);
}

/* A backend whose daemon hands the socket over (libvirt): a listener of
 * root's will do besides the domain's process, so this one (root's when
 * the test runs as root) is used; any other user's is not. */
static void test_root_listener(void)
{
	struct opd_dom lv = dom;
	bool root = geteuid() == 0;

	lv.pid = 1;
	lv.agent_root_listener = true;
	CU_ASSERT_FATAL(opd_agents_guest(agents, &lv) != NULL);
	turn(1 * S);
	CU_ASSERT(st.agent_connects == (root ? 1u : 0u));
	CU_ASSERT(st.privsep_agent_refused == (root ? 0u : 1u));
}

static unsigned int connector_calls;

static int count_connect(void *ctx, pid_t pid, const char *path, int *fd)
{
	(void)ctx;
	(void)pid;
	(void)path;
	connector_calls++;
	*fd = -1;
	return -ECONNREFUSED;
}

/* A running domain with no host process (pid 0: libvirt between a destroy
 * and the domain's end) gets no connection attempt, directly or through
 * the privsep monitor (which stops a worker that asks for pid 0); once
 * it has a process again, it does. */
static void test_no_host_process(void)
{
	struct opd_dom gone = dom;
	struct opd_dom back = dom;
	int fd;

	gone.pid = 0;
	gone.agent_root_listener = true;
	CU_ASSERT_FATAL(opd_agents_guest(agents, &gone) != NULL);
	turn(1 * S);
	turn(5 * S);
	CU_ASSERT(st.agent_connects == 0 && st.privsep_agent_refused == 0);
	fd = accept_daemon();
	CU_ASSERT(fd < 0);
	if (fd >= 0)
		close(fd);
	opd_agents_set_connector(agents, count_connect, NULL);
	connector_calls = 0;
	turn(9 * S);
	turn(13 * S);
	CU_ASSERT(connector_calls == 0);
	back.pid = 4242;
	CU_ASSERT_FATAL(opd_agents_guest(agents, &back) != NULL);
	turn(17 * S);
	CU_ASSERT(connector_calls == 1);
}

/* Issue 23 item 7: the listener's credentials are checked whatever the
 * backend: a listener of another user (nobody, in a child) is neither
 * the domain's process nor root's, and is refused even where a root
 * listener would do.  Needs root to become nobody. */
static void test_listener_of_another_user(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int pfd[2], fd;
	char c = 0;
	pid_t child;

	if (geteuid() != 0)
		return;
	snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "domprof-test-%d", (int)getpid());
	CU_ASSERT_FATAL(pipe(pfd) == 0);
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		int l = socket(AF_UNIX, SOCK_STREAM, 0);

		close(pfd[1]);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) || l < 0 ||
		    bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1))
			_exit(1);
		if (read(pfd[0], &c, 1) < 0)	/* until the parent closes its end */
			_exit(1);
		_exit(0);
	}
	close(pfd[0]);
	fd = -1;	/* until the child listens */
	for (int i = 0; i < 200 && fd < 0; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			fd = -1;
			usleep(10000);
		}
	}
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(!opd_agent_peer_ok(fd, 1, true));
	CU_ASSERT(!opd_agent_peer_ok(fd, 1, false));
	CU_ASSERT(opd_agent_peer_ok(fd, child, false));
	close(fd);
	close(pfd[1]);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

#define WRAP(fn) static void fn##_w(void) { setup(); fn(); teardown(); }
WRAP(test_wrong_listener)
WRAP(test_root_listener)
WRAP(test_no_host_process)
WRAP(test_connect_and_clock)
WRAP(test_reconnect)
WRAP(test_hostile_bytes)
WRAP(test_join_and_midway)
WRAP(test_stopped_and_absent)
WRAP(test_gone_domain)
WRAP(test_domain_stats)

int main(void)
{
	static const struct du_test tests[] = {
		{ "connect, HELLO answered, clock from ping and pong", test_connect_and_clock_w },
		{ "reconnect after the other side closed", test_reconnect_w },
		{ "bytes that are not the protocol", test_hostile_bytes_w },
		{ "HOST_JOIN first; a stream joined midway", test_join_and_midway_w },
		{ "stopped and absent sockets", test_stopped_and_absent_w },
		{ "a gone domain: held samples out, then freed", test_gone_domain_w },
		{ "per-domain statistics", test_domain_stats_w },
		{ "a listener that is not the domain's QEMU is refused", test_wrong_listener_w },
		{ "a backend's daemon may listen: root's only", test_root_listener_w },
		{ "no host process (pid 0): no connection tried", test_no_host_process_w },
		{ "a listener of another user is refused, whatever the backend",
		  test_listener_of_another_user },
	};

	du_log_set(quiet_log);
	return du_test_main("agent channels", tests, DU_TEST_N(tests), NULL, NULL);
}
