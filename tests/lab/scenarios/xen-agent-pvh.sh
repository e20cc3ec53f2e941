# lab-kind: xen
# lab-xen-hap: 1
# xen-agent (its header says what it checks) with web a PVH domain
# instead of a PV one (issue 26, item 4): the same kernel booted through
# its PVH entry in an HVM container (Xen runs it on the emulated SVM).
# What differs for domprof: the collector reads the vCPU's context as an
# HVM one (the CPL from CS says kernel or user, CR3 is a guest-physical
# address, guest memory is read by guest frame), and its guest TSC comes
# from its whole HVM context, a coarser read than a PV domain's.  Not in
# the test command: 12 minutes, and its same-address pair fails (7.5 to
# 28.6% misattributed in five runs of 2026-11-29: the address spaces'
# owners are not learned at a millisecond of clock uncertainty; doc/xen.md,
# "HVM and PVH guests").
LAB_XEN_TYPE=pvh
# (a PVH guest boots slower than a PV one under the emulator)
LAB_BOOT_TIMEOUT=${LAB_BOOT_TIMEOUT_PVH:-400}
. "$LAB/scenarios/xen-agent.sh"
