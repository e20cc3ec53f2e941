# lab-kind: xen
# lab-xen-hap: 1
# xen-agent (its header says what it checks) with web a PVH domain
# instead of a PV one (issue 26, item 4): the same kernel booted through
# its PVH entry in an HVM container (Xen runs it on the emulated SVM).
# What differs for domprof: the collector reads the vCPU's context as an
# HVM one (the CPL from CS says kernel or user, CR3 is a guest-physical
# address, guest memory is read by guest frame), and Xen gives no PV TSC
# information for it, so the guest clock is by ping/pong (doc/xen.md).
LAB_XEN_TYPE=pvh
# (a PVH guest boots slower than a PV one under the emulator)
LAB_BOOT_TIMEOUT=${LAB_BOOT_TIMEOUT_PVH:-400}
. "$LAB/scenarios/xen-agent.sh"
