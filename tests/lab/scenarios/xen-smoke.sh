# lab-kind: xen
# Smoke test of the Xen lab: L1 is Xen 4.17's dom0, two PV guests run in
# it, web (busy) and db (idle).  Shows xl list / xl vcpu-list and checks
# Xen's own accounting: over 20 s web gets at least 5 times db's CPU time.
# With the sampling prototype staged ($STAGE/lab/xen-sample-proto), also
# runs it and checks its per-domain sample counts against that accounting.
. "$LAB/lib-xen.sh"
lab_require_xen
t0=$(lab_now)
timeout 10 xl info >"$RESULTS/xl-info.txt" 2>&1
lab_log "xen: $(awk '/^xen_version|^nr_cpus|^free_memory/ { printf "%s=%s ", $1, $3 }' "$RESULTS/xl-info.txt")"
# How fast dom0 is on this emulated CPU: process creation and system
# calls, the two things xl and the domain builder do most.
t=$(lab_now)
for i in $(seq 20); do /bin/true; done
lab_summary dom0_20_execs_s "$(lab_since "$t")"
t=$(lab_now)
dd if=/dev/zero of=/dev/null bs=1 count=20000 2>/dev/null
lab_summary dom0_40k_syscalls_s "$(lab_since "$t")"

# db first: a busy web would slow down dom0's building of db
xen_start_guest db 6b1b1d6e-0000-4000-8000-000000000012 idle
xen_wait_booted db
lab_summary l2_boot_db_s "$(cat "$LAB_RUN/db.booted")"
xen_start_guest web 6b1b1d6e-0000-4000-8000-000000000011 busy
xen_wait_booted web
lab_summary l2_boot_web_s "$(cat "$LAB_RUN/web.booted")"

timeout 10 xl list | tee "$RESULTS/xl-list.txt"
timeout 10 xl vcpu-list | tee "$RESULTS/xl-vcpu-list.txt"

sleep 2
web0=$(xen_cpu_s web) db0=$(xen_cpu_s db) d00=$(xen_cpu_s Domain-0)
proto=$STAGE/lab/xen-sample-proto
if [ -x "$proto" ]; then
	timeout 60 "$proto" -t 20 -r 1000 >"$RESULTS/proto.txt" 2>"$RESULTS/proto.err" ||
		lab_fail "sampling prototype failed: $(tail -n 5 "$RESULTS/proto.err")"
	cat "$RESULTS/proto.txt"
else
	lab_log "no sampling prototype staged; accounting only"
	sleep 20
fi
web1=$(xen_cpu_s web) db1=$(xen_cpu_s db) d01=$(xen_cpu_s Domain-0)
timeout 10 xl list | tee "$RESULTS/xl-list-after.txt"
web_s=$(awk -v a="$web0" -v b="$web1" 'BEGIN { printf "%.1f", b - a }')
db_s=$(awk -v a="$db0" -v b="$db1" 'BEGIN { printf "%.1f", b - a }')
d0_s=$(awk -v a="$d00" -v b="$d01" 'BEGIN { printf "%.1f", b - a }')
lab_summary xen_cpu_web_s "$web_s"
lab_summary xen_cpu_db_s "$db_s"
lab_summary xen_cpu_dom0_s "$d0_s"

# LAB_KEEP_GUESTS=1: leave them for a scenario sourced after this one
if [ "${LAB_KEEP_GUESTS:-0}" != 1 ]; then
	xen_destroy web
	xen_destroy db
fi
lab_summary scenario_s "$(lab_since "$t0")"

awk -v w="$web_s" 'BEGIN { exit !(w >= 2) }' || lab_fail "web got only ${web_s}s of CPU in 20 s"
awk -v w="$web_s" -v d="$db_s" 'BEGIN { exit !(w >= 5 * d) }' ||
	lab_fail "web ${web_s}s < 5 x db ${db_s}s of CPU"
if [ -x "$proto" ]; then
	# proto prints "domain DOMID NAME samples N weight_ms W xen_ms X"
	sw=$(awk '$3 == "web" { print $5 }' "$RESULTS/proto.txt")
	sd=$(awk '$3 == "db" { print $5 }' "$RESULTS/proto.txt")
	sw=${sw:-0} sd=${sd:-0}
	lab_summary proto_samples_web "$sw"
	lab_summary proto_samples_db "$sd"
	[ "$sw" -ge $((5 * sd)) ] || lab_fail "prototype: web $sw samples < 5 x db $sd"
fi
lab_log "PASS: Xen accounting web ${web_s}s, db ${db_s}s, dom0 ${d0_s}s of CPU in 20 s"
