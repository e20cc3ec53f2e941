# The demo (README): two KVM guests in the lab host, web running CPU-bound
# work and db mostly idle, each with opagent inside; profiled from L1 by
# domprof for a fixed time; then the domain summary and a report per domain
# down to guest process, binary and symbol, the session's flame graph
# (demo-flame.svg) and the session archived with every binary its samples
# need (demo-archive.tar.gz), which tests/lab/lab-views.sh reads on the
# build host: the views agree with opreport there, and a screenshot of the
# flame graph is taken.
#
#   tests/lab/run.sh demo            (DEMO_PROFILE_S=30 by default)
#   tests/lab/lab-views.sh           (the demo, then the views' checks)
lab_require_kvm
t0=$(lab_now)
PROFILE_S=${DEMO_PROFILE_S:-30}
S=/var/lib/domprof-demo
ratio_bin=$STAGE/lab/ratio-static
opagent_bin=$(command -v opagent || echo /usr/local/sbin/opagent)
[ -x "$ratio_bin" ] || lab_fail "no $ratio_bin staged (tests/e2e/ratio-static)"
[ -x "$opagent_bin" ] || lab_fail "no opagent installed"

say() { echo; echo "==> $*"; }

# A share per guest with opagent and the guest's workload.
mkshare() {
	rm -rf "$1"
	mkdir -p "$1"
	cp "$opagent_bin" "$1/opagent"
	cp "$ratio_bin" "$1/ratio"
	printf '%s\n' "$2" >"$1/work.sh"
}
mkshare /tmp/share-web '/share/ratio 3600 70 &
while :; do dd if=/dev/zero bs=1M count=64 2>/dev/null | md5sum >/dev/null; done'
mkshare /tmp/share-db 'while :; do sleep 3600; done'

say "Starting two KVM guests inside the lab host, each running opagent:" \
	"web (busy: a program burning CPU 70/30 in burn_a/burn_b, and dd | md5sum) and db (idle)"
LAB_GUEST_SHARE=/tmp/share-web LAB_GUEST_AGENT=/share/opagent \
	start_guest web 6b1b1d6e-0000-4000-8000-000000000001 script
LAB_GUEST_SHARE=/tmp/share-db LAB_GUEST_AGENT=/share/opagent \
	start_guest db 6b1b1d6e-0000-4000-8000-000000000002 script
say "Waiting for both guests to boot"
# the lab's default of 120 s ended both attempts of a run on a loaded build
# host (load 13 on 2 cores) with "hung while booting"; libvirt-domprof
# allows 300 s for the same reason
wait_guest_booted web "${DEMO_BOOT_LIMIT_S:-300}"
wait_guest_booted db "${DEMO_BOOT_LIMIT_S:-300}"

say "opcontrol --start --domains=all: oprofiled samples the whole host (cpu-clock)"
timeout 60 opcontrol --start --session-dir="$S" --domains=all || lab_fail "opcontrol --start failed"
sleep 2
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

say "opreport --domain=web -l: web's guest processes, binaries and symbols" \
	"(from opagent), guest kernel symbols, and its QEMU's work (web/vmm)"
timeout 180 opreport --session-dir="$S" --domain=web -l 2>&1 | tee "$RESULTS/demo-web-symbols.txt" |
	head -n 30

say "opreport --domain=web -l image:/share/ratio: one guest binary"
timeout 120 opreport --session-dir="$S" --domain=web -l image:/share/ratio 2>&1 |
	tee "$RESULTS/demo-web-ratio.txt" | head -n 12

say "opreport --domain=host: the host's own work"
timeout 120 opreport --session-dir="$S" --domain=host 2>&1 | tee "$RESULTS/demo-host.txt" | head -n 15

say "opflame: the session's flame graph (demo-flame.svg; open it in a browser)"
timeout 180 opflame --session-dir="$S" -o "$RESULTS/demo-flame.svg" || lab_fail "opflame failed"
ls -l "$RESULTS/demo-flame.svg"

say "oparchive: the session and every binary its samples need, for another machine"
timeout 300 oparchive --session-dir="$S" --tar="$RESULTS/demo-archive.tar.gz" ||
	lab_fail "oparchive failed"
ls -l "$RESULTS/demo-archive.tar.gz"

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
