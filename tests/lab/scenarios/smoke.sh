# Lab self-check (tests the lab, not domprof; scripts/test.sh counts it
# apart): real KVM guests inside L1, and perf in L1 seeing their samples as
# guest samples of the right QEMU process.
lab_require_kvm
lab_check_domprof_libs
lab_log "kvm_amd: nested=$(cat /sys/module/kvm_amd/parameters/nested 2>/dev/null)" \
	"npt=$(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null)"
t0=$(lab_now)

start_guest web 6b1b1d6e-0000-4000-8000-000000000001 busy
start_guest db 6b1b1d6e-0000-4000-8000-000000000002 idle
wait_guest_booted web
lab_summary l2_boot_web_s "$(cat "$LAB_RUN/web.booted")"
wait_guest_booted db
lab_summary l2_boot_db_s "$(cat "$LAB_RUN/db.booted")"
grep -q "port vport.* name $LAB_AGENT_PORT" "$RESULTS/web.console" ||
	lab_fail "web does not see its $LAB_AGENT_PORT port"
[ -S "$LAB_RUN/web.agent" ] || lab_fail "no agent socket $LAB_RUN/web.agent"
lab_log "web vCPU threads: $(guest_vcpu_tids web | tr '\n' ' ')"

sleep 2
timeout 120 perf record -q -a -e cpu-clock -o "$RESULTS/perf.data" -- sleep 20 ||
	lab_fail "perf record failed"
perf_guest_samples_by_pid "$RESULTS/perf.data" >"$RESULTS/guest-samples.txt"
total=$(awk '$1 == "total" { print $2 }' "$RESULTS/guest-samples.txt")
web=$(awk -v p="$(guest_pid web)" '$1 == p { print $2 }' "$RESULTS/guest-samples.txt")
db=$(awk -v p="$(guest_pid db)" '$1 == p { print $2 }' "$RESULTS/guest-samples.txt")
web=${web:-0} db=${db:-0}
lab_summary samples_total "$total"
lab_summary guest_samples_web "$web"
lab_summary guest_samples_db "$db"

stop_guest web
kill_guest db
lab_summary scenario_s "$(lab_since "$t0")"

[ "$web" -ge 5 ] || lab_fail "only $web guest samples for web"
[ "$web" -ge $((5 * db)) ] || lab_fail "web $web guest samples < 5 x db $db"
lab_log "PASS: web $web guest samples, db $db, of $total"
