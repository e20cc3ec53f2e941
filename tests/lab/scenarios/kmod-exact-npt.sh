# kmod-exact with nested paging: L1's kvm_amd reloaded with npt=1, the
# default of every host with NPT or EPT (the lab's other scenarios keep
# shadow paging, tests/lab/README.md).  The kernel module reads the
# guest's CR3 at each sample from the VMCB the exit left
# (host-kmod/dp_cr3.c), so the same bar as kmod-exact holds: at most 0.5%
# of the two same-address programs' samples misattributed
# (KMOD_EXACT_MAX_MIS), samples filed by their address space, and the
# module's cr3_direct count above 0.
EXACT_COLLECTOR=kmod
EXACT_NPT=1
. "$LAB/scenarios/exact.sh"
