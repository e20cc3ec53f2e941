/*
 * The file collector: replay a recorded raw stream into the daemon.
 */
#ifndef COLLECT_FILE_H
#define COLLECT_FILE_H

#include "opd_daemon.h"

/*
 * Decode all of @path (mapped, decoded in place), teeing it to the record
 * file if one is open, stopping early when opd_daemon_service() says so.
 * 0, or -errno / -EBADMSG with a message naming the file and byte offset.
 */
int collect_file_run(struct opd_daemon *d, const char *path);

#endif
