/*
 * Profile specifications, as opreport takes them on its command line:
 * "tag:value[,value...]" with the tags image, lib-image, event, count,
 * unit-mask, tgid, tid, cpu and domain, or a bare word meaning image:word.
 * A sample file matches when it satisfies every tag that was given; within
 * one tag, any listed value will do.  session:NAME picks the saved session
 * whose sample files are read (SESSION/samples/NAME, opcontrol --save);
 * domprof takes one name.
 */
#ifndef REP_SPEC_H
#define REP_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "sfname/sfname.h"

struct rep_spec;

/* An empty specification (matches everything). NULL with errno set. */
struct rep_spec *rep_spec_new(void);
void rep_spec_free(struct rep_spec *s);	/* NULL accepted */

/*
 * Add one argument.  0, -EINVAL with a message in @err (unknown tag, empty
 * or malformed value), -ENOMEM.  Adding a tag twice widens it.
 */
int rep_spec_add(struct rep_spec *s, const char *arg, char *err, size_t errlen);

/* The session:NAME given (borrowed), NULL when none (the current one);
 * NULL @s accepted. */
const char *rep_spec_session(const struct rep_spec *s);

/* The same as adding "domain:@list" (--domain). */
int rep_spec_add_domains(struct rep_spec *s, const char *list, char *err, size_t errlen);

/*
 * Does @n match?  image: patterns match the application image or the
 * dependent image, lib-image: only the dependent one; a pattern matches the
 * whole path, or the basename when it has no '/', with fnmatch() globbing.
 * domain "host" is the host's own work (no domain).  A tgid/tid/cpu value
 * never matches a file where that field is "all".
 */
bool rep_spec_match(const struct rep_spec *s, const struct sfn_name *n);

/* Does @s restrict the domain, and does it let @domain (NULL: host) through? */
bool rep_spec_domain_ok(const struct rep_spec *s, const char *domain);

/* May the directory samples/current/{domain}/@comp hold files of a
 * domain @s lets through?  @comp is one escaped path component (a long
 * name's first part: sfn_escape_component).  Lets the walk skip the
 * other domains' trees. */
bool rep_spec_domain_dir_ok(const struct rep_spec *s, const char *comp);

#endif
