# A hostile guest beside a normal one (issue 9, items 2, 3, 6, 8): domprof
# in L1 profiles g1, which runs opagent and a busy workload (ratio), and
# bad, where tests/e2e/hostile-agent speaks the agent protocol on the port
# instead of opagent.
#
# Phase 1 (baseline): bad only burns its CPU.  Phase 2 (attack): bad sends
# a parent with 131,072 mappings and FORK frames, pids and paths that would
# share hash buckets, clock values at the ends of their ranges, its own
# text under the path and build id of a binary g1 runs later (exact-a),
# junk bytes when the host asks for that image, and FORK frames without
# end.  Then g1 runs exact-a.  Must hold:
#  - g1's samples a second in phase 2 (its whole row of the domain
#    summary: guest samples and its QEMU's host work, from copies of the
#    session at each phase's dumps) are at least 90% of phase 1's, with
#    bad's QEMU and the daemon on CPU 0 and g1's QEMU on CPU 1, so that
#    what is compared is what the attack does to g1 through the daemon
#    (a stalled channel, a late or lost sample), not the attacker's CPU;
#  - the daemon's CPU (monitor and worker) a second rises by at most the
#    per-domain budget plus 50 ms from phase 1 to phase 2: what bad can
#    take of a host CPU through the daemon is bounded, and that bound is
#    what a victim sharing the daemon's CPU could lose.  The budget is
#    50 ms here (--guest-cpu=50), not the default 200 ms: how much CPU
#    the attack's frames cost in one second depends on the emulator's
#    speed, and at 200 ms some runs never spent it (so no deferral was
#    there to count); at 50 ms every run does;
#  - bad's channel was deferred (budget_deferred in its stats), and no
#    domain's frames took more than the budget plus the costliest chunk
#    in any second (guest_budget_peak_ns against guest_budget_chunk_peak_ns:
#    the budget is looked at between 16 KiB chunks, so it is overrun by
#    one chunk's cost at most; under the emulator the peaks of eight runs
#    of 2026-11-28/29 were 53 to 70 ms, overruns of 3 to 20 ms, and one
#    101.6 ms, an overrun of 51.6: twice the budget, the bar until then,
#    failed that run, whose daemon kept the rule);
#  - each attack is counted: guest_maps_capped, guest_tasks_capped,
#    guest_images_capped, guest_bad_values,
#    guest_hostile_image_mismatch (when bad's upload was asked for);
#  - g1's copy of exact-a in the image cache is not bad's junk;
#  - the daemon's VmHWM stays under two domains' memory caps plus 64 MiB,
#    and bad's state under its cap;
#  - the daemon kept pinging bad (its longest gap between PINGs < 3 s)
#    and g1 (its clock stays ping/pong or exact).
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
S=/var/lib/domprof-lab/hostile
PHASE=${HOSTILE_PHASE_SECONDS:-30}
BUDGET_MS=${HG_GUEST_CPU:-50}
ratio_bin=$STAGE/lab/ratio-static
victim_bin=$STAGE/lab/exact-a
hostile_bin=$STAGE/lab/hostile-agent
opagent_bin=$(command -v opagent || echo /usr/local/sbin/opagent)
for b in "$ratio_bin" "$victim_bin" "$hostile_bin" "$opagent_bin"; do
	[ -x "$b" ] || lab_fail "no $b staged"
done
stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1" 2>/dev/null; }
wait_console() {	# GUEST PATTERN SECONDS
	local i
	for i in $(seq 1 "$3"); do
		grep -q "$2" "$RESULTS/$1.console" 2>/dev/null && return 0
		sleep 1
	done
	return 1
}

rm -rf /tmp/share-g1 /tmp/share-bad
mkdir -p /tmp/share-g1 /tmp/share-bad
cp "$ratio_bin" /tmp/share-g1/ratio
cp "$victim_bin" /tmp/share-g1/exact-a
cp "$opagent_bin" /tmp/share-g1/opagent
cp "$hostile_bin" /tmp/share-bad/hostile-agent
cp "$victim_bin" /tmp/share-bad/exact-a	# its build id, not run
cat >/tmp/share-g1/work.sh <<EOF
w() { i=0; while [ ! -e /share/\$1 ] && [ \$i -lt 3000 ]; do sleep 0.2; i=\$((i + 1)); done; }
w go1; /share/ratio $PHASE 70 >/dev/null; echo "G1-PHASE1-DONE"
w go2; /share/ratio $PHASE 70 >/dev/null; echo "G1-PHASE2-DONE"
w go3; /share/exact-a 3 50; echo "G1-VICTIM-DONE"
exec sleep 100000
EOF
cat >/tmp/share-bad/work.sh <<EOF
w() { i=0; while [ ! -e /share/\$1 ] && [ \$i -lt 3000 ]; do sleep 0.2; i=\$((i + 1)); done; }
w go1; /share/hostile-agent busy $PHASE
w go2; /share/hostile-agent attack $((PHASE + 30)) /share/exact-a
echo "BAD-DONE"
exec sleep 100000
EOF

LAB_GUEST_SHARE=/tmp/share-g1 LAB_GUEST_AGENT=/share/opagent \
	start_guest g1 6b1b1d6e-0000-4000-8000-0000000000c1 script
LAB_GUEST_SHARE=/tmp/share-bad start_guest bad 6b1b1d6e-0000-4000-8000-0000000000c2 script
wait_guest_booted g1
wait_guest_booted bad
# What is measured is the daemon's effect on g1, not the attacker's own
# CPU: bad's QEMU (its vCPU and the I/O thread that carries its frames)
# and the daemon run on CPU 0, g1's QEMU on CPU 1, in both phases.  The
# daemon's CPU is bounded by the budget and checked on its own below: on
# L1's two CPUs, a daemon free to run beside g1 would measure the budget
# (20% of a CPU) against a 10% bar.
taskset -a -cp 0 "$(guest_pid bad)" >/dev/null || lab_fail "cannot pin bad's QEMU"
taskset -a -cp 1 "$(guest_pid g1)" >/dev/null || lab_fail "cannot pin g1's QEMU"
# 1 kHz, not the default 10 kHz: under the emulator L1's timer cannot keep
# 10 kHz (g1 got about 1,600 samples a second of its 0.9 CPU) and the
# kernel throttled it 58 to 94 times a run, phase 2 more than phase 1:
# samples never taken, whatever the daemon does
timeout 60 opcontrol --start --session-dir="$S" --domains=all --event="${HG_EVENT:-TIMER:1000000}" \
	--guest-cpu="$BUDGET_MS" ||
	lab_fail "opcontrol --start failed"
wait_agents_complete "$S" 1 120 g1 || lab_fail "g1's agent did not connect"
dpid=$(pidof oprofiled | awk '{ print $NF }')
[ -n "$dpid" ] || lab_fail "no oprofiled"
for p in $(pidof oprofiled); do
	taskset -a -cp 0 "$p" >/dev/null || lab_fail "cannot pin oprofiled $p"
done
lab_log "oprofiled processes $(pidof oprofiled) on CPU 0"

# CPU seconds (user + system) of processes: the daemon's (monitor and
# worker), each guest's QEMU
cpu_s() {
	local p s=0 t
	for p in "$@"; do
		t=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) || t=0
		s=$((s + ${t:-0}))
	done
	awk -v t="$s" 'BEGIN { printf "%.2f", t / 100 }'
}
cpu_all() { echo "$(cpu_s $(pidof oprofiled)) $(cpu_s "$(guest_pid g1)") $(cpu_s "$(guest_pid bad)")"; }
# Each CPU's ticks by kind, one line a CPU (where CPU 1's time went when
# g1's QEMU, alone on it, got less of it)
cpu_split() { awk '/^cpu[0-9]/ { print $1 ":" $2 "/" $3 "/" $4 "/" $7 "/" $8 "/" $5 "/" $6 }' /proc/stat | tr '\n' ' '; }
# The session as it is now, into $S.$1 (the image cache left out: the
# domain summary needs none of it), for g1's whole row later: its guest
# samples and its QEMU's host work, which the domain's stats file does not
# count (samples_received there is guest samples only).
snap() {
	local e
	rm -rf "$S.$1"
	mkdir -p "$S.$1/images"
	for e in "$S"/*; do
		[ "${e##*/}" = images ] || cp -a "$e" "$S.$1/"
	done
}
# g1's row of the domain summary of copy $1: all its samples
g1_total() {
	timeout 120 opreport --session-dir="$S.$1" 2>/dev/null |
		awk '/^DOMAIN SUMMARY/ { on = 1; next } on && $1 == "g1" { print $2; exit }'
}
# one phase: its flag, g1's end marker; RATE: g1's guest samples a second
# over it (the domain's stats); its dumps copied as $S.FLAG-a and -b
phase() {
	local flag=$1 done=$2 a b t1 t2 c1 c2
	timeout 30 opcontrol --dump --session-dir="$S" >/dev/null 2>&1 || true
	snap "$flag-a"
	a=$(stat_of "$S/domains/g1/stats" samples_received)
	t1=$(lab_now)
	c1=$(cpu_all)
	p1=$(for p in $(pidof oprofiled); do echo "$p:$(cpu_s "$p")"; done)
	st1=$(cpu_split)
	touch "/tmp/share-g1/$flag" "/tmp/share-bad/$flag"
	wait_console g1 "$done" $((PHASE * 6 + 60)) || lab_fail "g1's $done did not come"
	t2=$(lab_now)
	c2=$(cpu_all)
	lab_log "$flag: L1's CPUs (user/nice/system/irq/softirq/idle/iowait ticks):" \
		"start $st1; end $(cpu_split)"
	lab_log "$flag: oprofiled's context switches and bytes written (pid:vol/invol/write_bytes):" \
		"$(for p in $(pidof oprofiled); do echo "$p:$(awk '/^voluntary_ctxt/ { v = $2 } /^nonvoluntary_ctxt/ { n = $2 } END { printf "%s/%s", v, n }' "/proc/$p/status")/$(awk '/^write_bytes/ { print $2 }' "/proc/$p/io" 2>/dev/null)"; done | tr '\n' ' ')"
	lab_log "$flag: CPU seconds of each oprofiled process (pid:start): $(echo $p1);" \
		"now: $(for p in $(pidof oprofiled); do echo "$p:$(cpu_s "$p")"; done | tr '\n' ' ')"
	timeout 30 opcontrol --dump --session-dir="$S" >/dev/null 2>&1 || true
	snap "$flag-b"
	b=$(stat_of "$S/domains/g1/stats" samples_received)
	RATE=$(awk -v a="${a:-0}" -v b="${b:-0}" -v t1="$t1" -v t2="$t2" \
		'BEGIN { printf "%.1f", (b - a) / (t2 - t1) }')
	SECS=$(awk -v t1="$t1" -v t2="$t2" 'BEGIN { print t2 - t1 }')
	lab_log "$flag: g1 samples $a -> $b over $t1 .. $t2"
	CPU=$(echo "$c1 $c2" | awk -v t="$t1" -v u="$t2" '{ d = u - t; printf "daemon %.2f g1-qemu %.2f bad-qemu %.2f", ($4 - $1) / d, ($5 - $2) / d, ($6 - $3) / d }')
	lab_log "$flag: CPU seconds a second: $CPU"
	# the kernel's own limit on sampling (lowered when its sampling
	# interrupts take too long; the daemon logs the throttling)
	lab_log "$flag: kernel.perf_event_max_sample_rate $(cat /proc/sys/kernel/perf_event_max_sample_rate)"
}
phase go1 G1-PHASE1-DONE
rate1=$RATE
cpu1=$CPU
secs1=$SECS
lab_log "phase 1 (bad only busy): g1 $rate1 samples/s"
rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$dpid/status")
# HG_PROFILE=1: what the daemon's processes do under attack, a profile of
# both, perf pinned beside them on CPU 0.  Not by default: sampling the
# daemon slows it (in one run with it, bad's frames overran the budget
# and the daemon's pings to bad stopped for 6 s)
pprof_pid=
if [ "${HG_PROFILE:-0}" = 1 ] && command -v perf >/dev/null; then
	taskset -c 0 perf record -q -F 199 -g -p "$(pidof oprofiled | tr ' ' ,)" \
		-o "$RESULTS/daemon-phase2.perf" >/dev/null 2>&1 &
	pprof_pid=$!
fi
phase go2 G1-PHASE2-DONE
if [ -n "$pprof_pid" ]; then
	kill -INT "$pprof_pid" 2>/dev/null
	wait "$pprof_pid" 2>/dev/null
	perf report -q -i "$RESULTS/daemon-phase2.perf" --stdio --no-children --sort comm,dso,sym \
		-g none --percent-limit 1 >"$RESULTS/daemon-phase2.txt" 2>/dev/null || true
	lab_log "phase 2: the daemon's profile (top 12, perf -F 199):"
	head -n 12 "$RESULTS/daemon-phase2.txt" | sed 's/^/  /'
fi
rate2=$RATE
cpu2=$CPU
secs2=$SECS
lab_log "phase 2 (bad attacks): g1 $rate2 samples/s"
uploaded=0
wait_console bad HOSTILE-UPLOADED 60 && uploaded=1
touch /tmp/share-g1/go3
wait_console g1 G1-VICTIM-DONE 120 || lab_fail "g1's exact-a did not finish"
sleep 4
wait_console bad "HOSTILE pings" $((PHASE + 90)) || lab_log "note: no HOSTILE summary line from bad"
hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$dpid/status")
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$dpid/status")
kill -0 "$dpid" || lab_fail "oprofiled died"
timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
cp "$S/stats" "$RESULTS/stats.txt"
cp "$S/domains/g1/stats" "$RESULTS/g1-stats.txt" 2>/dev/null || true
cp "$S/domains/bad/stats" "$RESULTS/bad-stats.txt" 2>/dev/null || true
cp "$S/oprofiled.log" "$RESULTS/oprofiled.log"
cat "$S/domains/g1/images" >"$RESULTS/g1-images.txt" 2>/dev/null || true
( cd "$S" && find images -type f | sort ) >"$RESULTS/image-files.txt"

hline=$(grep -m1 "HOSTILE pings" "$RESULTS/bad.console" || true)
hv() { echo "$hline" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
gap=$(hv max_ping_gap_ms)
victim_entry=$(awk -F'\t' '$2 == "/share/exact-a" { print $1 }' "$S/domains/g1/images" 2>/dev/null | head -n 1)
poisoned=0
[ -n "$victim_entry" ] && grep -q DOMPROF-POISON "$S/$victim_entry" && poisoned=1
cap_kb=$(( 64 * 1024 ))
bad_bytes=$(stat_of "$S/domains/bad/stats" bytes)
for k in guest_maps_capped guest_tasks_capped guest_images_capped guest_bad_values \
	guest_budget_deferred guest_budget_spent_ns guest_budget_peak_ns guest_budget_chunk_peak_ns \
	guest_hostile_image_mismatch \
	agent_closed_bad samples_lost guest_queue_overflow; do
	lab_summary "$k" "$(stat_of "$S/stats" "$k")"
done
# g1's whole row (guest and its QEMU's host work) a second, per phase
trate() {
	awk -v a="$(g1_total "$1-a")" -v b="$(g1_total "$1-b")" -v s="$2" \
		'BEGIN { if (a == "" || b == "" || s <= 0) print "0"; else printf "%.1f", (b - a) / s }'
}
trate1=$(trate go1 "$secs1")
trate2=$(trate go2 "$secs2")
rm -rf "$S".go*
lab_summary g1_rate_baseline "$trate1 samples a second (guest samples only: $rate1)"
lab_summary g1_rate_attacked "$trate2 samples a second (guest samples only: $rate2)"
lab_summary cpu_phase1 "$cpu1"
lab_summary cpu_phase2 "$cpu2"
lab_summary daemon_vmrss_kb_before_attack "$rss0"
lab_summary daemon_vmrss_kb_end "$rss"
lab_summary daemon_vmhwm_kb "$hwm"
lab_summary bad_state_bytes "$bad_bytes"
lab_summary bad_budget_deferred "$(stat_of "$S/domains/bad/stats" budget_deferred)"
lab_summary g1_budget_deferred "$(stat_of "$S/domains/g1/stats" budget_deferred)"
lab_summary bad_pings "$(hv pings)"
lab_summary bad_max_ping_gap_ms "${gap:-none}"
lab_summary bad_image_requests "$(hv requests)"
lab_summary bad_uploaded "$uploaded"
lab_summary g1_victim_entry "${victim_entry:-none}"
lab_summary g1_victim_poisoned "$poisoned"
lab_summary g1_clock "$(stat_of "$S/domains/g1/stats" clock_method)"
lab_summary perf_throttled "$(grep -m1 'throttled sampling' "$RESULTS/oprofiled.log" | sed 's/.*: //') $(dmesg | grep -c 'took too long') kernel lines 'took too long'"

fail=0
chk() { awk "BEGIN { exit !($1) }" || { lab_log "FAIL: $2"; fail=1; }; }
chk "$trate2 >= 0.9 * $trate1 && $trate1 > 0" "g1's rate $trate2/s under attack vs $trate1/s without"
d1=$(echo "$cpu1" | awk '{ print $2 }') d2=$(echo "$cpu2" | awk '{ print $2 }')
lab_summary daemon_cpu_rise "$(awk -v a="$d1" -v b="$d2" 'BEGIN { printf "%.3f", b - a }') CPU seconds a second"
chk "${d2:-9} - ${d1:-0} <= $BUDGET_MS / 1000 + 0.05" \
	"the daemon's CPU rose from $d1 to $d2 a second under attack (budget $BUDGET_MS ms + 50 ms)"
peak=$(stat_of "$S/stats" guest_budget_peak_ns)
chk "$(stat_of "$S/domains/bad/stats" budget_deferred) + 0 > 0" \
	"bad's channel never deferred (its frames took at most ${peak:-?} ns of CPU in a second; budget $BUDGET_MS ms)"
chunk=$(stat_of "$S/stats" guest_budget_chunk_peak_ns)
chk "${peak:-999999999999} <= $BUDGET_MS * 1000000 + ${chunk:-0} && ${chunk:-0} > 0" \
	"a domain's frames took ${peak:-?} ns of CPU in one second, over the $BUDGET_MS ms budget plus the costliest chunk (${chunk:-?} ns)"
for k in guest_maps_capped guest_tasks_capped guest_images_capped guest_bad_values; do
	chk "$(stat_of "$S/stats" "$k") + 0 > 0" "$k not counted"
done
if [ $uploaded = 1 ]; then
	chk "$(stat_of "$S/stats" guest_hostile_image_mismatch) + 0 > 0" "bad's upload not counted as a mismatch"
else
	lab_log "FAIL: the host never asked bad for its claimed image (poisoning not exercised)"
	fail=1
fi
[ $poisoned = 0 ] || { lab_log "FAIL: g1's exact-a in the cache is bad's junk"; fail=1; }
[ -n "$victim_entry" ] || lab_log "note: g1's exact-a has no image map entry"
chk "${hwm:-999999999} < 2 * $cap_kb + 65536" "daemon VmHWM ${hwm} kB over two domains' caps + 64 MiB"
chk "${bad_bytes:-999999999} <= 64 * 1048576" "bad's state ${bad_bytes} bytes over its cap"
chk "${gap:-999999} < 3000" "the daemon stopped pinging bad for ${gap:-?} ms"
case "$(stat_of "$S/domains/g1/stats" clock_method)" in
ping|tsc) ;;
*) lab_log "FAIL: g1's clock is $(stat_of "$S/domains/g1/stats" clock_method)"; fail=1 ;;
esac
stop_guest g1
stop_guest bad
lab_summary scenario_s "$(lab_since "$t0")"
[ $fail -eq 0 ] || lab_fail "see above"
lab_log "PASS: g1 $trate2/s under attack vs $trate1/s; each attack counted; ping gap ${gap} ms; VmHWM ${hwm} kB"
