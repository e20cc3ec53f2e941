# Collection overhead (issue 11's benchmark): prints figures, asserts
# nothing about time.  In L1, a fixed CPU-bound workload (one awk loop per
# CPU, KBENCH_ITER iterations each) is timed with no profiler, then under
# each profiler at 1, 4 and 10 kHz per CPU (cpu-clock / TIMER periods of
# 1000, 250 and 100 us):
#   perf      perf record -a -e cpu-clock -c PERIOD (what perf itself costs)
#   dp-perf   opcontrol --start --collector=perf --event=TIMER:PERIOD
#   dp-kmod   opcontrol --start --collector=kmod --event=TIMER:PERIOD
# For each: the workload's run time and its ratio to the bare run, the
# profiler's own CPU time (user + system of perf or of oprofiled, seconds
# and % of the run), and the samples it lost.  The table goes to
# RESULTS/bench.txt and the log.  Fails only when a profiler does not run.
lab_check_domprof_libs
t0=$(lab_now)
ITER=${KBENCH_ITER:-8000000}
RATES=${KBENCH_RATES:-"1000000 250000 100000"}
NCPU=$(nproc)
KVER=$(uname -r)
[ -f "/lib/modules/$KVER/extra/domprof.ko" ] || lab_fail "no domprof.ko for $KVER in the install tree"
lab_depmod
command -v perf >/dev/null || lab_fail "no perf in L1"
TCK=$(getconf CLK_TCK)

# Run the workload once; prints its wall time in seconds.
work() {
	local a b i
	a=$(lab_now)
	for ((i = 0; i < NCPU; i++)); do
		awk -v n="$ITER" 'BEGIN { for (i = 0; i < n; i++) s += i * i; exit (s < 0) }' &
	done
	wait
	b=$(lab_now)
	awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b - a }'
}
# user + system CPU seconds of pid $1 so far
cpu_of() {
	awk -v t="$TCK" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat" 2>/dev/null || echo 0
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
pctof() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }

printf '%-8s %6s %8s %7s %9s %7s %9s\n' profiler kHz run_s ratio cpu_s cpu_% lost >"$RESULTS/bench.txt"
row() { printf '%-8s %6s %8s %7s %9s %7s %9s\n' "$@" | tee -a "$RESULTS/bench.txt"; }

work >/dev/null	# warm the page cache
base1=$(work)
base2=$(work)
base=$(awk -v a="$base1" -v b="$base2" 'BEGIN { printf "%.2f", (a + b) / 2 }')
lab_log "bare runs: $base1 s, $base2 s"
row none - "$base" 1.000 - - -

for ns in $RATES; do
	khz=$(awk -v n="$ns" 'BEGIN { printf "%g", 1000000 / n }')

	# perf record -a at the same rate
	perf record -q -a -e cpu-clock -c "$ns" -o /tmp/bench-perf.data >/dev/null 2>/tmp/bench-perf.err &
	ppid=$!
	sleep 1
	run=$(work)
	cpu=$(cpu_of "$ppid")
	kill -INT "$ppid"
	wait "$ppid" 2>/dev/null
	lost=$(perf report --stats -i /tmp/bench-perf.data 2>/dev/null |
		awk -F: '/^ *LOST(_SAMPLES)? events/ && !seen[$1]++ { split($2, v, " "); n += v[1] } END { print n + 0 }')
	row perf "$khz" "$run" "$(ratio "$run" "$base")" "$cpu" "$(pctof "$cpu" "$run")" "$lost"
	rm -f /tmp/bench-perf.data

	for c in perf kmod; do
		S=/var/lib/domprof-lab/bench-$c-$ns
		rm -rf "$S"
		timeout 60 opcontrol --start --collector="$c" --event="TIMER:$ns" --session-dir="$S" >/dev/null ||
			lab_fail "opcontrol --start --collector=$c --event=TIMER:$ns failed"
		dpid=$(cat "$S/oprofiled.pid")
		sleep 1
		c0=$(cpu_of "$dpid")
		run=$(work)
		c1=$(cpu_of "$dpid")
		[ "$c" = kmod ] && timeout 30 opcontrol --status --session-dir="$S" >"$RESULTS/bench-kmod-$ns-status.txt" 2>&1
		timeout 60 opcontrol --stop --session-dir="$S" >/dev/null || lab_fail "opcontrol --stop ($c) failed"
		cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
		lost=$(awk '$1 == "samples_lost" { print $2 }' "$S/stats")
		lab_log "dp-$c at $khz kHz: received $(awk '$1 == "samples_received" { print $2 }' "$S/stats"), lost $lost"
		row "dp-$c" "$khz" "$run" "$(ratio "$run" "$base")" "$cpu" "$(pctof "$cpu" "$run")" "${lost:-?}"
		rm -rf "$S"
	done
done
rmmod domprof 2>/dev/null || true

lab_log "overhead table (workload: $NCPU x awk loop of $ITER; ratio = run / bare run):"
cat "$RESULTS/bench.txt"
lab_summary bench_table "$RESULTS/bench.txt"
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS (figures only)"
