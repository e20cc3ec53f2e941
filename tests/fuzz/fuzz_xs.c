/*
 * libFuzzer target for opagent's reader of xenstore answers
 * (guest-agent/ag_xen.c, ag_xs_parse_read): the bytes come from
 * /dev/xen/xenbus.  The first input byte picks the request id (0..3) and
 * the room for the value (1..64 bytes); the rest is the answer.  Besides
 * "no crash, no sanitizer report": a value is returned only when it fits
 * with its NUL, is that long, and holds no NUL; the input less its last
 * byte, when the whole gives a value, is "more to come".
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[65];
	uint32_t id;
	size_t cap;
	ssize_t n;

	if (!size)
		return 0;
	id = data[0] & 3;
	cap = 1 + (data[0] >> 2);
	data++;
	size--;
	memset(out, 'x', sizeof(out));
	n = ag_xs_parse_read(data, size, id, out, cap);
	if (n >= 0 && ((size_t)n >= cap || strlen(out) != (size_t)n))
		abort();
	if (n >= 0 && ag_xs_parse_read(data, size - 1, id, out, cap) != -EAGAIN)
		abort();
	return 0;
}
