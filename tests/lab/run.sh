#!/usr/bin/env bash
# Run one lab scenario: boot the lab host (L1) under QEMU TCG with an
# emulated AMD SVM CPU, run SCENARIO inside it (where real KVM guests, L2,
# can be started), bring the results out and exit with its status.
#
# Usage: tests/lab/run.sh SCENARIO [--out DIR] [--timeout SEC]
#            [--stage DIR | --no-domprof] [--mem SIZE] [--smp N] [--keep]
#            [--kind kvm|xen]   (--smp: 2; LAB_SMP sets it too)
#   SCENARIO     name in tests/lab/scenarios/ (smoke) or a path to a script
#   --out DIR    results directory (default /tmp/domprof-lab/SCENARIO-DATE);
#                shared writable with L1 as /results
#   --timeout S  hard limit for the whole boot + scenario (default 900)
#   --stage DIR  a prebuilt domprof install tree (DESTDIR of make install)
#                instead of building the current tree out of tree
#   --no-domprof stage no domprof at all
#   --keep       keep the work directory (overlay, stage, build)
#   --kind K     kvm: L1 is Linux with KVM (default); xen: L1 is Xen 4.17
#                with the same Linux as dom0.  Default: the scenario's
#                "# lab-kind: K" line, else kvm.
# Environment: LAB_XEN_DOM0_MEM (1024M) dom0's memory under Xen;
#   LAB_ATTEMPTS (default 3) attempts on an emulator fault;
#   LAB_STALL_S (default 120, xen 300) seconds without L1's heartbeat that count
#   as a hung L1; LAB_TCG_THREAD multi (default: one host thread per L1
#   vCPU) or single (all L1 vCPUs on one host thread).
# Needs root (the image build) and scripts/install-deps.sh --lab.
set -euo pipefail

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC_DIR=$(cd "$LAB_DIR/../.." && pwd)

usage() { sed -n '6,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
log() { echo "lab: $*" >&2; }
die() { log "error: $*"; exit 1; }

scenario= out= timeout_s=900 stage_in= no_domprof=0 mem=6G smp=${LAB_SMP:-} keep=0 kind=
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--stage) stage_in=$2; shift 2 ;;
	--no-domprof) no_domprof=1; shift ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--kind) kind=$2; shift 2 ;;
	-h|--help) usage ;;
	-*) usage ;;
	*) [ -z "$scenario" ] || usage; scenario=$1; shift ;;
	esac
done
[ -n "$scenario" ] || usage
case $timeout_s in ''|*[!0-9]*) die "--timeout wants seconds" ;; esac
if [ -f "$scenario" ]; then
	scen_file=$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario")
else
	scen_file=$LAB_DIR/scenarios/${scenario%.sh}.sh
fi
[ -f "$scen_file" ] || die "no scenario $scenario (looked for $scen_file)"
scen_name=$(basename "$scen_file" .sh)
[ -n "$kind" ] || kind=$(sed -n 's/^# lab-kind: *\([a-z]*\).*/\1/p' "$scen_file" | head -n 1)
kind=${kind:-kvm}
case $kind in kvm|xen) ;; *) die "--kind wants kvm or xen" ;; esac
# Two emulated CPUs for both kinds.  Under Xen, dom0 gets one vCPU pinned
# to pCPU 0 and the guests pCPU 1 (lib-xen.sh), as on a host that keeps
# CPUs for dom0: the xen collector then reads the context of a vCPU that
# is running, at the time of the look.  With one pCPU every look finds the
# guest descheduled (its pc and CR3 saved before dom0 ran) and guest
# process attribution suffers (doc/xen.md).  The README has the figures;
# on a loaded host two emulated CPUs crawl under Xen (its cross-CPU waits
# stall whenever the host deschedules one of QEMU's CPU threads).
[ -n "$smp" ] || smp=2
[ -n "$out" ] || out=/tmp/domprof-lab/$scen_name-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/status" "$out/l1-booted" "$out/heartbeat"
# Xen boots, then its dom0: on a loaded machine the first heartbeat took
# over 120 s there (3 attempts in a row killed as hung).
stall_default=120
[ "$kind" = xen ] && stall_default=300
stall_s=${LAB_STALL_S:-$stall_default}
tcg_thread=${LAB_TCG_THREAD:-multi}
case $tcg_thread in multi|single) ;; *) die "LAB_TCG_THREAD wants multi or single" ;; esac
case $stall_s in ''|*[!0-9]*) die "LAB_STALL_S wants seconds" ;; esac

t0=$(date +%s)
deadline=$((t0 + timeout_s))
work=$(mktemp -d /tmp/domprof-lab-work.XXXXXX)
qpid=
cleanup() {
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill "$qpid" 2>/dev/null || true
		sleep 1
		kill -9 "$qpid" 2>/dev/null || true
	fi
	if [ $keep -eq 1 ]; then log "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tails() {
	local f
	echo "---- last 50 lines of $out/l1-console.log ----" >&2
	tail -n 50 "$out/l1-console.log" >&2 2>/dev/null || true
	for f in "$out"/*.console "$out"/xen-consoles/guest-*.log; do
		[ -f "$f" ] || continue
		echo "---- last 50 lines of $f ----" >&2
		tail -n 50 "$f" >&2
	done
	if [ -f "$out/scenario.log" ]; then
		echo "---- last 20 lines of $out/scenario.log ----" >&2
		tail -n 20 "$out/scenario.log" >&2
	fi
}

# 1. Images (cached).
t_img=$(date +%s)
img=$("$LAB_DIR/build-images.sh" --print-dir --kind "$kind") || die "image build failed"
t_img=$(( $(date +%s) - t_img ))

# 2. The stage: read-only share for L1.
stage=$work/stage
mkdir -p "$stage/lab/scenarios" "$stage/l2"
cp "$LAB_DIR"/lib*.sh "$stage/lab/"
cp "$LAB_DIR"/scenarios/*.sh "$stage/lab/scenarios/" 2>/dev/null || true
cp "$scen_file" "$stage/scenario.sh"
cp "$img/vmlinuz" "$stage/l2/vmlinuz"
cp "$img/initramfs.gz" "$stage/l2/initramfs.gz"
# Xen images: the same kernel as an ELF and the initramfs uncompressed
# for PV guests (lib-xen.sh)
for f in vmlinux initramfs.cpio; do
	[ ! -f "$img/$f" ] || cp "$img/$f" "$stage/l2/$f"
done
t_build=0
if [ -n "$stage_in" ]; then
	[ -d "$stage_in" ] || die "--stage $stage_in: not a directory"
	cp -a "$stage_in" "$stage/domprof"
	test_bin_dir=${DP_BUILD:+$DP_BUILD/tests}
elif [ $no_domprof -eq 0 ]; then
	t_build=$(date +%s)
	log "building domprof out of tree in $work/build"
	# the module for the kernel the lab boots
	lab_kver=$(awk '$1 == "kernel" { print $2 }' "$img/manifest.txt")
	mkdir -p "$work/build"
	if ! (cd "$work/build" && "$SRC_DIR/configure" -q && make -j"$(nproc)" -s &&
		make -s install DESTDIR="$stage/domprof" &&
		{ [ ! -d /lib/modules/"$lab_kver"/build ] ||
			make -s install-module DESTDIR="$stage/domprof" KVER="$lab_kver"; }) \
		>"$out/domprof-build.log" 2>&1; then
		tail -n 30 "$out/domprof-build.log" >&2
		die "domprof build failed (log: $out/domprof-build.log; --no-domprof to skip)"
	fi
	t_build=$(( $(date +%s) - t_build ))
	test_bin_dir=$work/build/tests
fi
# The module's entries in L1's module index, made here: depmod -a over the
# whole kernel takes about 10 s in L1 under the emulator, in each of five
# scenarios.  Only where this machine has the same kernel's modules (the
# lab's image is built from them); lab_depmod in L1 checks the result and
# runs depmod itself otherwise.
stage_depmod() {
	local ko kver d tmp key cache
	ko=$(find "$stage/domprof" -path '*/lib/modules/*/extra/domprof.ko' 2>/dev/null | head -n 1)
	[ -n "$ko" ] || return 0
	d=$(dirname "$(dirname "$ko")")
	kver=$(basename "$d")
	[ -d "/lib/modules/$kver/kernel" ] && [ -f "/lib/modules/$kver/modules.order" ] || return 0
	# what depmod's output depends on: the kernel's modules and what the
	# module needs and offers (not its code), so most builds share one
	key=$({ echo "$kver"; stat -c '%s %Y' "/lib/modules/$kver/modules.dep" || true
		modinfo "$ko" | grep -E '^(name|depends|softdep|alias):'
		nm "$ko" 2>/dev/null | awk '$3 ~ /^__ksymtab_/ { print $3 }'; } | sha256sum | cut -c1-16) ||
		return 0
	cache=${DOMPROF_LAB_CACHE:-/var/cache/domprof-lab}/depmod/$key
	if [ ! -f "$cache/modules.dep.bin" ]; then
		tmp=$(mktemp -d)
		mkdir -p "$tmp/lib/modules/$kver/extra"
		ln -s "/lib/modules/$kver/kernel" "$tmp/lib/modules/$kver/kernel"
		cp /lib/modules/"$kver"/modules.{order,builtin,builtin.modinfo} "$tmp/lib/modules/$kver/" 2>/dev/null
		cp "$ko" "$tmp/lib/modules/$kver/extra/"
		if depmod -b "$tmp" "$kver" 2>"$out/depmod.log" && mkdir -p "$cache.tmp"; then
			cp "$tmp/lib/modules/$kver"/modules.* "$cache.tmp/" && rm -rf "$cache" &&
				mkdir -p "$(dirname "$cache")" && mv "$cache.tmp" "$cache"
		fi
		rm -rf "$tmp" "$cache.tmp"
		# the three newest indexes are kept
		ls -1dt "$(dirname "$cache")"/* 2>/dev/null | tail -n +4 | xargs -r rm -rf
	fi
	[ ! -f "$cache/modules.dep.bin" ] || cp "$cache"/modules.* "$d/" || true
}
# (a failure here only means lab_depmod runs depmod in L1)
stage_depmod || true

# Test programs for guests (built, not installed): scenarios find them in
# $STAGE/lab.  With --stage they come from $DP_BUILD (scripts/test.sh sets it).
# Their symbols too (L1 has no nm), for counting perf's guest samples by
# address.
for t in ratio-static exact-a exact-b cg-guest hostile-agent clockpc; do
	if [ -n "${test_bin_dir:-}" ] && [ -x "$test_bin_dir/e2e/$t" ]; then
		cp "$test_bin_dir/e2e/$t" "$stage/lab/"
		nm -S "$test_bin_dir/e2e/$t" >"$stage/lab/$t.syms" 2>/dev/null || true
	fi
done
# guest-debuginfo: ratio as a distribution ships a program (stripped, no
# debug link) with its debug info apart, which only L1's debuginfod serves;
# strburn spends its time in the guest's C library.
if [ -n "${test_bin_dir:-}" ] && [ -x "$test_bin_dir/e2e/ratio" ]; then
	objcopy --only-keep-debug "$test_bin_dir/e2e/ratio" "$stage/lab/ratio-dyn.debug"
	strip -s -o "$stage/lab/ratio-dyn" "$test_bin_dir/e2e/ratio"
	readelf -n "$stage/lab/ratio-dyn" | awk '/Build ID:/ { print $3 }' >"$stage/lab/ratio-dyn.build-id"
fi
if [ -n "${test_bin_dir:-}" ] && [ -x "$test_bin_dir/e2e/strburn" ]; then
	cp "$test_bin_dir/e2e/strburn" "$stage/lab/"
fi
if [ -n "${test_bin_dir:-}" ] && [ -x "$test_bin_dir/xen/xen-sample-proto" ]; then
	cp "$test_bin_dir/xen/xen-sample-proto" "$stage/lab/"
fi

# Show the scenario's output as it is written (LAB_QUIET=1: only at a
# failure), so a person sees what the lab is doing while it runs.
follow_log() {
	local f=$out/scenario.log size
	[ "${LAB_QUIET:-0}" = 1 ] && return 0
	[ -f "$f" ] || return 0
	size=$(stat -c %s "$f")
	[ "$size" -gt "$followed" ] || return 0
	tail -c +"$((followed + 1))" "$f" | head -c "$((size - followed))"
	followed=$size
}

# How long L1 has given no sign of life: l1-init rewrites /results/heartbeat
# every 5 s; before that file exists, the time since boot started counts.
# The kernel's own "soft lockup - CPU#n stuck for Ns" counts too, since a
# stuck CPU can leave the heartbeat running on the other one while the
# scenario waits on it.
l1_silent_s() {
	local now=$1 since=$t_boot stuck
	[ -f "$out/heartbeat" ] && since=$(stat -c %Y "$out/heartbeat")
	stuck=$(grep -o 'stuck for [0-9]*s' "$out/l1-console.log" 2>/dev/null |
		tr -dc '0-9\n' | sort -n | tail -n 1)
	if [ -n "$stuck" ] && [ "$stuck" -gt $((now - since)) ]; then
		echo "$stuck"
	else
		echo $((now - since))
	fi
}

# 3-5. Boot L1 on a fresh copy-on-write overlay (the cached base is never
# written) and wait for it, bounded.  Returns 0 once L1 has written a
# scenario status, 124 on the deadline, 2 when L1 stopped without a status,
# 125 when L1 went silent for LAB_STALL_S (hung).
boot_l1() {
	rm -f "$work/l1.qcow2"
	qemu-img create -q -f qcow2 -F raw -b "$img/l1.ext4" "$work/l1.qcow2" ||
		die "qemu-img create failed"

	# -cpu max under TCG is an AMD-like CPU with SVM (and NPT), so kvm_amd
	# loads inside.  -no-reboot turns a panic (panic=-1) into an exit.
	# kvm_amd.npt=0: L1's KVM keeps shadow page tables for L2 instead of
	# using the emulated nested paging, whose faults hung or crashed L1 or
	# the guests within 1 to 3 guest boots in tests/lab/scenarios/
	# boot-loop.sh (4 runs out of 4), against none in 20 boots without it.
	local cpu=max boot append="quiet panic=-1 transparent_hugepage=never dproot=/dev/vda dptimeout=$timeout_s"
	if [ "$kind" = xen ]; then
		# Xen is the multiboot kernel; dom0's kernel with its command line
		# and the initramfs are the modules (QEMU splits them at commas).
		# Xen's console and dom0's (hvc0, through Xen) share the serial
		# port.  Xen's own CI boots it under TCG with this CPU model.
		# bootscrub=0: scrubbing free RAM costs emulated CPU for nothing.
		local dom0_mem=${LAB_XEN_DOM0_MEM:-1024M}
		# More than one pCPU: dom0 gets one vCPU pinned to pCPU 0 and the
		# guests the others (lib-xen.sh), as on a host that reserves
		# CPUs for dom0; the collector then looks at running vCPUs.
		local dom0_cpus="dom0_max_vcpus=1 dom0_vcpus_pin"
		[ "$smp" -gt 1 ] || dom0_cpus="dom0_max_vcpus=1"
		cpu=qemu64,+svm
		# "# lab-xen-hap: 1" in the scenario: the emulated SVM with
		# nested paging, so that Xen runs HVM and PVH guests with HAP
		# (with shadow paging a PVH guest took 85 s of its own uptime
		# to boot, against 17 for a PV one)
		local xen_log=
		if grep -q '^# lab-xen-hap: *1' "$scen_file"; then
			cpu=$cpu,+npt
			# what Xen says of an HVM or PVH guest it stops
			xen_log=" loglvl=all guest_loglvl=all"
		fi
		boot=(-kernel "$img/xen"
			-append "com1=115200,8n1 console=com1 dom0_mem=$dom0_mem,max:$dom0_mem $dom0_cpus bootscrub=0$xen_log"
			-initrd "$img/vmlinuz console=hvc0 $append,$img/initramfs.gz")
	else
		boot=(-kernel "$img/vmlinuz" -initrd "$img/initramfs.gz"
			-append "console=ttyS0 $append kvm_amd.npt=0")
	fi
	log "booting $kind L1 (TCG thread=$tcg_thread, -cpu $cpu, smp $smp, mem $mem, timeout ${timeout_s}s); results in $out"
	qemu-system-x86_64 -accel "tcg,thread=$tcg_thread" -cpu "$cpu" -smp "$smp" -m "$mem" \
		-machine pc -nodefaults -no-reboot -display none -monitor none \
		"${boot[@]}" \
		-drive "file=$work/l1.qcow2,if=virtio,format=qcow2,cache=unsafe" \
		-fsdev "local,id=stage,path=$stage,security_model=none,readonly=on" \
		-device virtio-9p-pci,fsdev=stage,mount_tag=stage \
		-fsdev "local,id=results,path=$out,security_model=none" \
		-device virtio-9p-pci,fsdev=results,mount_tag=results \
		-serial "file:$out/l1-console.log" \
		>"$out/qemu-l1.log" 2>&1 &
	qpid=$!
	t_boot=$(date +%s)

	booted=
	followed=0
	while kill -0 "$qpid" 2>/dev/null; do
		follow_log
		now=$(date +%s)
		if [ -z "$booted" ] && [ -f "$out/l1-booted" ]; then
			booted=$((now - t_boot))
			log "L1 up after ${booted}s (kernel uptime $(cat "$out/l1-booted")s)"
		fi
		if [ "$now" -ge "$deadline" ]; then
			log "TIMEOUT after ${timeout_s}s: killing L1"
			kill "$qpid" 2>/dev/null || true
			sleep 2
			kill -9 "$qpid" 2>/dev/null || true
			return 124
		fi
		silent=$(l1_silent_s "$now")
		if [ "$silent" -ge "$stall_s" ]; then
			log "L1 STALLED: no sign of life for ${silent}s (limit ${stall_s}s): killing L1"
			kill "$qpid" 2>/dev/null || true
			sleep 2
			kill -9 "$qpid" 2>/dev/null || true
			qpid=
			return 125
		fi
		sleep 1
	done
	wait "$qpid" && qrc=0 || qrc=$?
	follow_log
	qpid=
	t_end=$(date +%s)
	[ -s "$out/status" ] && return 0
	log "L1 stopped (qemu exit $qrc) without a scenario status"
	tail -n 20 "$out/qemu-l1.log" >&2 2>/dev/null || true
	return 2
}

# The emulated SVM of TCG occasionally crashes the L1 kernel itself (seen:
# "stack guard page was hit" in a KVM vCPU thread, before or after domprof
# started), hangs it (seen: "soft lockup" of khugepaged with RCU stalls,
# and a silent L1 while a guest was being started), or an L2 QEMU exits on
# its own or hangs while its guest boots (lib.sh logs "LAB-FAULT:" when it
# notices; lab_parts first runs the part again on the same boot, once).
# Those are faults of the lab's emulator, not of the scenario,
# so such a run is retried (LAB_ATTEMPTS in all, default 3) on a fresh
# overlay within the same deadline; a failed attempt's logs stay in
# OUT/attempt-N/.
# The scenario log's lines after its last "LAB-RERUN:" (lib.sh's
# lab_parts ran a part again after a guest's fault: the faults before it
# were dealt with on that boot).
faults_since_rerun() {
	awk '/LAB-RERUN: / { n = 0; next } { l[n++] = $0 } END { for (i = 0; i < n; i++) print l[i] }' \
		"$out/scenario.log" 2>/dev/null
}
lab_fault() {
	if [ "$1" = 2 ] && grep -q "Kernel panic" "$out/l1-console.log" 2>/dev/null; then
		grep -m3 -E "BUG:|Kernel panic" "$out/l1-console.log" >&2 || true
		echo "the L1 kernel crashed"
	elif [ "$1" = 125 ]; then
		grep -m3 -E "BUG:|rcu: INFO" "$out/l1-console.log" >&2 || true
		echo "the L1 kernel hung"
	elif [ "$1" = 0 ] && [ "$(cat "$out/status")" != 0 ] &&
		faults_since_rerun | grep -q "LAB-FAULT: "; then
		faults_since_rerun | grep -m2 "LAB-FAULT: " >&2
		echo "an L2 guest's QEMU exited on its own or hung while booting"
	fi
}
# A retry keeps what the failed attempt's passed parts left: lab_parts
# (lib.sh) wrote their names to parts-passed and skips them on the fresh
# boot, so a fault late in a run costs the part it struck, not the run.
# Their results come back from OUT/attempt-N/, all but the attempt's own
# logs and markers (a part that runs again writes its files anew).
keep_passed_parts() {
	local from=$1 f
	[ -s "$from/parts-passed" ] || return 0
	log "parts that passed on attempt $attempt, kept with their results: $(tr '\n' ' ' <"$from/parts-passed")"
	for f in "$from"/* "$from"/.[!.]*; do
		[ -e "$f" ] || continue
		case ${f##*/} in
		scenario.log|l1-console.log|l1-dmesg.log|qemu-l1.log|kvm_amd.log|status|heartbeat|l1-booted|run-summary.txt) ;;
		*) cp -a "$f" "$out/" ;;
		esac
	done
}
attempt=1
max_attempts=${LAB_ATTEMPTS:-3}
while :; do
	boot_rc=0
	boot_l1 || boot_rc=$?
	fault=$(lab_fault $boot_rc)
	if [ -n "$fault" ] && [ $attempt -lt "$max_attempts" ] && [ $(( deadline - $(date +%s) )) -gt 300 ]; then
		log "$fault (a fault of the emulated SVM, not the scenario's); attempt $attempt of $max_attempts, retrying"
		mkdir -p "$out/attempt-$attempt"
		find "$out" -maxdepth 1 -mindepth 1 ! -name 'attempt-*' -exec mv {} "$out/attempt-$attempt/" \;
		keep_passed_parts "$out/attempt-$attempt"
		attempt=$((attempt + 1))
		continue
	fi
	[ $boot_rc = 0 ] && break
	tails
	[ $boot_rc = 124 ] && exit 124
	[ $boot_rc = 125 ] && log "L1 hung on attempt $attempt of $max_attempts; giving up"
	exit 1
done
rc=$(cat "$out/status")
{
	echo "scenario $scen_name status $rc"
	echo "images $img (${t_img}s)"
	echo "domprof build ${t_build}s"
	echo "attempts $attempt"
	echo "L1 boot to shares mounted ${booted:-?}s"
	echo "L1 run (boot + scenario + poweroff) $((t_end - t_boot))s"
	echo "total $((t_end - t0))s"
} | tee "$out/run-summary.txt" >&2
if [ "$rc" != 0 ]; then
	log "scenario $scen_name FAILED (status $rc)"
	tails
	exit "$rc"
fi
log "scenario $scen_name passed; results in $out"
