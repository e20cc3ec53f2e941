# The test command's run of kmod-compare and kmod on one boot of L1 (their
# own headers say what each checks; lab_parts runs each in turn, in a
# subshell, and names the ones that failed).  kmod-compare first: kmod's
# last phase unloads KVM.  Saves a boot of L1 against running them apart.
lab_parts kmod-compare kmod
