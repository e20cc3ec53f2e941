# The kernel collector against the perf collector, both through the daemon
# (opcontrol --collector=kmod|perf), on one two-guest scenario: web busy,
# db running two shell loops that each sleep part of the time.  No guest
# has an agent.
#
# Three profiles of KCMP_SECONDS (15) each at the same rate (TIMER:KCMP_NS,
# 250 us = 4 kHz): perf, kmod, perf.  Must hold:
#  - each row of the domain summary (host, web, db), as a share of all
#    samples, under kmod within KCMP_TOL (5) points of the mean of the two
#    perf profiles;
#  - under kmod, db's guest-user samples are split per guest address space:
#    opreport lists {anon:guest-user:asN} images for db, at least two, and
#    db's domain stats count asid_spaces;
#  - opcontrol --status shows the module's per-CPU lost counters while kmod
#    runs; no oops or warning in L1's kernel log.
# The perf-to-perf difference is printed beside it: the noise of the setup.
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
SEC=${KCMP_SECONDS:-15}
NS=${KCMP_NS:-250000}
TOL=${KCMP_TOL:-5}
KVER=$(uname -r)
UUID_WEB=6b1b1d6e-0000-4000-8000-000000000c01
UUID_DB=6b1b1d6e-0000-4000-8000-000000000c02
dmesg_base=$(dmesg | wc -l)
[ -f "/lib/modules/$KVER/extra/domprof.ko" ] || lab_fail "no domprof.ko for $KVER in the install tree"
depmod -a || lab_fail "depmod failed"

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
kernel_trouble() {
	dmesg | tail -n +$((dmesg_base + 1)) |
		grep -E 'Oops|WARNING:|BUG:|general protection|Call Trace|refcount_t|soft lockup' || true
}

# One profile: collector $1, output tag $2.
profile() {
	local c=$1 tag=$2 S=/var/lib/domprof-lab/kcmp-$2
	rm -rf "$S"
	timeout 60 opcontrol --start --collector="$c" --event="TIMER:$NS" --session-dir="$S" --domains=all ||
		lab_fail "$tag: opcontrol --start --collector=$c failed"
	sleep "$SEC"
	timeout 30 opcontrol --status --session-dir="$S" >"$RESULTS/kcmp-$tag-status.txt" 2>&1 || true
	timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "$tag: opcontrol --stop failed"
	cp "$S/stats" "$RESULTS/kcmp-$tag-stats.txt"
	cp "$S/oprofiled.log" "$RESULTS/kcmp-$tag-oprofiled.log"
	for d in web db; do
		cp "$S/domains/$d/stats" "$RESULTS/kcmp-$tag-$d-stats.txt" 2>/dev/null || true
	done
	timeout 120 opreport --session-dir="$S" >"$RESULTS/kcmp-$tag-report.txt" 2>"$RESULTS/kcmp-$tag-report.err" ||
		lab_fail "$tag: opreport failed: $(head -n 3 "$RESULTS/kcmp-$tag-report.err")"
	summary_rows <"$RESULTS/kcmp-$tag-report.txt" >"$RESULTS/kcmp-$tag-summary.txt"
	timeout 120 opreport --session-dir="$S" --domain=db >"$RESULTS/kcmp-$tag-db.txt" 2>&1 ||
		lab_fail "$tag: opreport --domain=db failed"
	lab_log "$tag ($c):"
	cat "$RESULTS/kcmp-$tag-summary.txt"
	lab_summary "${tag}_samples_lost" "$(awk '$1 == "samples_lost" { print $2 }' "$S/stats")"
}

profile perf perf1
profile kmod kmod
profile perf perf2

grep -qi "lost" "$RESULTS/kcmp-kmod-status.txt" ||
	lab_fail "opcontrol --status shows no lost counters under kmod: $(head -n 20 "$RESULTS/kcmp-kmod-status.txt")"
grep -i "cpu.*lost" "$RESULTS/kcmp-kmod-status.txt" | head -n 4

fail=0
for row in host web db; do
	p1=$(share_of "$row" "$RESULTS/kcmp-perf1-summary.txt")
	p2=$(share_of "$row" "$RESULTS/kcmp-perf2-summary.txt")
	k=$(share_of "$row" "$RESULTS/kcmp-kmod-summary.txt")
	read -r pm dk dp <<<"$(awk -v a="$p1" -v b="$p2" -v k="$k" 'BEGIN { m = (a + b) / 2
		d = k - m; if (d < 0) d = -d; e = a - b; if (e < 0) e = -e
		printf "%.2f %.2f %.2f\n", m, d, e }')"
	lab_summary "share_$row" "kmod $k% perf $p1% / $p2% (mean $pm%) diff $dk points (perf-perf $dp)"
	awk -v d="$dk" -v t="$TOL" 'BEGIN { exit !(d <= t) }' ||
		{ lab_log "FAIL: $row's share under kmod $k% vs perf $pm%: $dk points > $TOL"; fail=1; }
done

# db's guest-user samples per address space under kmod (no agent)
spaces=$(grep -o '{anon:guest-user:as[0-9]*}' "$RESULTS/kcmp-kmod-db.txt" | sort -u | wc -l)
grep -E 'guest-user' "$RESULTS/kcmp-kmod-db.txt" | head -n 8
lab_summary kmod_db_address_spaces "$spaces (asid_spaces $(awk '$1 == "asid_spaces" { print $2 }' "$RESULTS/kcmp-kmod-db-stats.txt" 2>/dev/null))"
[ "$spaces" -ge 2 ] || { lab_log "FAIL: db's report under kmod lists $spaces {anon:guest-user:asN} images (< 2)"; fail=1; }
grep -q '{anon:guest-user:as' "$RESULTS/kcmp-perf1-db.txt" &&
	{ lab_log "FAIL: per-address-space buckets under perf (it has no ASID)"; fail=1; }
t=$(kernel_trouble)
[ -z "$t" ] || { dmesg >"$RESULTS/l1-dmesg-kcmp.txt"; lab_log "FAIL: kernel log: $(echo "$t" | head -n 3)"; fail=1; }

stop_guest db
stop_guest web
rmmod domprof 2>/dev/null || true
lab_summary scenario_s "$(lab_since "$t0")"
[ $fail -eq 0 ] || lab_fail "see above"
lab_log "PASS: per-domain shares under kmod within $TOL points of perf's; db split into $spaces address spaces"
