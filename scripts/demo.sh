#!/usr/bin/env bash
# The main job: install what is needed, build, and run the demo.  With the
# lab: two KVM guests (web busy, db idle) profiled from the lab host, and the
# domain summary plus a report per domain.  Without it: a known workload
# profiled on this host.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ -x tests/lab/run.sh ] && [ -f tests/lab/scenarios/demo.sh ]; then
	scripts/install-deps.sh --lab
	scripts/build.sh
	# DP_BUILD: run.sh stages the guests' test program from the build.
	# lab-views.sh runs the demo, then checks its views here and takes a
	# screenshot of its flame graph (OUT/demo-flame.png).
	export DP_BUILD=${DP_BUILD_DIR:-$top/build}
	export DP_PREFIX=$DP_BUILD/stage/usr/local
	exec tests/lab/lab-views.sh --stage "$DP_BUILD/stage" "$@"
fi
scripts/install-deps.sh
scripts/build.sh
build=${DP_BUILD_DIR:-$top/build}
export DP_BUILD=$build DP_PREFIX=$build/stage/usr/local
export DOMPROF_EVENTS_DIR=$DP_PREFIX/share/domprof/events
echo "demo: no lab yet; profiling a known workload on this host"
exec tests/e2e/host-ratio.sh
