#!/usr/bin/env bash
# End to end on the host, as root: oprofiled's default privilege separation
# (through opcontrol, nothing asked) while the ratio program runs.
#   the worker (child of the pid in oprofiled.pid) runs unprivileged: as
#   the user domprof, no capabilities, NoNewPrivs 1, Seccomp 2; the monitor
#   is root; the profile is whole (opreport -l names burn_a and burn_b);
#   a dump (SIGUSR1 to the monitor) reaches the worker; the worker owns
#   only samples/current, images and domains, the rest of the session is
#   root's, during the run and after; a killed monitor takes the worker
#   with it, and the next start in that session goes as any other.
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/e2e/ratio).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
ratio=$DP_BUILD/tests/e2e/ratio
export DP_NO_PROGRESS=1
unset DOMPROF_PRIVSEP

work=$(mktemp -d /tmp/dp-privsep.XXXXXX)
session=$work/session
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	[ -n "${DP_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "OK: $*"; }
. "$(dirname "$0")/proc-lib.sh"
field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status"; }

cp "$ratio" "$work/ratio"
chmod 0755 "$work"
"$bin/opcontrol" --start --session-dir="$session" >/dev/null
mon=$(cat "$session/oprofiled.pid")
wk=$(pgrep -P "$mon" -x oprofiled | head -n 1 || true)
[ -n "$wk" ] || { echo "FAIL: no worker under monitor $mon"; exit 1; }
ps -o user,pid,ppid,comm -p "$mon,$wk"
grep -E '^(Uid|Groups|CapEff|NoNewPrivs|Seccomp):' "/proc/$wk/status"
[ "$(field Uid "$mon")" = 0 ] && ok "monitor $mon is root" || fail "monitor not root"
[ "$(field Uid "$wk")" = "$(id -u domprof)" ] && ok "worker $wk runs as domprof ($(field Uid "$wk"))" ||
	fail "worker runs as uid $(field Uid "$wk"), not domprof"
[ "$(field CapEff "$wk")" = 0000000000000000 ] && ok "worker has no capabilities" ||
	fail "worker capabilities $(field CapEff "$wk")"
[ "$(field NoNewPrivs "$wk")" = 1 ] && ok "worker no_new_privs" || fail "worker without no_new_privs"
[ "$(field Seccomp "$wk")" = 2 ] && ok "worker Seccomp: 2" || fail "worker Seccomp $(field Seccomp "$wk")"
"$work/ratio" 3 75
"$bin/opcontrol" --dump --session-dir="$session"
dumps=$(awk '$1 == "dumps" { print $2 }' "$session/stats")
[ "${dumps:-0}" -ge 1 ] && ok "dump reached the worker ($dumps)" || fail "no dump"
"$bin/opcontrol" --stop --session-dir="$session" >/dev/null
"$bin/opreport" -l --session-dir="$session" >"$work/report.out"
na=$(awk '$NF == "burn_a" { s += $1 } END { print s + 0 }' "$work/report.out")
nb=$(awk '$NF == "burn_b" { s += $1 } END { print s + 0 }' "$work/report.out")
[ "$na" -gt 0 ] && [ "$nb" -gt 0 ] && ok "burn_a $na, burn_b $nb samples" ||
	fail "burn_a $na, burn_b $nb samples"
# what is not root's: the worker's three directories and what is in them
not_root() {
	find "$session" ! -user root | grep -v -E "^$session/(samples/current|images|domains)(/|\$)" |
		head -n 3 || true
}
owner=$(not_root)
[ -z "$owner" ] && ok "the session root's but for the worker's directories" || fail "not root's: $owner"
# opcontrol --stop returns once the daemon let go of its lock, which it
# does on its way out: give the exit a moment
for i in $(seq 1 50); do alive "$mon" || break; sleep 0.1; done
alive "$mon" && fail "monitor $mon still running" || ok "monitor gone"

# the monitor killed: the worker flushes and exits
"$bin/opcontrol" --start --session-dir="$session" >/dev/null
mon=$(cat "$session/oprofiled.pid")
wk=$(pgrep -P "$mon" -x oprofiled | head -n 1 || true)
kill -9 "$mon"
for i in $(seq 1 50); do alive "$wk" || break; sleep 0.1; done
alive "$wk" && { fail "worker $wk outlived its monitor"; kill "$wk"; } ||
	ok "worker $wk ended with its monitor"
# the session stayed root's: the next start goes as any other
"$bin/opcontrol" --start --session-dir="$session" >"$work/restart.out" 2>&1 &&
	ok "started again in the killed monitor's session" ||
	fail "no start in the killed monitor's session: $(cat "$work/restart.out")"
"$bin/opcontrol" --stop --session-dir="$session" >/dev/null || fail "stop after the restart"
owner=$(not_root)
[ -z "$owner" ] && ok "session root's after the restart's stop" || fail "not root's: $owner"

# turned off: one process, root
session=$work/session-root
DOMPROF_PRIVSEP=0 "$bin/opcontrol" --start --session-dir="$session" >/dev/null
mon=$(cat "$session/oprofiled.pid")
kids=$(pgrep -P "$mon" -x oprofiled || true)
[ -z "$kids" ] && [ "$(field Uid "$mon")" = 0 ] && ok "DOMPROF_PRIVSEP=0: one root process" ||
	fail "DOMPROF_PRIVSEP=0: children '$kids', uid $(field Uid "$mon")"
"$bin/opcontrol" --stop --session-dir="$session" >/dev/null
[ $fails -eq 0 ] || { echo "host-privsep: $fails failures"; exit 1; }
echo "host-privsep: all checks passed"
