/*
 * What the privsep monitor answers for a worker request naming a pid
 * (doc/trust.md, "Scoped requests").  CONNECT is answered only for the
 * process of a domain the monitor's own backend found and verified.  MAPS
 * is answered for such a process, and for a host process only when the
 * worker names a pc inside one of its executable mappings: the pc of the
 * sample that made it ask, which a process that never ran there cannot
 * have given.  A compromised worker must then guess an address under
 * ASLR; its wrong guesses spend a small budget (a burst of
 * OPD_PS_SCOPE_BURST, one more a minute), past which host lookups are
 * refused.  Every refusal is counted, and logged at most every 10 s.
 */
#ifndef OPD_PRIVSEP_SCOPE_H
#define OPD_PRIVSEP_SCOPE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define OPD_PS_SCOPE_BURST	64
#define OPD_PS_SCOPE_REFILL_NS	(60ULL * 1000 * 1000 * 1000)
#define OPD_PS_SCOPE_LOG_NS	(10ULL * 1000 * 1000 * 1000)

struct opd_ps_scope {
	uint64_t refused;		/* requests refused, all kinds */
	uint64_t host_answered;		/* host MAPS answered on a pc */
	uint64_t tokens_at;		/* when the budget was last refilled */
	unsigned int tokens;		/* wrong pcs still allowed */
	uint64_t logged_at;		/* last log line, 0: none yet */
	uint64_t unlogged;		/* refusals since that line */
};

/* A fresh scope at @now_ns (a full budget). */
void opd_ps_scope_init(struct opd_ps_scope *s, uint64_t now_ns);

/*
 * May the monitor send the executable mappings of host process @pid (no
 * domain's) to a worker that names @pc?  0 when @pc lies in one of them
 * (the mappings as opd_procfs_maps reads them under @proc_root); -EPERM
 * when it does not or the budget of wrong pcs is spent (counted, logged);
 * -errno when the process cannot be read (-ENOENT: gone).
 */
int opd_ps_scope_host_maps(struct opd_ps_scope *s, const char *proc_root, pid_t pid, uint64_t pc,
			   uint64_t now_ns);

/* A request (@what: its type and why) for @pid refused: counted, logged
 * at most every OPD_PS_SCOPE_LOG_NS with the count since. */
void opd_ps_scope_refused(struct opd_ps_scope *s, const char *what, pid_t pid, uint64_t now_ns);

#endif
