/*
 * oprofiled's whole program, callable from a thin main().
 */
#ifndef OPD_MAIN_H
#define OPD_MAIN_H

int opd_main(int argc, char **argv);

#endif
