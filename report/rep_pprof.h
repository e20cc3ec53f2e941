/*
 * oppprof: a session, or part of it, as a gzipped pprof profile
 * (report/pprof.proto) for go tool pprof, Pyroscope, Parca and the like.
 *
 * One sample per opreport -l row (domain, process, binary, symbol) and
 * address when the samples' keys are known (oppprof collects them,
 * report/rep_addr.h), else per row at the symbol's start; recorded call
 * stacks go above it.
 * Values: per event class, the samples and the events they stand for
 * (samples x period).  Labels: domain ("host" for the host's own work),
 * vmm ("true" for host work done for a guest), comm, and pid/tid/cpu
 * where the session separated them, unverified=true for an image whose
 * binary is not the profiled one (rep_verify.h).  Mappings name host
 * binaries by their path and guest binaries by their path in the
 * session's image cache, with build ids and their code segment's range.
 */
#ifndef REP_PPROF_H
#define REP_PPROF_H

#include <stddef.h>
#include <stdint.h>

struct rep_images;
struct rep_opts;
struct rep_profile;

/*
 * @p as an uncompressed profile.proto message in *@buf (malloc'd, *@len
 * bytes); binaries are located through @images for their file names and
 * build ids.  0 or -ENOMEM.
 */
int rep_pprof_pack(const struct rep_opts *o, struct rep_images *images,
		   const struct rep_profile *p, uint8_t **buf, size_t *len);

/* Run oppprof with @argv; returns the exit status. */
int rep_pprof_main(int argc, char **argv);

#endif
