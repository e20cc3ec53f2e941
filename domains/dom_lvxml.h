/*
 * Internal to domains/ and opcontrol: what the libvirt backend reads from
 * a domain's XML, and the XML it hands to libvirt (doc/libvirt.md).
 *
 * Pure functions over a buffer (libxml2, no network, no entity expansion),
 * kept apart from the code that talks to libvirtd so that tests feed them
 * fixtures.  The XML comes from libvirtd, but its <metadata> part is
 * whatever any management client wrote there: parsed defensively.
 */
#ifndef DOM_LVXML_H
#define DOM_LVXML_H

#include <stdbool.h>
#include <stddef.h>

#include "dom.h"

/* domprof's metadata namespace, the prefix libvirt writes it with, and
 * the element: <domprof:profile enabled='yes'/>. */
#define DOM_LV_NS_URI "https://domprof.org/xmlns/libvirt/1"
#define DOM_LV_NS_PREFIX "domprof"
#define DOM_LV_PROFILE_ELEM "profile"

/* The channel opcontrol --add-channel adds.  No source path: libvirt then
 * makes one in its per-domain channel directory (on define and on
 * hot-plug alike), where QEMU may create sockets under any security
 * driver, and the live XML says which. */
#define DOM_LV_CHANNEL_XML                                                \
	"<channel type='unix'><source mode='bind'/>"                      \
	"<target type='virtio' name='" DOM_AGENT_PORT "'/></channel>"

enum dom_lv_profile {
	DOM_LV_PROFILE_ABSENT,	/* no domprof element */
	DOM_LV_PROFILE_OFF,	/* element present, enabled is not "yes" */
	DOM_LV_PROFILE_ON,	/* enabled='yes' */
};

/* What a <domain> document says. */
struct dom_lvxml {
	char *name;		/* owned; <name>, NULL if absent */
	char uuid[DOM_UUID_STRLEN + 1];	/* lowercased <uuid>, "" if absent/invalid */
	bool has_channel;	/* a unix channel targeting DOM_AGENT_PORT */
	char *agent_path;	/* owned; its <source path>, NULL if none */
	char *channel_xml;	/* owned; that <channel> element serialized (to
				 * detach it: libvirt matches the whole device) */
	enum dom_lv_profile profile;
};

/*
 * Parse a domain XML document of @len bytes into @out.  The first unix
 * channel whose virtio target is named DOM_AGENT_PORT is the agent
 * channel.  Returns 0, -EINVAL if it is not well-formed XML with a
 * <domain> root, or -ENOMEM (then @out holds nothing to free).
 */
int dom_lvxml_parse(const char *xml, size_t len, struct dom_lvxml *out);

/* Free the strings of @x (not @x); safe on a zeroed or released struct. */
void dom_lvxml_release(struct dom_lvxml *x);

/*
 * Parse the metadata element alone, as virDomainGetMetadata returns it:
 * <profile enabled='yes'/>, without a namespace (libvirt strips the one
 * the caller asked for); in domprof's namespace is accepted too, in any
 * other not.  Returns 0 with *@p set, or -EINVAL.
 */
int dom_lvxml_profile_parse(const char *xml, size_t len, enum dom_lv_profile *p);

/* The element virDomainSetMetadata is given (with DOM_LV_NS_PREFIX and
 * DOM_LV_NS_URI) to turn profiling on or off.  Static string. */
const char *dom_lvxml_profile_element(bool enabled);

#endif
