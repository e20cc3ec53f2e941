# shellcheck shell=bash
# Helpers for scenarios of the Xen kind of lab host ("# lab-kind: xen"):
# L1 is Xen's dom0, its guests (L2) are PV domains started with xl.
# Sourced by the scenario after lib.sh:  . "$LAB/lib-xen.sh"
#
#   lab_require_xen                 dom0 with xenstored/xenconsoled up
#   xen_start_guest NAME UUID WORKLOAD [XL CONFIG LINES...]
#   xen_wait_booted NAME [TIMEOUT]
#   xen_domid NAME / xen_alive NAME / xen_uuid NAME
#   xen_cpu_s NAME                  Xen's CPU time of the domain, in s
#   xen_destroy NAME
#   xen_channel_fixup NAME CHANNEL SOCKET   the PV console channel libxl 4.17 drops
#   xen_share_initrd ROOT OUT       the lab's initramfs with ROOT appended
#   xen_start_agent_guest NAME UUID INITRD [XL LINES]  a guest with opagent on its channel
#
# A guest is the lab's kernel booted as a PV domU with the lab's
# initramfs (the same workloads as the KVM guests: busy, idle, script).
# Its console goes through xenconsoled to
# $RESULTS/xen-consoles/guest-NAME.log (l1-init starts it so).
# Environment: XEN_CREATE_PAUSED=1 (xl create -p: the domain waits for
#   xl unpause), LAB_GUEST_MEM (128, MiB: a PV guest's memory is set up by
#   dom0 and Xen on the emulated CPU, the less the faster), LAB_GUEST_SMP (1),
#   LAB_GUEST_APPEND extra kernel command line words, LAB_XEN_TYPE the
#   domain's type (pv, the default, or pvh: the same kernel through its
#   PVH entry, in an HVM container under the emulated SVM).

XEN_CONSOLES=${XEN_CONSOLES:-$RESULTS/xen-consoles}
# The build-images.sh --kind xen forms of the L2 kernel and initramfs that
# xl loads without unpacking them.
LAB_XEN_L2_KERNEL=${LAB_XEN_L2_KERNEL:-$STAGE/l2/vmlinux}
LAB_XEN_L2_INITRD=${LAB_XEN_L2_INITRD:-$STAGE/l2/initramfs.cpio}

lab_require_xen() {
	[ "$(cat /sys/hypervisor/type 2>/dev/null)" = xen ] ||
		lab_fail "L1 is not running on Xen (is the scenario's lab-kind xen?)"
	grep -q control_d /proc/xen/capabilities 2>/dev/null ||
		lab_fail "not Xen's dom0; xen-init.log: $(tail -n 5 "$RESULTS/xen-init.log" 2>/dev/null)"
	timeout 10 xenstore-read /local/domain/0/name >/dev/null 2>&1 ||
		lab_fail "xenstored not answering; xen-init.log: $(tail -n 5 "$RESULTS/xen-init.log" 2>/dev/null)"
	pidof xenconsoled >/dev/null || lab_fail "xenconsoled not running"
}

xen_domid() { timeout 10 xl domid "$1" 2>/dev/null; }
# The UUID of a running domain, from xenstore (its /vm/UUID path).
xen_uuid() {
	local id vm
	id=$(xen_domid "$1") || return 1
	vm=$(timeout 10 xenstore-read "/local/domain/$id/vm" 2>/dev/null) || return 1
	echo "${vm#/vm/}"
}
# pCPUs Xen has (xl info), once
xen_nr_cpus() {
	[ -n "${XEN_NR_CPUS:-}" ] || XEN_NR_CPUS=$(timeout 20 xl info 2>/dev/null | awk '$1 == "nr_cpus" { print $3 }')
	echo "${XEN_NR_CPUS:-1}"
}

xen_alive() { [ -n "$(xen_domid "$1")" ]; }

xen_start_guest() {
	local name=$1 uuid=$2 work=$3 cfg append
	shift 3 || lab_fail "usage: xen_start_guest NAME UUID WORKLOAD [XL LINES]"
	mkdir -p "$LAB_RUN"
	cfg=$LAB_RUN/$name.xl
	rm -f "$LAB_RUN/$1.booted" "$XEN_CONSOLES/guest-$name.log"
	append="console=hvc0 quiet panic=-1 $LAB_L2_BOOT_ARGS dpname=$name dpwork=$work"
	[ -n "${LAB_GUEST_APPEND:-}" ] && append="$append $LAB_GUEST_APPEND"
	{
		echo "name = \"$name\""
		echo "uuid = \"$uuid\""
		echo "type = \"${LAB_XEN_TYPE:-pv}\""
		echo "kernel = \"$LAB_XEN_L2_KERNEL\""
		echo "ramdisk = \"$LAB_XEN_L2_INITRD\""
		echo "extra = \"$append\""
		echo "memory = ${LAB_GUEST_MEM:-128}"
		echo "vcpus = ${LAB_GUEST_SMP:-1}"
		# dom0 is pinned to pCPU 0 when there are more (run.sh)
		local ncpu
		ncpu=$(xen_nr_cpus)
		if [ "$ncpu" -gt 1 ]; then echo "cpus = \"1-$((ncpu - 1))\""; fi
		echo 'on_poweroff = "destroy"'
		echo 'on_reboot = "destroy"'
		echo 'on_crash = "destroy"'
		local l
		for l in "$@"; do echo "$l"; done
	} >"$cfg"
	lab_now >"$LAB_RUN/$name.start"
	# xl -vvv's lines stamped with dom0's uptime (a builtin read: no fork
	# per line), to see which step of the domain build takes the time.
	local rc=0 t0 t1
	t0=$(lab_now)
	timeout 240 xl -vvv create ${XEN_CREATE_PAUSED:+-p} -q "$cfg" 2>&1 | xen_stamp >"$RESULTS/$name.xl.log"
	rc=${PIPESTATUS[0]}
	[ $rc = 0 ] || lab_fail "xl create $name failed: $(tail -n 5 "$RESULTS/$name.xl.log")"
	t1=$(lab_now)
	lab_log "started ${LAB_XEN_TYPE:-pv} guest $name ($uuid, $work) domid $(xen_domid "$name"), xl create $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')s"
}

# Prefix each line of stdin with dom0's uptime.
xen_stamp() {
	local up _ l
	while IFS= read -r l; do
		read -r up _ </proc/uptime
		printf '%s %s\n' "$up" "$l"
	done
}

# Wait for the L2 init's ready marker on the guest's console.
xen_wait_booted() {
	local name=$1 limit=${2:-$LAB_BOOT_TIMEOUT} start end
	[ -f "$LAB_RUN/$name.booted" ] && return 0
	start=$(cat "$LAB_RUN/$name.start" 2>/dev/null || lab_now)
	end=$(awk -v s="$(lab_now)" -v l="$limit" 'BEGIN { print int(s + l) }')
	while ! grep -q DOMPROF-L2-READY "$XEN_CONSOLES/guest-$name.log" 2>/dev/null; do
		if ! xen_alive "$name"; then
			tail -n 30 "$XEN_CONSOLES/guest-$name.log" 2>/dev/null
			lab_fail "PV guest $name died while booting"
		fi
		if [ "$(cut -d. -f1 /proc/uptime)" -ge "$end" ]; then
			tail -n 30 "$XEN_CONSOLES/guest-$name.log" 2>/dev/null
			timeout 10 xl list -l "$name" >"$RESULTS/$name.hung-xl-list.txt" 2>&1
			lab_fail "PV guest $name not booted after ${limit}s"
		fi
		sleep 0.5
	done
	lab_since "$start" >"$LAB_RUN/$name.booted"
	lab_log "PV guest $name booted in $(cat "$LAB_RUN/$name.booted")s"
}

# Xen's own accounting of the CPU time a domain got (sum over its vCPUs),
# in seconds with one decimal, as xl list prints it.
xen_cpu_s() {
	timeout 10 xl list "$1" 2>/dev/null | awk 'NR == 2 { print $NF }'
}

xen_destroy() {
	timeout 30 xl destroy "$1" >/dev/null 2>&1 || lab_log "xl destroy $1 failed"
	rm -f "$LAB_RUN/$1.booted"
	lab_log "destroyed PV guest $1"
}

# A PV console channel (xl channel=["name=CHANNEL,connection=socket,
# path=SOCKET"]) as libxl would have written it in xenstore, when libxl did
# not.  Xen 4.17's libxl drops every channel xl gives it: xl numbers a
# domain's channels from 0, libxl__init_console_from_channel keeps that
# number as the console's devid, and libxl__device_console_add refuses a
# console 0 with a name ("Primary console has invalid configuration" in
# NAME.xl.log) -- after the device model was started with the channel's
# chardev (libxl-channel0, the socket's server).  The nodes written here
# are console 1's, as libxl writes them for a channel: QEMU's console
# backend watches its backend directory and takes it when it appears.  The
# domain must be paused (XEN_CREATE_PAUSED=1; xl unpause after): the
# guest's xenbus probes a device the moment it appears, and one it finds
# half written (no backend yet, or nodes it may not write) stays broken.
xen_channel_fixup() {
	local name=$1 cname=$2 sock=$3 id fe be
	id=$(xen_domid "$name") || lab_fail "xen_channel_fixup: no domain $name"
	fe=/local/domain/$id/device/console/1
	be=/local/domain/0/backend/console/$id/1
	if timeout 10 xenstore-read "$fe/name" >/dev/null 2>&1; then
		lab_log "channel $cname of $name: in xenstore already ($fe)"
		return 0
	fi
	grep -q "Primary console has invalid configuration" "$RESULTS/$name.xl.log" 2>/dev/null &&
		lab_log "libxl dropped channel $cname of $name (Primary console has invalid configuration): writing its xenstore nodes"
	# The backend first (the guest reads it as soon as its frontend
	# appears: a console whose other end is missing is closed for good),
	# readable by the guest; then the frontend in one transaction (one
	# xenstore-write), under the guest's own device directory, whose
	# owner its new nodes inherit.
	timeout 10 xenstore-write "$be/frontend" "$fe" "$be/frontend-id" "$id" "$be/online" 1 \
		"$be/state" 1 "$be/protocol" vt100 "$be/name" "$cname" "$be/connection" socket \
		"$be/path" "$sock" ||
		lab_fail "xenstore-write $be failed"
	timeout 10 xenstore-chmod -r "$be" n0 "r$id" || lab_fail "xenstore-chmod $be failed"
	timeout 10 xenstore-write "$fe/backend" "$be" "$fe/backend-id" 0 "$fe/state" 1 \
		"$fe/protocol" vt100 "$fe/name" "$cname" "$fe/limit" 1048576 "$fe/type" ioemu \
		"$fe/output" chardev:libxl-channel0 "$fe/tty" "" ||
		lab_fail "xenstore-write $fe failed"
	timeout 10 xenstore-chmod -r "$fe" "n$id" || lab_fail "xenstore-chmod $fe failed"
}

# A PV guest has no 9p share: OUT becomes the lab's L2 initramfs with the
# tree ROOT (its share/ becomes the guest's /share) appended as a second
# cpio archive, which the guest kernel unpacks after the first.
xen_share_initrd() {
	local root=$1 out=$2
	mkdir -p "${out%/*}"
	(cd "$root" && find . | busybox cpio -o -H newc >"$out.share") || lab_fail "busybox cpio -o failed"
	cat "$LAB_XEN_L2_INITRD" "$out.share" >"$out" || lab_fail "cannot write $out"
	rm -f "$out.share"
}

# Guest NAME (UUID) booted from INITRD (xen_share_initrd) running
# /share/work.sh, with the agent channel org.domprof.agent.0 on
# $LAB_RUN/NAME.agent and /share/agent.sh started as its agent.  Created
# paused, its channel written (xen_channel_fixup), then let run: a guest
# that probes a half-written console keeps it broken.
xen_start_agent_guest() {
	local name=$1 uuid=$2 initrd=$3
	shift 3
	XEN_CREATE_PAUSED=1 LAB_XEN_L2_INITRD=$initrd LAB_GUEST_APPEND="dpagent=/share/agent.sh" \
		xen_start_guest "$name" "$uuid" script \
		"channel = [ \"name=org.domprof.agent.0,connection=socket,path=$LAB_RUN/$name.agent\" ]" "$@"
	xen_channel_fixup "$name" org.domprof.agent.0 "$LAB_RUN/$name.agent"
	timeout 30 xl unpause "$name" || lab_fail "xl unpause $name failed"
	xen_wait_booted "$name"
}
