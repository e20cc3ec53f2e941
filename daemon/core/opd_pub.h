/*
 * The files at the top of the session that the loop writes (stats,
 * session.conf), published through the monitor under privilege
 * separation.  The session directory is root's alone (doc/trust.md): the
 * worker, which may not even search it, sends the file's whole text over
 * a SOCK_SEQPACKET pair, one message a file, and the monitor writes it
 * atomically under a name it chose itself.  The monitor copies the bytes
 * and parses none.
 */
#ifndef OPD_PUB_H
#define OPD_PUB_H

#include <stddef.h>

enum opd_pub_file {
	OPD_PUB_STATS = 's',	/* SESSION/stats */
	OPD_PUB_CONF = 'c',	/* SESSION/session.conf */
};

/* Longest text published (a stats file is a few KiB). */
#define OPD_PUB_MAX (64 * 1024)

/*
 * @len bytes of @buf as @which of @session: sent down @fd to the monitor,
 * or with @fd < 0 written here (du_nf_write_atomic).  0 or -errno.
 */
int opd_pub_write(int fd, const char *session, enum opd_pub_file which, const char *buf,
		  size_t len);

/*
 * The monitor's side: one message from @fd, if one waits, written in
 * @session.  0 when one was written, -EAGAIN when none waits, -EPIPE when
 * the worker is gone, -EBADMSG for a malformed one (nothing written),
 * else -errno.
 */
int opd_pub_serve(int fd, const char *session);

#endif
