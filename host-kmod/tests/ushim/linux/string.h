/* User-space stand-in for <linux/string.h>: the unit test of dp_stream.c. */
#ifndef DP_USHIM_STRING_H
#define DP_USHIM_STRING_H
#include <string.h>
#include <sys/types.h>
static inline ssize_t strscpy(char *d, const char *s, size_t n)
{
	size_t l = strnlen(s, n - 1);

	memcpy(d, s, l);
	d[l] = 0;
	return (ssize_t)l;
}
#endif
