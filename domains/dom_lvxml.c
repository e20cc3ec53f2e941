#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "dom_cmdline.h"
#include "dom_lvxml.h"

/* No network, no entity substitution (libvirt never writes entities, and
 * expanding them is how XML bombs and external reads happen), quiet. */
#define PARSE_OPTS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)

static xmlDocPtr read_doc(const char *xml, size_t len)
{
	if (!xml || len == 0 || len > INT_MAX)
		return NULL;
	return xmlReadMemory(xml, (int)len, "domain.xml", NULL, PARSE_OPTS);
}

static bool is_elem(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

static const xmlNode *child(const xmlNode *parent, const char *name)
{
	for (const xmlNode *c = parent->children; c; c = c->next)
		if (is_elem(c, name))
			return c;
	return NULL;
}

/* The value of attribute @name (no namespace) or NULL; xmlFree it. */
static char *attr(const xmlNode *n, const char *name)
{
	return (char *)xmlGetNoNsProp(n, (const xmlChar *)name);
}

static bool attr_is(const xmlNode *n, const char *name, const char *want)
{
	char *v = attr(n, name);
	bool eq = v && !strcmp(v, want);

	xmlFree(v);
	return eq;
}

/* A copy from malloc() (xmlFree and free may differ) of a libxml string. */
static int dup_xml(char *s, char **out)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = strdup(s);
	xmlFree(s);
	return *out ? 0 : -ENOMEM;
}

static bool is_profile(const xmlNode *n)
{
	return is_elem(n, DOM_LV_PROFILE_ELEM) && n->ns && n->ns->href &&
	       !strcmp((const char *)n->ns->href, DOM_LV_NS_URI);
}

static enum dom_lv_profile profile_of(const xmlNode *n)
{
	return attr_is(n, "enabled", "yes") ? DOM_LV_PROFILE_ON : DOM_LV_PROFILE_OFF;
}

static bool is_agent_channel(const xmlNode *ch)
{
	const xmlNode *target;

	if (!is_elem(ch, "channel") || !attr_is(ch, "type", "unix"))
		return false;
	target = child(ch, "target");
	return target && attr_is(target, "type", "virtio") &&
	       attr_is(target, "name", DOM_AGENT_PORT);
}

static int serialize(xmlDocPtr doc, xmlNode *n, char **out)
{
	xmlBufferPtr buf = xmlBufferCreate();
	int ret = 0;

	*out = NULL;
	if (!buf)
		return -ENOMEM;
	if (xmlNodeDump(buf, doc, n, 0, 0) < 0)
		ret = -ENOMEM;
	else if (!(*out = strdup((const char *)xmlBufferContent(buf))))
		ret = -ENOMEM;
	xmlBufferFree(buf);
	return ret;
}

static int parse_channel(xmlDocPtr doc, xmlNode *ch, struct dom_lvxml *out)
{
	const xmlNode *src = child(ch, "source");
	int ret;

	out->has_channel = true;
	if (src) {
		ret = dup_xml(attr(src, "path"), &out->agent_path);
		if (ret)
			return ret;
		/* an empty path is no path */
		if (out->agent_path && !*out->agent_path) {
			free(out->agent_path);
			out->agent_path = NULL;
		}
	}
	return serialize(doc, ch, &out->channel_xml);
}

int dom_lvxml_parse(const char *xml, size_t len, struct dom_lvxml *out)
{
	xmlDocPtr doc;
	xmlNode *root, *n;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	doc = read_doc(xml, len);
	if (!doc)
		return -EINVAL;
	root = xmlDocGetRootElement(doc);
	if (!root || !is_elem(root, "domain")) {
		ret = -EINVAL;
		goto out_free_doc;
	}
	for (n = root->children; n && !ret; n = n->next) {
		if (is_elem(n, "name") && !out->name) {
			ret = dup_xml((char *)xmlNodeGetContent(n), &out->name);
		} else if (is_elem(n, "uuid") && !out->uuid[0]) {
			char *u = (char *)xmlNodeGetContent(n);

			if (u)
				dom_uuid_parse(u, strlen(u), out->uuid);
			xmlFree(u);
		} else if (is_elem(n, "metadata")) {
			for (const xmlNode *m = n->children; m; m = m->next) {
				if (is_profile(m) && out->profile == DOM_LV_PROFILE_ABSENT)
					out->profile = profile_of(m);
			}
		} else if (is_elem(n, "devices")) {
			for (xmlNode *d = n->children; d && !ret; d = d->next) {
				if (!out->has_channel && is_agent_channel(d))
					ret = parse_channel(doc, d, out);
			}
		}
	}
	if (ret)
		dom_lvxml_release(out);
out_free_doc:
	xmlFreeDoc(doc);
	return ret;
}

void dom_lvxml_release(struct dom_lvxml *x)
{
	free(x->name);
	free(x->agent_path);
	free(x->channel_xml);
	x->name = x->agent_path = x->channel_xml = NULL;
	x->has_channel = false;
}

int dom_lvxml_profile_parse(const char *xml, size_t len, enum dom_lv_profile *p)
{
	xmlDocPtr doc = read_doc(xml, len);
	xmlNode *root;
	int ret = -EINVAL;

	if (!doc)
		return -EINVAL;
	root = xmlDocGetRootElement(doc);
	/* libvirt hands the element back without its namespace (the caller
	 * named it); one in any other namespace is not ours */
	if (root && (is_profile(root) || (is_elem(root, DOM_LV_PROFILE_ELEM) && !root->ns))) {
		*p = profile_of(root);
		ret = 0;
	}
	xmlFreeDoc(doc);
	return ret;
}

const char *dom_lvxml_profile_element(bool enabled)
{
	return enabled ? "<" DOM_LV_PROFILE_ELEM " enabled='yes'/>"
		       : "<" DOM_LV_PROFILE_ELEM " enabled='no'/>";
}
