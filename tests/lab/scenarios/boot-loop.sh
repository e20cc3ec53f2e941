# The emulator's fault rate, for the lab's own upkeep (not in the test
# command): guest web runs busy while guest db boots and stops
# BOOT_LOOP_N times (20 by default), which is when most faults struck.
# Run it with LAB_ATTEMPTS=1 so that a fault ends the run and is named:
#   LAB_ATTEMPTS=1 tests/lab/run.sh boot-loop --no-domprof --timeout 1800
lab_require_kvm
N=${BOOT_LOOP_N:-20}
t0=$(lab_now)
start_guest web 6b1b1d6e-0000-4000-8000-000000000001 busy
wait_guest_booted web
for i in $(seq 1 "$N"); do
	start_guest db 6b1b1d6e-0000-4000-8000-000000000002 idle
	wait_guest_booted db
	stop_guest db
	lab_summary "boot_$i" "$(cat "$LAB_RUN/db.booted")"
done
stop_guest web
lab_summary boot_loop_s "$(lab_since "$t0")"
lab_log "PASS: $N boots of db beside a busy web"
