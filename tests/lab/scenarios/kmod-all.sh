# The test command's run of kmod-compare, kmod and libvirt-domprof on one
# boot of L1 (their own headers say what each checks; lab_parts runs each
# in turn, in a subshell, and names the ones that failed).  kmod-compare
# before kmod, whose last phase unloads KVM (and loads it again);
# libvirt-domprof last, as it starts libvirtd, which the daemon would then
# find.  Saves two boots of L1 against running the three apart.
lab_parts kmod-compare kmod libvirt-domprof
