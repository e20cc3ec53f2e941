/*
 * One daemon instance: its modules wired together over a session
 * directory, fed raw stream bytes by a collector.  Tests build one on a
 * temporary session and feed it streams made with raw_writer.
 */
#ifndef OPD_DAEMON_H
#define OPD_DAEMON_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "opd_batch.h"
#include "opd_cc.h"
#include "opd_agent.h"
#include "opd_collector.h"
#include "opd_conf.h"
#include "opd_domain.h"
#include "opd_image.h"
#include "opd_kernel.h"
#include "opd_proc.h"
#include "opd_sfile.h"
#include "opd_stats.h"
#include "opd_stream.h"
#include "opd_trans.h"

/* Set by signal handlers, acted on by opd_daemon_service(). */
struct opd_sigflags {
	volatile sig_atomic_t stop;
	volatile sig_atomic_t dump;
	volatile sig_atomic_t hup;
	volatile sig_atomic_t save;	/* SIGUSR2: opd_daemon_new_current */
};
extern struct opd_sigflags opd_sig;

struct opd_daemon {
	const struct opd_conf *conf;
	struct opd_stats st;
	struct opd_images *images;
	struct opd_procs *procs;
	struct opd_kernel *kernel;
	struct opd_sfiles *sfiles;
	struct opd_batch *batch;	/* samples queued for sfiles */
	struct opd_cc *cc;		/* call-graph arcs and stacks */
	struct opd_domains *domains;	/* NULL unless conf->track_domains */
	struct opd_agents *agents;	/* agent channels, with domains */
	struct opd_gpipe *gpipe;	/* guest samples' way, with agents */
	struct opd_trans *trans;
	struct opd_stream *stream;
	int record_fd;		/* --record tee, -1 if none */
	int pub_fd;		/* the monitor's for stats, session.conf (opd_pub.h), or -1 */
	struct opd_raw_sink sink;	/* what collectors write into: this daemon */
	/* called once the collector started (its snapshot of the present
	 * taken with the rights it had), before the loop: the privsep drop.
	 * Nonzero stops the run. */
	int (*started)(void *ctx);
	void *started_ctx;
	/* Under privsep, where the worker may not make directories in the
	 * session: a fresh samples/current opened by the monitor (*@fd), for
	 * opd_daemon_new_current.  NULL: made here.  0 or -errno. */
	int (*samples_dir)(void *ctx, int *fd);
	void *samples_dir_ctx;
	bool conf_written;
	/* the process exits after opd_daemon_fini: the sample files' mappings
	 * are left to its exit (odb_close_exiting) */
	bool exiting;
};

/*
 * Create the session layout (SESSION, samples/current) and the modules.
 * @stream_name names the input in messages.  0 or -errno (logged).
 */
int opd_daemon_init(struct opd_daemon *d, const struct opd_conf *conf, const char *stream_name);
/* Close everything (no sync). */
void opd_daemon_fini(struct opd_daemon *d);

/* Raw stream bytes from the collector: tee to the record file, decode
 * (d->sink.feed). */
int opd_daemon_feed(struct opd_daemon *d, const void *buf, size_t len);
/* raw_sink_fn adapter for a raw_writer whose sink is the daemon. */
int opd_daemon_sink(void *ctx, const void *buf, size_t len);
/* Whole records in place (d->sink.decode): decode, then tee what was used. */
int opd_daemon_decode(struct opd_daemon *d, const void *buf, size_t len, size_t *used);

/*
 * Run an opened collector: start it, then loop (signals and dumps, poll
 * of its fds and the agent channels, read) until a signal asks to stop or
 * its input ends, then stop it.  0, or -errno (logged) from the collector.
 */
int opd_daemon_run(struct opd_daemon *d, const struct opd_collector_ops *ops, void *state);

/* msync all sample files, dumps+1, rewrite stats.  0 or -errno. */
int opd_daemon_dump(struct opd_daemon *d);
/*
 * opcontrol --save while running (doc/session.md, "Saved sessions"): it
 * renamed samples/current to samples/NAME and sent SIGUSR2; the files
 * still open are in NAME.  File what is queued, sync and close every
 * sample file, forget the image identities and stacks recorded, take a
 * fresh samples/current (d->samples_dir under privsep), saves+1, rewrite
 * stats.  Samples read from now on go to the new files.  0 or -errno.
 */
int opd_daemon_new_current(struct opd_daemon *d);
/* Final sync and stats with running 0.  0 or -errno. */
int opd_daemon_stop(struct opd_daemon *d);
int opd_daemon_write_stats(struct opd_daemon *d);

/*
 * Rescan the domains now (when tracked) and drop cached resolutions if
 * anything changed.  0 or -errno.
 */
int opd_daemon_scan_domains(struct opd_daemon *d);

/* Act on pending signal flags (dump, save, log reopen) and rescan the domains
 * when due (about once a second).  True when asked to stop. */
bool opd_daemon_service(struct opd_daemon *d);

/* Pollfds of the agent channels for the loop's poll (up to @max), and
 * the I/O and filing of held guest samples after it. */
size_t opd_daemon_pollfds(struct opd_daemon *d, struct pollfd *pfd, size_t max);
void opd_daemon_polled(struct opd_daemon *d, const struct pollfd *pfd, size_t n);

/* Write SESSION/session.conf for the events in @h (once). */
int opd_daemon_write_session_conf(struct opd_daemon *d, const struct raw_header *h);

#endif
