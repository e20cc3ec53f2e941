/* User-space stand-in for <linux/perf_event.h>: the unit test of dp_stream.c. */
struct perf_event;
struct perf_sample_data;
struct pt_regs;
