# lab-kind: xen
# Domain attribution by domprof on Xen: oprofiled in dom0 with the xen
# collector (vCPU contexts read through libxenctrl) and the xenctrl domain
# backend profiles two PV guests, web (busy) and db (idle).  Checks that
# opreport's DOMAIN SUMMARY names both, that web has at least 5 times db's
# samples, and that each domain's share of the samples is within 10 points
# of its share of the CPU time Xen accounted to the two over the run.
. "$LAB/lib-xen.sh"
lab_require_xen
lab_check_domprof_libs
S=/var/lib/domprof-lab/xen
PROFILE_S=${PROFILE_S:-20}

summary_rows() {
	awk '/^DOMAIN SUMMARY/ { on = 1; next }
	     on && $1 == "domain" { next }
	     on && NF == 0 { exit }
	     on { print }'
}
row_col() { awk -v d="$1" -v c="$2" '$1 == d { v = $c } END { print v + 0 }' "$3"; }

# (guests left running by a scenario sourced before, e.g. xen-smoke with
# LAB_KEEP_GUESTS=1, are reused)
xen_alive db || xen_start_guest db 6b1b1d6e-0000-4000-8000-000000000022 idle
xen_wait_booted db
xen_alive web || xen_start_guest web 6b1b1d6e-0000-4000-8000-000000000021 busy
xen_wait_booted web
timeout 10 xl list | tee "$RESULTS/xl-list.txt"

web0=$(xen_cpu_s web) db0=$(xen_cpu_s db)
timeout 60 oprofiled --session-dir="$S" --collector=xen --domains=all ||
	lab_fail "oprofiled --collector=xen did not start: $(tail -n 5 "$S/oprofiled.log" 2>/dev/null)"
dpid=$(cat "$S/oprofiled.pid")
sleep "$PROFILE_S"
kill -0 "$dpid" 2>/dev/null || lab_fail "oprofiled died: $(tail -n 5 "$S/oprofiled.log")"
kill -TERM "$dpid"
i=0
while kill -0 "$dpid" 2>/dev/null && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
kill -0 "$dpid" 2>/dev/null && lab_fail "oprofiled ignored SIGTERM for 60 s"
web1=$(xen_cpu_s web) db1=$(xen_cpu_s db)
cp "$S/oprofiled.log" "$RESULTS/oprofiled.log"
cp "$S/stats" "$RESULTS/stats.txt" 2>/dev/null

timeout 120 opreport --session-dir="$S" >"$RESULTS/report.txt" 2>"$RESULTS/report.err" ||
	lab_fail "opreport failed: $(head -n 5 "$RESULTS/report.err")"
summary_rows <"$RESULTS/report.txt" >"$RESULTS/summary-rows.txt"
cat "$RESULTS/summary-rows.txt"
sw=$(($(row_col web 4 "$RESULTS/summary-rows.txt") + $(row_col web 5 "$RESULTS/summary-rows.txt")))
sd=$(($(row_col db 4 "$RESULTS/summary-rows.txt") + $(row_col db 5 "$RESULTS/summary-rows.txt")))
web_s=$(awk -v a="$web0" -v b="$web1" 'BEGIN { printf "%.1f", b - a }')
db_s=$(awk -v a="$db0" -v b="$db1" 'BEGIN { printf "%.1f", b - a }')
lab_summary xen_samples_web "$sw"
lab_summary xen_samples_db "$sd"
lab_summary xen_cpu_web_s "$web_s"
lab_summary xen_cpu_db_s "$db_s"
xen_destroy web
xen_destroy db

[ "$sw" -ge 100 ] || lab_fail "only $sw guest samples for web"
[ "$sw" -ge $((5 * sd)) ] || lab_fail "web $sw samples < 5 x db $sd"
awk -v sw="$sw" -v sd="$sd" -v w="$web_s" -v d="$db_s" 'BEGIN {
	if (w + d <= 0) exit 1
	ps = 100 * sw / (sw + sd); px = 100 * w / (w + d)
	printf "web share: samples %.1f%%, Xen accounting %.1f%%\n", ps, px
	exit !(ps - px < 10 && px - ps < 10) }' || lab_fail "sample shares and Xen's accounting differ by 10 points or more"
lab_log "PASS: web $sw samples, db $sd; Xen accounting web ${web_s}s, db ${db_s}s"
