/*
 * libFuzzer target for the privsep message decoder (daemon/privsep/opd_privsep.c):
 * what either side of the channel believes of the other's bytes.  The
 * input is a run of messages of OPD_PS_MSG_SIZE bytes each (the last one
 * padded with zeros; the first byte of each says how many descriptors
 * "came" with it, 0 or 1, and whether it is cut short).  Each is checked
 * in both directions (opd_ps_check), then the whole run, closed by an
 * END, is sent down a socketpair to the worker's mirror backend, whose
 * refresh applies every message the monitor could have sent: domains
 * added, changed, removed, vCPU maps in chunks, refusals, each domain
 * read as it is reported.  Whatever the
 * bytes, nothing may crash, leak or read out of bounds (ASan, UBSan).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opd_privsep.h"
#include "util/du_log.h"

#define MAX_MSGS 32	/* what a socketpair's buffer holds without a reader */

static void quiet(enum du_log_level l, const char *fmt, va_list ap)
{
	(void)l;
	(void)fmt;
	(void)ap;
}

static unsigned int seen;

static void on_dom(void *ctx, const struct dom_domain *d)
{
	const pid_t *tids;
	unsigned int nh = dom_domain_helpers(d, &tids);

	(void)ctx;
	/* read what the registry reads: the name, keys, vCPUs, helpers */
	seen += (unsigned int)strlen(dom_domain_name(d)) + dom_domain_nr_vcpus(d);
	seen += (unsigned int)dom_domain_pid(d) + dom_domain_id_ns(d) +
		(unsigned int)dom_domain_id(d) + dom_vcpu_limit(d);
	for (unsigned int i = 0; i < dom_domain_nr_vcpus(d); i++)
		seen += (unsigned int)dom_domain_vcpu_tid(d, i);
	for (unsigned int i = 0; i < nh; i++)
		seen += (unsigned int)tids[i];
}

static void on_refused(void *ctx, pid_t pid, const char *name, const char *why)
{
	(void)ctx;
	seen += (unsigned int)pid + (unsigned int)strlen(name) + (unsigned int)strlen(why);
}

static const struct dom_ops ops = {
	.added = on_dom, .removed = on_dom, .vcpus_changed = on_dom, .changed = on_dom,
	.refused = on_refused,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct opd_ps_msg m;
	struct opd_ps_chan ch = { .wake = -1 };
	struct dom_config cfg = { .backend_arg = &ch };
	void *st = NULL;
	int sv[2];
	size_t n = 0;

	du_log_set(quiet);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return 0;
	ch.sock = sv[1];
	for (size_t off = 0; off < size && n < MAX_MSGS; off += 1 + sizeof(m), n++) {
		uint8_t flags = data[off];
		size_t len = size - off - 1 < sizeof(m) ? size - off - 1 : sizeof(m);
		size_t cut = flags & 2 ? len : sizeof(m);

		memset(&m, 0, sizeof(m));
		memcpy(&m, data + off + 1, len);
		(void)opd_ps_check(&m, cut, false, flags & 1);
		(void)opd_ps_check(&m, cut, true, flags & 1);
		/* the monitor only sends what it could check itself */
		if (opd_ps_check(&m, sizeof(m), true, 0) == 0)
			(void)opd_ps_send(sv[0], &m, -1);
	}
	opd_ps_msg_init(&m, OPD_PS_END);
	(void)opd_ps_send(sv[0], &m, -1);
	if (opd_ps_backend.open(&cfg, &st) == 0) {
		/* the REFRESH it sends is left unread: the answers are queued;
		 * each domain is read as it is reported (the registry keeps
		 * no other view of the mirror's) */
		(void)opd_ps_backend.refresh(st, &ops, NULL);
		opd_ps_backend.close(st);
	}
	close(sv[0]);
	close(sv[1]);
	return 0;
}
