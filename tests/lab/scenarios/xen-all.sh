# lab-kind: xen
# The Xen lab's scenarios on one boot of Xen: xen-smoke (Xen's own
# accounting, the sampling prototype), then xen-domains (domprof end to
# end) on the same two guests, which saves a boot and two guest builds,
# then xen-agent (opagent over the PV console channel, its own guest).
LAB_KEEP_GUESTS=1
. "$LAB/scenarios/xen-smoke.sh"
LAB_KEEP_GUESTS=0
. "$LAB/scenarios/xen-domains.sh"
. "$LAB/scenarios/xen-agent.sh"
