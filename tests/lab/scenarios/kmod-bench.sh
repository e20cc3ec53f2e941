# Collection overhead (issue 11's benchmark, issue 27's rounds): prints
# figures, asserts nothing about time.  In L1, a fixed CPU-bound workload
# (one awk loop per CPU, KBENCH_ITER iterations each) is timed with no
# profiler, then under each profiler at 1, 4 and 10 kHz per CPU
# (cpu-clock / TIMER periods of 1000, 250 and 100 us):
#   perf      perf record -a -e cpu-clock -c PERIOD (what perf itself costs)
#   dp-perf   opcontrol --start --collector=perf --event=TIMER:PERIOD
#   dp-kmod   opcontrol --start --collector=kmod --event=TIMER:PERIOD
# KBENCH_ROUNDS rounds (default 5), interleaved: each round times the
# bare workload, then every (profiler, rate) once, in an order turned by
# one place each round, so that a drift of the emulated machine spreads
# over all rows.  A row's ratio in a round is its run time over that
# round's bare run.  Per row: the median ratio and its spread (lowest and
# highest of the rounds), the profiler's own CPU time (user + system of
# perf or of oprofiled, median % of the run), the samples it lost (all
# rounds), and for dp-kmod the module's time per sample in its overflow
# handler (handler_ns / samples from its stats, median of the rounds).
# The table goes to RESULTS/bench.txt, every round to RESULTS/rounds.txt.
# Fails only when a profiler does not run.
lab_check_domprof_libs
t0=$(lab_now)
ITER=${KBENCH_ITER:-8000000}
RATES=${KBENCH_RATES:-"1000000 250000 100000"}
ROUNDS=${KBENCH_ROUNDS:-5}
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
# the sum over CPUs of field $1 of the module's stats
. "$LAB/lib-kmod.sh"	# kmod_sum
kstat() { kmod_sum "$1" /sys/class/misc/domprof/stats 2>/dev/null || echo 0; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
pctof() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
# median, lowest and highest of the numbers on stdin ("- - -" for none)
mls() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "- - -"; exit }
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'; }

# one measurement of row $1 (profiler) at period $2 (ns); appends
# "profiler kHz run ratio cpu% lost ns/sample" to rounds.txt
measure() {
	local p=$1 ns=$2 khz run cpu lost pid c0 c1 S h0 s0 nsps=-
	khz=$(awk -v n="$ns" 'BEGIN { printf "%g", 1000000 / n }')
	if [ "$p" = perf ]; then
		perf record -q -a -e cpu-clock -c "$ns" -o /tmp/bench-perf.data >/dev/null 2>/tmp/bench-perf.err &
		pid=$!
		sleep 1
		run=$(work)
		cpu=$(cpu_of "$pid")
		kill -INT "$pid"
		wait "$pid" 2>/dev/null
		lost=$(perf report --stats -i /tmp/bench-perf.data 2>/dev/null |
			awk -F: '/^ *LOST(_SAMPLES)? events/ && !seen[$1]++ { split($2, v, " "); n += v[1] } END { print n + 0 }')
		rm -f /tmp/bench-perf.data
	else
		S=/var/lib/domprof-lab/bench-$p-$ns
		rm -rf "$S"
		timeout 60 opcontrol --start --collector="${p#dp-}" --event="TIMER:$ns" --session-dir="$S" >/dev/null ||
			lab_fail "opcontrol --start --collector=${p#dp-} --event=TIMER:$ns failed"
		pid=$(cat "$S/oprofiled.pid")
		sleep 1
		c0=$(cpu_of "$pid") h0=$(kstat handler_ns) s0=$(kstat samples)
		run=$(work)
		c1=$(cpu_of "$pid")
		if [ "$p" = dp-kmod ]; then
			nsps=$(awk -v h="$(($(kstat handler_ns) - h0))" -v s="$(($(kstat samples) - s0))" \
				'BEGIN { if (s > 0) printf "%.0f", h / s; else print "-" }')
			timeout 30 opcontrol --status --session-dir="$S" >"$RESULTS/bench-kmod-$ns-status.txt" 2>&1
		fi
		timeout 60 opcontrol --stop --session-dir="$S" >/dev/null || lab_fail "opcontrol --stop ($p) failed"
		cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }')
		lost=$(awk '$1 == "samples_lost" { print $2 }' "$S/stats")
		rm -rf "$S"
	fi
	echo "$p $khz $run $(ratio "$run" "$bare") $(pctof "$cpu" "$run") ${lost:-0} $nsps" >>"$RESULTS/rounds.txt"
}

rows=()
for ns in $RATES; do
	for p in perf dp-perf dp-kmod; do rows+=("$p:$ns"); done
done
echo "# profiler kHz run_s ratio cpu_% lost ns/sample" >"$RESULTS/rounds.txt"
work >/dev/null	# warm the page cache
for ((r = 0; r < ROUNDS; r++)); do
	bare=$(work)
	echo "none - $bare 1.000 - 0 -" >>"$RESULTS/rounds.txt"
	for ((i = 0; i < ${#rows[@]}; i++)); do
		k=$(((i + r) % ${#rows[@]}))
		measure "${rows[$k]%%:*}" "${rows[$k]##*:}"
	done
	lab_log "round $((r + 1)) of $ROUNDS: bare $bare s"
done
rmmod domprof 2>/dev/null || true

printf '%-8s %5s %7s %7s %15s %6s %8s %9s\n' profiler kHz run_s ratio "ratio low-high" cpu_% lost ns/sample >"$RESULTS/bench.txt"
for row in none:- "${rows[@]}"; do
	p=${row%%:*} ns=${row##*:}
	khz=-
	[ "$ns" = - ] || khz=$(awk -v n="$ns" 'BEGIN { printf "%g", 1000000 / n }')
	sel() { awk -v p="$p" -v k="$khz" -v f="$1" '!/^#/ && $1 == p && $2 == k { print $f }' "$RESULTS/rounds.txt"; }
	read -r run _ _ <<<"$(sel 3 | mls)"
	read -r rat lo hi <<<"$(sel 4 | mls)"
	read -r cpu _ _ <<<"$(sel 5 | grep -v '^-' | mls)"
	read -r nsps _ _ <<<"$(sel 7 | grep -v '^-' | mls)"
	lost=$(sel 6 | awk '{ s += $1 } END { print s + 0 }')
	printf '%-8s %5s %7s %7s %15s %6s %8s %9s\n' "$p" "$khz" "$run" "$rat" "$lo-$hi" "$cpu" "$lost" "$nsps" >>"$RESULTS/bench.txt"
done

lab_log "overhead table (workload: $NCPU x awk loop of $ITER; $ROUNDS rounds, interleaved; ratio = run / the round's bare run; medians):"
cat "$RESULTS/bench.txt"
lab_summary bench_table "$RESULTS/bench.txt"
lab_summary bench_rounds "$ROUNDS"
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS (figures only)"
