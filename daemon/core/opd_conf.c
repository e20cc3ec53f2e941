#include "config.h"

#include <errno.h>
#include <string.h>

#include "opd_conf.h"
#include "events/ev.h"
#include "util/du_separate.h"

_Static_assert(OPD_SEP_LIB == DU_SEP_LIB && OPD_SEP_KERNEL == DU_SEP_KERNEL &&
	       OPD_SEP_THREAD == DU_SEP_THREAD && OPD_SEP_CPU == DU_SEP_CPU,
	       "the daemon files by the bits du_separate_parse returns");

void opd_conf_defaults(struct opd_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->session_dir = DP_DEFAULT_SESSION_DIR;
	c->collector = "perf";
	c->events_dir = ev_default_dir();
	c->separate_str = "none";
	c->max_open_files = 512;
	c->exit_linger_ns = 5ULL * 1000 * 1000 * 1000;
	c->exit_linger_max = 4096;
	c->perf_pages = 128;
	c->vm_users = "libvirt-qemu,qemu";
	/* no guest byte is parsed as root unless asked (--no-privsep) */
	c->privsep = true;
	c->xen_dom0 = true;
	c->xen_read_budget_ppm = -1;
}

int opd_parse_separate(const char *s, unsigned int *out)
{
	return du_separate_parse(s, out, NULL, 0);
}
