# The test command's run of agent, domains, trust-identity, demo,
# hostile-guest and guest-debuginfo on one boot of L1 (their own headers say what each
# checks; lab_parts runs each in turn, in a subshell, and names the ones
# that failed).  The demo's results (demo-flame.svg, demo-archive.tar.gz)
# stay in the results directory for tests/lab/lab-views.sh --reuse.
# guest-debuginfo comes last: it moves L1's /usr/lib/debug away.  Saves
# four boots of L1, about a minute and a half of the test command,
# against running the five apart.
# the demo profiles 15 s here (30 by default): its views' checks compare
# the views with opreport on the same session, whatever its length
DEMO_PROFILE_S=${DEMO_PROFILE_S:-15}
lab_parts agent domains trust-identity demo hostile-guest guest-debuginfo
