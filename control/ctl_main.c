#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "util/du_cli.h"
#include "util/du_log.h"
#include "ctl_libvirt.h"

static int start(const struct ctl_opts *o, const struct ctl_collector *c, FILE *out, char *err,
		 size_t errlen)
{
	char specs[CTL_MAX_EVENTS][96];
	size_t n_specs = 0;
	int ret = 0;

	/* a collector with an event of its own (kmod: the module's TIMER or
	 * CPU_CLK_UNHALTED; xen: a period of vCPU time) is given one only when
	 * asked; events are checked as any are */
	if (c->events || (c->events_optional && o->n_events))
		ret = ctl_events_resolve(o, specs, CTL_MAX_EVENTS, &n_specs, err, errlen);
	if (!ret)
		ret = ctl_start(o, specs, n_specs, out, err, errlen);
	return ret;
}

/* The actions that name a collector: is it one the daemon has? */
static int check_collector(const struct ctl_opts *o, struct ctl_collector *c, char *err,
			   size_t errlen)
{
	char daemon[PATH_MAX];

	if (!o->collector || (o->action != CTL_START && o->action != CTL_INIT &&
			      o->action != CTL_SETUP))
		return 0;
	ctl_find_daemon(daemon, sizeof(daemon));
	return ctl_collector_check(daemon, o->collector, c, err, errlen);
}

static int run(const struct ctl_opts *o, const char *setup_path, FILE *out, char *err,
	       size_t errlen)
{
	struct ctl_collector c;
	int ret = check_collector(o, &c, err, errlen);

	if (ret)
		return ret;
	switch (o->action) {
	case CTL_START:
		return start(o, &c, out, err, errlen);
	case CTL_STOP:
		return ctl_stop(o->session_dir, CTL_STOP_TIMEOUT_MS, out, err, errlen);
	case CTL_SHUTDOWN:
	case CTL_DEINIT:
		return ctl_shutdown(o->session_dir, CTL_STOP_TIMEOUT_MS, out, err, errlen);
	case CTL_DUMP:
		return ctl_dump(o->session_dir, CTL_DUMP_TIMEOUT_MS, out, err, errlen);
	case CTL_STATUS:
		return ctl_status(o->session_dir, out, err, errlen);
	case CTL_RESET:
		return ctl_reset(o->session_dir, out, err, errlen);
	case CTL_SAVE:
		return ctl_save(o->session_dir, o->save_name, out, err, errlen);
	case CTL_INIT:
		return ctl_init(o, out, err, errlen);
	case CTL_LIST_EVENTS:
		return ctl_list_events(o, out, err, errlen);
	case CTL_SETUP:
		if (!setup_path[0]) {
			snprintf(err, errlen, "--setup needs $HOME (the settings go to "
				 CTL_SETUP_FILE_DESC ")");
			return -ENOENT;
		}
		return ctl_setup_save(o, setup_path, out, err, errlen);
	default:
		snprintf(err, errlen, "internal: no action");
		return -EINVAL;
	}
}

/* The stored settings (--setup), NULL when there are none; @path is
 * emptied when there is no $HOME to keep them in. */
static struct du_kv *load_setup(char *path, size_t len)
{
	struct du_kv *kv;
	struct stat sb;

	if (ctl_setup_path(path, len)) {
		path[0] = '\0';
		return NULL;
	}
	/* settings that name paths root writes to: only the user's own */
	if (!lstat(path, &sb) && (!S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
				  (sb.st_mode & 022))) {
		du_warn("ignoring %s: not a regular file of uid %u writable by it alone", path,
			(unsigned int)geteuid());
		return NULL;
	}
	kv = du_kv_load(path);
	if (!kv && errno != ENOENT)
		du_warn("cannot read %s: %s; stored settings ignored", path, strerror(errno));
	return kv;
}

int ctl_main(int argc, char *const *argv, FILE *out, FILE *errf)
{
	char err[512] = "", setup_path[PATH_MAX];
	struct du_kv *setup;
	struct ctl_opts o;
	int ret;

	if (ctl_lv_wanted(argc, argv))
		return ctl_lv_main(argc, argv, out, errf);
	setup = load_setup(setup_path, sizeof(setup_path));
	ret = ctl_parse_args_setup(argc, argv, setup, setup_path, &o, err, sizeof(err));
	if (ret) {
		du_kv_free(setup);
		du_cli_usage_error(errf, "opcontrol", err);
		return 1;
	}
	if (o.action == CTL_HELP)
		ctl_usage(out);
	else if (o.action == CTL_VERSION)
		du_cli_version(out, "opcontrol");
	else
		ret = run(&o, setup_path, out, err, sizeof(err));
	du_kv_free(setup);
	if (ret) {
		fflush(out);
		fprintf(errf, "opcontrol: %s\n", err);
		return 1;
	}
	return 0;
}
