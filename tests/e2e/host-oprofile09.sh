#!/usr/bin/env bash
# End to end on the host, as root: OProfile 0.9's command sequence as its
# users type it (--init, --setup --no-vmlinux, --start, a workload, --dump,
# --save=NAME, --stop, --shutdown, opreport session:NAME and
# opreport -l session:NAME), with only the session directory adapted, and
# the figures checked: the saved session holds the workload's two
# functions in the 75/25 split it measured itself, and the fresh current
# session the daemon went on into holds none of it.  Then --save in the
# middle of a second run: both halves hold the workload, in its split, and
# together as many samples as the first run (none lost at the switch).
# Then every installed tool (bin, sbin and libexec/domprof) answers
# --version, and a bad option costs at
# most two lines on stderr and a nonzero status.
# Needs DP_PREFIX (installed domprof) and DP_BUILD (tests/e2e/ratio, config.h).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
sbin=$DP_PREFIX/sbin
tolerance=5
seconds=${DP_RATIO_SECONDS:-6}
version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$DP_BUILD/config.h")

work=$(mktemp -d /tmp/dp-o9.XXXXXX)
chmod 0755 "$work"	# the privsep worker reaches the session through it
session=$work/session
# --setup keeps its options in $HOME/.domprof/setup: a home of the test's own
export HOME=$work/home
mkdir -p "$HOME"
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
cp "$DP_BUILD/tests/e2e/ratio" "$work/ratio"

# ---- OProfile 0.9's sequence --------------------------------------------
opcontrol=$bin/opcontrol
$opcontrol --init | tee "$work/init.out"
grep -q 'events:' "$work/init.out" || fail "--init did not say what it found"
$opcontrol --setup --no-vmlinux --session-dir="$session" --separate=library
grep -qx "session_dir $session" "$HOME/.domprof/setup" || fail "--setup did not store the session directory"
$opcontrol --start
[ -s "$session/oprofiled.pid" ] || fail "--start did not use the session directory --setup stored"
"$work/ratio" "$seconds" 75 | tee "$work/ratio.out"
$opcontrol --dump
$opcontrol --save=o9run
$opcontrol --stop
$opcontrol --shutdown	# 0.9's last step; the daemon is already gone
$opcontrol --stat >"$work/stat.out"	# an abbreviation of --status
grep -q 'not running' "$work/stat.out" || fail "opcontrol --stat did not report the stopped daemon"
[ -d "$session/samples/o9run" ] || fail "--save made no samples/o9run"
[ -d "$session/samples/current" ] || fail "the daemon made no fresh samples/current after --save"
ncur=$(find "$session/samples/current" -type f -name '*.all.all.all' | wc -l)
[ "$ncur" -gt 0 ] || fail "the daemon filed nothing into a fresh samples/current after --save"
nfiles=$(find "$session/samples/o9run" -type f -name '*.all.all.all' | wc -l)
[ "$nfiles" -gt 0 ] || fail "the saved session holds no sample files"

opreport="$bin/opreport --session-dir=$session"
$opreport session:o9run >"$work/summary.out"
head -12 "$work/summary.out"
grep -q "ratio" "$work/summary.out" || fail "opreport session:o9run does not list the workload"
$opreport -l session:o9run >"$work/symbols.out"
grep -E ' burn_[ab]$' "$work/symbols.out"

share_a() {
	awk '$NF == "burn_a" { a += $1 } $NF == "burn_b" { b += $1 }
	     END { if (a + b == 0) { print "none 0 0"; exit } printf "%.2f %d %d\n", 100 * a / (a + b), a, b }' "$1"
}
# within: NAME MEASURED REPORTED
within() {
	awk -v n="$1" -v m="$2" -v d="$3" -v t="$tolerance" 'BEGIN {
		diff = m - d; if (diff < 0) diff = -diff
		if (diff > t) { printf "FAIL: %s differs from the measured ratio by %.2f points (> %d)\n", n, diff, t; exit 1 }
		printf "OK: %s within %.2f points of the measured ratio\n", n, diff }'
}
measured=$(sed -n 's/.*burn_a=\([0-9.]*\)%.*/\1/p' "$work/ratio.out")
read -r dp_a dp_na dp_nb < <(share_a "$work/symbols.out")
echo "ratio program measured: burn_a ${measured}%"
echo "opreport -l session:o9run: burn_a ${dp_a}% (burn_a ${dp_na}, burn_b ${dp_nb} samples)"
[ "$dp_a" != none ] || fail "opreport -l session:o9run shows no samples in burn_a/burn_b"
within session:o9run "$measured" "$dp_a"
$opreport -l >"$work/current.out" 2>/dev/null || true
if grep -qE ' burn_[ab]$' "$work/current.out"; then
	fail "the current session after --save still holds the saved workload's samples"
fi
echo "OK: the fresh current session holds none of session o9run"

# ---- --save in the middle of a run: no sample lost at the switch ----------
$opcontrol --start
"$work/ratio" "$seconds" 75 >"$work/ratio2.out" &
ratio_pid=$!
sleep "$(awk -v s="$seconds" 'BEGIN { print s / 2 }')"
$opcontrol --save=firsthalf
wait "$ratio_pid"
$opcontrol --dump
$opcontrol --stop
grep -E '^(samples_lost|saves) ' "$session/stats" | sed 's/^/  stats: /'
$opreport -l session:firsthalf >"$work/first.out" 2>/dev/null
$opreport -l >"$work/second.out" 2>/dev/null
$opreport -l session:o9run >"$work/again.out" 2>/dev/null
cmp -s "$work/symbols.out" "$work/again.out" || fail "session:o9run changed after a new run"
measured2=$(sed -n 's/.*burn_a=\([0-9.]*\)%.*/\1/p' "$work/ratio2.out")
read -r a1 na1 nb1 < <(share_a "$work/first.out")
read -r a2 na2 nb2 < <(share_a "$work/second.out")
echo "second run measured: burn_a ${measured2}%; first half ${a1}% ($((na1 + nb1)) samples), second half ${a2}% ($((na2 + nb2)) samples)"
[ "$a1" != none ] && [ "$a2" != none ] || fail "a half of the run saved across --save is empty"
within "both halves" "$measured2" "$(awk -v a="$((na1 + na2))" -v b="$((nb1 + nb2))" 'BEGIN { printf "%.2f", 100 * a / (a + b) }')"
awk -v one="$((dp_na + dp_nb))" -v two="$((na1 + nb1 + na2 + nb2))" 'BEGIN {
	d = 100 * (two - one) / one; if (d < 0) d = -d
	if (d > 10) { printf "FAIL: the halves hold %d samples, the whole first run %d (%.1f%% apart)\n", two, one, d; exit 1 }
	printf "OK: the halves hold %d samples, the first run %d (%.1f%% apart)\n", two, one, d }'

# ---- session: errors --------------------------------------------------------
if $opreport session:nope 2>"$work/nope.err"; then fail "session:nope reported"; fi
grep -q "no saved session 'nope'" "$work/nope.err" || fail "session:nope: $(cat "$work/nope.err")"
if $opcontrol --save=o9run 2>"$work/twice.err"; then fail "--save over an existing session"; fi
grep -q 'already exists' "$work/twice.err" || fail "--save twice: $(cat "$work/twice.err")"
if setpriv --reuid=65534 --regid=65534 --clear-groups $opreport session:o9run 2>"$work/perm.err"; then
	fail "nobody read root's session"
fi
cat "$work/perm.err"
grep -q 'permission denied' "$work/perm.err" || fail "a permission problem not said as one"
if grep -q 'does not exist' "$work/perm.err"; then fail "a permission problem said as 'does not exist'"; fi
echo "OK: session:nope, --save twice and a permission problem each said so"

# ---- --version and usage errors in every tool -------------------------------
for tool in "$bin"/op* "$sbin"/op* "$DP_PREFIX"/libexec/domprof/*; do
	[ -x "$tool" ] || continue
	name=$(basename "$tool")
	out=$("$tool" --version) || fail "$name --version exited $?"
	[ "$out" = "$name (domprof) $version" ] || fail "$name --version said '$out'"
	for bad in --no-such-option "--session-dir"; do
		if "$tool" $bad >/dev/null 2>"$work/bad.err"; then fail "$name $bad exited 0"; fi
		lines=$(wc -l <"$work/bad.err")
		[ "$lines" -ge 1 ] && [ "$lines" -le 2 ] || fail "$name $bad: $lines lines on stderr"
		grep -q "Try '$name --help'" "$work/bad.err" || fail "$name $bad: no pointer to --help"
	done
	echo "OK: $name --version, and a bad option in $lines lines"
done
echo "OK: OProfile 0.9's sequence"
