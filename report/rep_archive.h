/*
 * oparchive: a session copied with every binary its samples need, so that
 * opreport and opannotate report the same on another machine.  Host and
 * vmm binaries go to DIR/archive/<their path> (with their separate debug
 * files under DIR/archive/usr/lib/debug), where the image lookup
 * (rep_images_locate) tries first; guest binaries and kallsyms are already
 * the session's own files.
 */
#ifndef REP_ARCHIVE_H
#define REP_ARCHIVE_H

/* Run oparchive with @argv; returns the exit status. */
int rep_archive_main(int argc, char **argv);

#endif
