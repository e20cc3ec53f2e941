/*
 * What every domprof command says the same way: its version, and a usage
 * error (one line naming the problem, one pointing at --help, never the
 * whole help text).  The caller picks the stream; nothing else is printed.
 */
#ifndef DU_CLI_H
#define DU_CLI_H

#include <stdio.h>

/* "PROG (domprof) VERSION" on @f. */
void du_cli_version(FILE *f, const char *prog);

/* "PROG: MSG" and "Try 'PROG --help' for more information." on @f. */
void du_cli_usage_error(FILE *f, const char *prog, const char *msg);

struct option;

/*
 * The one line for an option getopt_long() refused (it returned '?' or
 * ':') at @arg (argv[optind - 1]), knowing the long options @lo: an
 * unknown or ambiguous option, a value missing or not allowed (du_cli_opt.c).
 */
void du_cli_getopt_msg(char *buf, size_t len, const char *arg, const struct option *lo);

#endif
