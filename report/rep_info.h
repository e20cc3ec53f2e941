/*
 * What opreport prints beside the counts: the header's facts (collector,
 * CPU type and speed, each event's description as the events tables give
 * it), and with -g and -d each symbol's source line and its samples per
 * instruction.  Filled by rep_main, read by the writers (rep_output.h).
 */
#ifndef REP_INFO_H
#define REP_INFO_H

#include <stddef.h>
#include <stdint.h>

struct rep_images;
struct rep_key_sink;
struct rep_opts;
struct rep_profile;

struct rep_info {
	char *collector;	/* session.conf's; NULL unknown */
	char *cpu_type;		/* session.conf's, else this machine's; NULL unknown */
	double mhz;		/* this machine's, from /proc/cpuinfo; 0 unknown */
	size_t nclasses;
	char **event_desc;	/* [nclasses]: the event's description; NULL entries unknown */
	char **um_desc;		/* [nclasses]: its unit mask's */
	/* -g: [nrows] the source file and line of each symbol row's start;
	 * NULL / 0 where there is none; the arrays NULL without -g */
	char **src_file;
	unsigned int *src_line;
	/* -d: row r's instructions are [det_first[r], det_first[r + 1]) of
	 * det_vma (ascending) and det_counts ([ndet][nclasses]) */
	size_t *det_first;
	uint64_t *det_vma;
	uint64_t *det_counts;
	size_t ndet;
};

/* The header's facts for @p, read from @session_dir/session.conf, the
 * events tables and /proc/cpuinfo; what cannot be read stays unknown.
 * 0 or -ENOMEM. */
int rep_info_header(struct rep_info *in, const char *session_dir, const struct rep_profile *p);

/* Free what @in holds (@nrows: the profile's rows, for src_file). */
void rep_info_release(struct rep_info *in, size_t nrows);

/*
 * -d: a key sink for rep_collect_keys that keeps every sample's address;
 * then rep_info_details files them under the rows of the (filtered)
 * profile, @gmap from rep_filter.  Free the keys with rep_keys_free.
 */
struct rep_keys;
struct rep_keys *rep_keys_new(struct rep_key_sink *sink);	/* NULL: out of memory */
void rep_keys_free(struct rep_keys *k);				/* NULL accepted */
int rep_info_details(struct rep_info *in, const struct rep_profile *p,
		     const struct rep_keys *k, const long *gmap);

/*
 * -g: the source file and line of each symbol row's start address, read
 * from the binaries' debug info in parser children (rep_annot_child.h).
 * A binary without line information leaves its rows without.  0 or
 * -ENOMEM.
 */
int rep_info_lines(struct rep_info *in, const struct rep_opts *o, const struct rep_profile *p,
		   struct rep_images *images);

#endif
