/*
 * opannotate: the samples of a session laid over the instructions
 * (--assembly, disassembled with libopcodes) or the source lines
 * (--source, through the binary's debug line table) of the binaries they
 * fell in, host and guest alike.
 */
#ifndef REP_ANNOTATE_H
#define REP_ANNOTATE_H

/* Run opannotate with @argv; returns the exit status (0, or 1 on error). */
int rep_annotate_main(int argc, char **argv);

#endif
