# Shared by the scenarios that load the kernel module (host-kmod): the
# kernel log's trouble since the scenario began, the module's reference
# count, its per-CPU counting state, and the load / sample / unload
# cycles.  Sourced after lib.sh; KMOD_DMESG_BASE is the number of kernel
# log lines before the scenario (kmod_begin sets it).

kmod_begin() {
	KMOD_DMESG_BASE=$(dmesg | wc -l)
	KMOD_KO=/lib/modules/$(uname -r)/extra/domprof.ko
	KMOD_READ=$(ls /usr/local/libexec/domprof/dp-kmod-read /usr/libexec/domprof/dp-kmod-read 2>/dev/null | head -n 1)
}
# New kernel log lines that mean the kernel went wrong.
kernel_trouble() {
	dmesg | tail -n +$((KMOD_DMESG_BASE + 1)) |
		grep -E 'Oops|WARNING:|BUG:|kernel BUG|general protection|Call Trace|refcount_t|list_(add|del) corruption|UBSAN|KASAN|stack-protector|soft lockup|hung_task' || true
}
# Fail (through lab_kernel_trouble, which tells an emulator stall from a
# fault of ours) if the kernel log has trouble after @1; the log is kept
# as l1-dmesg-@2.txt.
check_kernel() {
	local t log=$RESULTS/l1-dmesg-${2:-kmod}.txt
	t=$(kernel_trouble)
	[ -z "$t" ] || { dmesg >"$log"; lab_kernel_trouble "$1" "$t" "$log"; }
}
# "used by" count of module @1 in /proc/modules, empty if not loaded.
# Shell builtins only: under TCG every exec costs, and the cycles loop.
modref() {
	local m s r rest
	while read -r m s r rest; do
		[ "$m" = "$1" ] && { echo "$r"; return; }
	done </proc/modules
}
kmod_loaded() { [ -n "$(modref domprof)" ]; }
# Is CPU @1 counting (1) or not (0) per the module's stats?
kmod_counting() {
	local l
	while read -r l; do
		case $l in "cpu $1 "*) l=${l#*counting }; echo "${l%% *}"; return ;; esac
	done </sys/class/misc/domprof/stats
}
kmod_unload() {
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		rmmod domprof 2>/dev/null && break
		sleep 0.5
	done
	kmod_loaded && lab_fail "domprof still loaded after $1 (refs $(modref domprof))"
	return 0
}
kv() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
# The module's counter @1 summed over the per-CPU lines of file @2 (its
# stats or callchain file, or a copy: "cpu N KEY VALUE KEY VALUE ...").
kmod_sum() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) s += $(i + 1) } END { print s + 0 }' "$2"; }

# Does any CPU count, per the module's stats?
kmod_any_counting() {
	local l
	while read -r l; do
		l=${l#*counting }
		[ "${l%% *}" = 1 ] && return 0
	done </sys/class/misc/domprof/stats
	return 1
}
# A reader gone without DISABLE (cycle @1, how in @2): its close stopped
# sampling, and a new reader configures and enables at once (before the
# close stopped it, a killed daemon left SET_CONFIG EBUSY until unload).
kmod_after_reader() {
	! kmod_any_counting ||
		lab_fail "cycle $1: still sampling after its reader $2: $(cat /sys/class/misc/domprof/stats)"
	"$KMOD_READ" ${KMOD_CYCLE_READ:-} --seconds 0.2 >"$RESULTS/kmod-cycle.txt" 2>&1 ||
		lab_fail "cycle $1: a new reader after one $2: $(tail -n 3 "$RESULTS/kmod-cycle.txt")"
}

# @1 cycles of load / sample / unload with guest @2 running: in one
# cycle of three sampling is stopped and drained by its reader, in one
# the reader exits leaving it on (no DISABLE), in one the reader is
# killed (SIGKILL) while it reads: in those two its close must stop
# sampling and a new reader must start (kmod_after_reader).  In one
# cycle of five CPU 1 goes offline and back while the module samples.
# Each cycle: the module unloads, kvm's reference count stays where it
# was; every tenth: the kernel log is clean and the guest alive.
# Sampling lasts @3 seconds a cycle (1).  Summary lines prefixed @4.
# KMOD_CYCLE_READ (words) is given to every dp-kmod-read of the cycles,
# KMOD_CYCLE_ODD (words) to insmod in the odd cycles.
kmod_cycles() {
	local n=$1 guest=$2 s=${3:-1} tag=$4 i t kvm_ref odd
	local offlined=0 kept=0 killed=0 clean=0
	kvm_ref=$(modref kvm)
	t=$(lab_now)
	for ((i = 1; i <= n; i++)); do
		odd=
		[ $((i % 2)) = 1 ] && odd=${KMOD_CYCLE_ODD:-}
		# shellcheck disable=SC2086 # words
		insmod "$KMOD_KO" $odd || lab_fail "cycle $i: insmod $odd failed"
		case $((i % 3)) in
		0)	# sample, disable, drain, unload
			"$KMOD_READ" ${KMOD_CYCLE_READ:-} --seconds "$s" >"$RESULTS/kmod-cycle.txt" 2>&1 ||
				lab_fail "cycle $i: dp-kmod-read: $(tail -n 3 "$RESULTS/kmod-cycle.txt")"
			clean=$((clean + 1)) ;;
		1)	# the reader exits with sampling on
			"$KMOD_READ" ${KMOD_CYCLE_READ:-} --seconds "$(awk -v s="$s" 'BEGIN { print s / 2 }')" --keep >/dev/null 2>&1 ||
				lab_fail "cycle $i: dp-kmod-read --keep failed"
			kmod_after_reader "$i" "exited without DISABLE"
			kept=$((kept + 1)) ;;
		2)	# a reader killed while it reads (once it samples)
			kmod_reader_bg "$i" 30 ""
			sleep "$s"
			kmod_reader_stop -9
			kmod_after_reader "$i" "was killed"
			killed=$((killed + 1)) ;;
		esac
		[ $((i % 5)) = 0 ] && { kmod_offline_cycle "$i"; offlined=$((offlined + 1)); }
		kmod_unload "cycle $i"
		[ "$(modref kvm)" = "$kvm_ref" ] || lab_fail "cycle $i: kvm used by $(modref kvm), $kvm_ref before"
		if [ $((i % 10)) = 0 ] || [ "$i" = "$n" ]; then
			check_kernel "cycle $i"
			guest_alive "$guest" || lab_fail "$guest died by cycle $i"
			lab_log "cycle $i done"
		fi
	done
	lab_summary "${tag}cycles" "$n"
	lab_summary "${tag}cycles_s" "$(lab_since "$t")"
	lab_summary "${tag}cycles_drained" "$clean"
	lab_summary "${tag}cycles_reader_left" "$kept"
	lab_summary "${tag}cycles_reader_killed" "$killed"
	lab_summary "${tag}cycles_cpu_offlined" "$offlined"
	KMOD_CYCLES_SAID="$n cycles ($kept readers left sampling on and $killed were killed: each close stopped it; $offlined with cpu1 offlined)"
}
# A reader in the background (cycle @1, for @2 s, dp-kmod-read's words
# @3), its pid in KMOD_RPID, returned once CPU 0 counts; kmod_reader_stop
# SIGNAL ends it, kmod_reader_fail ends it, brings CPU 1 back and fails
# (a reader left behind would hold the device and the module past the
# part).
kmod_reader_bg() {
	local k
	# shellcheck disable=SC2086 # words
	"$KMOD_READ" ${KMOD_CYCLE_READ:-} --seconds "$2" $3 >/dev/null 2>&1 &
	KMOD_RPID=$!
	for ((k = 0; k < 100; k++)); do
		[ "$(kmod_counting 0)" = 1 ] && return 0
		sleep 0.1
	done
	kmod_reader_fail "cycle $1: its reader did not start sampling in 10 s"
}
kmod_reader_stop() {
	kill "$1" "$KMOD_RPID" 2>/dev/null
	wait "$KMOD_RPID" 2>/dev/null
	KMOD_RPID=
}
kmod_reader_fail() {
	[ -z "${KMOD_RPID:-}" ] || kmod_reader_stop -9
	echo 1 >/sys/devices/system/cpu/cpu1/online 2>/dev/null
	lab_fail "$1"
}
# CPU 1 goes away and comes back while the module samples (cycle @1),
# for a reader that holds the device open meanwhile.
kmod_offline_cycle() {
	kmod_reader_bg "$1" 120 --keep
	echo 0 >/sys/devices/system/cpu/cpu1/online || kmod_reader_fail "cycle $1: cpu1 offline failed"
	sleep 0.5
	[ "$(kmod_counting 1)" = 0 ] ||
		kmod_reader_fail "cycle $1: cpu 1 still counting while offline: $(cat /sys/class/misc/domprof/stats)"
	echo 1 >/sys/devices/system/cpu/cpu1/online || kmod_reader_fail "cycle $1: cpu1 online failed"
	sleep 0.5
	[ "$(kmod_counting 1)" = 1 ] ||
		kmod_reader_fail "cycle $1: cpu 1 not counting after online: $(cat /sys/class/misc/domprof/stats)"
	kmod_reader_stop -TERM
	! kmod_any_counting || lab_fail "cycle $1: still sampling after its reader went"
}
