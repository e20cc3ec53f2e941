# lab-kind: xen
# What the xen collector costs (issue 13, "overhead measured, not
# guessed"; issue 27, rounds): a figure, not a test.  One PV guest, web,
# runs a fixed piece of work over and over (XO_MB MiB of zeros through
# md5sum, guest user and guest kernel time) and prints each round's run
# time by its own clock.  dom0 profiles it in turns of XO_SECONDS: none,
# 100 Hz, 1 kHz, 4 kHz, 1 kHz with call chains (--callgraph=16: the walk
# through foreign mappings, the domain paused for each look), all under
# the default read budget (--xen-read-budget, 5%), and 1 kHz with the
# budget off (0: a context read every period, as before the budget).  XO_ROUNDS
# rounds (default 5), interleaved: each round has its own "none" turn and
# the profiled turns in an order turned by one place each round, so a
# drift of the emulated machine spreads over all of them.  Per turn: the
# median run time of the work's rounds that ran wholly inside it, against
# the same round's "none"; per profiled kind, the median of the rounds'
# overheads with the lowest and highest, the dom0 CPU the daemon took
# (its processes' user + system time a second of the turn), and what a
# look cost by the collector's own clock (its log's "cost" lines: a vCPU
# time read, a context read, and with chains the pause and resume and the
# walk, in microseconds), and the periods a read stood for under the
# budget (its log's "a read stood for N periods").  Nothing is checked
# but that each turn had rounds.
. "$LAB/lib-xen.sh"
lab_require_xen
t0=$(lab_now)
S=/var/lib/domprof-lab/xen-overhead
MB=${XO_MB:-16}
SEC=${XO_SECONDS:-20}
ROUNDS=${XO_ROUNDS:-5}
CONS=$XEN_CONSOLES/guest-web.log

# the workload, as a cpio archive after the lab's initramfs (a PV guest
# has no 9p share)
root=/tmp/xo-root
rm -rf "$root"
mkdir -p "$root/share"
cat >"$root/share/work.sh" <<EOF
n=0
while :; do
	a=\$(cut -d' ' -f1 /proc/uptime)
	dd if=/dev/zero bs=64k count=$((MB * 16)) 2>/dev/null | md5sum >/dev/null
	b=\$(cut -d' ' -f1 /proc/uptime)
	n=\$((n + 1))
	echo "XO-ROUND \$n \$a \$b"
done
EOF
xen_share_initrd "$root" "$LAB_RUN/web-xo.cpio"

xen_alive web && xen_destroy web
LAB_XEN_L2_INITRD=$LAB_RUN/web-xo.cpio xen_start_guest web 6b1b1d6e-0000-4000-8000-000000000041 script
xen_wait_booted web
for _ in $(seq 1 120); do
	[ "$(grep -c XO-ROUND "$CONS")" -ge 2 ] && break
	sleep 1
done
[ "$(grep -c XO-ROUND "$CONS")" -ge 2 ] || lab_fail "web's rounds did not start"

cpu_s() {	# user + system seconds of the processes named oprofiled
	local p s=0 t
	for p in $(pidof oprofiled); do
		t=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) || t=0
		s=$((s + ${t:-0}))
	done
	awk -v t="$s" 'BEGIN { printf "%.2f", t / 100 }'
}
declare -A MED CPU
# one turn: $1 tag, $2 event (empty: no profiling); sets MED[tag] (the
# median run time of the work's rounds wholly inside it) and CPU[tag]
turn() {
	local tag=$1 ev=$2 n0 n1 c0=0 c1=0 w0 w1
	rm -rf "$S"
	if [ -n "$ev" ]; then
		# shellcheck disable=SC2086
		timeout 120 opcontrol --start --session-dir="$S" --event="$ev" --domains=web ${3:-} >/dev/null ||
			lab_fail "$tag: opcontrol --start failed"
		sleep 2
		c0=$(cpu_s)
	fi
	n0=$(grep -c XO-ROUND "$CONS")
	w0=$(lab_now)
	sleep "$SEC"
	n1=$(grep -c XO-ROUND "$CONS")
	w1=$(lab_now)
	if [ -n "$ev" ]; then
		c1=$(cpu_s)
		timeout 120 opcontrol --stop --session-dir="$S" >/dev/null || lab_fail "$tag: opcontrol --stop failed"
		grep "xen collector:" "$S/oprofiled.log" | tail -n 6
		cp "$S/oprofiled.log" "$RESULTS/oprofiled-$tag.log"
	fi
	# rounds that started after the turn began and ended before it ended:
	# the line numbers n0+2 .. n1 (the round running at n0 began before)
	grep XO-ROUND "$CONS" | sed -n "$((n0 + 2)),${n1}p" | awk '{ print $4 - $3 }' | sort -n >"$RESULTS/xo-$tag.txt"
	local cnt med
	cnt=$(wc -l <"$RESULTS/xo-$tag.txt")
	[ "$cnt" -ge 1 ] || lab_fail "$tag: no whole round inside the turn"
	med=$(awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }' "$RESULTS/xo-$tag.txt")
	MED[$tag]=$med
	CPU[$tag]=$(awk -v a="$c0" -v b="$c1" -v d="$(awk -v a="$w0" -v b="$w1" 'BEGIN { print b - a }')" 'BEGIN { printf "%.3f", (b - a) / d }')
	lab_log "$tag (${ev:-no profiling}): $cnt rounds, median $med s"
}
# the us figures of a collector log's cost lines: look read pause walk
cost_of() {
	sed -n 's/.*cost: \([0-9.]*\) us a vCPU time read.*, \([0-9.]*\) us a context read.*/\1 \2/p' "$1" | tail -n 1 | tr '\n' ' '
	sed -n 's/.*cost with call chains: \([0-9.]*\) us to pause and resume ([0-9]*), \([0-9.]*\) us a walk.*/\1 \2/p' "$1" | tail -n 1 | tr '\n' ' '
	echo
}
# the periods a read stood for on average (1 when the log says nothing)
stride_of() {
	local s
	s=$(sed -n 's/.*a read stood for \([0-9.]*\) periods on average.*/\1/p' "$1" | tail -n 1)
	echo "${s:-1}"
}
# median, lowest, highest of the numbers on stdin
mls() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "- - -"; exit }
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'; }

# XO_KINDS picks the profiled turns (default: the first five); also
# hz1000nd (1 kHz, dom0's own work not sampled: --no-dom0) and hz1000b2
# (1 kHz, a budget of 2%)
read -r -a kinds <<<"${XO_KINDS:-hz100 hz1000 hz4000 hz1000cg hz1000nb}"
declare -A EVT=([hz100]="TIMER:10000000" [hz1000]="TIMER:1000000" [hz4000]="TIMER:250000" [hz1000cg]="TIMER:1000000"
	[hz1000nb]="TIMER:1000000" [hz1000nd]="TIMER:1000000" [hz1000b2]="TIMER:1000000")
declare -A OPT=([hz1000cg]="--callgraph=16" [hz1000nb]="--xen-read-budget=0" [hz1000nd]="--no-dom0"
	[hz1000b2]="--xen-read-budget=2")
echo "# round kind overhead_% daemon_cpu_s_per_s look_us read_us pause_us walk_us stride" >"$RESULTS/xo-rounds.txt"
for ((r = 0; r < ROUNDS; r++)); do
	turn "none-$r" ""
	for ((i = 0; i < ${#kinds[@]}; i++)); do
		k=${kinds[$(((i + r) % ${#kinds[@]}))]}
		turn "$k-$r" "${EVT[$k]}" "${OPT[$k]:-}"
		read -r look read pause walk <<<"$(cost_of "$RESULTS/oprofiled-$k-$r.log")"
		echo "$r $k $(awk -v m="${MED[$k-$r]}" -v b="${MED[none-$r]}" 'BEGIN { printf "%.1f", 100 * (m - b) / b }') ${CPU[$k-$r]} ${look:--} ${read:--} ${pause:--} ${walk:--} $(stride_of "$RESULTS/oprofiled-$k-$r.log")" >>"$RESULTS/xo-rounds.txt"
	done
	lab_log "round $((r + 1)) of $ROUNDS done"
done
cat "$RESULTS/xo-rounds.txt"
lab_summary xo_round_mb "$MB"
lab_summary xo_rounds "$ROUNDS rounds of ${SEC}s turns, interleaved"
for k in "${kinds[@]}"; do
	sel() { awk -v k="$k" -v f="$1" '!/^#/ && $2 == k && $f != "-" { print $f }' "$RESULTS/xo-rounds.txt"; }
	read -r ov lo hi <<<"$(sel 3 | mls)"
	read -r cpu _ _ <<<"$(sel 4 | mls)"
	read -r look _ _ <<<"$(sel 5 | mls)"
	read -r rd _ _ <<<"$(sel 6 | mls)"
	read -r pz _ _ <<<"$(sel 7 | mls)"
	read -r wk _ _ <<<"$(sel 8 | mls)"
	read -r sd _ _ <<<"$(sel 9 | mls)"
	lab_summary "xo_$k" "overhead median ${ov}% (rounds ${lo}% to ${hi}%) against the round's none; daemon (dom0) $cpu CPU seconds a second; a look: vCPU time read $look us, context read $rd us$([ "$pz" = - ] || echo ", pause and resume $pz us, walk $wk us"); a read stood for $sd periods"
done
[ -f "$RESULTS/oprofiled-hz1000cg-0.log" ] &&
	lab_summary xo_hz1000cg_chains "$(grep -m1 'call chains:' "$RESULTS/oprofiled-hz1000cg-0.log" | sed 's/.*call chains: //')"
xen_destroy web
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: overhead figures in summary.txt"
