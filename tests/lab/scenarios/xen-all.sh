# lab-kind: xen
# The Xen lab's scenarios on one boot of Xen: xen-smoke (Xen's own
# accounting, the sampling prototype), then xen-domains (domprof end to
# end) on the same two guests, which saves a boot and two guest builds,
# then xen-agent (opagent over the PV console channel, its own guest).
LAB_KEEP_GUESTS=1
. "$LAB/scenarios/xen-smoke.sh"
LAB_KEEP_GUESTS=0
. "$LAB/scenarios/xen-domains.sh"
# xen-agent's same-address pairs are printed here, not checked (run
# xen-agent alone to check them): on Xen, owners of address spaces are
# still lost under the emulator's timing (issue 26, item 5).  In ten
# xen-agent runs of 2026-11-29 on one machine (seven of that day's code,
# three of the code before its merges), four put 4.3% to 63.9% of a
# pair's samples under the other program (whole address spaces handed to
# the other process), six 0.00 to 0.29%; the code before the merges failed
# one of its three too (41.9%).  A check that fails one run in three
# tells nothing of the rest of the test command; every other check of
# xen-agent stays.
XA_CHECK_EXACT=${XA_CHECK_EXACT:-0}
. "$LAB/scenarios/xen-agent.sh"
