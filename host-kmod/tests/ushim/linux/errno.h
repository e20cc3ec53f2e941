/*
 * User-space stand-in for <linux/errno.h>: the unit test of dp_walk.c.
 * (libc's <errno.h> would come back here through <linux/errno.h>.)
 */
#ifndef DP_USHIM_ERRNO_H
#define DP_USHIM_ERRNO_H
#include <asm-generic/errno-base.h>
#endif
