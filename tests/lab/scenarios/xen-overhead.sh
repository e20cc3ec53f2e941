# lab-kind: xen
# What the xen collector costs (issue 13, "overhead measured, not
# guessed"): a figure, not a test.  One PV guest, web, runs a fixed piece
# of work over and over (XO_MB MiB of zeros through md5sum, guest user and
# guest kernel time) and prints each round's run time by its own clock.
# dom0 profiles it in turns of XO_SECONDS: none, 100 Hz, 1 kHz, 4 kHz,
# 1 kHz with call chains (--callgraph=16: the walk through foreign
# mappings, the domain paused for each look), then none again (drift of the emulated machine shows as the two "none"
# figures' difference).  Per turn: the median run time of the rounds that
# ran wholly inside it, against the mean of the two "none" turns, and the
# dom0 CPU the daemon took (its processes' user + system time a second of
# the turn).  Nothing is checked but that each turn had rounds.
. "$LAB/lib-xen.sh"
lab_require_xen
t0=$(lab_now)
S=/var/lib/domprof-lab/xen-overhead
MB=${XO_MB:-16}
SEC=${XO_SECONDS:-30}
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
# one turn: $1 tag, $2 event (empty: no profiling); sets the turn's
# window in guest uptime (lines after the turn began, before it ended)
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
		grep "xen collector:" "$S/oprofiled.log" | tail -n 4
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
turn none1 ""
turn hz100 "TIMER:10000000"
turn hz1000 "TIMER:1000000"
turn hz4000 "TIMER:250000"
turn hz1000cg "TIMER:1000000" --callgraph=16
turn none2 ""
base=$(awk -v a="${MED[none1]}" -v b="${MED[none2]}" 'BEGIN { printf "%.3f", (a + b) / 2 }')
lab_summary xo_round_mb "$MB"
lab_summary xo_none "median round ${MED[none1]} s, then ${MED[none2]} s (mean $base s)"
for t in hz100 hz1000 hz4000 hz1000cg; do
	lab_summary "xo_$t" "median round ${MED[$t]} s, $(awk -v m="${MED[$t]}" -v b="$base" 'BEGIN { printf "%+.1f%%", 100 * (m - b) / b }') against none; daemon (dom0) ${CPU[$t]} CPU seconds a second"
done
lab_summary xo_hz1000cg_chains "$(grep -m1 'call chains:' "$RESULTS/oprofiled-hz1000cg.log" | sed 's/.*call chains: //')"
xen_destroy web
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: overhead figures in summary.txt"
