# lab-kind: xen
# Guest call chains on Xen (issue 12: "the xen collector does the same
# through foreign mappings of guest memory"): `opcontrol --callgraph=16`
# on dom0 (the xen collector, picked by itself), web a PV guest with
# opagent on its console channel (as in xen-agent) running
# tests/e2e/callers.c (static, non-PIE, frame pointers: cg-guest) for
# XCG_SECONDS of CPU time, burn() called from caller_a and caller_b 2:1.
# Must hold: burn's callers in `opreport --domain=web -c` are caller_a
# and caller_b, over at least 100 arcs, with caller_a's share within
# XCG_TOL (5) points of what the program measured; the collector's walk
# counters in the daemon's log.  Not in the test command (xen-all holds
# the Xen tests); a figure for doc/callgraph.md.
. "$LAB/lib-xen.sh"
lab_require_xen
t0=$(lab_now)
S=/var/lib/domprof-lab/xen-callgraph
SEC=${XCG_SECONDS:-15}
TOL=${XCG_TOL:-5}
CONS=$XEN_CONSOLES/guest-web.log
opagent_bin=$(command -v opagent || echo /usr/local/sbin/opagent)
[ -x "$STAGE/lab/cg-guest" ] || lab_fail "no $STAGE/lab/cg-guest staged (tests/e2e/callers.c)"
[ -x "$opagent_bin" ] || lab_fail "no opagent installed"

root=/tmp/xcg-root
rm -rf "$root"
mkdir -p "$root/share"
cp "$opagent_bin" "$root/share/opagent"
cp "$STAGE/lab/cg-guest" "$root/share/cg-guest"
printf '#!/bin/sh\nexec /share/opagent --verbose\n' >"$root/share/agent.sh"
chmod +x "$root/share/agent.sh"
cat >"$root/share/work.sh" <<EOF
i=0
while ! grep -q "kernel symbols sent" /tmp/agent.log 2>/dev/null && [ \$i -lt 3000 ]; do
	sleep 0.2; i=\$((i + 1))
done
sleep 2
echo "XCG-START"
/share/cg-guest $SEC
echo "XCG-DONE"
exec sleep 100000
EOF
xen_share_initrd "$root" "$LAB_RUN/web-xcg.cpio"

xen_alive web && xen_destroy web
xen_start_agent_guest web 6b1b1d6e-0000-4000-8000-000000000051 "$LAB_RUN/web-xcg.cpio"

rm -rf "$S"
timeout 120 opcontrol --start --session-dir="$S" --domains=web --callgraph=16 >"$RESULTS/opcontrol-start.txt" 2>&1 ||
	lab_fail "opcontrol --start --callgraph=16 failed: $(tail -n 5 "$RESULTS/opcontrol-start.txt")"
wait_agents_complete "$S" 1 300 || { cp "$S/oprofiled.log" "$RESULTS/"; lab_fail "web's agent state not complete"; }
for _ in $(seq 1 900); do
	grep -q XCG-DONE "$CONS" && break
	xen_alive web || break
	sleep 1
done
grep -q XCG-DONE "$CONS" || { cp "$S/oprofiled.log" "$RESULTS/"; tail -n 20 "$CONS"; lab_fail "cg-guest did not finish"; }
# the binary comes over the channel after its first samples
for _ in $(seq 1 180); do
	find "$S/images" -type f -name 'cg-guest*' 2>/dev/null | grep -q . && break
	sleep 1
done
sleep 3
timeout 120 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
cp "$S/oprofiled.log" "$S/stats" "$RESULTS/"
grep "xen collector:" "$RESULTS/oprofiled.log"
measured=$(sed -n 's/.*callers: caller_a=\([0-9.]*\)%.*/\1/p' "$CONS" | tail -n 1)
[ -n "$measured" ] || lab_fail "no callers line on web's console"
timeout 300 opreport --session-dir="$S" --domain=web -c --threshold=0.1 >"$RESULTS/web-c.txt" 2>"$RESULTS/web-c.err" ||
	lab_fail "opreport --domain=web -c failed: $(head -n 3 "$RESULTS/web-c.err")"
head -n 40 "$RESULTS/web-c.txt"
# burn's entry: its callers are the indented lines above its own line
read -r ca cb co <<<"$(awk '
	/^---/ { a = b = o = 0; next }
	/^  / { if ($NF == "caller_a") a += $1; else if ($NF == "caller_b") b += $1; else o += $1; next }
	/^[0-9]/ { if ($NF == "burn" && $(NF - 2) == "web") { print a, b, o; exit } }' "$RESULTS/web-c.txt")"
share=$(awk -v a="${ca:-0}" -v b="${cb:-0}" 'BEGIN { if (a + b) printf "%.2f", 100 * a / (a + b); else print "none" }')
lab_summary xcg_measured_caller_a "$measured"
lab_summary xcg_opreport_caller_a "$share (caller_a ${ca:-0}, caller_b ${cb:-0}, other ${co:-0})"
lab_summary xcg_walks "$(grep -m1 'call chains:' "$RESULTS/oprofiled.log" | sed 's/.*call chains: //')"
lab_summary xcg_daemon_cc "$(grep -E '^cc_(chains|chains_guest|chains_truncated|frames|frames_unresolved|arcs) ' "$RESULTS/stats" | tr '\n' ' ')"
xen_destroy web
lab_summary scenario_s "$(lab_since "$t0")"
[ "$share" != none ] || lab_fail "opreport -c shows no caller_a or caller_b above burn"
[ $((${ca:-0} + ${cb:-0})) -ge 100 ] || lab_fail "too few arcs into burn from caller_a/caller_b: $ca + $cb"
awk -v s="$share" -v m="$measured" -v t="$TOL" 'BEGIN { d = s - m; exit !(d <= t && d >= -t) }' ||
	lab_fail "caller_a's share of burn's callers $share%, measured $measured% (tolerance $TOL points)"
lab_log "PASS: on Xen, caller_a $share% of burn's callers (measured $measured%)"
