# lab-kind: xen
# domprof on Xen's dom0, end to end: `opcontrol --start` with no
# --collector picks the xen collector (vCPU contexts read through
# libxenctrl) and the xenctrl domain backend by itself, and profiles two PV
# guests, web (busy) and db (idle).  Checks:
#  - opcontrol --status names the xen collector;
#  - opreport's DOMAIN SUMMARY names both, web has at least 5 times db's
#    samples, and `opreport --domain=web` / `--domain=db` report each alone;
#  - each domain's share of the samples is within 10 points of its share
#    of the CPU time Xen accounted to the two (xl list) over the same run;
#  - web's sampled time (samples x the 1 ms period) against Xen's
#    accounting of web (xl list), printed as ratios over two windows: the
#    outer one (read before opcontrol --start and after --stop) holds the
#    daemon's sampling window, the inner one (read after --start returned
#    and before --stop) lies within it.  The collector turns every
#    millisecond of vCPU time Xen counts into one sample (a remainder of
#    under 1 ms per vCPU carried, none lost), so the sampled time must lie
#    between the two: sampled <= outer and sampled >= inner, each with 2%
#    and 0.2 s (xl list rounds each reading to 0.1 s) of slack;
#  - dom0's own work is sampled in the same session (the perf collector
#    in the xen collector's stream, idle not sampled): the host row's
#    time lies within Xen's accounting of dom0 over the outer window and
#    covers at least 50% (XD_DOM0_MIN) of the inner one;
#  - web's user samples are split by guest address space (CR3): its
#    report has {anon:guest-user:asN} rows;
#  - phase 2: web destroyed and created again (a new domid) while a
#    second session profiles; the daemon keeps going and files both
#    domains' samples under web.
. "$LAB/lib-xen.sh"
lab_require_xen
t0=$(lab_now)
S=/var/lib/domprof-lab/xen
PROFILE_S=${PROFILE_S:-20}

summary_rows() {
	awk '/^DOMAIN SUMMARY/ { on = 1; next }
	     on && $1 == "domain" { next }
	     on && NF == 0 { exit }
	     on { print }'
}
row_col() { awk -v d="$1" -v c="$2" '$1 == d { v = $c } END { print v + 0 }' "$3"; }
report() {
	local out=$1
	shift
	timeout 120 opreport "$@" >"$out" 2>"$out.err" ||
		lab_fail "opreport $* failed: $(head -n 5 "$out.err")"
}

# (guests left running by a scenario sourced before, e.g. xen-smoke with
# LAB_KEEP_GUESTS=1, are reused)
xen_alive db || xen_start_guest db 6b1b1d6e-0000-4000-8000-000000000022 idle
xen_alive web || xen_start_guest web 6b1b1d6e-0000-4000-8000-000000000021 busy
xen_wait_booted db
xen_wait_booted web
timeout 10 xl list | tee "$RESULTS/xl-list.txt"

web0=$(xen_cpu_s web) db0=$(xen_cpu_s db) d00=$(xen_cpu_s Domain-0)
t=$(lab_now)
timeout 120 opcontrol --start --session-dir="$S" --domains=all >"$RESULTS/opcontrol-start.txt" 2>&1 ||
	lab_fail "opcontrol --start failed: $(tail -n 5 "$RESULTS/opcontrol-start.txt")"
lab_summary opcontrol_start_s "$(lab_since "$t")"
cat "$RESULTS/opcontrol-start.txt"
grep -q "collector: xen" "$RESULTS/opcontrol-start.txt" ||
	lab_fail "opcontrol did not pick the xen collector on dom0"
webA=$(xen_cpu_s web) d0A=$(xen_cpu_s Domain-0)
sleep "$PROFILE_S"
d0B=$(xen_cpu_s Domain-0)
timeout 60 opcontrol --status --session-dir="$S" >"$RESULTS/opcontrol-status.txt" 2>&1
grep -E "^Collector|per domain|profiled" "$RESULTS/opcontrol-status.txt"
webB=$(xen_cpu_s web)
t=$(lab_now)
timeout 120 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
lab_summary opcontrol_stop_s "$(lab_since "$t")"
web1=$(xen_cpu_s web) db1=$(xen_cpu_s db) d01=$(xen_cpu_s Domain-0)
cp "$S/oprofiled.log" "$RESULTS/oprofiled.log"
cp "$S/stats" "$RESULTS/stats.txt" 2>/dev/null
grep -E "xen collector|domain backend" "$RESULTS/oprofiled.log"

report "$RESULTS/report.txt" --session-dir="$S"
summary_rows <"$RESULTS/report.txt" >"$RESULTS/summary-rows.txt"
cat "$RESULTS/summary-rows.txt"
report "$RESULTS/report-web.txt" --session-dir="$S" --domain=web
report "$RESULTS/report-db.txt" --session-dir="$S" --domain=db
sw=$(($(row_col web 4 "$RESULTS/summary-rows.txt") + $(row_col web 5 "$RESULTS/summary-rows.txt")))
sd=$(($(row_col db 4 "$RESULTS/summary-rows.txt") + $(row_col db 5 "$RESULTS/summary-rows.txt")))
web_s=$(awk -v a="$web0" -v b="$web1" 'BEGIN { printf "%.1f", b - a }')
db_s=$(awk -v a="$db0" -v b="$db1" 'BEGIN { printf "%.1f", b - a }')
d0_s=$(awk -v a="$d00" -v b="$d01" 'BEGIN { printf "%.1f", b - a }')
lab_summary xen_samples_web "$sw"
lab_summary xen_samples_db "$sd"
lab_summary xen_cpu_web_s "$web_s"
lab_summary xen_cpu_db_s "$db_s"
lab_summary xen_cpu_dom0_s "$d0_s"

grep -q "^domain: web\|web" "$RESULTS/report-web.txt" || lab_fail "opreport --domain=web names no web"
if grep -qw db "$RESULTS/report-web.txt"; then
	lab_fail "opreport --domain=web shows db"
fi
[ "$sw" -ge 100 ] || lab_fail "only $sw guest samples for web"
[ "$sw" -ge $((5 * sd)) ] || lab_fail "web $sw samples < 5 x db $sd"
awk -v sw="$sw" -v sd="$sd" -v w="$web_s" -v d="$db_s" 'BEGIN {
	if (w + d <= 0) exit 1
	ps = 100 * sw / (sw + sd); px = 100 * w / (w + d)
	printf "web share: samples %.1f%%, Xen accounting %.1f%%\n", ps, px
	exit !(ps - px < 10 && px - ps < 10) }' || lab_fail "sample shares and Xen's accounting differ by 10 points or more"
lost=$(sed -n 's/.*xen collector: .* \([0-9]*\) lost, .*/\1/p' "$RESULTS/oprofiled.log" | tail -n 1)
[ "${lost:-x}" = 0 ] || lab_fail "the xen collector lost ${lost:-?} samples"
inner_s=$(awk -v a="$webA" -v b="$webB" 'BEGIN { printf "%.1f", b - a }')
read -r r_out r_in <<<"$(awk -v s="$sw" -v o="$web_s" -v i="$inner_s" 'BEGIN {
	printf "%.3f %.3f\n", (o > 0 ? s / 1000 / o : 0), (i > 0 ? s / 1000 / i : 0) }')"
lab_summary xen_ratio_web_outer "$r_out"
lab_summary xen_ratio_web_inner "$r_in"
lab_log "web: $sw samples = $(awk -v s="$sw" 'BEGIN { printf "%.1f", s / 1000 }')s sampled; Xen accounted ${web_s}s over the outer window (ratio $r_out, must be <= 1), ${inner_s}s over the inner one (ratio $r_in, must be >= 1)"
awk -v s="$sw" -v o="$web_s" -v i="$inner_s" 'BEGIN {
	s /= 1000; exit !(s <= o * 1.02 + 0.2 && s >= i * 0.98 - 0.2) }' ||
	lab_fail "web's sampled time is not within Xen's accounting over the inner and outer windows"
# The collector's own report of Xen's counters over its run: each
# domain's samples are its vCPU time in ms, less under 1 ms per vCPU
# carried (the guests have one vCPU; the time is printed to the ms, so
# -0.5 < ms - samples < 1.5); and what went to dom0 and to Xen itself.
grep "xen collector: over" "$RESULTS/oprofiled.log" | sed 's/.*xen collector: //' |
	tee "$RESULTS/xen-usage.txt"
grep -q "xen collector: over" "$RESULTS/oprofiled.log" ||
	lab_fail "the xen collector did not report Xen's accounting of the run"
sed -n 's/.*xen collector: domain \([0-9]*\): \([0-9.]*\) s of vCPU time.*, \([0-9]*\) samples/\1 \2 \3/p' \
	"$RESULTS/oprofiled.log" >"$RESULTS/xen-domain-usage.txt"
[ -s "$RESULTS/xen-domain-usage.txt" ] || lab_fail "no per-domain usage from the xen collector"
awk '{ d = $2 * 1000 - $3; if (d <= -0.5 || d >= 1.5) { print "domain " $1 ": " $3 " samples for " $2 " s"; bad = 1 } }
     END { exit bad }' "$RESULTS/xen-domain-usage.txt" ||
	lab_fail "samples and the vCPU time Xen counted differ by a period or more"
grep -q "{anon:guest-user:as[0-9]" "$RESULTS/report-web.txt" ||
	lab_fail "web's user samples are not split by address space"
# dom0's own work, sampled in the same stream (the perf collector
# embedded, idle not sampled): the host row is dom0's busy time, in the
# same unit as the domUs' (a sample a period of CPU time), so it lies
# within Xen's accounting of dom0 over the outer window, and covers at
# least half of the inner one: Xen counts in dom0's time what it does for
# dom0 (the collector's hypercalls, each look a few) and dom0's timer
# wake-ups in idle, and a timer sample is taken once when dom0 runs again,
# however long it was away (0.85 and 0.75 of the inner window in two runs,
# 2026-11-25)
grep -q "dom0 sampled by the perf collector" "$RESULTS/oprofiled.log" ||
	lab_fail "the xen collector did not sample dom0"
sh=$(row_col host 2 "$RESULTS/summary-rows.txt")
d0_in=$(awk -v a="$d0A" -v b="$d0B" 'BEGIN { printf "%.1f", b - a }')
lab_summary xen_samples_dom0 "$sh"
lab_log "dom0: $sh samples = $(awk -v s="$sh" 'BEGIN { printf "%.1f", s / 1000 }')s sampled; Xen accounted ${d0_s}s over the outer window, ${d0_in}s over the inner one"
awk -v s="$sh" -v o="$d0_s" -v i="$d0_in" -v m="${XD_DOM0_MIN:-0.5}" 'BEGIN {
	s /= 1000; exit !(s > 0 && s <= o * 1.02 + 0.2 && s >= i * m - 0.2) }' ||
	lab_fail "dom0's sampled time is not within Xen's accounting of dom0 (outer window, ${XD_DOM0_MIN:-0.5} of the inner)"
lab_log "phase 1 PASS: web $sw samples, db $sd, dom0 $sh; Xen accounting web ${web_s}s, db ${db_s}s, dom0 ${d0_s}s"

# ---- phase 2: web destroyed and created again while profiling ----
# The new domain has a new domid; the daemon must keep going, follow it
# (xenstore watches, the collector's rescan) and file its samples under
# the same name, web.
xen_destroy db
S2=/var/lib/domprof-lab/xen2
timeout 120 opcontrol --start --session-dir="$S2" --domains=all >/dev/null 2>&1 ||
	lab_fail "opcontrol --start (phase 2) failed"
sleep 3
old_id=$(xen_domid web)
uuid=$(xen_uuid web) || lab_fail "no UUID for web in xenstore"
xen_destroy web
# the same domain again: same name, same UUID (as xl create of its
# config file would give); its boot is busy work enough to be sampled
xen_start_guest web "$uuid" busy
new_id=$(xen_domid web)
sleep "${XEN_RECREATE_S:-10}"
dpid=$(cat "$S2/oprofiled.pid" 2>/dev/null)
kill -0 "${dpid:-0}" 2>/dev/null || lab_fail "oprofiled died when web was destroyed and created again"
timeout 120 opcontrol --stop --session-dir="$S2" || lab_fail "opcontrol --stop (phase 2) failed"
cp "$S2/oprofiled.log" "$RESULTS/phase2-oprofiled.log"
report "$RESULTS/phase2-report.txt" --session-dir="$S2"
summary_rows <"$RESULTS/phase2-report.txt" | tee "$RESULTS/phase2-summary-rows.txt"
sw2=$(($(row_col web 4 "$RESULTS/phase2-summary-rows.txt") + $(row_col web 5 "$RESULTS/phase2-summary-rows.txt")))
# the collector's count for the new domid (it lists the domains live at its stop)
new_samples=$(sed -n "s/.*xen collector: domain $new_id: .*, \([0-9]*\) samples/\1/p" "$RESULTS/phase2-oprofiled.log" | tail -n 1)
lab_summary phase2_web_domids "$old_id $new_id"
lab_summary phase2_web_samples "$sw2"
lab_summary phase2_new_domid_samples "${new_samples:-0}"
xen_destroy web
lab_summary scenario_s "$(lab_since "$t0")"
[ -n "$old_id" ] && [ -n "$new_id" ] && [ "$old_id" != "$new_id" ] ||
	lab_fail "web's domid did not change ($old_id, $new_id)"
[ "${new_samples:-0}" -ge 1000 ] || lab_fail "the new web (domid $new_id) got ${new_samples:-0} samples"
[ "$sw2" -gt "$new_samples" ] ||
	lab_fail "web's samples ($sw2) do not hold both the old and the new domain's ($new_samples)"
lab_log "PASS: web $sw samples, db $sd; Xen accounting web ${web_s}s, db ${db_s}s, dom0 ${d0_s}s; web re-created (domid $old_id -> $new_id) while profiling: $sw2 samples under web, $new_samples of them the new domain's"
