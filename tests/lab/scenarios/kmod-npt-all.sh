# The nested-paging scenarios on one boot of L1: kmod-exact-npt (phase 1
# only: the ping/pong phase is printed, not checked, and kmod-exact runs
# it), then callgraph-guest-npt's phase 1 (CG_PHASES=1: the garbage
# frames of phase 2 test the walk itself, which callgraph-guest runs), on
# kvm_amd reloaded once with npt=1.  Saves a boot, a reload and two
# phases against running the two apart.
#
# Retries (run.sh retries an emulator fault, up to 3 attempts): in 5
# test-command runs of 2026-11-28/29, 3 needed one, each in the call-graph
# phase, with L1 showing a soft lockup of the vCPU thread, a stack
# overflow of recursive page faults at a %gs access in exc_page_fault (a
# GS base not the kernel's), or a stall.  Alone, the call-graph phase
# ran 11 times without a fault (npt=1 with direct and with deferred walks,
# npt=0 with deferred walks) and this scenario 3 times.
EXACT_PHASES=1
CG_PHASES=1
. "$LAB/scenarios/kmod-exact-npt.sh"
. "$LAB/scenarios/callgraph-guest-npt.sh"
