# Load cycles of the kernel module under nested paging: kvm_amd reloaded
# with npt=1, a busy guest running (NPTC_GUEST, when it names one that
# runs already, else web started busy), NPTC_CYCLES (50) cycles of load /
# sample / unload (lib-kmod.sh's kmod_cycles: in two of three the reader
# exits or is killed with sampling on and its close stops it, CPU 1 taken
# offline and back while sampling in one of five), sampling 0.6 s a cycle
# with guest call chains (8 deep), walked in the handler in even cycles
# and deferred the NMI's way (defer_walks=1) in odd ones, so some of
# those closes find deferred walks pending.
# Must hold: no oops, WARNING or BUG in L1's kernel log, the module
# unloads every time, kvm's reference count ends where it began, the
# guest lives through it, and the cycles did take guest samples with the
# CR3 read from the VMCB (the module's cr3_direct in a drained cycle).
lab_require_kvm
. "$LAB/lib-kmod.sh"
kmod_begin
t0=$(lab_now)
CYCLES=${NPTC_CYCLES:-50}
UUID_WEB=6b1b1d6e-0000-4000-8000-0000000000d2
[ -f "$KMOD_KO" ] || lab_fail "no $KMOD_KO in the install tree"
[ -x "$KMOD_READ" ] || lab_fail "no dp-kmod-read installed"
lab_depmod
lab_kvm_npt
rmmod domprof 2>/dev/null || true
kvm_ref=$(modref kvm)

G=${NPTC_GUEST:-web}
if ! guest_alive "$G" 2>/dev/null; then
	G=web
	start_guest web "$UUID_WEB" busy
	wait_guest_booted web 300
fi
lab_log "phase: $CYCLES cycles under npt=1, $G pid $(guest_pid "$G")"
KMOD_CYCLE_ODD="defer_walks=1" KMOD_CYCLE_READ="--callgraph 8" kmod_cycles "$CYCLES" "$G" 0.6 npt_
[ "$(modref kvm)" = "$kvm_ref" ] || lab_fail "kvm used by $(modref kvm) after the cycles, $kvm_ref before"
# one more drained cycle whose counters are read before the unload
insmod "$KMOD_KO" || lab_fail "insmod after the cycles failed"
timeout 60 "$KMOD_READ" --seconds 2 >"$RESULTS/nptc-read.txt" 2>&1 ||
	lab_fail "dp-kmod-read: $(tail -n 3 "$RESULTS/nptc-read.txt")"
cp /sys/class/misc/domprof/stats "$RESULTS/nptc-kmod-stats.txt"
kmod_unload "the last cycle"
direct=$(kmod_sum cr3_direct "$RESULTS/nptc-kmod-stats.txt")
lab_summary npt_last_cycle "guest_asid $(kv guest_asid "$RESULTS/nptc-read.txt") cr3_direct $direct"
[ "$direct" -gt 0 ] || lab_fail "no guest CR3 read from the VMCB in the last cycle (cr3_direct 0)"
stop_guest "$G"
check_kernel "the end" nptc
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: $KMOD_CYCLES_SAID under npt=1, kernel log clean"
