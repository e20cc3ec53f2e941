/*
 * The event table's insides, shared by its files: ev.c (the table: loaded,
 * freed, read; the helpers below), ev_load.c (reading the events
 * directory's files) and ev_spec.c (event specifications).  Not an
 * interface: ev.h is.
 */
#ifndef EV_INT_H
#define EV_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "events/ev.h"

#define EV_NAME_MAX	(sizeof(((struct ev_spec *)0)->name) - 1)
#define EV_DEFAULT_COUNT 100000

enum um_type { UM_MANDATORY, UM_EXCLUSIVE, UM_BITMASK };

struct ev_um_value {
	uint32_t value;
	char *desc;
};

struct ev_um {
	char *name;
	enum um_type type;
	uint32_t def;
	struct ev_um_value *v;
	size_t n;
	unsigned line;	/* of the name: line, for errors found at its end */
};

struct ev_event {
	struct ev_info info;	/* first: ev_info pointers convert back */
	char *name;
	char *desc;
	size_t um;		/* index into ums */
	bool count_set;		/* by a defaults line */
};

struct ev_table {
	char *cpu_type;
	struct ev_um *ums;
	size_t nums;
	struct ev_event *ev;
	size_t nev;
	size_t def;		/* the default event */
};

/* ---- ev.c ---- */

/* Set a message in the caller's buffer; always returns -EINVAL. */
__attribute__((format(printf, 3, 4)))
int ev_fail(char *err, size_t errlen, const char *fmt, ...);
/* @s is 1 to @max letters, digits and '_'. */
bool ev_name_ok(const char *s, size_t max);
/* Whole-string unsigned number: "0x" hex or decimal, at most @max. */
bool ev_parse_num(const char *s, uint64_t max, uint64_t *v);
/* The event named @name in @t, or NULL. */
struct ev_event *ev_find_event(const struct ev_table *t, const char *name);
/* @v is a value unit mask set @u allows (any union of its bits for a
 * bitmask set). */
bool ev_um_allows(const struct ev_um *u, uint32_t v);

/* ---- ev_load.c: the files of @dir/@t->cpu_type, in this order; 0, -ENOMEM,
 * or -EINVAL with the message in @err ---- */

int ev_load_unit_masks(struct ev_table *t, const char *dir, char *err, size_t errlen);
int ev_load_events(struct ev_table *t, const char *dir, char *err, size_t errlen);
int ev_load_defaults(struct ev_table *t, const char *dir, char *err, size_t errlen);

#endif
