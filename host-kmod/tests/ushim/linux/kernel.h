/* User-space stand-in for <linux/kernel.h>: the unit test of dp_stream.c. */
#ifndef DP_USHIM_KERNEL_H
#define DP_USHIM_KERNEL_H
#include <linux/types.h>
#define ALIGN(x, a)	(((x) + (a) - 1) & ~((__typeof__(x))(a) - 1))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif
