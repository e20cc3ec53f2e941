/* User-space stand-in for <linux/percpu.h>: the unit test of dp_stream.c. */
#define DECLARE_PER_CPU(type, name) extern type name
