/*
 * Host processes: tgid -> comm, main binary, sorted executable mappings.
 * Threads are looked up by their tgid (task records carry it).  An exited
 * process lingers (samples from other CPUs' buffers may still arrive) until
 * conf->exit_linger_ns of stream time have passed, more than
 * conf->exit_linger_max processes are lingering, or its pid is reused.
 *
 * Pointers to processes stay valid until the next call that may free one:
 * opd_proc_fork(), opd_proc_exit(), opd_procs_reap() (they return > 0 then).
 */
#ifndef OPD_PROC_H
#define OPD_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domprof/raw.h"
#include "opd_conf.h"
#include "opd_image.h"
#include "opd_procfs.h"
#include "opd_stats.h"

struct opd_map {
	uint64_t start, end;	/* [start, end) */
	uint64_t pgoff;		/* file offset of start */
	struct opd_image *image;
};

struct opd_proc;
struct opd_procs;

/* @images and @st are borrowed and must outlive the table. */
struct opd_procs *opd_procs_new(const struct opd_conf *conf, struct opd_images *images,
				struct opd_stats *st);
void opd_procs_free(struct opd_procs *t);	/* NULL accepted */

/* The process @tgid (lingering exited ones included), or NULL. */
struct opd_proc *opd_proc_find(struct opd_procs *t, uint32_t tgid);
/* Find or create.  NULL with errno set on allocation failure. */
struct opd_proc *opd_proc_get(struct opd_procs *t, uint32_t tgid);

/* Stream sideband; each returns 0, 1 if a process was freed, or -errno. */
int opd_proc_mmap(struct opd_procs *t, const struct dp_raw_mmap *m, const char *path, size_t len);
int opd_proc_comm(struct opd_procs *t, uint32_t pid, uint32_t tid, uint32_t flags,
		  const char *comm, size_t len);
int opd_proc_fork(struct opd_procs *t, const struct dp_raw_task_ev *ev);
int opd_proc_exit(struct opd_procs *t, const struct dp_raw_task_ev *ev, uint64_t now_ns);
/* Free exited processes that lingered long enough.  Returns the number freed. */
int opd_procs_reap(struct opd_procs *t, uint64_t now_ns);

/*
 * The mapping of @p containing @pc, or NULL; then *@gap_start/@gap_end
 * (if non-NULL) give the unmapped range around @pc.
 */
const struct opd_map *opd_proc_find_map(const struct opd_proc *p, uint64_t pc,
					uint64_t *gap_start, uint64_t *gap_end);

/* The process's main binary, NULL if not known. */
struct opd_image *opd_proc_main_image(const struct opd_proc *p);
size_t opd_proc_nr_maps(const struct opd_proc *p);

/*
 * Fill an unknown process from @proc_root (normally "/proc") once: its
 * comm and executable mappings.  Later calls do nothing.  0 or -errno
 * (-ENOENT when the process is gone).
 */
int opd_proc_lookup_live(struct opd_procs *t, struct opd_proc *p, const char *proc_root);
/* The same from @src (opd_procfs.h), @ctx its argument, @pc the sample's
 * user pc that made the caller ask. */
int opd_proc_lookup_via(struct opd_procs *t, struct opd_proc *p, uint64_t pc, opd_maps_src_fn src,
			void *ctx);

#endif
