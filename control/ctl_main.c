#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "util/du_cli.h"
#include "ctl_libvirt.h"

int ctl_main(int argc, char *const *argv, FILE *out, FILE *errf)
{
	char err[512] = "", specs[CTL_MAX_EVENTS][96];
	struct ctl_opts o;
	size_t n_specs = 0;
	int ret;

	if (ctl_lv_wanted(argc, argv))
		return ctl_lv_main(argc, argv, out, errf);
	ret = ctl_parse_args(argc, argv, &o, err, sizeof(err));
	if (ret) {
		du_cli_usage_error(errf, "opcontrol", err);
		return 1;
	}
	switch (o.action) {
	case CTL_HELP:
		ctl_usage(out);
		return 0;
	case CTL_VERSION:
		du_cli_version(out, "opcontrol");
		return 0;
	case CTL_START:
		/* kmod samples with what the module picks unless told (its
		 * TIMER or CPU_CLK_UNHALTED, checked as any event); xen with
		 * its own timer (a period of vCPU time, 1 ms by default) */
		if ((strcmp(o.collector, "kmod") && strcmp(o.collector, "xen")) || o.n_events)
			ret = ctl_events_resolve(&o, specs, CTL_MAX_EVENTS, &n_specs, err, sizeof(err));
		if (!ret)
			ret = ctl_start(&o, specs, n_specs, out, err, sizeof(err));
		break;
	case CTL_STOP:
		ret = ctl_stop(o.session_dir, CTL_STOP_TIMEOUT_MS, out, err, sizeof(err));
		break;
	case CTL_DUMP:
		ret = ctl_dump(o.session_dir, CTL_DUMP_TIMEOUT_MS, out, err, sizeof(err));
		break;
	case CTL_STATUS:
		ret = ctl_status(o.session_dir, out, err, sizeof(err));
		break;
	case CTL_RESET:
		ret = ctl_reset(o.session_dir, out, err, sizeof(err));
		break;
	default:
		ret = -1;
		snprintf(err, sizeof(err), "internal: no action");
		break;
	}
	if (ret) {
		fflush(out);
		fprintf(errf, "opcontrol: %s\n", err);
		return 1;
	}
	return 0;
}
