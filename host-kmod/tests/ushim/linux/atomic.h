/* User-space stand-in for <linux/atomic.h>: the unit tests of dp_stream.c
 * and dp_walk.c only need the type (struct dp_defer in domprof.h). */
typedef struct { int counter; } atomic_t;
