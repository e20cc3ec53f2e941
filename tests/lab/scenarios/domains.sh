# Domain attribution by domprof itself (not perf): the installed opcontrol,
# oprofiled and opreport inside L1 profile two KVM guests.
#
# Phase 1 (must hold): web busy, db idle; after a fixed profile the domain
# summary shows web's guest samples >= 5 x db's, and the summary's rows
# (host + every domain) add up to samples_received in the daemon's stats.
# Phase 2: web's QEMU is killed (SIGKILL) while profiling; the daemon keeps
# running, db still gets samples afterwards, and opreport reads the whole
# tree without a warning.
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
PROFILE_S=${DOMAINS_PROFILE_S:-20}
S1=/var/lib/domprof-lab/phase1
S2=/var/lib/domprof-lab/phase2
UUID_WEB=6b1b1d6e-0000-4000-8000-000000000001
UUID_DB=6b1b1d6e-0000-4000-8000-000000000002

# The DOMAIN SUMMARY rows of an opreport output on stdin:
# "NAME SAMPLES PCT GUEST_KERNEL GUEST_USER VMM".
summary_rows() {
	awk '/^DOMAIN SUMMARY/ { on = 1; next }
	     on && $1 == "domain" { next }
	     on && NF == 0 { exit }
	     on { print }'
}
# Column @2 of domain @1's row in summary file @3 (0 if absent).
row_col() { awk -v d="$1" -v c="$2" '$1 == d { v = $c } END { print v + 0 }' "$3"; }
stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1/stats"; }

# opreport with its stderr kept apart; fails the scenario on an error
# status or on any warning but one: a stripped host binary (QEMU, its
# libraries) with no debug info installed is named by its dynamic symbols
# and said so, which is the report's business, not this scenario's.
report() {
	local out=$1 err=$1.err
	shift
	timeout 120 opreport "$@" >"$out" 2>"$err" ||
		lab_fail "opreport $* failed: $(head -n 5 "$err")"
	if grep -v ': warning: no debug info for ' "$err" >"$err.other"; then
		lab_fail "opreport $* warned: $(head -n 5 "$err.other")"
	fi
}

# the idle one first: a guest boots 10 to 15 s slower beside a busy one
start_guest db "$UUID_DB" idle
start_guest web "$UUID_WEB" busy
wait_guest_booted db
wait_guest_booted web
lab_log "web pid $(guest_pid web), vCPU threads $(guest_vcpu_tids web | tr '\n' ' ')"
lab_log "db pid $(guest_pid db), vCPU threads $(guest_vcpu_tids db | tr '\n' ' ')"

# ---- phase 1 ----
lab_log "phase 1: profiling all domains for ${PROFILE_S}s"
timeout 60 opcontrol --start --session-dir="$S1" --domains=all ||
	lab_fail "opcontrol --start failed"
sleep "$PROFILE_S"
timeout 60 opcontrol --stop --session-dir="$S1" || lab_fail "opcontrol --stop failed"
cp "$S1/stats" "$RESULTS/phase1-stats.txt"
cp "$S1/oprofiled.log" "$RESULTS/phase1-oprofiled.log"
tar -C "$S1" -cf "$RESULTS/phase1-domains.tar" domains 2>/dev/null
t=$(lab_now)
report "$RESULTS/phase1-report.txt" --session-dir="$S1"
lab_summary phase1_opreport_s "$(lab_since "$t")"
summary_rows <"$RESULTS/phase1-report.txt" >"$RESULTS/phase1-summary.txt"
cat "$RESULTS/phase1-summary.txt"

received=$(stat_of "$S1" samples_received)
unselected=$(stat_of "$S1" samples_domain_unselected)
sum=$(awk '{ s += $2 } END { print s + 0 }' "$RESULTS/phase1-summary.txt")
web_guest=$(($(row_col web 4 "$RESULTS/phase1-summary.txt") + $(row_col web 5 "$RESULTS/phase1-summary.txt")))
db_guest=$(($(row_col db 4 "$RESULTS/phase1-summary.txt") + $(row_col db 5 "$RESULTS/phase1-summary.txt")))
web_vmm=$(row_col web 6 "$RESULTS/phase1-summary.txt")
lab_summary phase1_samples_received "$received"
lab_summary phase1_summary_sum "$sum"
lab_summary phase1_web_guest "$web_guest"
lab_summary phase1_db_guest "$db_guest"
lab_summary phase1_web_vmm "$web_vmm"
lab_summary phase1_unresolved_no_domain "$(stat_of "$S1" unresolved_no_domain)"

[ -n "$received" ] || lab_fail "no samples_received in $S1/stats"
[ "$unselected" = 0 ] || lab_fail "samples_domain_unselected $unselected with --domains=all"
[ "$sum" -eq "$received" ] ||
	lab_fail "summary rows add up to $sum, the daemon received $received"
[ "$web_guest" -ge 100 ] || lab_fail "only $web_guest guest samples for web"
[ "$web_guest" -ge $((5 * db_guest)) ] ||
	lab_fail "web $web_guest guest samples < 5 x db $db_guest"
[ "$web_vmm" -gt 0 ] || lab_fail "no {vmm} samples for web"
for d in web db; do
	grep -qx "state running" "$S1/domains/$d/info" ||
		lab_fail "domains/$d/info missing or not running: $(cat "$S1/domains/$d/info" 2>&1)"
done
grep -qx "uuid $UUID_WEB" "$S1/domains/web/info" || lab_fail "web's info has the wrong uuid"
lab_log "phase 1 PASS: web $web_guest guest samples, db $db_guest; rows sum $sum = received $received"

# ---- phase 2 ----
lab_log "phase 2: killing web's QEMU while profiling"
timeout 60 opcontrol --start --session-dir="$S2" --domains=all ||
	lab_fail "opcontrol --start (phase 2) failed"
dpid=$(cat "$S2/oprofiled.pid")
sleep 8
timeout 30 opcontrol --dump --session-dir="$S2" || lab_fail "opcontrol --dump failed"
report "$RESULTS/phase2-before.txt" --session-dir="$S2"
summary_rows <"$RESULTS/phase2-before.txt" >"$RESULTS/phase2-before-summary.txt"
kill_guest web
sleep 8
kill -0 "$dpid" 2>/dev/null || lab_fail "oprofiled (pid $dpid) died after web was killed"
timeout 30 opcontrol --dump --session-dir="$S2" || lab_fail "opcontrol --dump after the kill failed"
report "$RESULTS/phase2-after.txt" --session-dir="$S2"
summary_rows <"$RESULTS/phase2-after.txt" >"$RESULTS/phase2-after-summary.txt"
timeout 60 opcontrol --stop --session-dir="$S2" || lab_fail "opcontrol --stop (phase 2) failed"
cp "$S2/stats" "$RESULTS/phase2-stats.txt"
cp "$S2/oprofiled.log" "$RESULTS/phase2-oprofiled.log"
report "$RESULTS/phase2-final.txt" --session-dir="$S2"
summary_rows <"$RESULTS/phase2-final.txt" >"$RESULTS/phase2-final-summary.txt"
report "$RESULTS/phase2-web.txt" --session-dir="$S2" --domain=web -l
cat "$RESULTS/phase2-before-summary.txt" "$RESULTS/phase2-after-summary.txt"

db_before=$(row_col db 2 "$RESULTS/phase2-before-summary.txt")
db_after=$(row_col db 2 "$RESULTS/phase2-after-summary.txt")
web_before=$(row_col web 2 "$RESULTS/phase2-before-summary.txt")
web_final=$(row_col web 2 "$RESULTS/phase2-final-summary.txt")
received2=$(stat_of "$S2" samples_received)
sum2=$(awk '{ s += $2 } END { print s + 0 }' "$RESULTS/phase2-final-summary.txt")
lab_summary phase2_db_before "$db_before"
lab_summary phase2_db_after "$db_after"
lab_summary phase2_web_before "$web_before"
lab_summary phase2_web_final "$web_final"
lab_summary phase2_samples_received "$received2"
lab_summary phase2_summary_sum "$sum2"
lab_summary phase2_domains_running "$(stat_of "$S2" domains_running)"

[ "$web_before" -gt 0 ] || lab_fail "web had no samples before it was killed"
[ "$web_final" -ge "$web_before" ] || lab_fail "web's samples shrank: $web_before -> $web_final"
[ "$db_after" -gt "$db_before" ] ||
	lab_fail "db got no samples after web was killed ($db_before -> $db_after)"
grep -qx "state stopped" "$S2/domains/web/info" ||
	lab_fail "web's info does not say stopped: $(cat "$S2/domains/web/info")"
grep -q "domain web stopped" "$S2/oprofiled.log" || lab_fail "the daemon did not log web's stop"
[ "$sum2" -eq "$received2" ] ||
	lab_fail "phase 2: summary rows add up to $sum2, the daemon received $received2"

stop_guest db
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: web $web_guest guest samples vs db $db_guest; sums agree; web killed, db went on ($db_before -> $db_after)"
