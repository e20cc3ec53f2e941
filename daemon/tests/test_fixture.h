/*
 * The daemon fixture the daemon's tests share: a temporary session (and a
 * fake proc tree, built with domains/dom_testproc.h, for those that track
 * domains), a daemon over it on the file collector, and a raw stream fed
 * to it in memory.  Each step stops the current test (CU_ASSERT_FATAL)
 * when it fails; a test's own steps sit between these.
 */
#ifndef TEST_FIXTURE_H
#define TEST_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domprof/raw.h"
#include "opd_daemon.h"
#include "opd_image.h"
#include "opd_imgcache.h"
#include "opd_stats.h"

struct raw_writer;

struct tfx {
	char dir[64];			/* /tmp/NAME.XXXXXX */
	char session[96];		/* DIR/session, or DIR without a proc tree */
	char proc[96];			/* DIR/proc; "" without a proc tree */
	struct opd_conf conf;
	struct opd_daemon d;
	struct raw_writer *w;
};

/* Zero @fx and make the directory /tmp/@name.XXXXXX.  With @proc_tree
 * the session and the proc root are subdirectories, named here and made
 * by tfx_mkdirs(); without it the session is the directory itself. */
void tfx_tmpdir(struct tfx *fx, const char *name, bool proc_tree);
/* Make the proc root and the session directory. */
void tfx_mkdirs(struct tfx *fx);
/* The configuration's defaults, the session and the file collector; with
 * a proc tree, domains tracked there.  The test may change it after. */
void tfx_conf(struct tfx *fx);
/* CPU_CLK_UNHALTED every 100000, kernel and user: the one event of most. */
void tfx_event_clk(struct dp_raw_event *ev);
/* Start the daemon over fx->conf and a writer into its sink, with the
 * header of @nr_ev events @ev; and a vmlinux at @kstart unless it is 0. */
void tfx_start(struct tfx *fx, const struct dp_raw_event *ev, uint32_t nr_ev, uint64_t kstart);
/* What the main loop does between collector rounds. */
void tfx_scan(struct tfx *fx);
/* Flush the writer and stop the daemon (sync, stats). */
void tfx_finish(struct tfx *fx);
/* Free what the fixture made and remove the directory. */
void tfx_teardown(struct tfx *fx);
/* The context records (cpu 0, @pid/@tid, @mode) before samples. */
void tfx_put_ctx(struct tfx *fx, uint32_t pid, uint32_t tid, uint32_t mode);

/* The process of a fake QEMU @pid in the proc tree: its task directory,
 * the command line @argv (NULL-terminated) and its main thread.  Unless
 * @bare, also the exe link, comm and stat (start time 1000 + @pid).  The
 * test adds the vCPU threads (tp_thread). */
void tfx_qemu(struct tfx *fx, int pid, const char *const *argv, bool bare);

/* The value of @key in the session's domains/@domain/@file ("info",
 * "stats"), read as every reader of such files does (util/du_kv.h: the
 * last line wins); "" when absent.  Valid until the next call. */
const char *tfx_dom_value(const struct tfx *fx, const char *domain, const char *file,
			  const char *key);

/*
 * A session for guest states alone (opd_guest_new without a daemon): the
 * directory /tmp/NAME.XXXXXX holding session/samples/current, the stats
 * they count into, the images and the image cache they share.
 */
struct tgs {
	char top[64];
	char session[128];
	struct opd_stats st;
	struct opd_images *images;
	struct opd_imgcache *cache;
};

void tgs_setup(struct tgs *gs, const char *name);
void tgs_teardown(struct tgs *gs);

#endif
