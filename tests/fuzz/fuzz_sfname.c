/*
 * libFuzzer target for lib/sfname.  Two properties, on the same bytes:
 *  - as a name found on disk: sfn_parse never crashes, and what it accepts
 *    mangles back to exactly the same string (one spelling per name);
 *  - as a path a guest sent: mangled as an image and dep (and domain),
 *    it parses back to exactly the same bytes, and the name is safe.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sfname/sfname.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char out[SFN_MAX_PATH + 1];

static void check_safe(const char *p)
{
	const char *s = p;

	for (;;) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if (n == 0 || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.'))
			abort();
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
				abort();
		if (!e)
			return;
		s = e + 1;
	}
}

static void as_name(const char *s)
{
	struct sfn_name n;
	int r;

	if (sfn_parse(s, &n) != 0)
		return;
	r = sfn_mangle(&n, out, sizeof(out));
	if (r < 0 || strcmp(out, s) != 0)
		abort();
	sfn_name_release(&n);
}

static void as_path(const char *s, size_t len)
{
	char *path = malloc(len + 2);
	struct sfn_name n = {
		.event = "CPU_CLK_UNHALTED", .count = 100000,
		.tgid = SFN_ALL, .tid = SFN_ALL, .cpu = SFN_ALL,
	}, back;
	int r;

	if (!path)
		return;
	path[0] = '/';
	memcpy(path + 1, s, len + 1);
	n.image.kind = SFN_ROOT;
	n.image.name = path;
	n.dep.kind = len % 2 ? SFN_KERN : SFN_ANON;
	n.dep.name = (char *)s;
	n.domain = len % 3 ? (char *)s : NULL;
	n.vmm = n.domain && len % 5 == 0;

	r = sfn_mangle(&n, out, sizeof(out));
	if (r == -ENAMETOOLONG)
		goto out_free_path;
	if (r < 0 || (size_t)r != strlen(out))
		abort();
	check_safe(out);
	if (sfn_parse(out, &back) != 0)
		abort();
	if (strcmp(back.image.name, path) || strcmp(back.dep.name, s) ||
	    back.dep.kind != n.dep.kind || back.vmm != n.vmm ||
	    (n.domain ? !back.domain || strcmp(back.domain, s) : back.domain != NULL))
		abort();
	sfn_name_release(&back);
out_free_path:
	free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	size_t len;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	len = strlen(s);	/* a C string stops at the first NUL */
	as_name(s);
	as_path(s, len);
	free(s);
	return 0;
}
