/* opreport as a function, so that main() stays a one-liner. */
#ifndef REP_MAIN_H
#define REP_MAIN_H

/* Run opreport with @argv; returns the exit status (0, or 1 on error). */
int rep_main(int argc, char **argv);

#endif
