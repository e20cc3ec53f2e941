#include "config.h"

#include <errno.h>
#include <string.h>

#include "opd_privsep_scope.h"
#include "opd_procfs.h"
#include "util/du_log.h"

void opd_ps_scope_init(struct opd_ps_scope *s, uint64_t now_ns)
{
	memset(s, 0, sizeof(*s));
	s->tokens = OPD_PS_SCOPE_BURST;
	s->tokens_at = now_ns;
}

void opd_ps_scope_refused(struct opd_ps_scope *s, const char *what, pid_t pid, uint64_t now_ns)
{
	s->refused++;
	s->unlogged++;
	if (s->logged_at && now_ns - s->logged_at < OPD_PS_SCOPE_LOG_NS)
		return;
	du_warn("privsep: refused the worker's %s for pid %d (%llu requests refused since the "
		"last line, %llu in all)", what, (int)pid, (unsigned long long)s->unlogged,
		(unsigned long long)s->refused);
	s->logged_at = now_ns ? now_ns : 1;
	s->unlogged = 0;
}

struct pc_probe {
	uint64_t pc;
};

/* Stops the walk (1) at the mapping holding the pc. */
static int pc_in(void *ctx, const struct dp_raw_mmap *m, const char *path, size_t len)
{
	const struct pc_probe *p = ctx;

	(void)path;
	(void)len;
	return p->pc >= m->start && p->pc - m->start < m->len;
}

int opd_ps_scope_host_maps(struct opd_ps_scope *s, const char *proc_root, pid_t pid, uint64_t pc,
			   uint64_t now_ns)
{
	struct pc_probe probe = { .pc = pc };
	uint64_t gained;
	int ret;

	/* one wrong pc more allowed per minute, up to the burst */
	gained = (now_ns - s->tokens_at) / OPD_PS_SCOPE_REFILL_NS;
	if (gained) {
		s->tokens = gained >= OPD_PS_SCOPE_BURST - s->tokens ? OPD_PS_SCOPE_BURST :
								    s->tokens + (unsigned int)gained;
		s->tokens_at += gained * OPD_PS_SCOPE_REFILL_NS;
	}
	if (!s->tokens) {
		opd_ps_scope_refused(s, "MAPS: its budget of wrong pcs spent", pid, now_ns);
		return -EPERM;
	}
	ret = opd_procfs_maps(proc_root, pid, pc_in, &probe);
	if (ret == 1) {
		s->host_answered++;
		return 0;
	}
	if (ret < 0)
		return ret;
	s->tokens--;
	opd_ps_scope_refused(s, "MAPS: its pc in none of the process's mappings", pid, now_ns);
	return -EPERM;
}
