/* User-space stand-in for <linux/cache.h>: the unit test of dp_stream.c. */
#define ____cacheline_aligned
