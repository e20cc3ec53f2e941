/*
 * Guest path normalization.  A guest names its files with any bytes it
 * likes; the host keys images and sample files by these names, so they
 * are made canonical before use: one spelling per file, never a ".." that
 * could climb, never an empty or "." component.  Escaping of the bytes
 * that remain is lib/sfname's job.
 */
#include "config.h"

#include <errno.h>

#include "agent/agent.h"

ssize_t ap_sanitize_path(const char *in, size_t len, char *out)
{
	/* out holds "/c1/c2..." without a trailing '/'; "" stands for "/". */
	size_t o = 0, i = 0;

	while (i < len) {
		size_t mark = o, clen;

		while (i < len && in[i] == '/')
			i++;
		if (i == len)
			break;
		if (o >= AP_PATH_MAX)
			return -ENAMETOOLONG;
		out[o++] = '/';
		for (; i < len && in[i] != '/'; i++) {
			/* NUL cannot travel in a C string: dropped, and dropped
			 * before the "."/".." check so "\0.." is "..". */
			if (!in[i])
				continue;
			if (o >= AP_PATH_MAX)
				return -ENAMETOOLONG;
			out[o++] = in[i];
		}
		clen = o - mark - 1;
		if (clen == 0 || (clen == 1 && out[mark + 1] == '.')) {
			o = mark;
		} else if (clen == 2 && out[mark + 1] == '.' && out[mark + 2] == '.') {
			/* Drop "/..", then the component before it; at the root
			 * there is none and ".." stays at "/". */
			o = mark;
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		}
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return (ssize_t)o;
}
