#!/usr/bin/env bash
# End to end on the host, as root: OProfile 0.9's command sequence as its
# users type it (--init, --setup --no-vmlinux, --start, a workload, --dump,
# --save=NAME, --stop, --shutdown, opreport session:NAME and
# opreport -l session:NAME), with only the session directory adapted, and
# the figures checked: the saved session holds the workload's two
# functions in the 75/25 split it measured itself, and the current session
# started afterwards holds none of it.  Where domprof's model differs (the
# daemon holds samples/current open, so --save while it runs is refused;
# opcontrol(1)), the refusal is checked and --save is repeated after --stop.
# Then every installed tool answers --version, and a bad option costs at
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
if $opcontrol --save=o9run 2>"$work/save-running.err"; then
	fail "--save while the daemon runs was not refused"
fi
cat "$work/save-running.err"
grep -q 'needs it stopped' "$work/save-running.err" || fail "--save while running: no clear reason"
[ ! -e "$session/samples/o9run" ] || fail "a refused --save moved samples"
$opcontrol --stop
$opcontrol --save=o9run
$opcontrol --shutdown	# 0.9's last step; the daemon is already gone
$opcontrol --stat >"$work/stat.out"	# an abbreviation of --status
grep -q 'not running' "$work/stat.out" || fail "opcontrol --stat did not report the stopped daemon"
[ -d "$session/samples/o9run" ] || fail "--save made no samples/o9run"
[ ! -e "$session/samples/current" ] || fail "samples/current still there after --save"
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
	     END { if (a + b == 0) { print "none"; exit } printf "%.2f %d %d\n", 100 * a / (a + b), a, b }' "$1"
}
measured=$(sed -n 's/.*burn_a=\([0-9.]*\)%.*/\1/p' "$work/ratio.out")
read -r dp_a dp_na dp_nb < <(share_a "$work/symbols.out")
echo "ratio program measured: burn_a ${measured}%"
echo "opreport -l session:o9run: burn_a ${dp_a}% (burn_a ${dp_na:-0}, burn_b ${dp_nb:-0} samples)"
[ "$dp_a" != none ] || fail "opreport -l session:o9run shows no samples in burn_a/burn_b"
awk -v m="$measured" -v d="$dp_a" -v t="$tolerance" 'BEGIN {
	diff = m - d; if (diff < 0) diff = -diff
	if (diff > t) { printf "FAIL: session:o9run differs from the measured ratio by %.2f points (> %d)\n", diff, t; exit 1 }
	printf "OK: session:o9run within %.2f points of the measured ratio\n", diff }'

# ---- the saved samples are not in the next current session -----------------
$opcontrol --start
sleep 1
$opcontrol --dump
$opcontrol --shutdown
$opreport -l >"$work/current.out" 2>/dev/null || true
if grep -qE ' burn_[ab]$' "$work/current.out"; then
	fail "the current session still holds the saved workload's samples"
fi
$opreport -l session:o9run >"$work/again.out" 2>/dev/null
cmp -s "$work/symbols.out" "$work/again.out" || fail "session:o9run changed after a new run"
echo "OK: the new current session holds none of session o9run; o9run unchanged"

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
for tool in "$bin"/op* "$sbin"/op*; do
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
