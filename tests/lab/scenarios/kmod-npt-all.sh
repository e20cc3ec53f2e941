# The nested-paging scenarios on one boot of L1: kmod-exact-npt (phase 1
# only: the ping/pong phase is printed, not checked, and kmod-exact runs
# it), then callgraph-guest-npt's phase 1 (CG_PHASES=1: the garbage
# frames of phase 2 test the walk itself, which callgraph-guest runs), on
# kvm_amd reloaded once with npt=1.  Saves a boot, a reload and two
# phases against running the two apart.
EXACT_PHASES=1
CG_PHASES=1
. "$LAB/scenarios/kmod-exact-npt.sh"
. "$LAB/scenarios/callgraph-guest-npt.sh"
