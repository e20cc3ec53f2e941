/* Formatting a collected profile the way OProfile's opreport does. */
#ifndef REP_OUTPUT_H
#define REP_OUTPUT_H

#include <stdio.h>

struct rep_info;
struct rep_opts;
struct rep_profile;

/*
 * Print @p to @f: the header (CPU, collector, then one "Counted ..." line
 * per event class, from @in), the DOMAIN SUMMARY when any domain is
 * present (neither with -n), then the image listing, or the symbol listing
 * with @o->symbols, the call graph with -c; or the JSON or XML document.
 * 0 or -errno (write error).
 */
int rep_output(FILE *f, const struct rep_opts *o, const struct rep_profile *p,
	       const struct rep_info *in);

/* What marks the rows of an image whose binary may not be the profiled
 * one (rep_verify.h; doc/opreport.1, "Unverified images"). */
#define REP_UNVERIFIED "(unverified)"

/* A percentage as opreport prints it: 4 decimals, "100.000" for 100. */
void rep_format_pct(char *buf, size_t size, double pct);

#endif
