# The test command's run of agent, domains, trust-identity and
# guest-debuginfo on one boot of L1 (their own headers say what each
# checks; lab_parts runs each in turn, in a subshell, and names the ones
# that failed).  Saves three boots of L1, about a minute of the test
# command, against running the four apart.
lab_parts agent domains trust-identity guest-debuginfo
