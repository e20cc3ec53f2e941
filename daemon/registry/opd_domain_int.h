/*
 * The domain registry's entries and state, shared by its files only
 * (opd_domain.h is its interface; nothing else includes this file):
 *   opd_domain.c       the registry: the backend's reports, the index of
 *                      the running domains' keys, the lookups, the
 *                      stopped domains kept for their late samples
 *   opd_domain_info.c  a domain's metadata in the session: its info file,
 *                      and a former namesake's trees moved aside
 */
#ifndef OPD_DOMAIN_INT_H
#define OPD_DOMAIN_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dom.h"
#include "domprof/agent.h"
#include "opd_dkeys.h"
#include "opd_domain.h"
#include "opd_domain_pend.h"

/* An escaped name: DOM_NAME_MAX bytes, each at most "%XX", plus splits. */
#define ESC_MAX (DOM_NAME_MAX * 4)

/* A domain the registry knows: running, or stopped moments ago.  pub is
 * the first member: an opd_dom handed out is its entry. */
struct dentry {
	struct opd_dom pub;
	const struct dom_domain *d;	/* NULL once stopped */
	/* its keys in the DOMAIN records, as it last declared them (kept
	 * for samples after it stopped): a Xen domain with a device model
	 * has two (the xen collector sends its domid, perf its device
	 * model's pid) */
	uint32_t key_ns[2];
	uint64_t key[2];
	unsigned int nkeys;
	/* while it runs: those keys and its helper threads in ds->index */
	struct opd_dkey_set *keys;
	const char *hypervisor;		/* static string from the backend */
	char uuid[DOM_UUID_STRLEN + 1];
	bool uuid_cmdline;
	unsigned int vcpus;
	/* the back-end threads said in the log last */
	pid_t helper[DOM_HELPER_MAX];
	unsigned int helpers;
	char *agent_path;
	char *esc;			/* escaped name: SESSION/domains/<esc> */
	/* what the guest's agent said in HELLO (opd_domains_set_guest) */
	bool agent_seen;
	uint32_t agent_version;
	char release[DP_AG_MAX_RELEASE + 1];
	int64_t first_seen, last_seen;
	enum dom_state state;		/* as the backend said, while running */
	uint64_t stopped_ns;
	struct dentry *next;
};

/* The registry: its entries, their index, and the backend that reports. */
struct opd_domains {
	const struct opd_conf *conf;
	struct opd_stats *st;
	struct opd_images *images;
	struct opd_sfiles *sfiles;
	const struct dom_backend_ops *be;	/* the domain backend */
	void *bstate;
	char **names;			/* selection, NULL-terminated; NULL: all */
	struct dentry *list;
	struct opd_dkeys index;		/* the running domains by their keys */
	uint64_t last_scan_ns;
	bool scanned, wanted;
	/* verified domains refused for a name another holds: each takes it
	 * once it is free (opd_domains_scan) */
	struct opd_dpend pending;
	/* state of the scan in progress, for the callbacks */
	uint64_t now_ns;
	int64_t wall;
	int changes;
};

/* Write SESSION/domains/<e->esc>/info from @e (opd_domain.h has its
 * lines), replacing the old one whole.  0 or -errno, said in the log. */
int opd_dinfo_write(struct opd_domains *ds, const struct dentry *e);

/*
 * @e's name was last used by a domain with another command-line UUID: move
 * that domain's samples and metadata aside, so the two are not merged.
 */
void opd_dinfo_rename_old_tree(struct opd_domains *ds, struct dentry *e);

#endif
