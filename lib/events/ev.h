/*
 * Events: OProfile-format event files (events/<cpu>/events, unit_masks),
 * event specifications NAME:COUNT:UM:KERNEL:USER, and their perf_event_open
 * programming.  Errors come back as -errno plus a message in a caller's
 * buffer, so each program words them its own way.
 */
#ifndef EV_H
#define EV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct perf_event_attr;
struct ev_table;

/* A parsed, not yet checked, event specification. */
struct ev_spec {
	char name[48];
	uint64_t count;		/* 0: use the event's default */
	uint32_t unit_mask;
	bool um_given;
	bool kernel;		/* count in kernel mode (default 1) */
	bool user;		/* count in user mode (default 1) */
};

/*
 * Load the event table for @cpu_type ("x86-64/arch", "timer", or NULL to
 * detect: the architectural events where perf reports a usable PMU, else
 * the timer event; "usable" = perf_event_open of hardware cycles on the
 * calling process succeeds).  Files: @dir/@cpu_type/{events,unit_masks}
 * and the optional defaults (events/README.md).  @dir is the events directory (DP_EVENTS_DIR, or the
 * source tree's events/ in tests).  NULL with errno set, and a message in
 * @err, on failure (missing or malformed file: file name and line).
 */
/*
 * The installed events directory: $DOMPROF_EVENTS_DIR when set (a staged or
 * relocated install, tests), else DP_EVENTS_DIR from the build.  Borrowed.
 */
const char *ev_default_dir(void);

struct ev_table *ev_table_load(const char *dir, const char *cpu_type, char *err, size_t errlen);
void ev_table_free(struct ev_table *t);	/* NULL accepted */
const char *ev_table_cpu_type(const struct ev_table *t);

/* Parse "NAME[:COUNT[:UM[:KERNEL[:USER]]]]". 0 or -EINVAL with a message. */
int ev_spec_parse(const char *s, struct ev_spec *out, char *err, size_t errlen);

/*
 * Check @spec against @t (unknown name, count under the minimum, unit mask
 * not allowed for the event, KERNEL and USER both 0) and fill in defaults
 * (count, unit mask).  0 or -EINVAL with a message naming what is wrong
 * and what is allowed; the message starts with "unknown event", "count",
 * "unit mask" or "event NAME counts nothing" (ev_spec_parse's with
 * "bad event spec").
 */
int ev_spec_check(const struct ev_table *t, struct ev_spec *spec, char *err, size_t errlen);

/* The default event of @t ("CPU_CLK_UNHALTED" or "TIMER") with its default count. */
int ev_default_spec(const struct ev_table *t, struct ev_spec *out);

/*
 * Fill @attr (size, type, config, sample_period, exclude_kernel,
 * exclude_user; freq cleared) for a checked spec; other fields are left
 * as the caller set them.  Architectural events with their default unit
 * mask become PERF_TYPE_HARDWARE generic events, TIMER the software
 * cpu-clock (period in ns); anything else PERF_TYPE_RAW, um << 8 | code.
 */
int ev_spec_to_perf(const struct ev_table *t, const struct ev_spec *spec, struct perf_event_attr *attr);

/* Iterate the table for ophelp: index 0..n-1, NULL past the end. */
struct ev_info {
	const char *name;
	const char *desc;
	uint32_t code;
	uint32_t counters;	/* bitmask of allowed counters */
	uint64_t minimum;
	uint64_t default_count;
	const char *um_name;	/* unit mask set name, e.g. "zero" */
};
const struct ev_info *ev_table_get(const struct ev_table *t, size_t i);
/* Unit masks of an event for ophelp: (value, description), NULL past the end. */
const char *ev_unit_mask_get(const struct ev_table *t, const struct ev_info *e, size_t i, uint32_t *value);

/* @s as "NAME:COUNT:UM:KERNEL:USER" and a newline on @f (ev_list.c). */
void ev_spec_print(FILE *f, const struct ev_spec *s);
/* The list ophelp prints: the CPU type, its default event, and every
 * event with its counters, description, counts and unit masks, on @f. */
void ev_table_list(FILE *f, const struct ev_table *t);

#endif
