#!/usr/bin/env bash
# End to end on the host, as root: the attacks of issue 23 on a live
# session, replayed (doc/trust.md, "The session during a run"):
#   as nobody while the daemon runs: read the session's kallsyms copy, the
#     log, the pid file, a sample file; append to oprofiled.log; write
#     oprofiled.pid; signal the worker (it runs as domprof, not nobody):
#     each refused, and the session directory, log, pid file and kallsyms
#     stay root's (0600 for the last three); the worker's own user
#     (domprof, as a compromised worker) reads none of them either
#   a hard link to a root file planted as the pid file, then as the log:
#     the daemon refuses to start, the target untouched
#   --record onto a symlink in /tmp to a root file: refused, target
#     untouched; a fresh record file is 0600
#   a forged pid file naming this session's daemon in another session:
#     opcontrol --stop there stops nothing
#   --privsep=nobody refused; a missing worker user refused with how to
#     make it
# Needs DP_PREFIX (installed domprof).
set -uo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
bin=$DP_PREFIX/bin
export DP_NO_PROGRESS=1
unset DOMPROF_PRIVSEP
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: trust-session needs root (it plays root's daemon against nobody)"
	exit 0
fi
getent passwd domprof >/dev/null ||
	{ echo "FAIL: no user domprof (scripts/install-deps.sh makes it)"; exit 1; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
# the worker's user, as a compromised worker would be
as_domprof() { setpriv --reuid=domprof --regid=domprof --clear-groups -- "$@"; }

work=$(mktemp -d /tmp/dp-tsess.XXXXXX)
chmod 0755 "$work"	# the attacker may reach the session's door, no further
s=$work/session
cleanup() {
	for d in "$s" "$work"/s-*; do
		[ -d "$d" ] && "$bin/opcontrol" --stop --session-dir="$d" >/dev/null 2>&1
	done
	[ -n "${DP_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "OK: $*"; }
. "$(dirname "$0")/proc-lib.sh"
victim=$work/victim
reset_victim() { echo "root's file" >"$victim"; chmod 0644 "$victim"; }
victim_intact() { [ "$(cat "$victim")" = "root's file" ]; }

# --- a live run, attacked by nobody ----------------------------------------
"$bin/opcontrol" --start --session-dir="$s" --record="$work/fresh.raw" >"$work/start.out" 2>&1 ||
	{ cat "$work/start.out"; echo "FAIL: no start"; exit 1; }
mon=$(cat "$s/oprofiled.pid")
wk=$(pgrep -P "$mon" -x oprofiled | head -n 1 || true)
[ -n "$wk" ] || { echo "FAIL: no worker under monitor $mon"; exit 1; }
"$bin/opcontrol" --dump --session-dir="$s" >/dev/null
wuid=$(awk '/^Uid:/ { print $2 }' "/proc/$wk/status")
[ "$wuid" = "$(id -u domprof)" ] && ok "worker runs as domprof (uid $wuid)" ||
	fail "worker runs as uid $wuid, not domprof's $(id -u domprof)"
sample=$(find "$s/samples/current" -type f | head -n 1)
[ -n "$sample" ] || fail "no sample file after a dump"
for f in kallsyms modules oprofiled.log oprofiled.pid stats "${sample#"$s"/}"; do
	if as_nobody cat "$s/$f" >/dev/null 2>&1; then fail "nobody read the live session's $f"
	else ok "nobody cannot read $f"; fi
done
as_nobody sh -c "echo forged >>'$s/oprofiled.log'" 2>/dev/null &&
	fail "nobody appended to oprofiled.log" || ok "nobody cannot append to oprofiled.log"
as_nobody sh -c "echo 1 >'$s/oprofiled.pid'" 2>/dev/null &&
	fail "nobody wrote oprofiled.pid" || ok "nobody cannot write oprofiled.pid"
as_nobody sh -c "echo x >'$s/samples/current/planted'" 2>/dev/null &&
	fail "nobody wrote in samples/current" || ok "nobody cannot write in samples/current"
grep -q forged "$s/oprofiled.log" && fail "a forged line in the log"
# the worker's own user gets no further than what it writes
for f in kallsyms modules oprofiled.log oprofiled.pid; do
	if as_domprof cat "$s/$f" >/dev/null 2>&1; then fail "domprof read the session's $f"
	else ok "domprof cannot read $f"; fi
done
as_domprof sh -c "echo forged >>'$s/oprofiled.log'" 2>/dev/null &&
	fail "domprof appended to oprofiled.log" || ok "domprof cannot append to oprofiled.log"
as_domprof sh -c "echo 1 >'$s/oprofiled.pid'" 2>/dev/null &&
	fail "domprof wrote oprofiled.pid" || ok "domprof cannot write oprofiled.pid"
as_domprof sh -c "echo 1 >'$s/stats'" 2>/dev/null &&
	fail "domprof wrote stats" || ok "domprof cannot write stats"
as_nobody kill -STOP "$wk" 2>/dev/null && fail "nobody stopped the worker $wk" ||
	ok "nobody cannot signal the worker"
kill -CONT "$wk" 2>/dev/null
owners=$(stat -c '%U %a %n' "$s" "$s/oprofiled.log" "$s/oprofiled.pid" "$s/kallsyms" "$s/stats")
echo "$owners"
bad=$(echo "$owners" | awk '$1 != "root"')
[ -z "$bad" ] && ok "session, log, pid file, kallsyms, stats are root's" || fail "not root's: $bad"
bad=$(stat -c '%a %n' "$s/oprofiled.log" "$s/oprofiled.pid" "$s/kallsyms" | awk '$1 != "600"')
[ -z "$bad" ] && ok "log, pid file, kallsyms 0600" || fail "modes: $bad"
case $(stat -c %a "$s") in 700|2750) ok "session directory $(stat -c %a "$s")" ;;
*) fail "session directory mode $(stat -c %a "$s")" ;; esac
wdirs=$(stat -c '%U %n' "$s/samples/current" "$s/images" "$s/domains" | awk '$1 != "domprof"')
[ -z "$wdirs" ] && ok "the worker owns samples/current, images, domains only" ||
	fail "worker directories: $wdirs"

# --- a forged pid file in another session -----------------------------------
o=$work/s-other
mkdir -m 0700 "$o" && echo "$mon" >"$o/oprofiled.pid"
"$bin/opcontrol" --stop --session-dir="$o" >"$work/stop-other.out" 2>&1
alive "$mon" && alive "$wk" && ok "opcontrol --stop over a forged pid file stopped nothing" ||
	fail "opcontrol --stop in $o stopped the daemon of $s"
grep -q "does not hold this session's lock" "$work/stop-other.out" && ok "the forged file is said" ||
	fail "no word of the forged pid file: $(cat "$work/stop-other.out")"

"$bin/opcontrol" --stop --session-dir="$s" >/dev/null || fail "stop"
case $(stat -c %a "$work/fresh.raw" 2>/dev/null) in
600) ok "a fresh record file is 0600" ;;
*) fail "record file mode $(stat -c %a "$work/fresh.raw" 2>/dev/null)" ;; esac

# --- hard links planted as the pid file and the log -------------------------
for f in oprofiled.pid oprofiled.log; do
	reset_victim
	rm -f "$s/oprofiled.pid" "$s/oprofiled.log"
	ln "$victim" "$s/$f"
	if "$bin/opcontrol" --start --session-dir="$s" >"$work/hl.out" 2>&1; then
		fail "started with a hard link as $f"
		"$bin/opcontrol" --stop --session-dir="$s" >/dev/null 2>&1
	else
		ok "a hard link as $f refused: $(grep -m1 -o 'refusing.*' "$s/oprofiled.log" "$work/hl.out" 2>/dev/null | head -n 1)"
	fi
	victim_intact && [ "$(stat -c %a "$victim")" = 644 ] && ok "its target untouched" ||
		fail "the target of the hard link $f was written or changed"
	rm -f "$s/$f"
done

# --- --record onto a symlink in /tmp ----------------------------------------
reset_victim
link=$(mktemp -u /tmp/dp-record.XXXXXX)
as_nobody ln -s "$victim" "$link"
if "$bin/opcontrol" --start --session-dir="$s" --record="$link" >"$work/rec.out" 2>&1; then
	fail "started with --record onto a symlink"
	"$bin/opcontrol" --stop --session-dir="$s" >/dev/null 2>&1
else
	ok "--record onto a symlink refused"
fi
victim_intact && ok "the symlink's target untouched" || fail "--record wrote through the symlink"
rm -f "$link"

# --- the worker's user ------------------------------------------------------
timeout 10 "$DP_PREFIX/sbin/oprofiled" --session-dir="$work/s-nobody" --privsep=nobody --foreground \
	>"$work/nobody.out" 2>&1 && fail "oprofiled ran its worker as nobody" ||
	{ grep -q "refusing to run the worker as nobody" "$work/nobody.out" &&
		ok "--privsep=nobody refused" || fail "--privsep=nobody: $(cat "$work/nobody.out")"; }
DOMPROF_PRIVSEP=dp-no-such-user timeout 10 "$DP_PREFIX/sbin/oprofiled" --session-dir="$work/s-nouser" --foreground \
	>"$work/nouser.out" 2>&1 && fail "oprofiled ran without its worker's user" ||
	{ grep -q "no-privsep" "$work/nouser.out" && ok "a missing worker user refused, --no-privsep named" ||
		fail "missing user: $(cat "$work/nouser.out")"; }

[ $fails -eq 0 ] || { echo "trust-session: $fails failures"; exit 1; }
echo "trust-session: all checks passed"
