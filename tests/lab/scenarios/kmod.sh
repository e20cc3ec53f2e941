# The kernel collector (host-kmod) in L1.  The module was built on the
# build host against Debian's linux-headers for L1's kernel and comes in
# with the install tree (/lib/modules/VER/extra/domprof.ko); dp-kmod-read
# drives /dev/domprof and counts the decoded stream.
#
# Phase 1: with web (busy) running, 15 s of sampling give guest samples
#   that carry web's QEMU pid as domain, a vCPU index and a guest CR3.
# Phase 2: KMOD_CYCLES (25) cycles of load / sample under load / unload,
#   unloading while sampling in two cycles of three, and CPU 1 taken
#   offline and back while sampling in one cycle of five.
# Phase 3: with KVM unloaded the module loads, samples the host, unloads.
# Must hold throughout: no oops, WARNING or BUG in L1's kernel log, the
# module unloads every time, and kvm's reference count ends where it began.
lab_require_kvm
t0=$(lab_now)
CYCLES=${KMOD_CYCLES:-25}
KVER=$(uname -r)
KO=/lib/modules/$KVER/extra/domprof.ko
READ=$(ls /usr/local/libexec/domprof/dp-kmod-read /usr/libexec/domprof/dp-kmod-read 2>/dev/null | head -n 1)
UUID_WEB=6b1b1d6e-0000-4000-8000-000000000011
dmesg_base=$(dmesg | wc -l)

[ -f "$KO" ] || lab_fail "no $KO in the install tree (was configure's kernel tree found?)"
[ -x "$READ" ] || lab_fail "no dp-kmod-read installed"
modinfo "$KO" | grep -E '^(vermagic|depends)' | sed 's/^/lab: /'
lab_depmod

# "used by" count of module $1 in /proc/modules, empty if not loaded.
# Shell builtins only: under TCG every exec costs, and phase 2 loops.
modref() {
	local m s r rest
	while read -r m s r rest; do
		[ "$m" = "$1" ] && { echo "$r"; return; }
	done </proc/modules
}
loaded() { [ -n "$(modref domprof)" ]; }
# Is CPU $1 counting (1) or not (0) per the module's stats?
counting() {
	local l
	while read -r l; do
		case $l in "cpu $1 "*) l=${l#*counting }; echo "${l%% *}"; return ;; esac
	done </sys/class/misc/domprof/stats
}
# New kernel log lines that mean the kernel went wrong.
kernel_trouble() {
	dmesg | tail -n +$((dmesg_base + 1)) |
		grep -E 'Oops|WARNING:|BUG:|kernel BUG|general protection|Call Trace|refcount_t|list_(add|del) corruption|UBSAN|KASAN|stack-protector|soft lockup|hung_task' || true
}
check_kernel() {
	local t
	t=$(kernel_trouble)
	[ -z "$t" ] || { dmesg >"$RESULTS/l1-dmesg-kmod.txt"; lab_kernel_trouble "$1" "$t" "$RESULTS/l1-dmesg-kmod.txt"; }
}
unload() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		rmmod domprof 2>/dev/null && break
		sleep 0.5
	done
	loaded && lab_fail "domprof still loaded after $1 (refs $(modref domprof))"
	return 0
}
kv() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }

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
unload "phase 1"
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
t=$(lab_now)
offlined=0 kept=0 killed=0 clean=0
for ((i = 1; i <= CYCLES; i++)); do
	insmod "$KO" || lab_fail "cycle $i: insmod failed"
	case $((i % 3)) in
	0)	# sample, disable, drain, unload
		"$READ" --seconds 1 >"$RESULTS/kmod-cycle.txt" 2>&1 ||
			lab_fail "cycle $i: dp-kmod-read: $(tail -n 3 "$RESULTS/kmod-cycle.txt")"
		clean=$((clean + 1)) ;;
	1)	# leave it sampling and unload under it
		"$READ" --seconds 0.5 --keep >/dev/null 2>&1 ||
			lab_fail "cycle $i: dp-kmod-read --keep failed"
		kept=$((kept + 1)) ;;
	2)	# a reader killed while it reads, sampling still on
		"$READ" --seconds 30 >/dev/null 2>&1 &
		rpid=$!
		sleep 1
		kill -9 "$rpid" 2>/dev/null
		wait "$rpid" 2>/dev/null
		killed=$((killed + 1)) ;;
	esac
	if [ $((i % 5)) = 0 ]; then
		# CPU 1 goes away and comes back while the module samples
		[ "$(counting 0)" = 1 ] || "$READ" --seconds 0.2 --keep >/dev/null 2>&1 ||
			lab_fail "cycle $i: enable before offline failed"
		echo 0 >/sys/devices/system/cpu/cpu1/online || lab_fail "cycle $i: cpu1 offline failed"
		sleep 0.5
		[ "$(counting 1)" = 0 ] ||
			lab_fail "cycle $i: cpu 1 still counting while offline: $(cat /sys/class/misc/domprof/stats)"
		echo 1 >/sys/devices/system/cpu/cpu1/online || lab_fail "cycle $i: cpu1 online failed"
		sleep 0.5
		[ "$(counting 1)" = 1 ] ||
			lab_fail "cycle $i: cpu 1 not counting after online: $(cat /sys/class/misc/domprof/stats)"
		offlined=$((offlined + 1))
	fi
	unload "cycle $i"
	[ "$(modref kvm)" = "$kvm_ref" ] || lab_fail "cycle $i: kvm used by $(modref kvm), $kvm_ref before"
	if [ $((i % 10)) = 0 ]; then
		check_kernel "cycle $i"
		guest_alive web || lab_fail "web died by cycle $i"
		lab_log "cycle $i done"
	fi
done
lab_summary phase2_cycles "$CYCLES"
lab_summary phase2_s "$(lab_since "$t")"
lab_summary phase2_drained "$clean"
lab_summary phase2_unloaded_sampling "$((kept + killed))"
lab_summary phase2_cpu_offlined "$offlined"
stop_guest web
# ---- phase 3: no KVM (last: no guest boots on a reloaded KVM) ----
lab_log "phase 3: KVM unloaded"
rmmod kvm_amd && rmmod kvm || lab_fail "could not unload kvm"
modprobe domprof || lab_fail "modprobe domprof without kvm failed"
timeout 60 "$READ" --seconds 3 >"$RESULTS/kmod-phase3.txt" 2>&1 ||
	lab_fail "dp-kmod-read without kvm: $(tail -n 3 "$RESULTS/kmod-phase3.txt")"
cat "$RESULTS/kmod-phase3.txt"
[ "$(kv samples "$RESULTS/kmod-phase3.txt")" -gt 0 ] || lab_fail "no samples without kvm"
unload "phase 3"
modprobe kvm_amd || lab_fail "kvm_amd did not come back"
[ -c /dev/kvm ] || lab_fail "no /dev/kvm after reloading kvm_amd"
check_kernel "phase 3"
# modprobe takes kvm_amd.npt=0 from the kernel command line again
lab_log "kvm_amd back, npt=$(cat /sys/module/kvm_amd/parameters/npt)"

check_kernel "the end"
dmesg >"$RESULTS/l1-dmesg-kmod.txt"
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: phase 1 $(kv guest_attributed "$P1") attributed guest samples ($(kv asids "$P1") address spaces); $CYCLES cycles ($((kept + killed)) unloaded while sampling, $offlined with cpu1 offlined)"
