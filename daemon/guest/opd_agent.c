#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dom.h"
#include "opd_agent.h"
#include "opd_kvmtsc.h"
#include "util/du_log.h"

#define RETRY_NS	(1000ULL * 1000 * 1000)
#define BAD_RETRY_NS	(5000ULL * 1000 * 1000)
/* Bytes read from one channel per round, so a chatty guest cannot starve
 * the collector or the other channels. */
#define READ_BUDGET	(1u << 20)
/* Bytes fed at once between looks at the domain's CPU budget: what the
 * costliest frames in them take is a few ms at most. */
#define READ_CHUNK	16384
#define SECOND_NS	(1000ULL * 1000 * 1000)
/* The exact offset may differ from ping/pong's by half its round trip plus
 * this before the TSC path is distrusted (a wrong KVM offset). */
#define CLOCK_SANITY_NS	(5ULL * 1000 * 1000)

/* A domain identity (its UUID, or its name without one) and the accounts
 * its guest states share: memory, and CPU a second (lim.cpu_ns).  A VM
 * restarted while its old state still drains, or two QEMUs of one UUID,
 * get one cap, not one per QEMU pid. */
struct ident {
	struct ident *next;
	unsigned int refs;
	struct opd_gbudget budget;
	/* CPU its frames took in the second that began at the agents'
	 * cpu_period, and in the second before; spent, its channels are
	 * neither polled nor read until the next */
	uint64_t cpu_spent, last_spent;
	bool active;		/* a channel of it is connected (share_ok) */
	char key[];
};

struct chan {
	struct chan *next;
	struct ident *id;
	struct opd_image *name;	/* domain key: name and pid */
	pid_t pid;
	uint32_t key_ns;	/* opd_dom's id, for the layout sink */
	uint64_t key;
	struct dp_ag_task_layout layout;	/* the last one passed on, for repeats */
	uint64_t layout_key;		/* ... and the key it went with */
	bool layout_passed;
	char *path;
	struct opd_guest *g;
	struct opd_kvmtsc *clk;
	bool clk_said;		/* the ping/pong reason was logged */
	bool root_listener;	/* a root listener will do too (opd_dom) */
	bool refused_said;	/* a wrong listener was logged */
	int fd;
	bool running;
	bool gone;		/* its domain left the registry: freed once drained */
	/* deferred in the agents' second number deferred_in (the CPU
	 * budget is the identity's: struct ident) */
	bool deferred;
	uint64_t deferred_in;
	uint64_t next_try, next_ping, next_join;
	uint8_t wbuf[8192];
	size_t wlen;
};

struct opd_agents {
	char *session;
	struct opd_guest_limits lim;
	struct opd_images *images;
	struct opd_stats *st;
	struct opd_imgcache *cache;
	struct chan *list;
	struct ident *ids;
	/* the second all identities' budgets run in (lim.total_cpu_ns) */
	uint64_t cpu_period, cpu_spent;
	uint64_t period_no;	/* seconds begun */
	bool pingpong;		/* DOMPROF_CLOCK=pingpong */
	opd_agent_connect_fn connect;	/* NULL: connect here */
	void *connect_ctx;
	opd_kvmtsc_open_fn tsc_open;	/* NULL: open the tracepoint here */
	void *tsc_open_ctx;
	opd_agent_cpu_clock_fn cpu_clock;	/* NULL: this thread's CPU time */
	void *cpu_clock_ctx;
	opd_agent_layout_fn layout;	/* NULL: task layouts unused */
	void *layout_ctx;
};

void opd_agents_set_layout_sink(struct opd_agents *a, opd_agent_layout_fn fn, void *ctx)
{
	a->layout = fn;
	a->layout_ctx = ctx;
}

void opd_agents_set_tsc_opener(struct opd_agents *a, opd_kvmtsc_open_fn fn, void *ctx)
{
	a->tsc_open = fn;
	a->tsc_open_ctx = ctx;
}

void opd_agents_set_connector(struct opd_agents *a, opd_agent_connect_fn fn, void *ctx)
{
	a->connect = fn;
	a->connect_ctx = ctx;
}

void opd_agents_set_cpu_clock(struct opd_agents *a, opd_agent_cpu_clock_fn fn, void *ctx)
{
	a->cpu_clock = fn;
	a->cpu_clock_ctx = ctx;
}
static void chan_free(struct opd_agents *a, struct chan *c);

struct opd_agents *opd_agents_new(const char *session_dir, const struct opd_guest_limits *lim,
				  struct opd_images *images, struct opd_stats *st)
{
	struct opd_agents *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	if (lim)
		a->lim = *lim;
	else
		opd_guest_limits_default(&a->lim);
	a->images = images;
	a->st = st;
	a->session = strdup(session_dir);
	{
		const char *v = getenv(OPD_KVMTSC_ENV);

		a->pingpong = v && !strcmp(v, "pingpong");
	}
	a->cache = opd_imgcache_new(session_dir, st);
	if (!a->session || !a->cache) {
		int e = errno ? errno : ENOMEM;

		opd_agents_free(a);
		errno = e;
		return NULL;
	}
	return a;
}

static void chan_close(struct opd_agents *a, struct chan *c, uint64_t retry_at)
{
	if (c->fd >= 0) {
		close(c->fd);
		a->st->agent_disconnects++;
		if (a->st->agent_channels)
			a->st->agent_channels--;
	}
	c->fd = -1;
	c->wlen = 0;
	c->next_try = retry_at;
}

void opd_agents_free(struct opd_agents *a)
{
	struct chan *c, *n;

	if (!a)
		return;
	for (c = a->list; c; c = n) {
		n = c->next;
		if (c->fd >= 0)
			close(c->fd);
		chan_free(a, c);
	}
	opd_imgcache_free(a->cache);
	free(a->session);
	free(a);
}

static struct ident *ident_get(struct opd_agents *a, const struct opd_dom *dom)
{
	const char *key = dom->uuid ? dom->uuid : dom->name->name;
	struct ident *id;

	for (id = a->ids; id; id = id->next)
		if (!strcmp(id->key, key)) {
			id->refs++;
			return id;
		}
	id = calloc(1, sizeof(*id) + strlen(key) + 1);
	if (!id)
		return NULL;
	strcpy(id->key, key);
	id->refs = 1;
	id->budget = (struct opd_gbudget){ .max = a->lim.max_bytes,
					   .capped = &a->st->guest_bytes_capped };
	id->next = a->ids;
	a->ids = id;
	return id;
}

static void ident_put(struct opd_agents *a, struct ident *id)
{
	struct ident **pp;

	if (!id || --id->refs)
		return;
	for (pp = &a->ids; *pp != id; pp = &(*pp)->next)
		;
	*pp = id->next;
	free(id);
}

/* A channel's state and what it holds, freed (the guest first: it gives
 * its memory back to the identity's account). */
static void chan_free(struct opd_agents *a, struct chan *c)
{
	opd_guest_free(c->g);
	opd_kvmtsc_free(c->clk);
	ident_put(a, c->id);
	free(c->path);
	free(c);
}

static struct chan *find(struct opd_agents *a, const struct opd_image *name, pid_t pid)
{
	for (struct chan *c = a->list; c; c = c->next)
		if (c->name == name && c->pid == pid)
			return c;
	return NULL;
}

struct opd_guest *opd_agents_guest(struct opd_agents *a, const struct opd_dom *dom)
{
	struct chan *c = find(a, dom->name, dom->pid);
	char dir[PATH_MAX];

	if (c)
		return c->g;
	if (!dom->agent_path || !dom->esc)
		return NULL;
	if (snprintf(dir, sizeof(dir), "%s/domains/%s", a->session, dom->esc) >= (int)sizeof(dir))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = -1;
	c->name = dom->name;
	c->pid = dom->pid;
	c->key_ns = dom->id_ns;
	c->key = dom->id;
	c->running = dom->running;
	c->root_listener = dom->agent_root_listener;
	c->path = strdup(dom->agent_path);
	c->id = ident_get(a, dom);
	c->g = c->id ? opd_guest_new_in(dom->name->name, dir, &a->lim, a->images, a->cache,
					a->st, &c->id->budget) : NULL;
	c->clk = a->tsc_open ? opd_kvmtsc_new_via(dom->pid, a->pingpong, a->tsc_open,
						   a->tsc_open_ctx)
			     : opd_kvmtsc_new(dom->pid, NULL, a->pingpong);
	if (!c->path || !c->g || !c->clk) {
		du_warn("domain %s: no guest state: %s", dom->name->name, strerror(errno));
		chan_free(a, c);
		return NULL;
	}
	c->next = a->list;
	a->list = c;
	return c->g;
}

void opd_agents_sync(struct opd_agents *a, struct opd_domains *ds)
{
	for (struct chan *c = a->list; c; c = c->next) {
		c->running = false;
		c->gone = true;
	}
	for (const struct opd_dom *d = opd_domains_next(ds, NULL); d; d = opd_domains_next(ds, d)) {
		struct chan *c = find(a, d->name, d->pid);
		uint32_t version;
		const char *release;

		if (c) {
			c->gone = false;
			c->key_ns = d->id_ns;	/* a Xen domain made again */
			c->key = d->id;
		}
		/* the agent's HELLO facts reach the domain's info file */
		if (c && opd_guest_facts(c->g, &version, &release))
			opd_domains_set_guest(ds, d, version, release);
		/* no host process (libvirt between a destroy and its end
		 * says so with pid 0): no listener to check, no channel */
		if (!d->running || !d->selected || !d->agent_path || d->pid <= 0)
			continue;
		if (!opd_agents_guest(a, d))
			continue;
		c = find(a, d->name, d->pid);
		if (c) {
			c->running = true;
			c->gone = false;
		}
	}
	for (struct chan *c = a->list; c; c = c->next)
		if (!c->running && c->fd >= 0)
			chan_close(a, c, UINT64_MAX);
}

size_t opd_agents_pollfds(struct opd_agents *a, struct pollfd *pfd, size_t max)
{
	size_t n = 0;

	for (struct chan *c = a->list; c && n < max; c = c->next) {
		if (c->fd < 0 || c->deferred)
			continue;
		pfd[n].fd = c->fd;
		pfd[n].events = POLLIN | (c->wlen ? POLLOUT : 0);
		pfd[n].revents = 0;
		n++;
	}
	return n;
}

bool opd_agent_peer_ok(int fd, pid_t pid, bool root_ok)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char path[64];
	struct stat sb;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) || len != sizeof(cr) || cr.pid <= 0)
		return false;
	if (cr.pid == pid || (root_ok && cr.uid == 0))
		return true;
	/* a thread of it (the kernel records the thread group, but be sure) */
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)cr.pid);
	return !stat(path, &sb);
}

/* The listener of @fd is the domain's own process, or root's where the
 * backend's daemon listens.  Refusals are counted, logged once per channel. */
static bool listener_ok(struct opd_agents *a, struct chan *c, int fd)
{
	if (fd >= 0 && opd_agent_peer_ok(fd, c->pid, c->root_listener))
		return true;
	a->st->privsep_agent_refused++;
	if (!c->refused_said)
		du_warn("domain %s: agent socket %s is not served by its QEMU (pid %d); not used",
			c->name->name, c->path, (int)c->pid);
	c->refused_said = true;
	return false;
}

static void try_connect(struct opd_agents *a, struct chan *c, uint64_t now)
{
	struct sockaddr_un sa;
	int fd;

	if (!c->running || c->pid <= 0 || now < c->next_try)
		return;
	c->next_try = now + RETRY_NS;
	if (a->connect) {
		int ret = a->connect(a->connect_ctx, c->pid, c->path, &fd);

		if (ret == -EPERM)
			listener_ok(a, c, -1);	/* counted and said once */
		if (ret) {
			if (ret == -EPERM)
				c->next_try = now + BAD_RETRY_NS;
			else
				du_debug("domain %s: agent socket %s: %s", c->name->name, c->path,
					 strerror(-ret));
			return;
		}
		goto connected;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(c->path) >= sizeof(sa.sun_path)) {
		c->next_try = UINT64_MAX;
		du_warn("domain %s: agent socket path too long", c->name->name);
		return;
	}
	strcpy(sa.sun_path, c->path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		du_debug("domain %s: agent socket %s: %s", c->name->name, c->path, strerror(errno));
		close(fd);
		return;
	}
	if (!listener_ok(a, c, fd)) {
		close(fd);
		c->next_try = now + BAD_RETRY_NS;
		return;
	}
connected:
	c->fd = fd;
	c->wlen = 0;
	c->next_ping = now;
	c->next_join = now + SECOND_NS;
	opd_guest_reset_input(c->g);
	a->st->agent_connects++;
	a->st->agent_channels++;
	du_info("domain %s: agent channel %s connected", c->name->name, c->path);
}

static void chan_write(struct opd_agents *a, struct chan *c)
{
	ssize_t n;

	c->wlen += opd_guest_output(c->g, c->wbuf + c->wlen, sizeof(c->wbuf) - c->wlen);
	if (!c->wlen)
		return;
	n = send(c->fd, c->wbuf, c->wlen, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			du_info("domain %s: agent channel: %s", c->name->name, strerror(errno));
			chan_close(a, c, 0);
		}
		return;
	}
	memmove(c->wbuf, c->wbuf + n, c->wlen - (size_t)n);
	c->wlen -= (size_t)n;
}

static uint64_t thread_cpu_ns(const struct opd_agents *a)
{
	struct timespec ts;

	if (a->cpu_clock)
		return a->cpu_clock(a->cpu_clock_ctx);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * SECOND_NS + (uint64_t)ts.tv_nsec;
}

/* A second begins for every identity's budget and the total. */
static void period_roll(struct opd_agents *a, uint64_t now)
{
	if (now - a->cpu_period < SECOND_NS)
		return;
	a->cpu_period = now;
	a->period_no++;
	if (a->cpu_spent > a->st->guest_budget_total_peak_ns)
		a->st->guest_budget_total_peak_ns = a->cpu_spent;
	a->cpu_spent = 0;
	for (struct ident *id = a->ids; id; id = id->next) {
		id->last_spent = id->cpu_spent;
		id->cpu_spent = 0;
	}
}

/*
 * May @id take more of the total (lim.total_cpu_ns) this second?  Below
 * its fair share (the total over the identities with a connected channel)
 * always; past it, only out of what the others will not use: each other
 * one is kept what it may still need, twice what it took the second
 * before (plus a sixteenth of a share) up to its share.  A quiet domain
 * thus keeps its share against any number of flooders, and a flooder gets
 * what the quiet ones leave.
 */
static bool share_ok(struct opd_agents *a, struct ident *id)
{
	uint64_t total = a->lim.total_cpu_ns, fair, reserve = 0;
	unsigned int n = 0;

	if (!total)
		return true;
	for (struct ident *j = a->ids; j; j = j->next)
		j->active = false;
	for (struct chan *c = a->list; c; c = c->next)
		if (c->fd >= 0)
			c->id->active = true;
	id->active = true;
	for (struct ident *j = a->ids; j; j = j->next)
		n += j->active;
	fair = total / n;
	if (id->cpu_spent < fair)
		return true;
	for (struct ident *j = a->ids; j; j = j->next) {
		uint64_t need = 2 * j->last_spent + fair / 16;

		if (j == id || !j->active)
			continue;
		need = need < fair ? need : fair;
		reserve += need > j->cpu_spent ? need - j->cpu_spent : 0;
	}
	return a->cpu_spent + reserve < total;
}

/* May @c be read at host time @now?  Not once its domain identity has
 * spent its CPU a second on frames, over all its channels, nor past its
 * share of the total (share_ok); counted once per channel and second it
 * waits: the other domains' channels, the collector and the pings go on. */
static bool chan_may_read(struct opd_agents *a, struct chan *c, uint64_t now)
{
	struct ident *id = c->id;
	bool own;

	period_roll(a, now);
	if (c->deferred && c->deferred_in != a->period_no)
		c->deferred = false;
	own = id->cpu_spent < a->lim.cpu_ns;
	if (own && share_ok(a, id))
		return true;
	if (!c->deferred) {
		c->deferred = true;
		c->deferred_in = a->period_no;
		opd_guest_note_deferred(c->g);
		if (own)
			a->st->guest_budget_share_deferred++;
		du_debug("domain %s: its frames took %llu ns of CPU this second (all domains "
			 "%llu); deferred", c->name->name, (unsigned long long)id->cpu_spent,
			 (unsigned long long)a->cpu_spent);
	}
	return false;
}

/* A TASK_LAYOUT the agent just sent, to the collector. */
static void pass_layout(struct opd_agents *a, struct chan *c)
{
	struct dp_ag_task_layout l;

	if (!opd_guest_take_layout(c->g, &l) || !a->layout)
		return;
	if (c->layout_passed && c->layout_key == c->key && !memcmp(&l, &c->layout, sizeof(l)))
		return;		/* the same again (a reconnection's state) */
	c->layout = l;
	c->layout_key = c->key;
	c->layout_passed = true;
	du_info("domain %s: the agent says where its kernel keeps the running task", c->name->name);
	if (c->key_ns != DOM_ID_NS_NONE)
		a->layout(a->layout_ctx, c->key_ns, c->key, &l);
	else
		a->layout(a->layout_ctx, DP_DOMKEY_HOST_PID, (uint64_t)c->pid, &l);
}

static void chan_read(struct opd_agents *a, struct chan *c, uint64_t now)
{
	uint8_t buf[READ_CHUNK];
	size_t total = 0;

	while (total < READ_BUDGET && c->fd >= 0 && chan_may_read(a, c, now)) {
		uint64_t t0 = thread_cpu_ns(a);
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		int ret;

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return;
			du_info("domain %s: agent channel: %s", c->name->name, strerror(errno));
			chan_close(a, c, now + RETRY_NS);
			return;
		}
		if (n == 0) {
			du_info("domain %s: agent channel closed by the other side", c->name->name);
			chan_close(a, c, now + RETRY_NS);
			return;
		}
		total += (size_t)n;
		ret = opd_guest_feed(c->g, buf, (size_t)n, now);
		t0 = thread_cpu_ns(a) - t0;
		c->id->cpu_spent += t0;
		a->cpu_spent += t0;
		a->st->guest_budget_spent_ns += t0;
		if (c->id->cpu_spent > a->st->guest_budget_peak_ns)
			a->st->guest_budget_peak_ns = c->id->cpu_spent;
		/* what one chunk cost: the most the budget can be overrun by */
		if (t0 > a->st->guest_budget_chunk_peak_ns)
			a->st->guest_budget_chunk_peak_ns = t0;
		if (!ret)
			pass_layout(a, c);
		if (ret) {
			du_warn("domain %s: agent channel closed: %s", c->name->name,
				ret == -EBADMSG ? "bytes that are not the agent protocol" :
				strerror(-ret));
			chan_close(a, c, now + BAD_RETRY_NS);
			return;
		}
	}
}

/* One TSC pair through the hypervisor's reads of the guest TSC where
 * there are some (Xen), else KVM's offset: 0 (exact, *@off +- *@unc), or
 * -errno with the reason in the clock. */
static int pair_offset(const struct opd_agents *a, struct chan *c, struct opd_gclock *gc,
		       const struct dp_ag_tsc *t, int64_t *off, uint64_t *unc)
{
	char why[160];
	int err;

	if (!a->pingpong && opd_gtscline_have(&gc->line)) {
		/* the hypervisor reads the guest's TSC for us (Xen) */
		err = opd_gtscline_offset(&gc->line, t, off, unc, why, sizeof(why));
		if (err) {
			opd_gclock_set_why(gc, why);
			return err;
		}
	} else {
		err = opd_kvmtsc_offset(c->clk, t, off, unc);
		gc->tsc_offset_changes = opd_kvmtsc_offset_changes(c->clk);
		if (err) {
			opd_gclock_set_why(gc, opd_kvmtsc_why(c->clk));
			return err;
		}
	}
	if (gc->pp_method == OPD_GCLOCK_PING) {
		/* |off - pp_off| without signed overflow (guest values) */
		uint64_t d = *off >= gc->pp_off ? (uint64_t)*off - (uint64_t)gc->pp_off :
						  (uint64_t)gc->pp_off - (uint64_t)*off;

		if (d > gc->pp_rtt / 2 + CLOCK_SANITY_NS) {
			opd_gclock_set_why(gc, "the TSC path disagrees with ping/pong by more "
					   "than its round trip");
			return -ERANGE;
		}
	}
	return 0;
}

/* The agent's TSC pairs through KVM's offset: the exact clock, or the
 * reason it stays ping/pong (in the domain's stats). */
static void chan_clock(struct opd_agents *a, struct chan *c)
{
	struct opd_gclock *gc = opd_guest_gclock(c->g);
	struct dp_ag_tsc t[8];
	size_t n;

	opd_kvmtsc_poll(c->clk);	/* KVM's offset writes, so their rings do not fill */
	n = opd_gclock_tsc_take(gc, t, 8);
	for (size_t i = 0; i < n; i++) {
		bool was = opd_gclock_exact(gc);
		int64_t off;
		uint64_t unc;
		int err = pair_offset(a, c, gc, &t[i], &off, &unc);
		/* the pair's host time, by the offset in use (ping/pong's will do) */
		uint64_t host = t[i].time_ns - (uint64_t)(err ? gc->off : off);

		if (!err) {
			bool took = opd_gclock_offer_exact(gc, off, unc, host);

			du_debug("domain %s: TSC pair on vCPU %u: offset %lld +- %llu ns%s",
				 c->name->name, t[i].cpu, (long long)off, (unsigned long long)unc,
				 took ? "" : " (the offset in use is tighter)");
			if (!was)
				du_info("domain %s: clock exact through the TSC (+- %llu ns)",
					c->name->name, (unsigned long long)unc);
			c->clk_said = false;
			a->st->guest_clock_exact = 1;
			a->st->guest_clock_unc_ns = gc->unc;
			continue;
		}
		/* one pair that gives nothing (a read dated badly, KVM's offset
		 * moving): the last exact offset stands for a while */
		if (err == -EAGAIN && was)
			continue;
		if (opd_gclock_keep_exact(gc, host)) {
			du_debug("domain %s: TSC pair on vCPU %u skipped: %s", c->name->name,
				 t[i].cpu, gc->why);
			continue;
		}
		opd_gclock_drop_exact(gc, NULL);
		if (!c->clk_said && err != -EAGAIN) {
			du_info("domain %s: clock by ping/pong: %s", c->name->name, gc->why);
			c->clk_said = true;
		}
	}
}

void opd_agents_io(struct opd_agents *a, const struct pollfd *pfd, size_t n, uint64_t now_ns)
{
	for (struct chan *c = a->list; c; c = c->next) {
		short rev = pfd ? 0 : POLLIN;

		if (c->fd < 0) {
			try_connect(a, c, now_ns);
			if (c->fd < 0)
				continue;
		}
		for (size_t i = 0; i < n; i++)
			if (pfd[i].fd == c->fd)
				rev = pfd[i].revents;
		/* a deferred channel is not polled: looked at each round */
		if ((rev & (POLLIN | POLLHUP | POLLERR)) || c->deferred) {
			chan_read(a, c, now_ns);
			if (c->fd >= 0)
				opd_guest_ack(c->g, false);
		}
		chan_clock(a, c);
		if (c->fd < 0)
			continue;
		if (now_ns >= c->next_join) {
			opd_guest_rejoin(c->g);
			c->next_join = now_ns + SECOND_NS;
		}
		if (now_ns >= c->next_ping && opd_guest_has_agent(c->g)) {
			opd_guest_ping(c->g, now_ns);
			c->next_ping = now_ns + OPD_AGENT_PING_NS;
		}
		chan_write(a, c);
	}
}

struct opd_guest *opd_agents_next(struct opd_agents *a, void **cursor, bool *gone)
{
	struct chan *c = *cursor ? ((struct chan *)*cursor)->next : a->list;

	*cursor = c;
	if (!c)
		return NULL;
	if (gone)
		*gone = c->gone;
	return c->g;
}

static void write_stats(struct chan *c)
{
	int ret = opd_guest_write_stats(c->g, c->fd >= 0);

	if (ret)
		du_warn("domain %s: cannot write its stats: %s", c->name->name, strerror(-ret));
}

size_t opd_agents_reap(struct opd_agents *a)
{
	struct chan **pp = &a->list;
	size_t n = 0;

	while (*pp) {
		struct chan *c = *pp;

		if (!c->gone || opd_guest_held(c->g)) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		write_stats(c);
		du_info("domain %s: stopped; its guest state is freed", c->name->name);
		if (c->fd >= 0)
			chan_close(a, c, UINT64_MAX);
		chan_free(a, c);
		n++;
	}
	return n;
}

void opd_agents_write_stats(struct opd_agents *a)
{
	for (struct chan *c = a->list; c; c = c->next)
		write_stats(c);
}
