# The test command's run of exact, kmod-exact and callgraph-guest, then
# kmod-npt-all's parts, on one boot of L1 (their own headers say what
# each checks; lab_parts runs each in turn and names the ones that
# failed):
#  1. exact's workload on one guest, two phases: the perf collector, then
#     the kernel collector (EXACT_PLAN "perf:default kmod:default"), each
#     with its own bar (2% and 0.5% misattributed) and perf record beside
#     it.  exact's ping/pong phase (printed, never checked) is left out.
#  2. callgraph-guest, both phases.
# Saves two boots of L1, one of the guest and the ping/pong phase against
# running the three apart (about 2.5 minutes of the test command).
# Then the nested-paging parts of kmod-npt-all (its header says what they
# check and why each runs one phase), kvm_amd reloaded once with npt=1;
# on this boot since 2026-12-02, which saves a boot of L1 (478 s for the
# five parts against 222 + 332 s apart, that day).
lab_parts EXACT_PLAN="perf:default kmod:default" exact callgraph-guest \
	EXACT_PLAN= EXACT_PHASES=1 CG_PHASES=1 kmod-exact-npt callgraph-guest-npt kmod-npt-load
