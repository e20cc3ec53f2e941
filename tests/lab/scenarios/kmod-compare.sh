# The kernel collector against the perf collector, both through the daemon
# (opcontrol --collector=kmod|perf), on one two-guest scenario: web busy,
# db running two shell loops that each sleep part of the time.  No guest
# has an agent.
#
# Two profiles at the same rate (TIMER:KCMP_NS, 1 ms = 1 kHz), perf then
# kmod, each with perf record (cpu-clock, the same rate) running beside it
# in L1 as the anchor, over the same window of KCMP_SECONDS (15).  The same
# rate because each profiler sees the other's sampling (a VM exit and the
# handler, costly in the nested lab) as host work and never its own: at
# 4 kHz against perf record's 1 kHz domprof's host share came out 1 to 4
# points under perf record's.  Not quite the same rate, though: perf record
# runs 0.3% slower (997 Hz against 1 ms), so the two timers slide past each
# other (a full turn in about a third of a second) instead of holding one
# phase for the whole window; at one phase, drawn by the start, one
# profiler's sample can land each time in the other's exit (seen once in
# 14 runs: perf record's db share 5.7 points off its share in the window
# before, domprof's 1.5).  A domain's share
# under perf record is the share of samples in its QEMU's pid (guest and
# host work, as domprof's domain summary counts it), the host's the rest.
# The anchor is taken in the same window as the profile it checks, so the
# workload's own drift between profiles (up to 14 points here) does not
# enter the check: perf record runs on CLOCK_MONOTONIC, and only its
# samples between the two dumps' moments (dump_time_ns in the stats of
# each copy) count.  Its events on from before the first dump to after the
# second gave it 0.9 to 1.9 s more than the profile's 17 s (a command takes
# up to a second under the emulator), most of it host work: its host share
# came out 0.6 to 3.9 points over domprof's in 4 profiles, 0.1 to 2.7 points
# either way in 12 once cut.
# Must hold:
#  - each row of the domain summary (host, web, db), as a share of all
#    samples, under kmod and under perf within KCMP_TOL (4) points of the
#    share perf record saw beside it, and kmod's within KCMP_KTOL (5)
#    points of perf's once each is taken against perf record in its own
#    window (the issue's bar: kmod agrees with the perf collector);
#  - under kmod, db's guest-user samples are split per guest address space:
#    opreport lists {anon:guest-user:asN} images for db, at least two, and
#    db's domain stats count asid_spaces;
#  - opcontrol --status shows the module's per-CPU lost counters while kmod
#    runs; no oops or warning in L1's kernel log.
# The kmod-to-perf difference between the two profiles is printed too.
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
SEC=${KCMP_SECONDS:-15}
NS=${KCMP_NS:-1000000}
TOL=${KCMP_TOL:-4}
KTOL=${KCMP_KTOL:-5}
KVER=$(uname -r)
UUID_WEB=6b1b1d6e-0000-4000-8000-000000000c01
UUID_DB=6b1b1d6e-0000-4000-8000-000000000c02
. "$LAB/lib-kmod.sh"
kmod_begin
[ -f "/lib/modules/$KVER/extra/domprof.ko" ] || lab_fail "no domprof.ko for $KVER in the install tree"
lab_depmod

share=/tmp/share-db
rm -rf "$share"
mkdir -p "$share"
{
	echo 'spin() { while :; do i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done; sleep 0.05; done; }'
	echo 'spin & spin &'
	echo 'exec sleep 100000'
} >"$share/work.sh"

start_guest web "$UUID_WEB" busy
wait_guest_booted web 300
LAB_GUEST_SHARE=$share start_guest db "$UUID_DB" script
wait_guest_booted db 300
sleep 3

summary_rows() {
	awk '/^DOMAIN SUMMARY/ { on = 1; next }
	     on && $1 == "domain" { next }
	     on && NF == 0 { exit }
	     on { print }'
}
# Share (%, 2 decimals) of row $1 in summary file $2.
share_of() {
	awk -v d="$1" '{ t += $2 } $1 == d { v = $2 } END { if (t == 0) print "0"; else printf "%.2f", 100 * v / t }' "$2"
}

# Per-row shares (host, web, db; %, 2 decimals) from perf_guest_samples_by_pid's
# output $1, written as "ROW SHARE" lines to $2.
perf_shares() {
	awk -v w="$(guest_pid web)" -v d="$(guest_pid db)" '
		$1 == "total" { t = $2; next }
		$1 == w { web = $3 } $1 == d { db = $3 }
		END { if (t == 0) exit 1
		      printf "host %.2f\nweb %.2f\ndb %.2f\n", 100 * (t - web - db) / t, 100 * web / t, 100 * db / t }' "$1" >"$2"
}
row_of() { awk -v r="$1" '$1 == r { print $2 }' "$2"; }

# One profile: collector $1, output tag $2, perf record beside it.  The
# windows are made the same: perf record's events are turned on and off
# around two dumps of the session, each copied away at once, and domprof's
# counts are the second copy's minus the first's.  Outside them are the
# daemon's start and stop and perf record's own start (it reads every
# process in L1 first) and its finishing work, all host work that one saw
# and the other did not.
profile() {
	local c=$1 tag=$2 S=/var/lib/domprof-lab/kcmp-$2 pd=/tmp/kcmp-$2.data perf_pid w
	local t_on t_a t_b0 t_b t_off cut_a cut_b pids=$RESULTS/kcmp-$2-perfrec-pids.txt
	rm -rf "$S" "$S.a" "$S.b"
	perf_rec_start "$pd" -F $((1000000000 / NS * 997 / 1000)) -e cpu-clock -k CLOCK_MONOTONIC || lab_fail "$tag: perf record did not start"
	perf_pid=$PERF_REC_PID
	timeout 60 opcontrol --start --collector="$c" --event="TIMER:$NS" --session-dir="$S" --domains=all ||
		lab_fail "$tag: opcontrol --start --collector=$c failed"
	sleep 3	# the daemon's first seconds (its own start) outside the window
	perf_rec_on "$pd" || lab_fail "$tag: perf record did not turn its events on"
	t_on=$(date +%s.%N)
	timeout 60 opcontrol --dump --session-dir="$S" || lab_fail "$tag: opcontrol --dump failed"
	t_a=$(date +%s.%N)
	cp -a "$S" "$S.a"
	sleep "$SEC"
	t_b0=$(date +%s.%N)
	timeout 60 opcontrol --dump --session-dir="$S" || lab_fail "$tag: opcontrol --dump failed"
	t_b=$(date +%s.%N)
	# off before the copy: the copy is host work perf record would see
	# and the dump would not
	perf_rec_off "$pd" || lab_log "$tag: perf record did not say its events are off"
	t_off=$(date +%s.%N)
	cp -a "$S" "$S.b"
	kill -INT "$perf_pid"
	wait "$perf_pid" 2>/dev/null || true
	timeout 30 opcontrol --status --session-dir="$S" >"$RESULTS/kcmp-$tag-status.txt" 2>&1 || true
	timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "$tag: opcontrol --stop failed"
	cp "$S/stats" "$RESULTS/kcmp-$tag-stats.txt"
	cp "$S/oprofiled.log" "$RESULTS/kcmp-$tag-oprofiled.log"
	for d in web db; do
		cp "$S/domains/$d/stats" "$RESULTS/kcmp-$tag-$d-stats.txt" 2>/dev/null || true
	done
	for w in a b; do
		timeout 120 opreport --session-dir="$S.$w" >"$RESULTS/kcmp-$tag-report-$w.txt" 2>"$RESULTS/kcmp-$tag-report.err" ||
			lab_fail "$tag: opreport of copy $w failed: $(head -n 3 "$RESULTS/kcmp-$tag-report.err")"
		summary_rows <"$RESULTS/kcmp-$tag-report-$w.txt" >"$RESULTS/kcmp-$tag-summary-$w.txt"
	done
	# the window's samples per row: copy b minus copy a
	# (copy a may have no summary at all: no sample filed yet)
	awk -v a="$RESULTS/kcmp-$tag-summary-a.txt" 'BEGIN { while ((getline l < a) > 0) { split(l, f, " "); n[f[1]] = f[2] } }
		{ print $1, $2 - n[$1] }' "$RESULTS/kcmp-$tag-summary-b.txt" >"$RESULTS/kcmp-$tag-summary.txt"
	lab_summary "${tag}_window_samples" "$(awk '{ s += $2 } END { print s + 0 }' "$RESULTS/kcmp-$tag-summary.txt") (before it: $(awk '{ s += $2 } END { print s + 0 }' "$RESULTS/kcmp-$tag-summary-a.txt"))"
	timeout 120 opreport --session-dir="$S" --domain=db >"$RESULTS/kcmp-$tag-db.txt" 2>&1 ||
		lab_fail "$tag: opreport --domain=db failed"
	# perf record's samples cut at the two dumps' moments (dump_time_ns of
	# each copy's stats: the same clock), so the anchor's window is the
	# profile's, not the wider one its events were on for
	cut_a=$(awk '$1 == "dump_time_ns" { print $2 }' "$S.a/stats")
	cut_b=$(awk '$1 == "dump_time_ns" { print $2 }' "$S.b/stats")
	[ -n "$cut_a" ] && [ -n "$cut_b" ] && [ "$cut_b" -gt "$cut_a" ] ||
		lab_fail "$tag: no dump moments in the copies' stats ('$cut_a', '$cut_b')"
	perf_guest_samples_by_pid "$pd" "$cut_a" "$cut_b" >"$pids"
	perf_shares "$pids" "$RESULTS/kcmp-$tag-perfrec.txt" ||
		lab_fail "$tag: no samples from perf record beside it: $(head -n 3 "$pd.err")"
	lab_log "$tag ($c): samples in the window per row, and perf record's shares beside it:"
	cat "$RESULTS/kcmp-$tag-summary.txt" "$RESULTS/kcmp-$tag-perfrec.txt"
	# what the anchor itself saw: its samples and the records it lost, and
	# how many of them fell between the dumps
	lab_summary "${tag}_perfrec_samples" "$(perf report -D -i "$pd" 2>/dev/null |
		awk '/PERF_RECORD_SAMPLE\(/ { s++ } /PERF_RECORD_LOST/ { l++ } END { printf "%d (lost records %d)", s, l }'), $(awk '$1 == "total" { print $2 }' "$pids") between the dumps"
	# the windows' lengths: perf record's events on (its first to last
	# sample), the dumps' moments, and how long each command took
	lab_summary "${tag}_window_s" "$(perf script -F time -i "$pd" 2>/dev/null | awk -v on="$t_on" -v a="$t_a" \
		-v b0="$t_b0" -v b="$t_b" -v off="$t_off" -v ca="$cut_a" -v cb="$cut_b" 'NR == 1 { f = $1 + 0 } { l = $1 + 0 }
		END { printf "perf record on %.2f (samples %.2f), the dumps %.2f apart (dump a took %.2f, dump b %.2f, off %.2f)",
			off - on, l - f, (cb - ca) / 1e9, a - on, b - b0, off - b }')"
	lab_summary "${tag}_samples_lost" "$(awk '$1 == "samples_lost" { print $2 }' "$S/stats")"
	rm -rf "$pd" "$S.a" "$S.b"
}

profile perf perf
profile kmod kmod

grep -qi "lost" "$RESULTS/kcmp-kmod-status.txt" ||
	lab_fail "opcontrol --status shows no lost counters under kmod: $(head -n 20 "$RESULTS/kcmp-kmod-status.txt")"
grep -i "cpu.*lost" "$RESULTS/kcmp-kmod-status.txt" | head -n 4

fail=0
for row in host web db; do
	for tag in perf kmod; do
		d=$(share_of "$row" "$RESULTS/kcmp-$tag-summary.txt")
		r=$(row_of "$row" "$RESULTS/kcmp-$tag-perfrec.txt")
		dk=$(absdiff "$d" "$r")
		lab_summary "share_${row}_$tag" "domprof $d% perf record $r% diff $dk points"
		awk -v d="$dk" -v t="$TOL" 'BEGIN { exit !(d <= t) }' ||
			{ lab_log "FAIL: $row's share under the $tag collector $d% vs perf record's $r% beside it: $dk points > $TOL"; fail=1; }
	done
	# kmod against the perf collector, each taken relative to perf
	# record in its own window: the drift between the windows cancels
	dd=$(awk -v k="$(share_of "$row" "$RESULTS/kcmp-kmod-summary.txt")" -v rk="$(row_of "$row" "$RESULTS/kcmp-kmod-perfrec.txt")" \
		-v p="$(share_of "$row" "$RESULTS/kcmp-perf-summary.txt")" -v rp="$(row_of "$row" "$RESULTS/kcmp-perf-perfrec.txt")" \
		'BEGIN { d = (k - rk) - (p - rp); if (d < 0) d = -d; printf "%.2f", d }')
	lab_summary "share_${row}_kmod_vs_perf" "$dd points, each against perf record in its window ($(absdiff "$(share_of "$row" "$RESULTS/kcmp-kmod-summary.txt")" \
		"$(share_of "$row" "$RESULTS/kcmp-perf-summary.txt")") with the drift between the windows)"
	awk -v d="$dd" -v t="$KTOL" 'BEGIN { exit !(d <= t) }' ||
		{ lab_log "FAIL: $row's share under kmod and under perf differ by $dd points (> $KTOL), drift between the windows taken out"; fail=1; }
done

# db's guest-user samples per address space under kmod (no agent)
spaces=$(grep -o '{anon:guest-user:as[0-9]*}' "$RESULTS/kcmp-kmod-db.txt" | sort -u | wc -l)
grep -E 'guest-user' "$RESULTS/kcmp-kmod-db.txt" | head -n 8
lab_summary kmod_db_address_spaces "$spaces (asid_spaces $(awk '$1 == "asid_spaces" { print $2 }' "$RESULTS/kcmp-kmod-db-stats.txt" 2>/dev/null))"
[ "$spaces" -ge 2 ] || { lab_log "FAIL: db's report under kmod lists $spaces {anon:guest-user:asN} images (< 2)"; fail=1; }
grep -q '{anon:guest-user:as' "$RESULTS/kcmp-perf-db.txt" &&
	{ lab_log "FAIL: per-address-space buckets under perf (it has no ASID)"; fail=1; }
t=$(kernel_trouble)
[ -z "$t" ] || { dmesg >"$RESULTS/l1-dmesg-kcmp.txt"; lab_log "FAIL: kernel log: $(echo "$t" | head -n 3)"; fail=1; }

stop_guest db
stop_guest web
rmmod domprof 2>/dev/null || true
lab_summary scenario_s "$(lab_since "$t0")"
[ $fail -eq 0 ] || lab_fail "see above"
lab_log "PASS: per-domain shares under kmod and perf within $TOL points of perf record's beside them; db split into $spaces address spaces"
