# The demo (README): two KVM guests in the lab host, web running a
# CPU-bound workload and db mostly idle, profiled from L1 by domprof for a
# fixed time; then the domain summary and a report per domain.
#
#   tests/lab/run.sh demo            (DEMO_PROFILE_S=30 by default)
lab_require_kvm
t0=$(lab_now)
PROFILE_S=${DEMO_PROFILE_S:-30}
S=/var/lib/domprof-demo

say() { echo; echo "==> $*"; }

say "Starting two KVM guests inside the lab host:" \
	"web (busy: dd | md5sum) and db (idle)"
start_guest web 6b1b1d6e-0000-4000-8000-000000000001 busy
start_guest db 6b1b1d6e-0000-4000-8000-000000000002 idle
say "Waiting for both guests to boot"
wait_guest_booted web
wait_guest_booted db

say "opcontrol --start --domains=all: oprofiled samples the whole host (cpu-clock)"
timeout 60 opcontrol --start --session-dir="$S" --domains=all || lab_fail "opcontrol --start failed"
timeout 10 opcontrol --status --session-dir="$S" | sed -n '1,8p'
for i in $(seq "$PROFILE_S" -5 1); do
	echo "    profiling: ${i}s left"
	sleep $((i < 5 ? i : 5))
done
say "opcontrol --stop"
timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
timeout 10 opcontrol --status --session-dir="$S" | sed -n '/Statistics/,/samples lost/p'

say "opreport: the domain summary (host and each guest) and the top images"
timeout 120 opreport --session-dir="$S" 2>&1 | tee "$RESULTS/demo-summary.txt" | head -n 30

say "opreport --domain=web: what web's samples were (guest kernel, guest user, vmm)"
timeout 120 opreport --session-dir="$S" --domain=web 2>&1 | tee "$RESULTS/demo-web.txt" | head -n 25

say "opreport --domain=db"
timeout 120 opreport --session-dir="$S" --domain=db 2>&1 | tee "$RESULTS/demo-db.txt" | head -n 25

say "opreport --domain=web -l: symbols of web's QEMU work ({vmm}); guest code" \
	"shows as (no symbols) until the guest agent supplies its binaries"
timeout 180 opreport --session-dir="$S" --domain=web -l 2>&1 | tee "$RESULTS/demo-web-symbols.txt" |
	head -n 25

say "opreport --domain=host: the host's own work"
timeout 120 opreport --session-dir="$S" --domain=host 2>&1 | tee "$RESULTS/demo-host.txt" | head -n 15

say "Per-domain metadata ($S/domains/NAME/info)"
for d in web db; do
	echo "--- $d"
	cat "$S/domains/$d/info"
done

stop_guest web
stop_guest db
cp "$S/stats" "$RESULTS/demo-stats.txt"
lab_summary demo_s "$(lab_since "$t0")"
say "Demo done in $(lab_since "$t0")s; reports in $RESULTS/demo-*.txt"
