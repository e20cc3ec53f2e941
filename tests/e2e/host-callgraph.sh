#!/usr/bin/env bash
# End to end on the host, as root (issue 12): profile with call graphs a
# program whose hot leaf burn() is reached from caller_a() and caller_b()
# for CPU time in a 2:1 ratio it measures itself, and check that
# `opreport -c` shows both callers of burn within 5 points of that ratio.
# `perf record -g` on the same program is printed beside it (cpu-clock: the
# build machines have no PMU).  Also checks that the session's stacks file
# has burn's stacks, and that a session without --callgraph has no {cg}
# file and no stacks.
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/e2e/callers).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
callers=$DP_BUILD/tests/e2e/callers
tolerance=5
seconds=${DP_CALLERS_SECONDS:-5}

work=$(mktemp -d /tmp/dp-cg.XXXXXX)
# the daemon's unprivileged worker (privsep, the default) reaches the
# session through this directory
chmod 0755 "$work"
session=$work/session
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	"$bin/opcontrol" --stop --session-dir="$work/flat" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

cp "$callers" "$work/callers"	# a path of its own, so image: matches only it
"$bin/opcontrol" --start --session-dir="$session" --callgraph=32
"$work/callers" "$seconds" | tee "$work/callers.out"
"$bin/opcontrol" --stop --session-dir="$session"
grep '^cc_' "$session/stats" | sed 's/^/  stats: /'

"$bin/opreport" -c --threshold=1 --session-dir="$session" "image:$work/callers" | tee "$work/report.out"

# burn's entry: the caller lines (indented) right above its unindented line
read -r dp_a dp_na dp_nb < <(awk '
	/^---/ { na = nb = 0; next }
	/^  / { if ($NF == "caller_a") na = $1; if ($NF == "caller_b") nb = $1; next }
	$NF == "burn" { if (na + nb) printf "%.2f %d %d\n", 100 * na / (na + nb), na, nb; else print "none 0 0"; exit }
	{ na = nb = 0 }' "$work/report.out")
measured=$(sed -n 's/.*caller_a=\([0-9.]*\)%.*/\1/p' "$work/callers.out")

perf_a=n/a perf_na=0 perf_nb=0
if perf record -q -g -e cpu-clock -o "$work/perf.data" -- "$work/callers" "$seconds" >/dev/null 2>&1; then
	# samples whose innermost frame is burn, by the frame that called it
	read -r perf_a perf_na perf_nb < <(perf script -i "$work/perf.data" -F ip,sym 2>/dev/null | awk '
		NF == 0 { n = 0; next }
		{ n++; if (n == 1) s0 = $2; else if (n == 2 && s0 == "burn") c[$2]++ }
		END { a = c["caller_a"] + 0; b = c["caller_b"] + 0
		      if (a + b) printf "%.2f %d %d\n", 100 * a / (a + b), a, b; else print "n/a 0 0" }') ||
		perf_a=n/a
fi

echo "callers program measured:  caller_a ${measured}% of burn's time"
echo "domprof opreport -c:       caller_a ${dp_a}% (caller_a ${dp_na} samples, caller_b ${dp_nb} samples)"
echo "perf record -g / script:   caller_a ${perf_a}% (caller_a ${perf_na} samples, caller_b ${perf_nb} samples)"
if [ "${dp_a:-none}" = none ]; then
	echo "FAIL: opreport -c shows no callers of burn"
	exit 1
fi
awk -v m="$measured" -v d="$dp_a" -v t="$tolerance" 'BEGIN {
	diff = m - d; if (diff < 0) diff = -diff
	if (diff > t) { printf "FAIL: domprof differs from the measured 2:1 split by %.2f points (> %d)\n", diff, t; exit 1 }
	printf "OK: opreport -c within %.2f points of the measured split\n", diff }'

# the same arcs in --json -c: burn's callers by row id, the same counts
json_ab=$("$bin/opreport" --json -c -l --threshold=1 --session-dir="$session" "image:$work/callers" |
	python3 -c '
import json, sys
r = json.load(sys.stdin)
name = {row["id"]: row["symbol"] for row in r["rows"]}
burn = [i for i, s in name.items() if s == "burn"]
into = {name[a["from"]]: a["samples"][0] for a in r.get("arcs", []) if burn and a["to"] == burn[0]}
print(into.get("caller_a", 0), into.get("caller_b", 0))')
echo "opreport --json -c: arcs into burn from caller_a, caller_b: $json_ab"
if [ "$json_ab" != "$dp_na $dp_nb" ]; then
	echo "FAIL: --json -c's arcs into burn ($json_ab) are not opreport -c's ($dp_na $dp_nb)"
	exit 1
fi
echo "OK: --json -c has opreport -c's arcs into burn"

# the whole stacks, for the flame graph and pprof: burn under both callers
stacks=$(cat "$session"/samples/current/{stacks}/* 2>/dev/null | grep -c '^stack ' || true)
echo "stacks file: $stacks distinct stacks"
if [ "${stacks:-0}" -lt 2 ]; then
	echo "FAIL: no stacks recorded in $session/samples/current/{stacks}"
	exit 1
fi

# call graphs off: no {cg} file, no stacks, the flat report as before
"$bin/opcontrol" --start --session-dir="$work/flat"
"$work/callers" 1 >/dev/null
"$bin/opcontrol" --stop --session-dir="$work/flat"
if find "$work/flat/samples" -name '{cg}' -o -name '{stacks}' | grep -q .; then
	echo "FAIL: a session without --callgraph has {cg} files or stacks"
	exit 1
fi
if [ "$(sed -n 's/^cc_chains //p' "$work/flat/stats")" != 0 ]; then
	echo "FAIL: a session without --callgraph received call chains"
	exit 1
fi
echo "OK: without --callgraph, no call chains, no {cg} files, no stacks"
