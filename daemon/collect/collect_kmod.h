/*
 * The kmod collector (collect_kmod.c): /dev/domprof of host-kmod/.
 */
#ifndef COLLECT_KMOD_H
#define COLLECT_KMOD_H

#include "domprof/kmod.h"
#include "opd_collector.h"

extern const struct opd_collector_ops opd_collector_kmod;

/*
 * The module configuration for @conf's events: none (the module picks
 * cycles or the clock), CPU_CLK_UNHALTED or TIMER with a count.  0, or
 * -EINVAL (logged) for anything the module cannot sample.
 */
int collect_kmod_config(const struct opd_conf *conf, struct dp_kmod_config *cfg);

#endif
