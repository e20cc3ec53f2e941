/*
 * Open sample files, found by the tuple that names them (image, dep,
 * domain, event, and tgid/tid/cpu where --separate makes them relevant;
 * the caller puts SFN_ALL in the fields that are not).  Files are created
 * with their directories under SESSION/samples/current on first use; at
 * most conf->max_open_files are open at once, the least recently used is
 * closed first (and reopened, appending, when it is needed again).
 */
#ifndef OPD_SFILE_H
#define OPD_SFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "odb/odb.h"
#include "opd_conf.h"
#include "opd_image.h"
#include "opd_stats.h"

struct opd_sfile_key {
	struct opd_image *domain;	/* NULL: the host; else its name */
	bool vmm;
	struct opd_image *image;
	struct opd_image *dep;
	/* NULL: a flat sample file; else a {cg} file of arcs from dep to cg
	 * (opd_cc.h) */
	struct opd_image *cg;
	uint32_t event;
	int64_t tgid, tid, cpu;
};

/* What event index i of the stream counts (from the stream header). */
struct opd_event_desc {
	char name[ODB_EVENT_NAME];
	uint64_t count;
	uint32_t unit_mask;
};

struct opd_sfiles;

/* The host images' identity record below SESSION/samples/current/
 * (opd_imgid.h), kept by the sample files' owner. */
#define OPD_SFILES_IMAGES "{images}"

struct opd_sfiles *opd_sfiles_new(const struct opd_conf *conf, struct opd_stats *st);
/* Closes every file (without syncing; see opd_sfiles_sync). NULL accepted. */
void opd_sfiles_free(struct opd_sfiles *t);
/* opd_sfiles_free in a process about to exit: the files' mappings are
 * left for the exit to take down (odb_close_exiting). */
void opd_sfiles_free_exiting(struct opd_sfiles *t);

/* Set the event table (copied).  Sample files already open keep theirs. */
int opd_sfiles_set_events(struct opd_sfiles *t, const struct opd_event_desc *ev, unsigned int nr);

/*
 * The open sample file for @key, opening or creating it.  NULL if it
 * cannot be opened (counted in stats, logged once per file; later calls
 * for the same key return NULL without retrying).  The pointer stays
 * valid until opd_sfiles_evictions() changes.
 */
struct odb *opd_sfile_get(struct opd_sfiles *t, const struct opd_sfile_key *key);

/*
 * As opd_sfile_get, and sets *@id to the file's index: dense (0, 1, ...
 * in order of first use) and stable for the life of @t, open or not.
 */
struct odb *opd_sfile_get_id(struct opd_sfiles *t, const struct opd_sfile_key *key, uint32_t *id);
/*
 * The index of @key's file, as opd_sfile_get_id sets it, for samples that
 * go through opd_batch: a new file is created (and opened) now, but one
 * that was closed to stay under the cap is not reopened (the batch's
 * flush reopens it, once for all its samples).  False if it cannot be
 * filed (a file that failed to open, a bad event, no memory).  The index
 * stays valid until opd_sfiles_releases() changes.
 */
bool opd_sfile_id(struct opd_sfiles *t, const struct opd_sfile_key *key, uint32_t *id);
/* Whether the file of index @id is a {cg} file of arcs (key.cg set). */
bool opd_sfile_is_arcs(const struct opd_sfiles *t, uint32_t id);
/* Whether the file of index @id is open now (opd_sfile_by_id would not
 * reopen it). */
bool opd_sfile_is_open(const struct opd_sfiles *t, uint32_t id);
/* The file of index @id, reopening it (appending) if it was closed.
 * NULL if @id is unknown or the file cannot be opened. */
struct odb *opd_sfile_by_id(struct opd_sfiles *t, uint32_t id);

/*
 * Call @fn(@ctx) before files' entries are freed and their indexes with
 * them (opd_sfiles_close_domain, opd_sfiles_restart), e.g. to apply
 * samples still queued for them (opd_batch).  Not for a file closed to
 * stay under the cap: its index stays good, and a batch reopens it once
 * at its flush.  @fn may reenter opd_sfile_get/by_id.  NULL removes it.
 */
void opd_sfiles_set_close_hook(struct opd_sfiles *t, void (*fn)(void *ctx), void *ctx);

/* Event @i of the table, NULL beyond it. */
const struct opd_event_desc *opd_sfiles_event(const struct opd_sfiles *t, uint32_t i);

/* Grows each time an open file is closed to stay under the cap, and when
 * entries are released (below): cached odb pointers are stale. */
uint64_t opd_sfiles_evictions(const struct opd_sfiles *t);
/* Grows each time entries are released (opd_sfiles_close_domain,
 * opd_sfiles_restart): cached indexes are stale. */
uint64_t opd_sfiles_releases(const struct opd_sfiles *t);

/*
 * Sync and close every open file of @domain (all of its files, guest and
 * {vmm}) and free every entry it has, open or not (counted
 * sample_files_released): a domain that stopped holds no fds, mappings or
 * memory here.  Its ids are not reused (opd_sfile_by_id gives NULL).  A
 * later sample makes a new entry and reopens the file as usual
 * (appending: a restart continues its tree).  Counts as an eviction, so
 * cached odb pointers and ids are dropped.  Returns the number of files
 * closed.
 */
size_t opd_sfiles_close_domain(struct opd_sfiles *t, const struct opd_image *domain);

/*
 * Sync, close and free every entry (as opd_sfiles_close_domain does for
 * one domain) and start a new image identity record: the session's sample
 * directory was set aside (opcontrol --save), later samples make new
 * files.  0 or -ENOMEM (the old record is kept then).
 */
int opd_sfiles_restart(struct opd_sfiles *t);

/* msync every open file.  0 or the first error. */
int opd_sfiles_sync(struct opd_sfiles *t);

/* Record the new identity of every host image whose file changed since it
 * was recorded (opd_imgid.h): at each dump and at the stop.  The number
 * written, or -errno. */
int opd_sfiles_recheck_images(struct opd_sfiles *t);

/* Write the path of @key below samples/current into @buf. */
int opd_sfile_name(const struct opd_sfile_key *key, const struct opd_event_desc *ev,
		   char *buf, size_t size);

#endif
