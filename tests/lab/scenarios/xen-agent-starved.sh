# lab-kind: xen
# xen-agent with the collector starved (issue 26): during the late pair
# (exact-a2/exact-b2) two busy loops share dom0's one vCPU with the
# daemon, so the collector's looks come late and few and the worker reads
# the agent's stream late.  The same checks as xen-agent, the exact pair
# under 1%.  Not in the test command (doc/xen.md, "Exactness under
# load"): it measures how the address-space learning holds under load.
XA_BUSY_DOM0=${XA_BUSY_DOM0:-2}
. "$LAB/scenarios/xen-agent.sh"
