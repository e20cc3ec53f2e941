#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "dom_backend.h"
#include "dom_xen.h"
#include "util/du_log.h"

/* --domain-backend=NAME, and the order "auto" tries them in: the first
 * that opens wins.  A new backend is one file and one line here. */
static const struct dom_backend_ops *const backends[] = {
	&dom_backend_xenctrl,	/* first: -ENOENT off Xen's dom0 */
#ifdef HAVE_LIBVIRT
	/* preferred where libvirtd answers: names, lifecycle and selection
	 * come from the management layer, not from command lines */
	&dom_backend_libvirt,
#endif
	&dom_backend_procfs,
};

#define NR_BACKENDS (sizeof(backends) / sizeof(backends[0]))

const struct dom_backend_ops *dom_backend_find(const char *name)
{
	for (size_t i = 0; i < NR_BACKENDS; i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}

void dom_backend_names(char *buf, size_t size)
{
	size_t off = 0;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < NR_BACKENDS && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s", i ? "|" : "", backends[i]->name);
}

int dom_backend_open(const char *name, const struct dom_config *cfg,
		     const struct dom_backend_ops **ops, void **state)
{
	int ret = -ENOENT;

	if (name && strcmp(name, "auto")) {
		const struct dom_backend_ops *b = dom_backend_find(name);

		if (!b)
			return -EINVAL;
		ret = b->open(cfg, state);
		if (!ret)
			*ops = b;
		return ret;
	}
	for (size_t i = 0; i < NR_BACKENDS; i++) {
		ret = backends[i]->open(cfg, state);
		if (!ret) {
			*ops = backends[i];
			return 0;
		}
		du_debug("domain backend %s: not here (%s)", backends[i]->name, strerror(-ret));
	}
	return ret;
}
