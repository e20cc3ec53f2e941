# callgraph-guest with nested paging and the NMI path: kvm_amd reloaded
# with npt=1, domprof.ko with defer_walks=1 (the lab has no PMU, so no
# NMI: the hrtimer's walks are sent the way an NMI's are).  The same
# checks as callgraph-guest, plus deferred walks and guest CR3s read from
# the VMCB counted by the module (callgraph-guest.sh, "CG_NPT=1").
CG_NPT=1
. "$LAB/scenarios/callgraph-guest.sh"
