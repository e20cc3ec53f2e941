#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ctl.h"

/* Keys the report shows in its own lines; the rest go under "Other". */
static const char *const known_keys[] = {
	"dumps", "running", "collector", "start_time", "events",
	"samples_received", "samples_lost", "samples_filed",
	"samples_host_kernel", "samples_host_user", "samples_guest_kernel", "samples_guest_user",
	"unresolved_no_mapping", "unresolved_kernel", "unresolved_no_task", "unresolved_bad_event",
	"stream_unknown_records", "stream_bad_records", "processes_seen", "sample_files",
	"unresolved_no_domain", "domains_seen", "domains_running", "samples_vmm",
	"samples_domain_unselected", "guest_user_ambiguous", "guest_user_past_timeline",
};

static bool is_known(const char *key)
{
	for (size_t i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
		if (!strcmp(known_keys[i], key))
			return true;
	return false;
}

static void fmt_duration(char *buf, size_t len, uint64_t s)
{
	if (s >= 86400)
		snprintf(buf, len, "%" PRIu64 "d %02" PRIu64 "h %02" PRIu64 "m",
			 s / 86400, s / 3600 % 24, s / 60 % 60);
	else if (s >= 3600)
		snprintf(buf, len, "%" PRIu64 "h %02" PRIu64 "m %02" PRIu64 "s",
			 s / 3600, s / 60 % 60, s % 60);
	else if (s >= 60)
		snprintf(buf, len, "%" PRIu64 "m %02" PRIu64 "s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 "s", s);
}

/* One statistics line: label, value, and its share of @whole if any. */
static void stat_line(FILE *out, const struct du_kv *st, const char *key, const char *label,
		      int indent, uint64_t whole, const char *whole_name)
{
	uint64_t v;

	if (!du_kv_get_u64(st, key, &v))
		return;
	fprintf(out, "%*s%-*s %12" PRIu64, indent, "", 28 - indent, label, v);
	if (whole_name && whole)
		fprintf(out, "  %5.1f%% of %s", 100.0 * (double)v / (double)whole, whole_name);
	fputc('\n', out);
}

static void print_events(FILE *out, const struct ctl_status *st)
{
	const char *k, *v;
	bool any = false;

	/* session.conf has one "event SPEC" line per event; stats one comma list */
	for (size_t i = 0; du_kv_entry(st->conf, i, &k, &v); i++) {
		if (strcmp(k, "event"))
			continue;
		fprintf(out, any ? "              %s\n" : "Events:       %s\n", v);
		any = true;
	}
	if (any)
		return;
	v = du_kv_get(st->stats, "events");
	fprintf(out, "Events:       %s\n", v && *v ? v : "(not known yet)");
}

static void print_daemon(FILE *out, const struct ctl_status *st)
{
	const struct du_kv *s = st->stats;
	uint64_t start = 0, v;
	bool have_start = du_kv_get_u64(s, "start_time", &start);
	char dur[64], when[64];

	switch (st->pid.state) {
	case CTL_PID_RUNNING:
		if (have_start && (uint64_t)st->now >= start) {
			fmt_duration(dur, sizeof(dur), (uint64_t)st->now - start);
			fprintf(out, "Daemon:       running (pid %d, up %s)\n", (int)st->pid.pid, dur);
		} else {
			fprintf(out, "Daemon:       running (pid %d)\n", (int)st->pid.pid);
		}
		break;
	default:
		fprintf(out, "Daemon:       not running%s\n",
			s ? " (statistics below are from the last run)" : "");
		if (du_kv_get_u64(s, "running", &v) && v)
			fprintf(out, "              the last run did not stop cleanly "
				"(its stats still say running)\n");
		if (st->pid.state == CTL_PID_STALE || st->pid.state == CTL_PID_FOREIGN ||
		    st->pid.state == CTL_PID_UNLOCKED)
			fprintf(out, "              stale pid file (pid %d) ignored\n", (int)st->pid.pid);
		break;
	}
	if (have_start) {
		time_t t = (time_t)start;
		struct tm tm;

		if (localtime_r(&t, &tm) && strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
			fprintf(out, "Started:      %s\n", when);
	}
}

static void print_setup(FILE *out, const struct ctl_status *st)
{
	const char *collector, *val;

	collector = du_kv_get(st->conf, "collector");
	if (!collector)
		collector = du_kv_get(st->stats, "collector");
	fprintf(out, "Collector:    %s\n", collector ? collector : "(unknown)");
	print_events(out, st);
	/* the daemon writes session.conf once its collector runs: it may lag */
	val = du_kv_get(st->conf, "separate");
	fprintf(out, "Separate:     %s\n", val && *val ? val : st->conf ? "none" : "(not known yet)");
	val = du_kv_get(st->conf, "domains");
	fprintf(out, "Domains:      %s\n", val && *val ? val : st->conf ? "all" : "(not known yet)");
}

static void print_unresolved(FILE *out, const struct du_kv *s, uint64_t recv)
{
	static const char *const unres_keys[] = {
		"unresolved_no_mapping", "unresolved_kernel", "unresolved_no_task",
		"unresolved_bad_event", "unresolved_no_domain",
	};
	uint64_t unres = 0, v;
	bool have_unres = false;

	for (size_t i = 0; i < sizeof(unres_keys) / sizeof(unres_keys[0]); i++) {
		if (du_kv_get_u64(s, unres_keys[i], &v)) {
			unres += v;
			have_unres = true;
		}
	}
	if (!have_unres)
		return;
	fprintf(out, "    %-24s %12" PRIu64, "unresolved", unres);
	if (recv)
		fprintf(out, "  %5.1f%% of received", 100.0 * (double)unres / (double)recv);
	fputc('\n', out);
	stat_line(out, s, "unresolved_no_mapping", "no mapping", 6, recv, "received");
	stat_line(out, s, "unresolved_kernel", "kernel", 6, recv, "received");
	stat_line(out, s, "unresolved_no_task", "no task", 6, recv, "received");
	stat_line(out, s, "unresolved_bad_event", "bad event", 6, recv, "received");
	stat_line(out, s, "unresolved_no_domain", "guest of no domain", 6, recv, "received");
}

/* guest attribution through the agents (resolved + unresolved_*) */
static void print_guest_user(FILE *out, const struct du_kv *s)
{
	static const char *const gu[] = {
		"guest_user_unresolved_no_agent", "guest_user_unresolved_no_clock",
		"guest_user_unresolved_no_switch", "guest_user_unresolved_no_task",
		"guest_user_unresolved_no_mapping", "guest_user_unresolved_anon",
		"guest_user_unresolved_capped",
	};
	uint64_t all, u, v;

	if (!du_kv_get_u64(s, "guest_user_resolved", &v))
		return;
	/* the guest's [vdso] is a binary too (the kernel's) */
	if (du_kv_get_u64(s, "guest_user_resolved_vdso", &u))
		v += u;
	all = v;
	for (size_t i = 0; i < sizeof(gu) / sizeof(gu[0]); i++)
		if (du_kv_get_u64(s, gu[i], &u))
			all += u;
	if (all)
		fprintf(out, "  guest-user samples resolved to a binary: %.1f%% (%" PRIu64
			" of %" PRIu64 ")\n", 100.0 * (double)v / (double)all, v, all);
	if (all && du_kv_get_u64(s, "guest_user_ambiguous", &u))
		fprintf(out, "  guest-user samples within a clock uncertainty of a switch"
			" (ambiguous): %.2f%% (%" PRIu64 ")\n", 100.0 * (double)u / (double)all, u);
	if (all && du_kv_get_u64(s, "guest_user_past_timeline", &u))
		fprintf(out, "  guest-user samples placed past the agent's last switch"
			" (hold ended): %.2f%% (%" PRIu64 ")\n", 100.0 * (double)u / (double)all, u);
}

static void print_other(FILE *out, const struct ctl_status *st)
{
	const struct du_kv *s = st->stats;
	const char *val, *k;
	size_t other = 0;

	for (size_t i = 0; du_kv_entry(s, i, &k, &val); i++) {
		if (is_known(k) || du_kv_get(s, k) != val)
			continue;	/* shown above, or a repeated key's older value */
		if (!other++)
			fprintf(out, "  other:\n");
		fprintf(out, "    %-24s %12s\n", k, val);
	}
	if (du_kv_garbage(s))
		fprintf(out, "  (%zu unreadable line%s in %s/stats ignored)\n", du_kv_garbage(s),
			du_kv_garbage(s) == 1 ? "" : "s", st->session_dir);
}

void ctl_status_format(FILE *out, const struct ctl_status *st)
{
	const struct du_kv *s = st->stats;
	uint64_t recv = 0, lost = 0, dumps = 0, v;

	fprintf(out, "Session:      %s\n", st->session_dir);
	print_daemon(out, st);
	print_setup(out, st);
	if (!s) {
		fprintf(out, "\nNo statistics yet (%s/stats is absent).\n", st->session_dir);
		return;
	}

	du_kv_get_u64(s, "dumps", &dumps);
	du_kv_get_u64(s, "samples_received", &recv);
	du_kv_get_u64(s, "samples_lost", &lost);
	fprintf(out, "\nStatistics (%" PRIu64 " dump%s so far):\n", dumps, dumps == 1 ? "" : "s");
	stat_line(out, s, "samples_received", "samples received", 2, 0, NULL);
	stat_line(out, s, "samples_filed", "filed", 4, recv, "received");
	stat_line(out, s, "samples_host_kernel", "host kernel", 4, recv, "received");
	stat_line(out, s, "samples_host_user", "host user", 4, recv, "received");
	stat_line(out, s, "samples_guest_kernel", "guest kernel", 4, recv, "received");
	stat_line(out, s, "samples_guest_user", "guest user", 4, recv, "received");
	print_unresolved(out, s, recv);
	print_guest_user(out, s);
	/* the daemon follows domains only on a live host (not in replay) */
	if (du_kv_get_u64(s, "domains_seen", &v) && v) {
		fprintf(out, "  domains:\n");
		stat_line(out, s, "domains_seen", "seen", 4, 0, NULL);
		stat_line(out, s, "domains_running", "running", 4, 0, NULL);
		stat_line(out, s, "samples_vmm", "vmm (QEMU) samples", 4, recv, "received");
		stat_line(out, s, "samples_domain_unselected", "unselected", 4, recv, "received");
	}
	/* lost samples never arrived, so their share is of all samples taken */
	stat_line(out, s, "samples_lost", "samples lost", 2, recv + lost, "taken");
	stat_line(out, s, "stream_unknown_records", "stream: unknown records", 2, 0, NULL);
	stat_line(out, s, "stream_bad_records", "stream: bad records", 2, 0, NULL);
	stat_line(out, s, "processes_seen", "processes seen", 2, 0, NULL);
	stat_line(out, s, "sample_files", "sample files", 2, 0, NULL);
	print_other(out, st);
}

/* After the clock method: the TSC path's trouble, or why the clock is
 * not exact (doc/clock.md). */
static void clock_detail(FILE *out, const struct du_kv *d, const char *clock)
{
	const char *why = du_kv_get(d, "clock_why");
	uint64_t rtt, ch = 0, fb = 0;

	if (clock && !strcmp(clock, "tsc"))
		fprintf(out, " (exact: TSC through KVM's offset)");
	else if (clock && !strcmp(clock, "ping") &&
		 du_kv_get_u64(d, "clock_pingpong_rtt_ns", &rtt))
		fprintf(out, " (round trip %.1f us)", (double)rtt / 1000.0);
	du_kv_get_u64(d, "clock_tsc_offset_changes", &ch);
	du_kv_get_u64(d, "clock_tsc_fallbacks", &fb);
	if (ch || fb)
		fprintf(out, "; KVM TSC offset moved %" PRIu64 " times, %" PRIu64
			" fallbacks to ping/pong", ch, fb);
	if (why && *why)
		fprintf(out, "; not exact: %s", why);
}

/* A domain's agent lines from SESSION/domains/<esc>/stats (written by the
 * daemon for each domain with an agent channel). */
static void domain_line(FILE *out, const char *esc, const struct du_kv *d)
{
	uint64_t conn = 0, seen = 0, unc = 0, recv = 0, res = 0, anon = 0, held = 0, over = 0,
		 lost = 0, bad = 0;
	const char *clock = du_kv_get(d, "clock_method");

	du_kv_get_u64(d, "agent_connected", &conn);
	du_kv_get_u64(d, "agent_seen", &seen);
	du_kv_get_u64(d, "clock_uncertainty_ns", &unc);
	du_kv_get_u64(d, "samples_received", &recv);
	du_kv_get_u64(d, "samples_resolved", &res);
	du_kv_get_u64(d, "samples_anon", &anon);
	du_kv_get_u64(d, "samples_held", &held);
	du_kv_get_u64(d, "queue_overflow", &over);
	du_kv_get_u64(d, "lost_records", &lost);
	du_kv_get_u64(d, "agent_closed_bad", &bad);
	fprintf(out, "    %-20s agent %s", esc,
		conn ? "connected" : seen ? "disconnected" : "never seen");
	if (clock && strcmp(clock, "none"))
		fprintf(out, ", clock %s +/-%.3f ms", clock, (double)unc / 1e6);
	else
		fprintf(out, ", no clock");
	clock_detail(out, d, clock);
	fprintf(out, "\n    %-20s samples %" PRIu64 ": %" PRIu64 " resolved", "", recv, res);
	if (res + anon)
		fprintf(out, " (%.1f%%)", 100.0 * (double)res / (double)(res + anon));
	fprintf(out, ", %" PRIu64 " anon, %" PRIu64 " held\n", anon, held);
	if (over || lost || bad)
		fprintf(out, "    %-20s losses: %" PRIu64 " resolved early (queue full), %" PRIu64
			" agent records lost, %" PRIu64 " bad channel closes\n", "", over, lost, bad);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* SESSION/domains/<esc>/@file, loaded; NULL if absent. */
static struct du_kv *load_domain_file(const char *dir, const char *esc, const char *file)
{
	char path[PATH_MAX];

	if (esc[0] == '.' ||
	    snprintf(path, sizeof(path), "%s/%s/%s", dir, esc, file) >= (int)sizeof(path))
		return NULL;
	return du_kv_load(path);
}

/* Whether each domain is profiled (its info file, rewritten by the daemon
 * at every toggle: libvirt metadata, opcontrol --profile-domain), then its
 * agent's figures where it has a channel. */
static void print_domains(FILE *out, const char *session_dir)
{
	struct dirent **v = NULL;
	char dir[PATH_MAX];
	int n, shown = 0;

	if (snprintf(dir, sizeof(dir), "%s/domains", session_dir) >= (int)sizeof(dir))
		return;
	n = scandir(dir, &v, NULL, by_name);
	for (int i = 0; i < n; i++) {
		struct du_kv *info = load_domain_file(dir, v[i]->d_name, "info");
		struct du_kv *d = load_domain_file(dir, v[i]->d_name, "stats");

		if ((info || d) && !shown++)
			fprintf(out, "  per domain (%s/domains/NAME/{info,stats}):\n", session_dir);
		if (info) {
			const char *sel = du_kv_get(info, "selected");
			const char *state = du_kv_get(info, "state");

			fprintf(out, "    %-20s profiled %s, %s\n", v[i]->d_name,
				sel && !strcmp(sel, "yes") ? "yes" : "no", state ? state : "unknown");
			du_kv_free(info);
		}
		if (d) {
			domain_line(out, v[i]->d_name, d);
			du_kv_free(d);
		}
		free(v[i]);
	}
	free(v);
}

int ctl_status(const char *session_dir, FILE *out, char *err, size_t errlen)
{
	struct ctl_status st = { .session_dir = session_dir, .now = time(NULL) };
	struct du_kv *stats, *conf;
	char path[PATH_MAX];
	struct stat sb;
	int ret = 0;

	if (stat(session_dir, &sb) || !S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "no session in %s (directory absent; use --session-dir?)",
			 session_dir);
		return -ENOENT;
	}
	ctl_pid_probe(session_dir, &st.pid);
	snprintf(path, sizeof(path), "%s/stats", session_dir);
	stats = du_kv_load(path);
	snprintf(path, sizeof(path), "%s/session.conf", session_dir);
	conf = du_kv_load(path);
	if (!stats && !conf && st.pid.state == CTL_PID_NONE) {
		snprintf(err, errlen, "no session in %s (no stats, session.conf or pid file)",
			 session_dir);
		ret = -ENOENT;
		goto out_free;
	}
	st.stats = stats;
	st.conf = conf;
	ctl_status_format(out, &st);
	print_domains(out, session_dir);
	ctl_kmod_status(out);
out_free:
	du_kv_free(conf);
	du_kv_free(stats);
	return ret;
}
