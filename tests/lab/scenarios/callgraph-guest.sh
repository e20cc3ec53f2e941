# Guest call chains from the host (issue 12, "Must hold", guest side), by
# the user's route: `opcontrol --collector=kmod --callgraph=DEPTH`, then
# `opreport --domain=cg -c`.  domprof.ko walks the guest's frame pointers
# at sample time (host-kmod/dp_callchain.c, dp_walk.c; doc/callgraph.md),
# the daemon resolves the frames like guest pcs through the agent's
# sideband and files {cg} arcs.  One guest with opagent runs
# tests/e2e/callers.c, staged static and non-PIE as cg-guest.
#
# Phase 1 (session cg1): `cg-guest SECONDS` (burn() from caller_a and
#   caller_b for CPU time 2:1, measured by the program), then
#   `cg-guest syscalls SECONDS` (run_syscalls -> sys_reader reads
#   /dev/zero).  Must hold:
#   - burn's callers in `opreport -c`: caller_a's share of caller_a +
#     caller_b within CG_TOL (5) points of what the program measured;
#   - the guest kernel's samples have call chains: the hottest guest
#     kernel symbol has guest kernel callers, and user code of cg-guest
#     calls into the guest kernel (arcs from the user frames that the
#     walk finds above the kernel's entry frame).
# Phase 2 (session cg2): `cg-guest scribble SECONDS` spins with RBP at
#   garbage (misaligned, low, kernel, unmapped, not canonical, a frame
#   that is its own caller, a 1024-deep fake chain).  Must hold: the walks
#   are counted truncated (the module's and the daemon's cc counters) and
#   depth-limited, and nothing else changes: every sample the module took
#   reached the daemon and was filed, scribble_spin keeps its flat share,
#   the guest lives, L1's kernel log is clean.
#
# CG_NPT=1 (the callgraph-guest-npt scenario): kvm_amd reloaded with
# nested paging (npt=1), and domprof.ko loaded with defer_walks=1, which
# sends every walk through the path a PMU's NMI takes (the registers kept
# in the handler, the walk made by the CPU's irq_work once KVM enables
# interrupts after the exit; host-kmod/dp_callchain.c).  Everything above
# must hold the same way, and the module must count deferred walks and
# guest CR3s read from the VMCB (cr3_direct).
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
DEPTH=${CG_DEPTH:-16}
RATIO_S=${CG_RATIO_S:-15}
SYS_S=${CG_SYS_S:-6}
SCRIBBLE_S=${CG_SCRIBBLE_S:-8}
TOL=${CG_TOL:-5}
NS=${CG_TIMER_NS:-100000}
KVER=$(uname -r)
BIN=$STAGE/lab/cg-guest
SHARE=/tmp/share-cg
. "$LAB/lib-kmod.sh"
kmod_begin

[ -f "/lib/modules/$KVER/extra/domprof.ko" ] || lab_fail "no domprof.ko for $KVER in the install tree"
lab_depmod
if [ "${CG_NPT:-0}" = 1 ]; then
	lab_kvm_npt
	rmmod domprof 2>/dev/null || true
	echo "options domprof defer_walks=1" >/etc/modprobe.d/domprof-lab.conf
fi
opagent_bin=$(command -v opagent || echo /usr/local/sbin/opagent)
[ -x "$opagent_bin" ] || lab_fail "no opagent installed"
[ -x "$BIN" ] || lab_fail "no $BIN staged (tests/e2e/callers.c as cg-guest)"

# the module's call-chain counters (since the last enable), summed over CPUs
cc_sum() { kmod_sum "$1" /sys/class/misc/domprof/callchain; }
# the module's sample counters, summed over CPUs
stat_sum() { kmod_sum "$1" /sys/class/misc/domprof/stats; }
wait_console() {
	local i
	for i in $(seq 1 "$2"); do
		grep -q "$1" "$RESULTS/cg.console" && return 0
		guest_alive cg || lab_fail "guest cg died waiting for $1"
		sleep 1
	done
	lab_fail "no $1 in cg's console after $2 s"
}

rm -rf "$SHARE"
mkdir -p "$SHARE"
cp "$BIN" "$opagent_bin" "$SHARE/"
cat >"$SHARE/work.sh" <<EOF
for ph in 1 2; do
	i=0
	while [ ! -e /share/go\$ph ] && [ \$i -lt 3000 ]; do sleep 0.2; i=\$((i + 1)); done
	echo CG-PHASE\$ph-START
	if [ \$ph = 1 ]; then
		/share/cg-guest $RATIO_S
		/share/cg-guest syscalls $SYS_S
	else
		/share/cg-guest scribble $SCRIBBLE_S
	fi
	echo CG-PHASE\$ph-DONE
done
exec sleep 100000
EOF
LAB_GUEST_SMP=1 LAB_GUEST_SHARE=$SHARE LAB_GUEST_AGENT=/share/opagent \
	start_guest cg 6b1b1d6e-0000-4000-8000-0000000000c9 script
wait_guest_booted cg "${CG_BOOT_S:-300}"

# One phase: a kmod session with call graphs around the guest's phase $1.
run_phase() {
	local ph=$1 S=/var/lib/domprof-lab/cg$1
	rm -rf "$S"
	timeout 60 opcontrol --start --collector=kmod --callgraph="$DEPTH" --event="TIMER:$NS" \
		--session-dir="$S" --domains=all || lab_fail "phase $ph: opcontrol --start failed"
	wait_agents_complete "$S" || lab_fail "phase $ph: agent not connected after 120 s"
	sleep 2
	touch "$SHARE/go$ph"
	wait_console "CG-PHASE$ph-DONE" 600
	# the daemon holds guest samples up to 2 s for the sideband
	sleep 3
	timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "phase $ph: opcontrol --stop failed"
	cp "$S/stats" "$RESULTS/stats$ph.txt"
	cp "$S/oprofiled.log" "$RESULTS/oprofiled$ph.log"
	cp /sys/class/misc/domprof/callchain "$RESULTS/kmod-callchain$ph.txt"
	cp /sys/class/misc/domprof/stats "$RESULTS/kmod-stats$ph.txt"
	grep '^cc_\|^samples_' "$S/stats" | tr '\n' ' '
	echo
	cat "$RESULTS/kmod-callchain$ph.txt"
	SESSION=$S
}

# ---- phase 1: the 2:1 program and the syscall reader ----
run_phase 1
S1=$SESSION
if [ "${CG_NPT:-0}" = 1 ]; then
	defer_param=$(cat /sys/module/domprof/parameters/defer_walks 2>/dev/null)
	lab_summary phase1_npt_kmod "defer_walks $defer_param; deferred $(cc_sum deferred) changed $(cc_sum deferred_changed) superseded $(cc_sum deferred_superseded) busy $(cc_sum deferred_busy) chains $(cc_sum chains); cr3_direct $(stat_sum cr3_direct) cr3_refused $(stat_sum cr3_refused)"
	[ "$(cc_sum deferred)" -gt 0 ] || lab_fail "defer_walks=$defer_param: no walk was deferred"
	[ "$(stat_sum cr3_direct)" -gt 0 ] || lab_fail "nested paging: the module read no guest CR3 (cr3_direct 0)"
fi
grep "callers:" "$RESULTS/cg.console"
measured=$(sed -n 's/.*callers: caller_a=\([0-9.]*\)%.*/\1/p' "$RESULTS/cg.console" | tail -n 1)
[ -n "$measured" ] || lab_fail "no callers line in cg's console"
timeout 300 opreport --session-dir="$S1" --domain=cg -c --threshold=0.1 \
	>"$RESULTS/cg1-report.txt" 2>"$RESULTS/cg1-report.err" ||
	lab_fail "opreport -c failed: $(head -n 3 "$RESULTS/cg1-report.err")"
head -n 80 "$RESULTS/cg1-report.txt"
# Each entry: its callers (indented) above its line, its [self] and
# callees (indented) below; $NF is the symbol, $(NF - 1) its image and
# $(NF - 2) its domain ("cg": the guest's own; "cg/vmm": host work for it).
awk '
	function kern(i) { return i ~ /^vmlinux$|\.ko$|^\{kern\}/ }
	function flush() {
		if (sym == "burn" && dom == "cg")
			printf "burn_samples %d\nburn_caller_a %d\nburn_caller_b %d\nburn_caller_other %d\n",
				own, ca, cb, co
		if (sym != "" && dom == "cg" && kern(img)) {
			ksamples += own; kcalled += allcallers; kk += kcallers
			if (own > best) { best = own; bsym = sym; bcallers = allcallers }
		}
		if (sym != "" && dom == "cg" && img == "cg-guest" && kcallees) {
			user_to_kernel += kcallees; syscall_callers += rs
		}
	}
	/^---/ { flush(); sym = ""; ca = cb = co = kcallers = kcallees = allcallers = rs = 0; next }
	/^  / {
		if ($(NF - 2) != "cg")
			next
		if (sym == "") {
			if ($NF == "caller_a") ca += $1
			else if ($NF == "caller_b") cb += $1
			else co += $1
			if ($NF == "run_syscalls" || $NF == "sys_reader") rs += $1
			allcallers += $1
			if (kern($(NF - 1))) kcallers += $1
		} else if ($NF != "[self]" && kern($(NF - 1))) {
			kcallees += $1
		}
		next
	}
	/^[0-9]/ { sym = $NF; img = $(NF - 1); dom = $(NF - 2); own = $1 }
	END {
		flush()
		printf "kernel_samples %d\nkernel_called %d\nkernel_kernel_arcs %d\n", ksamples, kcalled, kk
		printf "kernel_top %s\nkernel_top_samples %d\nkernel_top_callers %d\n", bsym, best, bcallers
		printf "user_to_kernel_arcs %d\nsyscall_wrapper_from_run_syscalls %d\n", user_to_kernel, syscall_callers
	}' "$RESULTS/cg1-report.txt" >"$RESULTS/cg1-check.txt"
cat "$RESULTS/cg1-check.txt"
P=$RESULTS/cg1-check.txt
ca=$(kv burn_caller_a "$P"); cb=$(kv burn_caller_b "$P")
share=$(awk -v a="${ca:-0}" -v b="${cb:-0}" 'BEGIN { if (a + b) printf "%.2f", 100 * a / (a + b); else print "none" }')
lab_summary cg_measured_caller_a "$measured"
lab_summary cg_tsc_caller_a "$(sed -n 's/.*callers: caller_a=.* tsc_a=\([0-9.]*\)%.*/\1/p' "$RESULTS/cg.console" | tail -n 1)"
lab_summary cg_opreport_caller_a "$share (caller_a ${ca:-0}, caller_b ${cb:-0}, other $(kv burn_caller_other "$P"))"
lab_summary cg_kernel "samples $(kv kernel_samples "$P"), arcs from their callers $(kv kernel_called "$P") (from guest kernel code $(kv kernel_kernel_arcs "$P"))"
lab_summary cg_kernel_top "$(kv kernel_top "$P") samples $(kv kernel_top_samples "$P") callers $(kv kernel_top_callers "$P")"
lab_summary cg_user_to_kernel_arcs "$(kv user_to_kernel_arcs "$P") (syscall wrapper called from run_syscalls/sys_reader: $(kv syscall_wrapper_from_run_syscalls "$P"))"
for k in cc_chains cc_chains_guest cc_chains_truncated cc_chains_dropped cc_frames cc_frames_unresolved cc_arcs; do
	lab_summary "phase1_$k" "$(kv $k "$RESULTS/stats1.txt")"
done
for k in chains frames truncated depth_limited empty no_walk nmi walks walk_ns; do
	lab_summary "phase1_kmod_$k" "$(kmod_sum $k "$RESULTS/kmod-callchain1.txt")"
done
# the module's cost of a guest walk (dp_callchain.c times each one)
lab_summary phase1_kmod_ns_per_walk "$(awk '{ for (i = 1; i < NF; i++) { if ($i == "walks") w += $(i + 1); if ($i == "walk_ns") t += $(i + 1) } }
	END { if (w) printf "%.0f", t / w; else print "n/a" }' "$RESULTS/kmod-callchain1.txt")"
[ "$share" != none ] || lab_fail "opreport -c shows no caller_a or caller_b above burn"
[ $((ca + cb)) -ge 100 ] || lab_fail "too few arcs into burn from caller_a/caller_b: $ca + $cb"
awk -v s="$share" -v m="$measured" -v t="$TOL" 'BEGIN { d = s - m; exit !(d <= t && d >= -t) }' ||
	lab_fail "caller_a's share of burn's callers $share%, measured $measured% (tolerance $TOL points)"
# the guest kernel's samples have chains: a tenth at least have callers (the
# kernel frames when the guest kernel keeps frame pointers, and the user
# code that entered the kernel; doc/callgraph.md), and the syscall phase's
# kernel time is reached from its user callers
awk -v c="$(kv kernel_called "$P")" -v k="$(kv kernel_samples "$P")" 'BEGIN { exit !(k >= 100 && c >= k / 10) }' ||
	lab_fail "guest kernel samples without call chains: $(kv kernel_samples "$P") samples, $(kv kernel_called "$P") caller arcs"
[ "$(kv user_to_kernel_arcs "$P")" -ge 10 ] ||
	lab_fail "no arcs from cg-guest's code into the guest kernel (kernel chains end in the kernel)"
[ "$(kv syscall_wrapper_from_run_syscalls "$P")" -ge 10 ] ||
	lab_fail "the syscall phase's kernel time is not reached from run_syscalls/sys_reader"
check_kernel "phase 1" cg
lab_log "phase 1 PASS: caller_a $share% of burn's callers (measured $measured%)"

# ---- phase 2: garbage frame pointers (CG_PHASES=1: not run) ----
phase2() {
	run_phase 2
	S2=$SESSION
	guest_alive cg || lab_fail "guest cg died with garbage frames"
	grep "callers:" "$RESULTS/cg.console" | tail -n 1
	timeout 300 opreport --session-dir="$S2" --domain=cg -l image:cg-guest \
		>"$RESULTS/cg2-flat.txt" 2>"$RESULTS/cg2-flat.err" ||
		lab_fail "opreport -l failed: $(head -n 3 "$RESULTS/cg2-flat.err")"
	head -n 12 "$RESULTS/cg2-flat.txt"
	rows() { awk -v s="$2" '$1 ~ /^[0-9]+$/ && (s == "" || $NF == s) { n += $1 } END { print n + 0 }' "$1"; }
	all2=$(rows "$RESULTS/cg2-flat.txt" "")
	spin2=$(rows "$RESULTS/cg2-flat.txt" scribble_spin)
	spin_pct=$(awk -v a="$spin2" -v b="$all2" 'BEGIN { if (b) printf "%.2f", 100 * a / b; else print 0 }')
	kmod_samples=$(stat_sum samples)
	kmod_lost=$(stat_sum lost)
	R=$RESULTS/stats2.txt
	trunc=$(cc_sum truncated); deep=$(cc_sum depth_limited)
	lab_summary phase2_scribble_spin "$spin2 of $all2 cg-guest samples ($spin_pct%)"
	lab_summary phase2_kmod "samples $kmod_samples lost $kmod_lost chains $(cc_sum chains) truncated $trunc depth_limited $deep empty $(cc_sum empty) no_walk $(cc_sum no_walk) walks $(cc_sum walks) walk_ns $(cc_sum walk_ns)"
	lab_summary phase2_daemon "samples_received $(kv samples_received "$R") samples_lost $(kv samples_lost "$R") samples_filed $(kv samples_filed "$R") cc_chains $(kv cc_chains "$R") cc_chains_truncated $(kv cc_chains_truncated "$R") cc_chains_dropped $(kv cc_chains_dropped "$R") stream_bad_records $(kv stream_bad_records "$R")"
	[ "$trunc" -ge 20 ] || lab_fail "garbage frames not counted truncated by the module ($trunc)"
	[ "$(kv cc_chains_truncated "$R")" -ge 20 ] || lab_fail "the daemon counted $(kv cc_chains_truncated "$R") truncated chains"
	[ "$deep" -ge 1 ] || lab_fail "the 1024-deep fake chain never reached the depth"
	[ "$(kv stream_bad_records "$R")" = 0 ] || lab_fail "bad records in the stream"
	[ "$(( $(kv samples_received "$R") + $(kv samples_lost "$R") ))" -ge "$kmod_samples" ] ||
		lab_fail "daemon received $(kv samples_received "$R") + lost $(kv samples_lost "$R") < module's $kmod_samples"
	[ "$(kv samples_filed "$R")" = "$(kv samples_received "$R")" ] ||
		lab_fail "samples received $(kv samples_received "$R") but filed $(kv samples_filed "$R")"
	[ "$all2" -ge 50 ] || lab_fail "too few cg-guest samples in phase 2 ($all2)"
	awk -v p="$spin_pct" 'BEGIN { exit !(p >= 90) }' || lab_fail "scribble_spin has $spin_pct% of cg-guest's samples"
	check_kernel "phase 2" cg
}
garbage="garbage frames: not run (CG_PHASES=1)"
if [ "${CG_PHASES:-2}" -ge 2 ]; then
	phase2
	garbage="garbage frames: $trunc truncated walks counted, scribble_spin $spin_pct%"
fi
stop_guest cg
rmmod domprof 2>/dev/null || true
rm -f /etc/modprobe.d/domprof-lab.conf
check_kernel "the end" cg
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: caller_a $share% (measured $measured%); guest kernel: $(kv kernel_samples "$P") samples, $(kv kernel_called "$P") caller arcs, $(kv user_to_kernel_arcs "$P") user-to-kernel arcs; $garbage"
