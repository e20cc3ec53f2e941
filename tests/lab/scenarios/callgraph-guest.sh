# Guest call chains from the host (issue 12, host-kmod/dp_callchain.c):
# domprof.ko walks a KVM guest's frame pointers at sample time and emits
# DP_RAW_CALLCHAIN records; dp-kmod-read decodes them (--chains: one line
# per guest sample) and this script checks them against cg-guest
# (tests/e2e/cg-guest.c, static non-PIE: its symbols' addresses come from
# the build host's nm, staged as cg-guest.syms).
#
# Phase 1, one guest running cg-guest ratio then cg-guest syscalls:
#  - of the guest-user samples in leaf() with a chain, the first caller is
#    caller_a or caller_b, and caller_a's share is within CG_TOL (5) points
#    of the work share the program measured (2:1, about 66.7%);
#  - guest kernel samples have chains: while sys_reader() reads, the chains
#    of kernel samples reach its caller (run_syscalls) in user space.
# Phase 2, the same guest running cg-guest scribble (RBP pointing at
#    garbage: odd, kernel, unmapped, self-looping and 1024-deep frames):
#  - truncated and depth-limited walks are counted, no chain is longer
#    than the depth, every sample is still in the stream (stream samples
#    + lost = the module's own sample counters), and L1's kernel log stays
#    clean and the guest alive.
lab_require_kvm
t0=$(lab_now)
DEPTH=${CG_DEPTH:-16}
RATIO_S=${CG_RATIO_S:-20}
SYS_S=${CG_SYS_S:-8}
SCRIBBLE_S=${CG_SCRIBBLE_S:-10}
TOL=${CG_TOL:-5}
READ=$(ls /usr/local/libexec/domprof/dp-kmod-read /usr/libexec/domprof/dp-kmod-read 2>/dev/null | head -n 1)
BIN=$STAGE/lab/cg-guest
SYMS=$STAGE/lab/cg-guest.syms
SHARE=/tmp/share-cg
dmesg_base=$(dmesg | wc -l)

[ -x "$READ" ] || lab_fail "no dp-kmod-read installed"
[ -x "$BIN" ] && [ -s "$SYMS" ] || lab_fail "no $BIN or $SYMS staged (tests/e2e/cg-guest)"
modprobe domprof || lab_fail "modprobe domprof failed"

# "START END" of symbol $1, decimal (nm -S: ADDR SIZE TYPE NAME, hex)
sym() {
	local a s t n
	while read -r a s t n; do
		[ "$n" = "$1" ] && { echo "$((16#$a)) $((16#$a + 16#$s))"; return; }
	done <"$SYMS"
	lab_fail "no symbol $1 in $SYMS"
}
read -r LEAF0 LEAF1 <<<"$(sym leaf)"
read -r A0 A1 <<<"$(sym caller_a)"
read -r B0 B1 <<<"$(sym caller_b)"
read -r R0 R1 <<<"$(sym run_syscalls)"
read -r S0 S1 <<<"$(sym scribble_spin)"
lab_log "leaf $LEAF0-$LEAF1 caller_a $A0-$A1 caller_b $B0-$B1 run_syscalls $R0-$R1 scribble_spin $S0-$S1"

kernel_trouble() {
	dmesg | tail -n +$((dmesg_base + 1)) |
		grep -E 'Oops|WARNING:|BUG:|kernel BUG|general protection|Call Trace|UBSAN|KASAN|stack-protector|soft lockup|hung_task' || true
}
check_kernel() {
	local t
	t=$(kernel_trouble)
	[ -z "$t" ] || { dmesg >"$RESULTS/l1-dmesg-cg.txt"; lab_fail "kernel log after $1: $(echo "$t" | head -n 5)"; }
}
kv() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
# sum of column $1 ("samples", "lost", ...) of the module's per-CPU stats
stat_sum() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) s += $(i + 1) } END { print s + 0 }' /sys/class/misc/domprof/stats; }
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
cp "$BIN" "$SHARE/cg-guest"
cat >"$SHARE/work.sh" <<EOF
i=0
while [ ! -e /share/go ] && [ \$i -lt 3000 ]; do sleep 0.2; i=\$((i + 1)); done
echo CG-RATIO-START
/share/cg-guest ratio $RATIO_S
/share/cg-guest syscalls $SYS_S
echo CG-PHASE1-DONE
while [ ! -e /share/go2 ] && [ \$i -lt 6000 ]; do sleep 0.2; i=\$((i + 1)); done
echo CG-SCRIBBLE-START
/share/cg-guest scribble $SCRIBBLE_S
echo CG-DONE
exec sleep 100000
EOF
LAB_GUEST_SHARE=$SHARE start_guest cg 6b1b1d6e-0000-4000-8000-0000000000c9 script
wait_guest_booted cg 300

# ---- phase 1: the 2:1 program and the syscall reader ----
touch "$SHARE/go"
wait_console CG-RATIO-START 120
timeout $((RATIO_S + SYS_S + 120)) "$READ" --seconds $((RATIO_S + SYS_S + 4)) --callgraph "$DEPTH" \
	--chains "$RESULTS/cg-phase1.chains" >"$RESULTS/cg-phase1.txt" 2>&1 ||
	lab_fail "dp-kmod-read phase 1: $(tail -n 5 "$RESULTS/cg-phase1.txt")"
cat "$RESULTS/cg-phase1.txt"
cat /sys/class/misc/domprof/callchain
wait_console CG-PHASE1-DONE 120
grep "cg-guest:" "$RESULTS/cg.console"
measured=$(sed -n 's/.*cg-guest: ratio .*share_a=\([0-9.]*\).*/\1/p' "$RESULTS/cg.console" | tail -n 1)
[ -n "$measured" ] || lab_fail "no ratio line in cg's console"

awk -v l0="$LEAF0" -v l1="$LEAF1" -v a0="$A0" -v a1="$A1" -v b0="$B0" -v b1="$B1" \
	-v r0="$R0" -v r1="$R1" '
	$1 == 3 && $2 >= l0 && $2 < l1 {
		leaf++
		if ($3 >= 1) { chained++; f = $6
			if (f >= a0 && f < a1) a++; else if (f >= b0 && f < b1) b++; else other++ }
	}
	$1 == 2 { k++; if ($3 > 0) kc++; if ($4 > 0) kk++
		for (i = 6; i < 6 + $3; i++) if ($i >= r0 && $i < r1) { ks++; break } }
	END {
		printf "leaf_samples %d\nleaf_chained %d\ncaller_a %d\ncaller_b %d\ncaller_other %d\n",
			leaf, chained, a, b, other
		printf "share_a %.2f\n", a + b ? 100 * a / (a + b) : 0
		printf "kernel_samples %d\nkernel_chained %d\nkernel_with_kernel_frames %d\nkernel_reaching_run_syscalls %d\n",
			k, kc, kk, ks
	}' "$RESULTS/cg-phase1.chains" >"$RESULTS/cg-phase1-check.txt"
cat "$RESULTS/cg-phase1-check.txt"
P=$RESULTS/cg-phase1-check.txt
share=$(kv share_a "$P")
lab_summary cg_measured_share_a "$measured"
lab_summary cg_share_a "$share"
for k in leaf_samples leaf_chained caller_a caller_b caller_other kernel_samples kernel_chained \
	kernel_with_kernel_frames kernel_reaching_run_syscalls; do
	lab_summary "cg_$k" "$(kv $k "$P")"
done
for k in kmod_cc_chains kmod_cc_truncated kmod_cc_depth_limited kmod_cc_empty kmod_cc_no_walk kmod_cc_nmi; do
	lab_summary "phase1_$k" "$(kv $k "$RESULTS/cg-phase1.txt")"
done
[ "$(( $(kv caller_a "$P") + $(kv caller_b "$P") ))" -ge 100 ] ||
	lab_fail "too few leaf samples with caller_a or caller_b as caller: $(tr '\n' ' ' <"$P")"
awk -v s="$share" -v m="$measured" -v t="$TOL" 'BEGIN { d = s - m; exit !(d <= t && d >= -t) }' ||
	lab_fail "caller_a's share of leaf's chained samples $share%, measured work share $measured% (tolerance $TOL points)"
[ "$(kv kernel_reaching_run_syscalls "$P")" -ge 10 ] ||
	lab_fail "guest kernel samples without user call chains to run_syscalls: $(tr '\n' ' ' <"$P")"
check_kernel "phase 1"
lab_log "phase 1 PASS: caller_a $share% of leaf's callers (measured $measured%), $(kv kernel_reaching_run_syscalls "$P") guest kernel chains reach run_syscalls"

# ---- phase 2: garbage frame pointers ----
touch "$SHARE/go2"
wait_console CG-SCRIBBLE-START 120
timeout $((SCRIBBLE_S + 120)) "$READ" --seconds $((SCRIBBLE_S + 2)) --callgraph "$DEPTH" \
	--chains "$RESULTS/cg-phase2.chains" >"$RESULTS/cg-phase2.txt" 2>&1 ||
	lab_fail "dp-kmod-read phase 2: $(tail -n 5 "$RESULTS/cg-phase2.txt")"
cat "$RESULTS/cg-phase2.txt"
mod_samples=$(stat_sum samples)
mod_lost=$(stat_sum lost)
cat /sys/class/misc/domprof/callchain
wait_console CG-DONE 120
guest_alive cg || lab_fail "guest cg died with garbage frames"
awk -v s0="$S0" -v s1="$S1" -v d="$DEPTH" '
	$1 == 3 && $2 >= s0 && $2 < s1 { n++; if ($3 > 0) c++; if ($5 % 2) t++ }
	$3 > max { max = $3 }
	END { printf "scribble_samples %d\nscribble_chained %d\nscribble_truncated_records %d\nmax_nr %d\n",
		n, c, t, max }' "$RESULTS/cg-phase2.chains" >"$RESULTS/cg-phase2-check.txt"
cat "$RESULTS/cg-phase2-check.txt"
Q=$RESULTS/cg-phase2-check.txt
R2=$RESULTS/cg-phase2.txt
for k in scribble_samples scribble_chained scribble_truncated_records max_nr; do
	lab_summary "cg_$k" "$(kv $k "$Q")"
done
for k in samples kmod_cc_chains kmod_cc_truncated kmod_cc_depth_limited kmod_cc_empty kmod_cc_no_walk; do
	lab_summary "phase2_$k" "$(kv $k "$R2")"
done
[ "$(kv scribble_samples "$Q")" -ge 50 ] || lab_fail "too few samples in scribble_spin: $(tr '\n' ' ' <"$Q")"
[ "$(kv kmod_cc_truncated "$R2")" -ge 20 ] || lab_fail "garbage frames not counted as truncated"
[ "$(kv kmod_cc_depth_limited "$R2")" -ge 1 ] || lab_fail "the 1024-deep fake chain never reached the depth"
[ "$(kv max_nr "$Q")" -le "$DEPTH" ] || lab_fail "a chain of $(kv max_nr "$Q") frames, depth $DEPTH"
[ "$(( $(kv samples "$R2") + $(kv lost "$R2") ))" = "$((mod_samples))" ] ||
	lab_fail "stream samples $(kv samples "$R2") + lost $(kv lost "$R2") != module's samples $mod_samples (lost $mod_lost)"
check_kernel "phase 2"
stop_guest cg
rmmod domprof || lab_fail "rmmod domprof failed"
check_kernel "the end"
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: caller_a $share% (measured $measured%), $(kv kernel_reaching_run_syscalls "$P") kernel chains to user callers, $(kv kmod_cc_truncated "$R2") truncated walks counted under garbage frames"
