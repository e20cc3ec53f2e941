# The test command's run of agent, domains, trust-identity, demo,
# hostile-guest and guest-debuginfo on one boot of L1 (their own headers
# say what each checks; lab_parts runs each in turn, in a subshell, and
# names the ones that failed).  The demo's results (demo-flame.svg, demo-archive.tar.gz)
# stay in the results directory for tests/lab/lab-views.sh --reuse.
# guest-debuginfo comes last: it moves L1's /usr/lib/debug away.  Saves
# five boots of L1 against running the six apart (hostile-guest's part:
# 708 s for the six against 540 + 193 s for five and hostile-guest alone,
# 2026-12-02).
# the demo profiles 15 s here (30 by default): its views' checks compare
# the views with opreport on the same session, whatever its length
DEMO_PROFILE_S=${DEMO_PROFILE_S:-15}
lab_parts agent domains trust-identity demo hostile-guest guest-debuginfo
