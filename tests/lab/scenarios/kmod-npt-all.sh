# The nested-paging scenarios on one boot of L1, kvm_amd reloaded once
# with npt=1 (lab_parts runs each in a subshell, names the ones that
# failed, and runs a part once more on this boot when its guest faulted):
#  - kmod-exact-npt, phase 1 only (the ping/pong phase is printed, not
#    checked, and kmod-exact runs it);
#  - callgraph-guest-npt, phase 1 (CG_PHASES=1: the garbage frames of
#    phase 2 test the walk itself, which callgraph-guest runs);
#  - kmod-npt-load: kmod-npt-spaces (a guest with no agent split per
#    address space), then kmod-npt-cycles (50 load / sample / unload
#    cycles of the module) with that guest running.
# Saves three boots of L1 and reloads against running them apart.
#
# Faults of the emulator: in 8 test-command runs of 2026-11-29/30 (before
# a part could run again on its boot), 2 needed another boot of L1 (3
# faults in 11 attempts, every one in callgraph-guest-npt: its guest's
# QEMU exited on its own, the L2 guest reset, while booting or while its
# workload ran); earlier, L1 showed a soft lockup of the vCPU thread, a
# stack overflow of recursive page faults at a %gs access in
# exc_page_fault (a GS base not the kernel's), or a stall.  The
# summary's part_rerun lines count the reruns on one boot, run-summary's
# "attempts" the boots.  2026-11-30, with the new parts: one run in two
# needed a second boot (L1 hung while the cycles' own guest booted; they
# now use kmod-npt-spaces' guest).
EXACT_PHASES=1
CG_PHASES=1
lab_parts kmod-exact-npt callgraph-guest-npt kmod-npt-load
