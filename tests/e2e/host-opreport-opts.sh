#!/usr/bin/env bash
# End to end on the host, as root: opreport's OProfile 0.9 options on a real
# session (opcontrol --separate=library, the ratio workload), each checked by
# its figures: -a accumulates to 100%, -e drops the named symbol and its
# share (the rest sums to 100% again), -i keeps only the named ones, -x
# drops the libraries and kernel an application used, -r reverses the order,
# -n prints no header, -w shows addresses (the symbol's, checked with nm), -f
# whole paths, -g the source line (ratio.c), -d the instructions (summing to
# the symbol's samples), -% percentages of the whole profile, -D none the
# raw names, the CPU: header and the event's description, and -X a document
# that validates against doc/opreport.xsd with xmllint, with the same counts
# as the text.
# Needs DP_PREFIX (installed domprof), DP_BUILD (tests/e2e/ratio) and xmllint.
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$DP_PREFIX/bin
seconds=${DP_RATIO_SECONDS:-4}
command -v xmllint >/dev/null || { echo "FAIL: xmllint missing (scripts/install-deps.sh installs libxml2-utils)"; exit 1; }

work=$(mktemp -d /tmp/dp-opts.XXXXXX)
chmod 0755 "$work"
session=$work/session
export HOME=$work/home
mkdir -p "$HOME"
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
cp "$DP_BUILD/tests/e2e/ratio" "$work/ratio"

"$bin/opcontrol" --start --session-dir="$session" --separate=library >/dev/null
"$work/ratio" "$seconds" 75
"$bin/opcontrol" --dump --session-dir="$session"
"$bin/opcontrol" --stop --session-dir="$session" >/dev/null
grep -q '^cpu_type ' "$session/session.conf" || fail "session.conf records no cpu_type"

rep() { "$bin/opreport" --session-dir="$session" "$@" 2>/dev/null; }
# (reports go to files before grep -q: an early exit of grep would fail
# the pipeline under pipefail)
# the rows of a symbol listing: lines whose first field is a count
rows() { awk '$1 ~ /^[0-9]+$/'; }
# sum of column N of the rows
colsum() { awk -v n="$1" '$1 ~ /^[0-9]+$/ { s += $n } END { printf "%.2f\n", s }'; }
near() {	# near NAME GOT WANT TOLERANCE
	awk -v n="$1" -v g="$2" -v w="$3" -v t="$4" 'BEGIN {
		d = g - w; if (d < 0) d = -d
		if (d > t) { printf "FAIL: %s: %s, expected %s\n", n, g, w; exit 1 }
		printf "OK: %s: %s (expected %s)\n", n, g, w }'
}

# ---- the header ---------------------------------------------------------
rep image:ratio >"$work/head.out"
head -3 "$work/head.out"
grep -qE '^CPU: [^ ,]+(, speed [0-9.]+ MHz \(estimated\))?$' "$work/head.out" || fail "no CPU: line"
grep -qE '^Counted [A-Z_]+ events \(.+\) with a unit mask of 0x[0-9a-f]{2} \(.+\) count [0-9]+$' \
	"$work/head.out" || fail "the Counted line has no event or unit mask description"
rep -n image:ratio >"$work/nohead.out"
if grep -qE '^(CPU:|Counted|Profiling)|samples' "$work/nohead.out"; then fail "-n printed a header"; fi
[ "$(head -1 "$work/nohead.out" | awk '{ print $1 ~ /^[0-9]+$/ }')" = 1 ] || fail "-n: the first line is not a row"
rep -l -n image:ratio >"$work/nohead-l.out"
[ "$(rows <"$work/nohead-l.out" | wc -l)" = "$(wc -l <"$work/nohead-l.out")" ] || fail "-l -n printed more than rows"
echo "OK: CPU: line, event descriptions, -n prints rows only"

# ---- -a: cumulated samples and percentages ----------------------------------
rep -l -a image:ratio >"$work/acc.out"
last=$(rows <"$work/acc.out" | tail -1)
total=$(rows <"$work/acc.out" | awk '{ s += $1 } END { print s }')
[ "$(echo "$last" | awk '{ print $2 }')" = "$total" ] || fail "-a: last cum. samples $(echo "$last" | awk '{ print $2 }') != $total"
near "-a: last cum. %" "$(echo "$last" | awk '{ print $4 }')" 100 0.01
rows <"$work/acc.out" | awk '{ c += $1; if (c != $2) { print "FAIL: -a: cum. samples " $2 " after " c; exit 1 } }'

# ---- -e, -i: symbols out of the profile and its totals ----------------------
rep -l image:ratio >"$work/sym.out"
a=$(awk '$NF == "burn_a" { print $1 }' "$work/sym.out")
b=$(awk '$NF == "burn_b" { print $1 }' "$work/sym.out")
[ -n "$a" ] && [ -n "$b" ] || fail "no burn_a/burn_b rows"
rep -l -e burn_a image:ratio >"$work/ex.out"
if grep -qE ' burn_a$' "$work/ex.out"; then fail "-e burn_a still lists burn_a"; fi
rest=$(rows <"$work/sym.out" | awk '{ s += $1 } END { print s }')
near "-e burn_a: burn_b's share" "$(awk '$NF == "burn_b" { print $2 }' "$work/ex.out")" \
	"$(awk -v b="$b" -v r="$rest" -v a="$a" 'BEGIN { printf "%.4f", 100 * b / (r - a) }')" 0.001
near "-e burn_a: percentages sum" "$(colsum 2 <"$work/ex.out")" 100 0.05
rep -l -i burn_a,burn_b image:ratio >"$work/in.out"
[ "$(rows <"$work/in.out" | wc -l)" = 2 ] || fail "-i burn_a,burn_b listed $(rows <"$work/in.out" | wc -l) rows"
near "-i: burn_a's share" "$(awk '$NF == "burn_a" { print $2 }' "$work/in.out")" \
	"$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", 100 * a / (a + b) }')" 0.001

# ---- -x: the application's own image only -----------------------------------
rep -l -x image:ratio >"$work/x.out"
kept=$(rows <"$work/x.out" | awk '$3 != "ratio"')
[ -z "$kept" ] || fail "-x kept dependent images: $(echo "$kept" | head -3)"
grep -q 'libc.so' "$work/sym.out" || grep -q 'vmlinux\|vdso' "$work/sym.out" ||
	echo "note: the session has no dependent image under ratio to drop"
near "-x: percentages sum" "$(colsum 2 <"$work/x.out")" 100 0.05
rep -x >"$work/x-img.out"
if grep -qP '^\t' "$work/x-img.out"; then fail "-x: the image listing still has dependent images"; fi
echo "OK: -e, -i, -x take what they leave out off the totals"

# ---- -r: reversed order -------------------------------------------------------
rep -l -r image:ratio | rows | awk '{ print $1 }' >"$work/r.counts"
rows <"$work/sym.out" | awk '{ print $1 }' | sort -n >"$work/sorted.counts"
cmp -s "$work/r.counts" "$work/sorted.counts" || fail "-r is not smallest first"
[ "$(tail -1 "$work/r.counts")" = "$(rows <"$work/sym.out" | head -1 | awk '{ print $1 }')" ] || fail "-r: the top row is not last"
echo "OK: -r lists smallest first"

# ---- -w, -f, -g, -d, -%, -D ---------------------------------------------------
want=$(nm "$work/ratio" | awk '$3 == "burn_a" { print $1 }' | sed 's/^0*//')
got=$(rep -l -w image:ratio | awk '$NF == "burn_a" { print $1 }' | sed 's/^0*//')
[ "$got" = "$want" ] || fail "-w: burn_a at $got, nm says $want"
rep -l --wide image:ratio >"$work/wide.out"
grep -q 'burn_a' "$work/wide.out" || fail "--wide no longer works"
rep -l -f image:ratio >"$work/f.out"
grep -qE " $work/ratio +burn_a$" "$work/f.out" || fail "-f: no whole path for ratio: $(grep burn_a "$work/f.out")"
rep -l -g image:ratio >"$work/g.out"
grep -qE 'ratio\.c:[0-9]+ .* burn_a$' "$work/g.out" || fail "-g: no ratio.c:LINE for burn_a"
rep -l -d image:ratio >"$work/d.out"
awk -v a="$a" '
	$NF == "burn_a" { on = 1; next }
	on && /^  [0-9a-f]+ / { s += $2; p += $3; next }
	on { exit }
	END { if (s != a) { printf "FAIL: -d: burn_a instructions sum to %d, burn_a has %d\n", s, a; exit 1 }
	      if (p < 99.9 || p > 100.1) { printf "FAIL: -d: shares sum to %.2f\n", p; exit 1 }
	      printf "OK: -d: burn_a instructions sum to its %d samples, 100%%\n", s }' "$work/d.out"
# the first dependent image under ratio in the whole profile: its samples
# and percentage; ratio's samples; all samples
dep_row() { awk -F'\t' '/^[^\t].* ratio$/ { on = 1; next } /^[^\t]/ { on = 0 }
	on && NF > 1 { split($2, f, " "); if (f[1] ~ /^[0-9]+$/) { print f[1], f[2]; exit } }'; }
rep >"$work/all.out"
rep -% >"$work/all-g.out"
read -r dn dpct < <(dep_row <"$work/all.out")
read -r gn gpct < <(dep_row <"$work/all-g.out")
whole=$(awk '/^[^\t]/ && $1 ~ /^[0-9]+$/ { s += $1 } END { print s }' "$work/all.out")
app=$(awk '/^[^\t].* ratio$/ { print $1; exit }' "$work/all.out")
[ -n "$dn" ] && [ "$dn" = "$gn" ] || fail "-%: the dependent image's samples changed or are missing ($dn, $gn)"
near "-%: a dependent image's share of the whole profile" "$gpct" \
	"$(awk -v n="$gn" -v t="$whole" 'BEGIN { printf "%.4f", 100 * n / t }')" 0.001
near "without -%: its share of ratio's samples" "$dpct" \
	"$(awk -v n="$dn" -v t="$app" 'BEGIN { printf "%.4f", 100 * n / t }')" 0.001
rep -l -D none image:ratio >"$work/dn.out"
grep -qE ' burn_a$' "$work/dn.out" || fail "-D none lost the C names"
if rep -l -D bogus image:ratio; then fail "-D bogus accepted"; fi
echo "OK: -w matches nm, --wide, -f, -g, -d, -%, -D"

# ---- -X: the XML report validates, with the text's counts ---------------------
for args in "" "-l" "-l -g -d" "-l -x -e burn_b -t 1" "-l -r"; do
	# shellcheck disable=SC2086
	rep -X $args image:ratio >"$work/r.xml"
	xmllint --noout --schema "$top/doc/opreport.xsd" "$work/r.xml" 2>"$work/xmllint.err" ||
		fail "-X $args does not validate: $(head -3 "$work/xmllint.err")"
done
rep -X -l image:ratio >"$work/r.xml"
id=$(xmllint --xpath 'string(//symboldata[@name="burn_a"]/@id)' "$work/r.xml")
xa=$(xmllint --xpath "string(//symbol[@idref='$id']/count)" "$work/r.xml")
[ "$xa" = "$a" ] || fail "-X: burn_a has $xa samples, the text $a"
[ "$(xmllint --xpath 'count(//domain[@kind="host"])' "$work/r.xml")" = 1 ] || fail "-X: no host domain element"
echo "OK: -X validates against doc/opreport.xsd; burn_a $xa samples as in the text"
echo "OK: opreport's OProfile options"
