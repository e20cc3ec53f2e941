#!/usr/bin/env bash
# End to end on the host, as root: profile a program whose two functions burn
# CPU in a ratio it measures itself (75/25), and check that opreport -l shows
# that ratio within 5 points.  The same program is also recorded with
# `perf record` and both distributions are printed side by side.
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/e2e/ratio).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
ratio=$DP_BUILD/tests/e2e/ratio
tolerance=5
seconds=${DP_RATIO_SECONDS:-6}

work=$(mktemp -d /tmp/dp-e2e.XXXXXX)
# the daemon's unprivileged worker (privsep, the default) reaches the
# session through this directory
chmod 0755 "$work"
session=$work/session
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

cp "$ratio" "$work/ratio"	# a path of its own, so image: matches only it
"$bin/opcontrol" --start --session-dir="$session" --separate=lib
"$work/ratio" "$seconds" 75 | tee "$work/ratio.out"
"$bin/opcontrol" --dump --session-dir="$session"
"$bin/opcontrol" --stop --session-dir="$session"
"$bin/opcontrol" --status --session-dir="$session" | sed 's/^/  status: /'

"$bin/opreport" -l --session-dir="$session" "image:$work/ratio" | tee "$work/report.out"

# share of burn_a among the two functions, from a report with "samples % ... symbol" rows
share_a() {
	awk '$NF == "burn_a" { a += $1 } $NF == "burn_b" { b += $1 }
	     END { if (a + b == 0) { print "none"; exit } printf "%.2f %d %d\n", 100 * a / (a + b), a, b }' "$1"
}
measured=$(sed -n 's/.*burn_a=\([0-9.]*\)%.*/\1/p' "$work/ratio.out")
read -r dp_a dp_na dp_nb < <(share_a "$work/report.out")

perf_a=n/a
if perf record -q -e cpu-clock -o "$work/perf.data" -- "$work/ratio" "$seconds" 75 >/dev/null 2>&1; then
	perf report -i "$work/perf.data" --stdio --sort sym -F sample,sym 2>/dev/null |
		awk '/burn_a|burn_b/ { print $1, "x", $NF }' >"$work/perf.out" || true
	read -r perf_a _ < <(share_a "$work/perf.out") || perf_a=n/a
fi

echo "ratio program measured: burn_a ${measured}%"
echo "domprof opreport -l:    burn_a ${dp_a}% (burn_a ${dp_na:-0} samples, burn_b ${dp_nb:-0} samples)"
echo "perf record/report:     burn_a ${perf_a}%"
if [ "$dp_a" = none ]; then
	echo "FAIL: opreport shows no samples in burn_a/burn_b"
	exit 1
fi
awk -v m="$measured" -v d="$dp_a" -v t="$tolerance" 'BEGIN {
	diff = m - d; if (diff < 0) diff = -diff
	if (diff > t) { printf "FAIL: domprof differs from the measured ratio by %.2f points (> %d)\n", diff, t; exit 1 }
	printf "OK: domprof within %.2f points of the measured ratio\n", diff }'
