# The kernel collector (host-kmod) in L1.  The module was built on the
# build host against Debian's linux-headers for L1's kernel and comes in
# with the install tree (/lib/modules/VER/extra/domprof.ko); dp-kmod-read
# drives /dev/domprof and counts the decoded stream.
#
# Phase 1: with web (busy) running, 15 s of sampling give guest samples
#   that carry web's QEMU pid as domain, a vCPU index and a guest CR3.
# Phase 2: KMOD_CYCLES (25) cycles of load / sample under load / unload,
#   in two cycles of three the reader exits or is killed with sampling on
#   (its close must stop sampling, and a new reader start), and CPU 1 taken
#   offline and back while sampling in one cycle of five.
# Phase 3: with KVM unloaded the module loads, samples the host, unloads.
# Must hold throughout: no oops, WARNING or BUG in L1's kernel log, the
# module unloads every time, and kvm's reference count ends where it began.
lab_require_kvm
. "$LAB/lib-kmod.sh"
kmod_begin
t0=$(lab_now)
CYCLES=${KMOD_CYCLES:-25}
KO=$KMOD_KO
READ=$KMOD_READ
UUID_WEB=6b1b1d6e-0000-4000-8000-000000000011

[ -f "$KO" ] || lab_fail "no $KO in the install tree (was configure's kernel tree found?)"
[ -x "$READ" ] || lab_fail "no dp-kmod-read installed"
modinfo "$KO" | grep -E '^(vermagic|depends)' | sed 's/^/lab: /'
lab_depmod

kvm_ref=$(modref kvm)
lab_log "kvm used by $kvm_ref"

# ---- phase 1: a busy guest ----
start_guest web "$UUID_WEB" busy
# a loaded build machine makes TCG slow: give the boot more than the default
wait_guest_booted web 300
web=$(guest_pid web)
lab_log "web pid $web, vCPU threads $(guest_vcpu_tids web | tr '\n' ' ')"
modprobe domprof || lab_fail "modprobe domprof failed"
[ "$(modref kvm)" = "$kvm_ref" ] || lab_fail "loading domprof alone took a kvm reference"
timeout 120 "$READ" --seconds 15 --out "$RESULTS/kmod-phase1.raw" >"$RESULTS/kmod-phase1.txt" 2>&1 ||
	lab_fail "dp-kmod-read: $(tail -n 3 "$RESULTS/kmod-phase1.txt")"
cat "$RESULTS/kmod-phase1.txt"
cat /sys/class/misc/domprof/stats | tee "$RESULTS/kmod-phase1-stats.txt"
kmod_unload "phase 1"
P1=$RESULTS/kmod-phase1.txt
for k in samples guest_kernel guest_user guest_attributed guest_asid asids lost; do
	lab_summary "phase1_$k" "$(kv $k "$P1")"
done
[ "$(kv guest_attributed "$P1")" -ge 100 ] ||
	lab_fail "only $(kv guest_attributed "$P1") guest samples with domain and vCPU"
grep -qx "domain $web" "$P1" || lab_fail "no guest samples for web's pid $web: $(grep '^domain' "$P1")"
[ "$(kv guest_asid "$P1")" -gt 0 ] || lab_fail "no guest samples with a CR3"
[ "$(kv asids "$P1")" -ge 1 ] || lab_fail "no guest address space seen"
[ "$(kv time_backwards "$P1")" = 0 ] || lab_fail "time went backwards within a CPU"
[ "$(modref kvm)" = "$kvm_ref" ] || lab_fail "kvm used by $(modref kvm) after phase 1, $kvm_ref before"
check_kernel "phase 1"
lab_log "phase 1 PASS"

# ---- phase 2: load / sample / unload cycles ----
lab_log "phase 2: $CYCLES cycles"
kmod_cycles "$CYCLES" web 1 phase2_
stop_guest web
# ---- phase 3: no KVM (last: no guest boots on a reloaded KVM) ----
lab_log "phase 3: KVM unloaded"
rmmod kvm_amd && rmmod kvm || lab_fail "could not unload kvm"
modprobe domprof || lab_fail "modprobe domprof without kvm failed"
timeout 60 "$READ" --seconds 3 >"$RESULTS/kmod-phase3.txt" 2>&1 ||
	lab_fail "dp-kmod-read without kvm: $(tail -n 3 "$RESULTS/kmod-phase3.txt")"
cat "$RESULTS/kmod-phase3.txt"
[ "$(kv samples "$RESULTS/kmod-phase3.txt")" -gt 0 ] || lab_fail "no samples without kvm"
kmod_unload "phase 3"
modprobe kvm_amd || lab_fail "kvm_amd did not come back"
[ -c /dev/kvm ] || lab_fail "no /dev/kvm after reloading kvm_amd"
check_kernel "phase 3"
# modprobe takes kvm_amd.npt=0 from the kernel command line again
lab_log "kvm_amd back, npt=$(cat /sys/module/kvm_amd/parameters/npt)"

check_kernel "the end"
dmesg >"$RESULTS/l1-dmesg-kmod.txt"
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: phase 1 $(kv guest_attributed "$P1") attributed guest samples ($(kv asids "$P1") address spaces); $KMOD_CYCLES_SAID"
