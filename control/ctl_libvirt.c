#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_libvirt.h"

#ifdef HAVE_LIBVIRT
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "dom_lvxml.h"
#endif

static const struct {
	const char *name;
	enum ctl_lv_action action;
} lv_actions[] = {
	{ "profile-domain", CTL_LV_PROFILE },
	{ "unprofile-domain", CTL_LV_UNPROFILE },
	{ "add-channel", CTL_LV_ADD_CHANNEL },
	{ "remove-channel", CTL_LV_REMOVE_CHANNEL },
};

/* If @arg is --NAME or --NAME=..., where NAME is @opt: its value (or ""
 * when it has none), else NULL. */
static const char *opt_value(const char *arg, const char *opt)
{
	size_t n = strlen(opt);

	if (strncmp(arg, "--", 2) || strncmp(arg + 2, opt, n))
		return NULL;
	if (arg[2 + n] == '=')
		return arg + 3 + n;
	return arg[2 + n] ? NULL : "";
}

bool ctl_lv_wanted(int argc, char *const *argv)
{
	for (int i = 1; i < argc; i++)
		for (size_t j = 0; j < sizeof(lv_actions) / sizeof(lv_actions[0]); j++)
			if (opt_value(argv[i], lv_actions[j].name))
				return true;
	return false;
}

int ctl_lv_parse(int argc, char *const *argv, struct ctl_lv_opts *o, char *err, size_t errlen)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		bool known = false;

		for (size_t j = 0; j < sizeof(lv_actions) / sizeof(lv_actions[0]) && !known; j++) {
			v = opt_value(a, lv_actions[j].name);
			if (!v)
				continue;
			known = true;
			if (o->action != CTL_LV_NONE) {
				snprintf(err, errlen, "only one action at a time (--%s)",
					 lv_actions[j].name);
				return -EINVAL;
			}
			if (!*v && i + 1 < argc && argv[i + 1][0] != '-')
				v = argv[++i];
			if (!*v) {
				snprintf(err, errlen, "--%s needs a domain name or UUID",
					 lv_actions[j].name);
				return -EINVAL;
			}
			o->action = lv_actions[j].action;
			o->domain = v;
		}
		if (known)
			continue;
		if ((v = opt_value(a, "libvirt-uri"))) {
			if (!*v && i + 1 < argc)
				v = argv[++i];
			if (!*v || o->uri) {
				snprintf(err, errlen, "--libvirt-uri needs one value");
				return -EINVAL;
			}
			o->uri = v;
		} else if ((v = opt_value(a, "session-dir"))) {
			if (!*v)
				i++;
		} else if (!opt_value(a, "verbose")) {
			snprintf(err, errlen, "'%.64s' does not go with the libvirt commands", a);
			return -EINVAL;
		}
	}
	if (o->action == CTL_LV_NONE) {
		snprintf(err, errlen, "no libvirt command given");
		return -EINVAL;
	}
	return 0;
}

void ctl_lv_usage(FILE *f)
{
	fprintf(f,
		"\n"
		"Domains managed by libvirt (actions; see doc/libvirt.md):\n"
		"  --profile-domain=NAME    profile domain NAME (name or UUID): sets domprof's\n"
		"                           element in its libvirt metadata, live and persistent\n"
		"  --unprofile-domain=NAME  stop profiling it (the same element, enabled='no')\n"
		"  --add-channel=NAME       add the agent channel (" "org.domprof.agent.0" ") to\n"
		"                           its definition, and hot-plug it if it runs\n"
		"  --remove-channel=NAME    remove it again\n"
		"  --libvirt-uri=URI        libvirt connection [qemu:///system]\n");
}

#ifdef HAVE_LIBVIRT

static void lv_err(char *err, size_t errlen, const char *what, const char *dom)
{
	const char *m = virGetLastErrorMessage();

	snprintf(err, errlen, "%s %s: %s", what, dom, m ? m : "failed");
}

static void quiet_errors(void *opaque, virErrorPtr e)
{
	(void)opaque;
	(void)e;
}

static virDomainPtr lookup(virConnectPtr c, const char *name)
{
	virDomainPtr d = virDomainLookupByName(c, name);

	if (!d && strlen(name) == 36)
		d = virDomainLookupByUUIDString(c, name);
	return d;
}

/* Where a change can go: the running domain, the persistent definition. */
static unsigned int where(virDomainPtr d, bool *live, bool *config)
{
	*live = virDomainIsActive(d) == 1;
	*config = virDomainIsPersistent(d) == 1;
	return (*live ? VIR_DOMAIN_AFFECT_LIVE : 0u) | (*config ? VIR_DOMAIN_AFFECT_CONFIG : 0u);
}

static const char *where_str(bool live, bool config)
{
	return live && config ? "running domain and persistent definition"
	       : live	      ? "running (transient) domain"
			      : "persistent definition (takes effect when it starts)";
}

static int set_profile(virDomainPtr d, const char *name, bool on, FILE *out, char *err,
		       size_t errlen)
{
	bool live, config;
	unsigned int flags = where(d, &live, &config);

	if (virDomainSetMetadata(d, VIR_DOMAIN_METADATA_ELEMENT, dom_lvxml_profile_element(on),
				 DOM_LV_NS_PREFIX, DOM_LV_NS_URI, flags) < 0) {
		lv_err(err, errlen, "cannot set domprof metadata of", name);
		return -EIO;
	}
	fprintf(out, "domain %s: profiling %s (%s)\n", name, on ? "on" : "off",
		where_str(live, config));
	return 0;
}

/* Parse @d's XML (@flags: 0 live, VIR_DOMAIN_XML_INACTIVE persistent). */
static int read_xml(virDomainPtr d, unsigned int flags, struct dom_lvxml *x)
{
	char *xml = virDomainGetXMLDesc(d, flags);
	int ret;

	if (!xml)
		return -EIO;
	ret = dom_lvxml_parse(xml, strlen(xml), x);
	free(xml);
	return ret;
}

static int add_channel(virDomainPtr d, const char *name, FILE *out, char *err, size_t errlen)
{
	struct dom_lvxml x;
	bool live, config, have_live = false, have_config = false;

	where(d, &live, &config);
	if (config && !read_xml(d, VIR_DOMAIN_XML_INACTIVE, &x)) {
		have_config = x.has_channel;
		dom_lvxml_release(&x);
	}
	if (live && !read_xml(d, 0, &x)) {
		have_live = x.has_channel;
		dom_lvxml_release(&x);
	}
	if (config && !have_config) {
		if (virDomainAttachDeviceFlags(d, DOM_LV_CHANNEL_XML, VIR_DOMAIN_AFFECT_CONFIG) < 0) {
			lv_err(err, errlen, "cannot add the agent channel to the definition of", name);
			return -EIO;
		}
		fprintf(out, "domain %s: agent channel added to the persistent definition\n", name);
	} else if (config) {
		fprintf(out, "domain %s: the persistent definition has the agent channel already\n",
			name);
	}
	if (live && !have_live) {
		if (virDomainAttachDeviceFlags(d, DOM_LV_CHANNEL_XML, VIR_DOMAIN_AFFECT_LIVE) < 0) {
			const char *m = virGetLastErrorMessage();

			/* e.g. no virtio-serial controller: libvirt cannot hot-plug one */
			if (!config) {
				lv_err(err, errlen, "cannot hot-plug the agent channel into", name);
				return -EIO;
			}
			fprintf(out, "domain %s: the running domain cannot take the channel now (%s); "
				"it gets it at its next start\n", name, m ? m : "failed");
			return 0;
		}
		fprintf(out, "domain %s: agent channel hot-plugged into the running domain\n", name);
	} else if (live) {
		fprintf(out, "domain %s: the running domain has the agent channel already\n", name);
	}
	return 0;
}

static int remove_channel(virDomainPtr d, const char *name, FILE *out, char *err, size_t errlen)
{
	struct dom_lvxml x;
	bool live, config, any = false;

	where(d, &live, &config);
	/* libvirt matches a device to detach on its whole description, which
	 * for the running domain includes the socket path it generated */
	if (live && !read_xml(d, 0, &x)) {
		if (x.channel_xml) {
			if (virDomainDetachDeviceFlags(d, x.channel_xml, VIR_DOMAIN_AFFECT_LIVE) < 0) {
				dom_lvxml_release(&x);
				lv_err(err, errlen, "cannot unplug the agent channel from", name);
				return -EIO;
			}
			fprintf(out, "domain %s: agent channel unplugged from the running domain\n",
				name);
			any = true;
		}
		dom_lvxml_release(&x);
	}
	if (config && !read_xml(d, VIR_DOMAIN_XML_INACTIVE, &x)) {
		if (x.channel_xml) {
			if (virDomainDetachDeviceFlags(d, x.channel_xml, VIR_DOMAIN_AFFECT_CONFIG) < 0) {
				dom_lvxml_release(&x);
				lv_err(err, errlen, "cannot remove the agent channel from the definition of",
				       name);
				return -EIO;
			}
			fprintf(out, "domain %s: agent channel removed from the persistent definition\n",
				name);
			any = true;
		}
		dom_lvxml_release(&x);
	}
	if (!any)
		fprintf(out, "domain %s: has no agent channel\n", name);
	return 0;
}

int ctl_lv_run(const struct ctl_lv_opts *o, FILE *out, char *err, size_t errlen)
{
	const char *uri = o->uri ? o->uri : "qemu:///system";
	virConnectPtr c;
	virDomainPtr d;
	int ret;

	virSetErrorFunc(NULL, quiet_errors);
	c = virConnectOpen(uri);
	if (!c) {
		const char *m = virGetLastErrorMessage();

		snprintf(err, errlen, "cannot connect to libvirt at %s: %s", uri, m ? m : "failed");
		return -ECONNREFUSED;
	}
	d = lookup(c, o->domain);
	if (!d) {
		snprintf(err, errlen, "no libvirt domain '%.200s' at %s", o->domain, uri);
		virConnectClose(c);
		return -ENOENT;
	}
	switch (o->action) {
	case CTL_LV_PROFILE:
	case CTL_LV_UNPROFILE:
		ret = set_profile(d, o->domain, o->action == CTL_LV_PROFILE, out, err, errlen);
		break;
	case CTL_LV_ADD_CHANNEL:
		ret = add_channel(d, o->domain, out, err, errlen);
		break;
	case CTL_LV_REMOVE_CHANNEL:
		ret = remove_channel(d, o->domain, out, err, errlen);
		break;
	default:
		snprintf(err, errlen, "internal: no libvirt action");
		ret = -EINVAL;
		break;
	}
	virDomainFree(d);
	virConnectClose(c);
	return ret;
}

#else /* !HAVE_LIBVIRT */

int ctl_lv_run(const struct ctl_lv_opts *o, FILE *out, char *err, size_t errlen)
{
	(void)o;
	(void)out;
	snprintf(err, errlen, "this opcontrol was built without libvirt");
	return -ENOTSUP;
}

#endif

int ctl_lv_main(int argc, char *const *argv, FILE *out, FILE *errf)
{
	struct ctl_lv_opts o;
	char err[512] = "";
	int ret;

	ret = ctl_lv_parse(argc, argv, &o, err, sizeof(err));
	if (!ret)
		ret = ctl_lv_run(&o, out, err, sizeof(err));
	if (ret) {
		fflush(out);
		fprintf(errf, "opcontrol: %s\n", err);
		return 1;
	}
	return 0;
}
