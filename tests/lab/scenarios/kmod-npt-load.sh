# kmod-npt-spaces, then kmod-npt-cycles on its guest (na, two shell loops
# and no agent) instead of a guest of their own: one boot of an L2 guest
# under nested paging fewer, where the emulator faults most (an L1 hung
# once in two runs of 2026-11-30 while the cycles' own guest booted).
# Each phase's checks are its scenario's (their headers).
NPTS_KEEP=1
. "$LAB/scenarios/kmod-npt-spaces.sh"
NPTC_GUEST=na
. "$LAB/scenarios/kmod-npt-cycles.sh"
