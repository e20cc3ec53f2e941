/*
 * opcontrol's libvirt commands (doc/libvirt.md): turn profiling of a
 * domain on or off through domprof's element in its libvirt metadata, and
 * add or remove its agent channel.  They talk to libvirtd, not to the
 * daemon, which follows the same changes through libvirt's events: so
 * `opcontrol --profile-domain=web` and `virsh metadata web ...` do the
 * same thing.
 *
 *   --profile-domain=NAME     <domprof:profile enabled='yes'/>
 *   --unprofile-domain=NAME   <domprof:profile enabled='no'/>
 *   --add-channel=NAME        the org.domprof.agent.0 virtio-serial channel
 *   --remove-channel=NAME
 *   --libvirt-uri=URI         [qemu:///system]
 *
 * NAME is a domain name or UUID.  Each change goes to the running domain
 * and to its persistent definition, whichever exist.
 */
#ifndef CTL_LIBVIRT_H
#define CTL_LIBVIRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum ctl_lv_action {
	CTL_LV_NONE,
	CTL_LV_PROFILE,
	CTL_LV_UNPROFILE,
	CTL_LV_ADD_CHANNEL,
	CTL_LV_REMOVE_CHANNEL,
};

struct ctl_lv_opts {
	enum ctl_lv_action action;
	const char *domain;	/* borrowed from argv */
	const char *uri;	/* NULL: qemu:///system */
};

/*
 * True when @argv holds one of the options above: opcontrol then hands
 * the whole command line to ctl_lv_main() instead of its own parser.
 */
bool ctl_lv_wanted(int argc, char *const *argv);

/*
 * Parse: exactly one of the four actions, an optional --libvirt-uri, and
 * nothing else (--session-dir and --verbose are accepted and ignored, so
 * scripts may pass them everywhere).  0 or -EINVAL with a message.
 */
int ctl_lv_parse(int argc, char *const *argv, struct ctl_lv_opts *o, char *err, size_t errlen);

/* Carry out @o; 0 or -errno with a message.  What was done goes to @out. */
int ctl_lv_run(const struct ctl_lv_opts *o, FILE *out, char *err, size_t errlen);

/* Whole command: returns the exit status. */
int ctl_lv_main(int argc, char *const *argv, FILE *out, FILE *errf);

/* The usage lines of these options, for opcontrol --help. */
void ctl_lv_usage(FILE *f);

#endif
