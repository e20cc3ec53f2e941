# A guest with no agent split per address space under nested paging
# (kvm_amd reloaded with npt=1): the kernel module reads each guest
# sample's CR3 from the VMCB the exit left, and the daemon files an
# agentless guest's user samples per address space
# ({anon:guest-user:asN}, doc/guest-asid.md).  The guest runs two shell
# loops doing the same work (two processes, two address spaces) and
# nothing else that spins.
# Must hold, over NPTS_SECONDS (10) of `--collector=kmod`:
#  - the module read the guest CR3 directly (cr3_direct > 0) and refused
#    none of them;
#  - the guest's report lists at least two {anon:guest-user:asN} images,
#    and its two largest each hold at least NPTS_MIN_SHARE (30) percent of
#    the guest-user samples: the two loops, each in its own space.  A
#    wrong or missing CR3 gives one bucket, or many small ones;
#  - no oops or warning in L1's kernel log.
# With NPTS_KEEP=1 the guest is left running (kmod-npt-load's cycles).
lab_require_kvm
lab_check_domprof_libs
. "$LAB/lib-kmod.sh"
kmod_begin
t0=$(lab_now)
SEC=${NPTS_SECONDS:-10}
MIN=${NPTS_MIN_SHARE:-30}
UUID_NA=6b1b1d6e-0000-4000-8000-0000000000d1
S=/var/lib/domprof-lab/npts
[ -f "$KMOD_KO" ] || lab_fail "no $KMOD_KO in the install tree"
lab_depmod
lab_kvm_npt
rmmod domprof 2>/dev/null || true

share=/tmp/share-na
rm -rf "$share"
mkdir -p "$share"
{
	echo 'spin() { while :; do i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done; done; }'
	echo 'spin & spin &'
	echo 'exec sleep 100000'
} >"$share/work.sh"
LAB_GUEST_SHARE=$share start_guest na "$UUID_NA" script
wait_guest_booted na 300
sleep 2

rm -rf "$S"
timeout 60 opcontrol --start --collector=kmod --event=TIMER:1000000 --session-dir="$S" --domains=all ||
	lab_fail "opcontrol --start --collector=kmod failed"
sleep "$SEC"
cp /sys/class/misc/domprof/stats "$RESULTS/npts-kmod-stats.txt"
timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
cp "$S/oprofiled.log" "$RESULTS/npts-oprofiled.log"
cp "$S/domains/na/stats" "$RESULTS/npts-na-stats.txt" 2>/dev/null || true
timeout 120 opreport --session-dir="$S" --domain=na >"$RESULTS/npts-na.txt" 2>"$RESULTS/npts-na.err" ||
	lab_fail "opreport --domain=na failed: $(head -n 3 "$RESULTS/npts-na.err")"
[ "${NPTS_KEEP:-0}" = 1 ] || stop_guest na
rmmod domprof 2>/dev/null || true

direct=$(kmod_sum cr3_direct "$RESULTS/npts-kmod-stats.txt")
refused=$(kmod_sum cr3_refused "$RESULTS/npts-kmod-stats.txt")
lab_summary npts_cr3 "direct $direct refused $refused"
grep 'guest-user' "$RESULTS/npts-na.txt" | head -n 8
# the guest-user images' samples, largest first
grep -E '\{anon:guest-user(:as[0-9]+)?\}' "$RESULTS/npts-na.txt" |
	awk '{ for (i = NF; i > 0; i--) if ($i ~ /guest-user/) { n[$i] += $1; break } }
	     END { for (k in n) print n[k], k }' | sort -rn >"$RESULTS/npts-spaces.txt"
spaces=$(grep -c ':as[0-9]*}' "$RESULTS/npts-spaces.txt")
read -r top1 top2 total <<<"$(awk 'NR == 1 { a = $1 } NR == 2 { b = $1 } { t += $1 } END { print a + 0, b + 0, t + 0 }' "$RESULTS/npts-spaces.txt")"
lab_summary npts_spaces "$spaces (asid_spaces $(kv asid_spaces "$RESULTS/npts-na-stats.txt"))"
lab_summary npts_top_two "$top1 and $top2 of $total guest-user samples"
check_kernel "the profile" npts
[ "$direct" -gt 0 ] || lab_fail "the module read no guest CR3 from the VMCB (cr3_direct 0) under npt=1"
[ "$refused" = 0 ] || lab_fail "the module refused $refused guest CR3 reads under npt=1"
[ "$spaces" -ge 2 ] || lab_fail "na's report lists $spaces {anon:guest-user:asN} images (< 2): $(head -n 3 "$RESULTS/npts-spaces.txt" | tr '\n' ' ')"
[ "$total" -ge 200 ] || lab_fail "only $total guest-user samples for na"
awk -v a="$top1" -v b="$top2" -v t="$total" -v m="$MIN" 'BEGIN { exit !(100 * a >= m * t && 100 * b >= m * t) }' ||
	lab_fail "the two loops are not two spaces: the largest two hold $top1 and $top2 of $total guest-user samples (each must be >= $MIN%)"
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: na's user samples in $spaces address spaces, the loops' two $top1 and $top2 of $total, $direct CR3s read directly"
