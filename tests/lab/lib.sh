# shellcheck shell=bash
# Helpers for lab scenarios.  Sourced by L1's init (inside the lab host)
# before the scenario; every wait here is bounded.
#
#   start_guest NAME UUID WORKLOAD [QEMU ARGS...]   WORKLOAD: busy|idle|script
#   wait_guest_booted NAME [TIMEOUT]
#   stop_guest NAME [TIMEOUT]       QMP quit, then SIGKILL if still there
#   kill_guest NAME                 SIGKILL, as a crash would
#   guest_pid NAME / guest_vcpu_tids NAME / guest_qmp NAME CMD
#   lab_log MSG / lab_fail MSG / lab_require_kvm / lab_summary KEY VALUE
#
# Environment read by start_guest:
#   LAB_GUEST_MEM (256M), LAB_GUEST_SMP (1)
#   LAB_GUEST_SHARE  directory shared read-only with the guest as /share
#                    (virtio-9p); dpwork=script runs /share/work.sh
#   LAB_GUEST_AGENT  path inside the guest started in the background
#                    before the workload (e.g. /share/opagent)
#   LAB_GUEST_APPEND extra kernel command line words

LAB=${LAB:-/lab/lab}
STAGE=${STAGE:-/lab}
RESULTS=${RESULTS:-/results}
# The guests' kernel: the ELF (build-images.sh), which QEMU starts at its
# PVH entry, so the guest runs no decompressor: 14.9 and 17.7 s to the
# ready marker against 18.8 and 20.3 for the bzImage, interleaved on one
# L1 (2026-12-02).  That kernel is not randomized (KASLR is the
# decompressor's); a part that wants it sets LAB_L2_KERNEL to the bzImage,
# $STAGE/l2/vmlinuz (agent does, so a randomized guest kernel stays
# tested).
if [ -z "${LAB_L2_KERNEL:-}" ]; then
	LAB_L2_KERNEL=$STAGE/l2/vmlinuz
	[ ! -f "$STAGE/l2/vmlinux" ] || LAB_L2_KERNEL=$STAGE/l2/vmlinux
fi
LAB_L2_INITRD=${LAB_L2_INITRD:-$STAGE/l2/initramfs.gz}
LAB_RUN=${LAB_RUN:-/run/domprof}
# An L2 boots in 10 to 37 s (seen); one that takes minutes has hung (an
# emulator fault, retried by run.sh), so the limit is short.
LAB_BOOT_TIMEOUT=${LAB_BOOT_TIMEOUT:-120}
# The agent channel's name (doc/agent-protocol.md).
LAB_AGENT_PORT=org.domprof.agent.0
# An L2 guest's boot, shortened (seen 2026-12-02, from QEMU's start to
# the ready marker: 23.9-26.2 s in 3 default boots on one L1, 18.7 and
# 19.1 s with what is below and initramfs-init's L2 module list; 14.8 to
# 24.0 s in a whole test command's run): qboot, QEMU's minimal firmware, instead of
# SeaBIOS, and kernel words that skip what a lab guest does not need: the
# AGP aperture scans of PCI configuration space (1 to 3 s of port I/O,
# each access an exit to L1), the crypto self-tests, the NMI watchdog's
# counter and the IO-APIC timer check.  Nothing domprof reads depends on
# them.  Empty LAB_L2_BIOS boots with SeaBIOS.
LAB_L2_BIOS=${LAB_L2_BIOS-/usr/share/qemu/qboot.rom}
[ -z "$LAB_L2_BIOS" ] || [ -f "$LAB_L2_BIOS" ] || LAB_L2_BIOS=
LAB_L2_BOOT_ARGS="iommu=noaperture cryptomgr.notests nmi_watchdog=0 no_timer_check"

# oprofiled's privsep worker runs as the system user domprof and refuses
# to start without it (doc/trust.md).  On a host, make install's sysusers.d
# file or scripts/install-deps.sh makes it; the lab host's image predates
# it, so it is made here, at each run, and the cached image stays valid.
if [ "$(id -u)" = 0 ] && ! getent passwd domprof >/dev/null 2>&1; then
	if getent group domprof >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin --gid domprof domprof
	else
		useradd --system --no-create-home --shell /usr/sbin/nologin --user-group domprof
	fi || echo "lab: cannot create the user domprof (oprofiled will refuse privsep)" >&2
fi

lab_now() { cut -d' ' -f1 /proc/uptime; }
lab_log() { echo "lab [$(lab_now)]: $*"; }
# The kernel log's trouble @2 (lines since the scenario began, in @3: a
# file of dmesg) after @1: a failure of the scenario, unless it is only a
# stall report (an RCU stall or a soft lockup) with no frame of domprof's
# module in the log: the emulated CPU stalled (seen: rcu_preempt stalls in
# KVM's interrupt delivery), which run.sh retries as a LAB-FAULT.
lab_kernel_trouble() {
	local what=$1 trouble=$2 log=$3 other
	other=$(echo "$trouble" | grep -vE 'rcu: INFO|self-detected stall|rcu_preempt|soft lockup|Call Trace' || true)
	if [ -z "$other" ] && grep -qE 'rcu: INFO: .*stall|soft lockup' "$log" 2>/dev/null &&
		! grep -q '\[domprof\]' "$log" 2>/dev/null; then
		lab_log "LAB-FAULT: a stall report in the L1 kernel log after $what, no domprof frame in it: $(echo "$trouble" | head -n 2 | tr '\n' ' ')"
	fi
	lab_fail "kernel log after $what: $(echo "$trouble" | head -n 5)"
}
lab_fail() {
	lab_log "FAIL: $*"
	_lab_note_dead
	exit 1
}
# A guest's QEMU that exits although no one stopped it was reset or crashed
# by the lab's emulated SVM (its L2 kernel triple-faulted; -no-reboot makes
# that an exit): say so in a form run.sh recognises as a lab fault.
_lab_note_dead() {
	local f name
	for f in "$LAB_RUN"/*.started; do
		[ -f "$f" ] || continue
		name=$(basename "$f" .started)
		guest_alive "$name" && continue
		lab_log "LAB-FAULT: guest $name's QEMU exited on its own (emulated SVM reset or crash; see $name.qemu-debug.log)"
		rm -f "$f"
	done
}
# Append "KEY VALUE" to the results summary.
lab_summary() {
	echo "$1 ${*:2}" >>"$RESULTS/summary.txt"
	lab_log "summary: $*"
}
# |$1 - $2|, 2 decimals
absdiff() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.2f", d }'; }
# Elapsed seconds (2 decimals) since uptime value $1.
lab_since() { awk -v a="$1" -v b="$(lab_now)" 'BEGIN { printf "%.2f", b - a }'; }

lab_require_kvm() {
	[ -c /dev/kvm ] || lab_fail "/dev/kvm missing; kvm_amd.log: $(cat "$RESULTS/kvm_amd.log" 2>/dev/null)"
	grep -qw svm /proc/cpuinfo || lab_fail "L1 CPU has no svm flag"
}

# Nested paging for the guests started after this: kvm_amd reloaded with
# npt=1 (L1's command line says npt=0, tests/lab/README.md; modprobe's own
# argument wins).  No guest may be running.
lab_kvm_npt() {
	local npt
	npt=$(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null)
	case $npt in Y|1) return 0 ;; esac	# already (an earlier scenario of this boot)
	modprobe -r kvm_amd || lab_fail "kvm_amd did not unload (for npt=1)"
	modprobe kvm_amd npt=1 || lab_fail "kvm_amd npt=1 did not load"
	[ -c /dev/kvm ] || lab_fail "no /dev/kvm after reloading kvm_amd with npt=1"
	npt=$(cat /sys/module/kvm_amd/parameters/npt)
	case $npt in Y|1) ;; *) lab_fail "kvm_amd npt is $npt after loading it with npt=1" ;; esac
	lab_summary l1_npt "$npt"
}

# The file to give QEMU for $LAB_L2_KERNEL: a copy in L1's tmpfs, made
# once a boot, when it is on the 9p share (QEMU reads all of it at each
# start, and the ELF's 66 MB took about 2 s over 9p under the emulator).
lab_l2_kernel() {
	local k=$LAB_L2_KERNEL c
	case $k in "$STAGE"/*) ;; *) echo "$k"; return 0 ;; esac
	c=/run/lab-l2/$(basename "$k")
	if [ ! -s "$c" ]; then
		mkdir -p /run/lab-l2 && cp "$k" "$c.tmp" && mv "$c.tmp" "$c" ||
			{ rm -f "$c.tmp"; echo "$k"; return 0; }
	fi
	echo "$c"
}

guest_pid() { cat "$LAB_RUN/$1.pid" 2>/dev/null; }
guest_alive() {
	local p
	p=$(guest_pid "$1") && [ -n "$p" ] && kill -0 "$p" 2>/dev/null
}

start_guest() {
	local name=$1 uuid=$2 work=$3 append share=() f
	shift 3 || lab_fail "usage: start_guest NAME UUID WORKLOAD [QEMU ARGS]"
	mkdir -p "$LAB_RUN"
	# One guest boots at a time: most emulator faults (an L1 panic, a guest
	# QEMU gone or hung) struck while two guests booted together.
	for f in "$LAB_RUN"/*.started; do
		[ -f "$f" ] && wait_guest_booted "$(basename "$f" .started)"
	done
	rm -f "$LAB_RUN/$name".{pid,agent,qmp,started,booted} "$RESULTS/$name.console"
	append="console=ttyS0 quiet panic=-1 $LAB_L2_BOOT_ARGS dpname=$name dpwork=$work"
	[ -n "${LAB_GUEST_AGENT:-}" ] && append="$append dpagent=$LAB_GUEST_AGENT"
	[ -n "${LAB_GUEST_APPEND:-}" ] && append="$append $LAB_GUEST_APPEND"
	if [ -n "${LAB_GUEST_SHARE:-}" ]; then
		share=(-fsdev "local,id=share,path=$LAB_GUEST_SHARE,security_model=none,readonly=on"
			-device virtio-9p-pci,fsdev=share,mount_tag=share)
	fi
	lab_now >"$LAB_RUN/$name.start"
	# debug-threads names vCPU threads "CPU n/KVM", which domains/ reads.
	# Not -daemonize: that sends QEMU's stderr to /dev/null, and a guest
	# QEMU that dies mid-run (a lab fault) says why only there.
	setsid qemu-system-x86_64 -enable-kvm -cpu host \
		-m "${LAB_GUEST_MEM:-256M}" -smp "${LAB_GUEST_SMP:-1}" \
		-name "$name,debug-threads=on" -uuid "$uuid" \
		-machine pc -nodefaults -no-reboot -display none -monitor none \
		${LAB_L2_BIOS:+-bios "$LAB_L2_BIOS"} \
		-kernel "$(lab_l2_kernel)" -initrd "$LAB_L2_INITRD" -append "$append" \
		-serial "file:$RESULTS/$name.console" \
		-device virtio-serial-pci,id=vser0 \
		-chardev "socket,id=agent0,path=$LAB_RUN/$name.agent,server=on,wait=off" \
		-device "virtserialport,bus=vser0.0,chardev=agent0,name=$LAB_AGENT_PORT" \
		-qmp "unix:$LAB_RUN/$name.qmp,server=on,wait=off" \
		"${share[@]}" \
		-pidfile "$LAB_RUN/$name.pid" "$@" \
		-D "$RESULTS/$name.qemu-debug.log" -d guest_errors,cpu_reset \
		</dev/null >"$RESULTS/$name.qemu.log" 2>&1 &
	local qp=$! i=0
	# started once the pid file is written; bounded (60 s)
	while [ ! -s "$LAB_RUN/$name.pid" ]; do
		kill -0 "$qp" 2>/dev/null ||
			lab_fail "qemu for $name did not start: $(tail -n 5 "$RESULTS/$name.qemu.log")"
		[ $i -lt 600 ] || { kill -9 "$qp"; lab_fail "qemu for $name did not start within 60 s"; }
		sleep 0.1
		i=$((i + 1))
	done
	touch "$LAB_RUN/$name.started"
	lab_log "started guest $name ($uuid, $work) pid $(guest_pid "$name")"
}

# Wait for the L2 init's ready marker; prints the boot time in seconds.
wait_guest_booted() {
	local name=$1 limit=${2:-$LAB_BOOT_TIMEOUT} start end
	if [ -f "$LAB_RUN/$name.booted" ]; then
		lab_log "guest $name booted in $(cat "$LAB_RUN/$name.booted")s"
		return 0
	fi
	start=$(cat "$LAB_RUN/$name.start" 2>/dev/null || lab_now)
	end=$(awk -v s="$(lab_now)" -v l="$limit" 'BEGIN { print int(s + l) }')
	while ! grep -q DOMPROF-L2-READY "$RESULTS/$name.console" 2>/dev/null; do
		if ! guest_alive "$name"; then
			tail -n 30 "$RESULTS/$name.console" 2>/dev/null
			lab_fail "guest $name died while booting"
		fi
		if [ "$(cut -d. -f1 /proc/uptime)" -ge "$end" ]; then
			tail -n 30 "$RESULTS/$name.console" 2>/dev/null
			# nothing of domprof runs in a booting guest: a hang there is
			# the emulator's; where its vCPU stands is kept for a look
			guest_qmp "$name" human-monitor-command '{"command-line":"info registers"}' \
				>"$RESULTS/$name.hung-registers.txt" 2>&1 || true
			lab_log "LAB-FAULT: guest $name hung while booting (registers in $name.hung-registers.txt)"
			lab_fail "guest $name not booted after ${limit}s"
		fi
		sleep 0.5
	done
	lab_since "$start" >"$LAB_RUN/$name.booted"
	lab_log "guest $name booted in $(cat "$LAB_RUN/$name.booted")s"
}

# Wait up to $3 seconds for guest $1's console to show the line pattern
# $2 (grep -E).  A guest that died meanwhile (an emulator fault: its
# kernel panicked, or its QEMU is gone) ends the scenario at once, as a
# lab fault run.sh retries, not after the whole wait.  1 on the timeout.
lab_wait_console() {
	local name=$1 pat=$2 limit=$3 i
	for ((i = 0; i < limit; i++)); do
		grep -qE "$pat" "$RESULTS/$name.console" 2>/dev/null && return 0
		if ! guest_alive "$name" || grep -q "Kernel panic - not syncing" "$RESULTS/$name.console" 2>/dev/null; then
			tail -n 30 "$RESULTS/$name.console" 2>/dev/null
			lab_log "LAB-FAULT: guest $name died while its workload ran (console above)"
			lab_fail "guest $name died before \"$pat\""
		fi
		sleep 1
	done
	grep -qE "$pat" "$RESULTS/$name.console" 2>/dev/null
}

# Send one QMP command (JSON "execute" name, optional arguments object);
# prints the replies.
guest_qmp() {
	local name=$1 cmd=$2 args=${3:-}
	local req="{\"execute\":\"$cmd\"${args:+,\"arguments\":$args}}"
	printf '{"execute":"qmp_capabilities"}\n%s\n' "$req" |
		timeout 10 socat -t 2 - "UNIX-CONNECT:$LAB_RUN/$name.qmp"
}

# Host thread ids of the guest's vCPUs, one per line, in vCPU order.
guest_vcpu_tids() {
	local p t
	p=$(guest_pid "$1") || return 1
	for t in /proc/"$p"/task/*; do
		case $(cat "$t/comm" 2>/dev/null) in
		"CPU "*/KVM) echo "$(cut -d' ' -f2 "$t/comm" | cut -d/ -f1) ${t##*/}" ;;
		esac
	done | sort -n | cut -d' ' -f2
}

_lab_wait_gone() {
	local pid=$1 limit=$2 i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt $((limit * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	! kill -0 "$pid" 2>/dev/null
}

# Orderly stop: QEMU quits (closing its sockets) as on a shutdown; the
# busybox guest has no ACPI daemon, so system_powerdown would be ignored.
stop_guest() {
	local name=$1 limit=${2:-20} pid
	pid=$(guest_pid "$name") || { lab_log "stop_guest: no guest $name"; _lab_note_dead; return 0; }
	rm -f "$LAB_RUN/$name.started"
	guest_qmp "$name" quit >/dev/null 2>&1 || true
	if ! _lab_wait_gone "$pid" "$limit"; then
		lab_log "guest $name ignored quit for ${limit}s; killing"
		kill -9 "$pid" 2>/dev/null
		_lab_wait_gone "$pid" 5 || lab_fail "guest $name (pid $pid) will not die"
	fi
	rm -f "$LAB_RUN/$name.pid"
	lab_log "stopped guest $name"
}

kill_guest() {
	local name=$1 pid
	pid=$(guest_pid "$name") || { lab_log "kill_guest: no guest $name"; _lab_note_dead; return 0; }
	rm -f "$LAB_RUN/$name.started"
	kill -9 "$pid" 2>/dev/null
	_lab_wait_gone "$pid" 5 || lab_fail "guest $name (pid $pid) will not die"
	rm -f "$LAB_RUN/$name.pid"
	lab_log "killed guest $name"
}

lab_kill_all_guests() {
	local f
	for f in "$LAB_RUN"/*.pid; do
		[ -f "$f" ] || continue
		kill -9 "$(cat "$f")" 2>/dev/null
		rm -f "$f"
	done
}

# Scenarios $@ (names in $LAB/scenarios) one after another on this boot of
# L1, each in a subshell: one that fails is named at the end and the next
# still runs, after what it left behind (guests, a daemon, perf) is gone.
# Saves a boot of L1 (about 20 s) per scenario against running them apart.
# A part named in $RESULTS/parts-passed passed on an earlier attempt of
# this run (run.sh retries a run that met a fault of L1 on a fresh boot,
# and keeps that list and the parts' results): it is not run again.  Each
# part sets up what it needs (guests, daemon, module), so one can run
# without those before it.  A word NAME=VALUE among the parts sets that
# variable for the parts after it (exact-all: one plan for the parts
# without nested paging, another for those with it).
lab_parts() {
	local p failed= t faults reran= again
	for p in "$@"; do
		case $p in *=*) export "${p?}"; continue ;; esac
		if grep -qx "$p" "$RESULTS/parts-passed" 2>/dev/null; then
			lab_log "=== part $p: PASS on an earlier attempt of this run (not run again)"
			continue
		fi
		again=1
		while [ -n "$again" ]; do
			again=
			t=$(lab_now)
			faults=$(grep -c "LAB-FAULT: " "$RESULTS/scenario.log" 2>/dev/null)
			lab_log "=== part $p"
			if (. "$LAB/scenarios/$p.sh"); then
				lab_log "=== part $p: PASS ($(lab_since "$t") s)"
				echo "$p" >>"$RESULTS/parts-passed"
			else
				lab_log "=== part $p: FAIL ($(lab_since "$t") s)"
				if [ "$(grep -c "LAB-FAULT: " "$RESULTS/scenario.log" 2>/dev/null)" != "$faults" ]; then
					lab_part_fault "$p" "$reran" "$faults"
					reran="$reran $p" again=1
				else
					failed="$failed $p"
				fi
				pkill -9 -x oprofiled 2>/dev/null || true
				pkill -9 -x dp-kmod-read 2>/dev/null || true
				pkill -INT -x perf 2>/dev/null || true
				_lab_part_gone oprofiled
				_lab_part_gone dp-kmod-read
			fi
			_lab_part_clean "$p"
		done
	done
	[ -z "$failed" ] || lab_fail "parts that failed:$failed"
}
# Part @1 met a fault of the emulator (LAB-FAULT lines after the first @3).
# An L2 guest's fault (its QEMU exited on its own, it hung while booting or
# died while its workload ran), and nothing else, leaves L1 sound: the
# part runs once more on this boot,
# after a "LAB-RERUN:" line that tells run.sh the faults before it were
# dealt with.  A second fault of the part (@2 lists the parts run again),
# or a fault of L1 itself, ends the run: run.sh retries it on a fresh L1,
# and the parts after this one would run for nothing.
lab_part_fault() {
	local new
	# the part's faults: every LAB-FAULT line after the @3 before it
	new=$(grep "LAB-FAULT: " "$RESULTS/scenario.log" | tail -n +$(($3 + 1)))
	case " $2 " in *" $1 "*) lab_fail "part $1 met a lab fault again; left to the retry" ;; esac
	if ! echo "$new" | grep -qv "LAB-FAULT: guest "; then
		lab_log "LAB-RERUN: part $1 runs again on this boot after its guest's fault"
		lab_summary part_rerun "$1 ($(echo "$new" | head -n 1 | sed 's/.*LAB-FAULT: //'))"
		return 0
	fi
	lab_fail "part $1 met a lab fault of L1; the parts after it are left to the retry"
}
# Wait (up to 20 s) until no process is named @1: a killed daemon's
# descriptors (the module's device among them) close as it exits, after
# pkill has returned.
_lab_part_gone() {
	local k
	for ((k = 0; k < 40; k++)); do
		pgrep -x "$1" >/dev/null || return 0
		sleep 0.5
	done
	lab_log "part cleanup: $1 still running after 20 s: $(pgrep -a -x "$1" | head -n 3)"
}
# Guests a part left running (some scenarios end with the boot).  A Xen
# guest a part leaves on purpose (LAB_KEEP_GUESTS) has no pid file and
# keeps its boot marker, so the next part does not take it for booting.
_lab_part_clean() {
	local left= f
	for f in "$LAB_RUN"/*.pid; do
		[ -f "$f" ] || continue
		left="$left $(basename "$f" .pid)"
		rm -f "${f%.pid}.booted"
	done
	[ -z "$left" ] || lab_log "part $1 left guests running:$left (killed)"
	lab_kill_all_guests
	rm -f "$LAB_RUN"/*.started
}

# Samples in a perf.data file by host pid and cpumode, read from perf's raw
# dump (exact, independent of perf's guest machine handling).  Prints
# "total N" and then "PID GUEST_SAMPLES ALL_SAMPLES" lines, guest meaning
# cpumode guest kernel (misc 4) or guest user (misc 5), all meaning every
# sample of that pid (a guest's QEMU: its guest and its host work).  With
# $2 and $3, only the samples whose time is in [$2, $3) (ns on the record's
# clock: perf record -k CLOCK_MONOTONIC makes it the daemon's dump_time_ns).
perf_guest_samples_by_pid() {
	perf report -D -i "$1" 2>/dev/null | awk -v from="${2:-}" -v to="${3:-}" '
		/PERF_RECORD_SAMPLE\(/ {
			if (!match($0, /PERF_RECORD_SAMPLE\([^,]*, 0x[0-9a-f]+\)/))
				next
			if (from != "") {
				# the time is the field before the offset and [size]
				t = ""
				for (i = 2; i <= NF; i++)
					if ($i ~ /^\[0x[0-9a-f]+\]:$/) { t = $(i - 2); break }
				if (t == "" || t + 0 < from + 0 || t + 0 >= to + 0)
					next
			}
			total++
			s = substr($0, RSTART, RLENGTH); sub(/.*, /, "", s); sub(/\)/, "", s)
			# mawk has no strtonum; cpumode is the low 3 bits.
			misc = (index("0123456789abcdef", substr(s, length(s), 1)) - 1) % 8
			for (i = 1; i <= NF; i++)
				if ($i ~ /^-?[0-9]+\/-?[0-9]+:$/) { split($i, p, "/"); break }
			all[p[1]]++
			if (misc == 4 || misc == 5)
				n[p[1]]++
		}
		END { print "total", total + 0; for (k in all) print k, n[k] + 0, all[k] }'
}

# Wait up to $3 s (default 120) until session $1's log says $2 agents
# (default 1) sent their whole state ("agent state complete"); with $4, that
# domain's agent only.  Returns 1 on the timeout.
wait_agents_complete() {
	local log=$1/oprofiled.log want=${2:-1} pat="agent state complete" i n
	[ -n "${4:-}" ] && pat="domain $4: $pat"
	for i in $(seq 1 "${3:-120}"); do
		n=$(grep -c "$pat" "$log" 2>/dev/null || true)
		[ "${n:-0}" -ge "$want" ] && return 0
		sleep 1
	done
	return 1
}

# perf record on all CPUs, started with its events off, so a scenario can
# start it early and turn it on when the workload starts: perf in L1 takes
# tens of seconds to start (it reads every process first), and one started
# just before a workload recorded only its last half second.
# perf_rec_start OUT EVENT-ARGS... sets PERF_REC_PID; perf_rec_on OUT turns
# the events on and returns once perf said so (bounded); stop perf with
# kill -INT.
perf_rec_start() {
	local out=$1
	shift
	rm -f "$out.ctl" "$out.ack"
	mkfifo "$out.ctl" "$out.ack" || return 1
	perf record -q -a -D -1 --control "fifo:$out.ctl,$out.ack" "$@" -o "$out" >"$out.err" 2>&1 &
	PERF_REC_PID=$!
}
perf_rec_on() {
	timeout "${2:-180}" sh -c "echo enable >'$1.ctl' && head -c 3 <'$1.ack'" >/dev/null 2>&1
}
# perf_rec_off OUT turns them off again (perf keeps running; bounded).
perf_rec_off() {
	timeout "${2:-30}" sh -c "echo disable >'$1.ctl' && head -c 3 <'$1.ack'" >/dev/null 2>&1
}

# perf's split of one guest's user samples by address: samples of host
# pid $3 (the guest's QEMU) whose ip lies in a range of $2 ("LO HI NAME"
# lines, hex, HI excluded); prints "NAME COUNT" for every name.  Guest user
# samples are taken by their address, not by cpumode: under the lab's
# emulated SVM the host sees most of them with cpumode guest kernel (misc
# 4; domprof counts them guest_mode_by_address), so a filter on misc 5
# alone counted nothing.
perf_guest_split() {
	perf report -D -i "$1" 2>/dev/null | awk -v syms="$2" -v pid="$3" '
		function hex(s,   i, v) { v = 0; s = tolower(s); sub(/^0x/, "", s)
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v }
		BEGIN { while ((getline l < syms) > 0) { split(l, f, " "); n++
			lo[n] = hex(f[1]); hi[n] = hex(f[2]); nm[n] = f[3]; c[f[3]] = 0 } }
		/PERF_RECORD_SAMPLE\(/ {
			if (!match($0, /PERF_RECORD_SAMPLE\([^,]*, 0x[0-9a-f]+\)/)) next
			s = substr($0, RSTART, RLENGTH); sub(/.*, /, "", s); sub(/\)/, "", s)
			misc = (index("0123456789abcdef", substr(s, length(s), 1)) - 1) % 8
			if (misc != 4 && misc != 5) next
			ip = -1
			for (i = 1; i <= NF; i++) if ($i ~ /^-?[0-9]+\/-?[0-9]+:$/) { split($i, p, "/"); ip = hex($(i + 1)); break }
			if (pid != "" && p[1] != pid) next
			for (k = 1; k <= n; k++) if (ip >= lo[k] && ip < hi[k]) c[nm[k]]++
		}
		END { for (k in c) print k, c[k] }'
}

# Start virtlogd and libvirtd by hand (L1 has no systemd as PID 1) and wait,
# bounded, until qemu:///system answers.  The lab runs QEMU as root without
# a security driver so guest files on the 9p shares need no relabelling.
lab_start_libvirtd() {
	local limit=${1:-60} i=0
	cat >>/etc/libvirt/qemu.conf <<'CONF'
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
CONF
	mkdir -p /run/libvirt /var/log/libvirt/qemu
	virtlogd -d || lab_fail "virtlogd did not start"
	libvirtd -d || lab_fail "libvirtd did not start"
	while ! timeout 10 virsh -c qemu:///system version >/dev/null 2>&1; do
		[ $i -lt "$limit" ] || lab_fail "libvirtd not answering after ${limit}s"
		sleep 1
		i=$((i + 1))
	done
	lab_log "libvirtd up: $(virsh -c qemu:///system version 2>/dev/null | tr '\n' ' ')"
}

# Print libvirt domain XML for an L2 guest like start_guest's: same kernel,
# initramfs and workload, serial console to $RESULTS/NAME.console, and the
# agent channel as a <channel type='unix'> named org.domprof.agent.0.
lab_guest_xml() {
	local name=$1 uuid=$2 work=$3
	cat <<XML
<domain type='kvm'>
  <name>$name</name>
  <uuid>$uuid</uuid>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <cpu mode='host-passthrough'/>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>${LAB_L2_BIOS:+
    <loader type='rom'>$LAB_L2_BIOS</loader>}
    <kernel>$(lab_l2_kernel)</kernel>
    <initrd>$LAB_L2_INITRD</initrd>
    <cmdline>console=ttyS0 quiet panic=-1 $LAB_L2_BOOT_ARGS dpname=$name dpwork=$work</cmdline>
  </os>
  <features><acpi/></features>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <serial type='file'><source path='$RESULTS/$name.console'/></serial>
    <channel type='unix'>
      <source mode='bind' path='$LAB_RUN/$name.agent'/>
      <target type='virtio' name='$LAB_AGENT_PORT'/>
    </channel>
    <memballoon model='none'/>
  </devices>
</domain>
XML
}

# The installed domprof.ko in the module index, for modprobe: run.sh made
# the index on the build machine when it could (stage_depmod); otherwise,
# or if modprobe cannot resolve the module with it, depmod -a here.
lab_depmod() {
	if grep -q '^extra/domprof.ko:' "/lib/modules/$(uname -r)/modules.dep" 2>/dev/null &&
		modprobe -n -q domprof 2>/dev/null; then
		lab_summary depmod staged
		return 0
	fi
	depmod -a || lab_fail "depmod failed"
	lab_summary depmod l1
}

# Fail unless every program of the staged domprof tree finds its shared
# libraries in L1 (the image's package list must cover them).
lab_check_domprof_libs() {
	local f missing=0 n=0
	[ -d "$STAGE/domprof" ] || { lab_log "no domprof staged"; return 0; }
	# once a boot (scenarios that run others check once)
	[ ! -f /run/lab-libs-checked ] || return 0
	for f in $(cd "$STAGE/domprof" && find . -type f -perm -u+x | sed 's/^\.//'); do
		head -c 4 "$f" | grep -q ELF || continue
		n=$((n + 1))
		if ldd "$f" 2>&1 | grep 'not found'; then
			lab_log "$f: missing libraries"
			missing=1
		fi
	done
	[ $missing -eq 0 ] || lab_fail "domprof programs miss libraries in L1"
	lab_log "domprof: $n programs, all libraries found"
	touch /run/lab-libs-checked
}
