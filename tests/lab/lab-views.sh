#!/usr/bin/env bash
# The views on a lab session (issue 14): runs the demo scenario (two KVM
# guests with agents, profiled from L1), then on this host, on the demo's
# session moved here with oparchive (OUT/demo-archive.tar.gz):
#   - the flame graph (rendered in headless Chromium) and the pprof file
#     (read back by go tool pprof) count the top symbols of opreport -l
#     exactly as opreport does (tests/e2e/views-lib.sh, shared with
#     host-views.sh);
#   - a PNG screenshot of the demo's flame graph, as made in L1
#     (OUT/demo-flame.svg), into OUT/demo-flame.png.
#
#   tests/lab/lab-views.sh [--out DIR] [--reuse] [run.sh options]
# --reuse skips the lab run and checks an earlier one's OUT.  Needs
# DP_PREFIX (domprof installed on this host, as scripts/test.sh sets it).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
bin=$DP_PREFIX/bin
export DP_NO_PROGRESS=1
export DOMPROF_EVENTS_DIR=${DOMPROF_EVENTS_DIR:-$DP_PREFIX/share/domprof/events}
out=/tmp/domprof-lab/demo-views-$(date +%Y%m%d-%H%M%S)
reuse=0 args=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--out=*) out=${1#--out=}; shift ;;
	--reuse) reuse=1; shift ;;
	*) args+=("$1"); shift ;;
	esac
done
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "OK: $*"; }

if [ $reuse = 0 ]; then
	"$top/tests/lab/run.sh" demo --out "$out" "${args[@]}" || { echo "lab-views: the demo failed"; exit 1; }
fi
for f in demo-flame.svg demo-archive.tar.gz; do
	[ -s "$out/$f" ] || { echo "lab-views: the demo left no $out/$f"; exit 1; }
done
work=$(mktemp -d /tmp/dp-lab-views.XXXXXX)
trap '[ -n "${DP_KEEP:-}" ] || rm -rf "$work"' EXIT
mkdir "$work/session"
tar -C "$work/session" -xzf "$out/demo-archive.tar.gz" || { echo "lab-views: bad archive"; exit 1; }
# the tarball holds the archive directory itself or its contents
session=$work/session
[ -e "$session/samples" ] || session=$(dirname "$(find "$work/session" -maxdepth 3 -type d -name samples | head -n 1)")
[ -e "$session/samples" ] || { echo "lab-views: no session in the archive"; exit 1; }

. "$top/tests/e2e/views-lib.sh"
views_report "$session" "$work"
sed -n '/^samples/,+12p' "$work/report.out"
views_flame "$session" "$work"
views_pprof "$session" "$work"
# the lab's rows must be the lab's: guests' work among the top ones
ndom=$(cut -d';' -f1 "$work/top.rows" | grep -vc '^host$')
echo "top rows of a domain (not the host): $ndom of $(wc -l <"$work/top.rows")"
[ "$ndom" -gt 0 ] || fail "no domain among the top symbols: not a lab session's report"
cp "$work/report.out" "$out/views-report.txt"
cp "$work/fg.frames" "$out/views-flame-frames.txt" 2>/dev/null
cp "$work/pprof.top" "$out/views-pprof-top.txt" 2>/dev/null

# The screenshot of the demo's own flame graph.
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
	fail "no chromium for the flame graph's screenshot"
else
	rm -f "$out/demo-flame.png"
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$(mktemp -d "$work/chromium.XXXXXX")" \
		--screenshot="$out/demo-flame.png" --window-size=1400,900 \
		"file://$out/demo-flame.svg" >"$work/shot.log" 2>&1 || true
	if [ "$(head -c 8 "$out/demo-flame.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
		ok "screenshot of the demo's flame graph: $out/demo-flame.png ($(stat -c %s "$out/demo-flame.png") bytes)"
	else
		fail "no screenshot of the demo's flame graph"
		tail -5 "$work/shot.log"
	fi
fi
[ $fails -eq 0 ] || { echo "lab-views: $fails check(s) failed"; exit 1; }
echo "lab-views: all checks passed ($out)"
