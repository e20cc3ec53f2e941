# lab-kind: xen
# opagent in a Xen PV guest over its PV console channel (issue 13, "guest
# attribution as on KVM"; doc/xen.md).  web is started with
#   channel = [ "name=org.domprof.agent.0,connection=socket,path=/run/domprof/web.agent" ]
# (libxl then runs a QEMU for the domain as the channel's backend, the
# unix socket's server), and its initramfs carries /share (a cpio appended
# to the lab's: a PV guest has no 9p) with opagent, ratio-static and
# exact-a/exact-b.  opagent finds the channel itself (xenstore through
# /dev/xen/xenbus, then /dev/hvcN), the daemon (xen collector and xenctrl
# backend, picked by opcontrol) connects to the socket and says HOST_JOIN,
# the agent starts over on it.  The guest's workload waits until the agent
# says its kernel symbols are sent, then runs:
#   1. exact-a and exact-b at once (tests/e2e/exact.c: the same addresses,
#      crossed hot and never-run code);
#   2. ratio (70/30 between burn_a and burn_b) beside dd (guest kernel work);
#   3. exact-a2 and exact-b2, copies of the two under other names, the same
#      check late in the session;
#   4. disk and network I/O through dom0's back ends.
# Must hold:
#  - the daemon logs "agent state complete" for web;
#  - privilege separation: the daemon's worker (which parses the agent's
#    bytes) is not root and runs under seccomp, and only the monitor holds
#    a privcmd fd (it runs the xen collector; opd_relay.h);
#  - opreport --domain=web -l names guest user symbols (burn_a, burn_b) and
#    guest kernel symbols (vmlinux rows with a symbol name);
#  - dom0's own work is sampled in the same session (the perf collector in
#    the xen collector's stream): web's {vmm}, the console QEMU carrying
#    its channel, has samples;
#  - burn_a's share of burn_a + burn_b within 5 points (XA_TOL), or four
#    times its sampling spread (XA_SIGMAS) when that is wider, of the
#    share of the loop's steps ratio ran in burn_a (XA_CHECK_RATIO=0
#    prints without checking); a miss over 5 points with a spread over
#    3 points (XA_MAX_SIGMA) fails as too few reads to tell.  The spread is that of a split of
#    the independent reads the two rows are worth: the collector logs
#    what its samples are worth ((sum w)^2 / sum w^2 for reads of weight
#    w), scaled to the rows' samples.  Fifteen runs of 2026-11-30 (nine
#    PV, six PVH) were -3.01 to +1.07 spreads off, the PVH ones worth
#    191 to 664 reads (spread 1.8 to 3.4 points) and the PV ones 882 to
#    2,037 (1.0 to 1.6); the -3.01 (6.70 points, PVH) failed the fixed
#    5-point bar in a test command's run.  The steps, not the thread CPU time ratio
#    also prints: that time holds the kernel time of its clock reads,
#    slow system calls in a PV guest under the emulator and guest kernel
#    samples, outside both rows; each slice has a fixed number of reads
#    more, which pulls the time split toward 50/50.  In thirteen runs
#    (2026-11-26) the samples were 0.10 to 2.06 points off the steps,
#    +0.13 on average, and +0.95 against the time (doc/xen.md); the eight
#    runs before were all high against the time, by 2.2 on average.
#    ratio runs 40 s (XA_RATIO_S): at 8 s, ten runs (2026-11-25) were off
#    by -5.99 to +5.07 points, a spread of 3.4 points, three times the
#    binomial one of their 2,000 samples, because the looks are late and
#    weighted (below), so that a read of one pc often stands for several
#    samples; five times the data is about 2.2 times less spread.
#    With one pCPU (2026-11-23): 71.81 vs 66.23, 66.82 vs 66.62, 61.35 vs
#    67.18; with two (dom0 pinned): 67.28 vs 67.66, 69.24 vs 68.10, 63.12
#    vs 68.56 (2081, 1879, 2202 samples).  The misses are more than the
#    sampling noise (about 1 point): dom0's one vCPU is busy (86% in the
#    last run: the agent's frames, the console QEMU, the looks themselves
#    at 1 to 2 ms each under the emulator), the looks come every 2.7 ms
#    on average instead of 1 and each is weighted by the vCPU time since
#    the last, so a few late looks carry many samples of one pc;
#  - dom0's back-end threads are the domain's: web has a disk (a loop
#    device through blkback) and reads and writes it after the other
#    work (XA_IO_S seconds), while dom0 sends it UDP through netback (a
#    vif with an address at each end); web's {vmm} has samples in
#    blkback's and in netback's guest-rx functions, which only their
#    threads run, and the host rows none (they would all be host work if
#    the threads were not found);
#  - exact-a/exact-b (the two-process same-address check), run first, and
#    exact-a2/exact-b2 after ratio (with XA_BUSY_DOM0=N, N busy loops on
#    dom0's one vCPU meanwhile: the collector starved; not in the test
#    command, see doc/xen.md): each pair under 1% (XA_MAX_MIS) of its
#    samples in the other program's never-run code,
#    and at least XA_MIN_SAMPLES in each program's hot code
#    (XA_CHECK_EXACT=0 prints without checking).  With one pCPU it was
#    3.73% to 36% (every look found the guest descheduled); with two,
#    0.92% and 0.62% before held samples waited for their address space's
#    owner (doc/guest-asid.md), 0.00% of 3775 after.  With exact after
#    a 40 s ratio (2026-11-26) seven runs gave 0.00 to 0.89%, and then,
#    in a test command's run, 11.23%: 280 of exact-b's samples under
#    exact-a, a whole address space taken for the other process.  A look
#    weighted N periods voted N times for its space's owner
#    (doc/guest-asid.md), so one look the clock placed wrongly after a
#    long unseen stretch could elect an owner and hold it against many
#    right votes; an observation now votes once.  The late pair checks
#    that case.
# The collector's read budget is off here (XA_BUDGET, default 0, empty
# for the collector's default:
# --xen-read-budget=0, a context read every period): under the emulator
# a read takes 1 to 2.5 ms, so the default budget (5% of a vCPU's time)
# leaves 20 to 50 reads a second, each carrying 20 to 50 samples, and the
# pairs' few seconds then hold a few dozen reads (one run of 2026-11-30,
# PVH: 150 and 255 hot-code samples of the late pair, from 2,615 reads in
# all, against the 300 wanted).  What this scenario checks is who a read
# is filed to; the budget changes how often reads are made, which
# xen-domains (at the default) and the unit tests check, and
# xen-overhead measures.
. "$LAB/lib-xen.sh"
lab_require_xen
t0=$(lab_now)
S=/var/lib/domprof-lab/xen-agent
RATIO_S=${XA_RATIO_S:-40}
EXACT_S=${XA_EXACT_S:-5}
TOL=${XA_TOL:-5}
MAXMIS=${XA_MAX_MIS:-1}
MINS=${XA_MIN_SAMPLES:-300}
IO_S=${XA_IO_S:-8}
BUSY=${XA_BUSY_DOM0:-0}
opagent_bin=$(command -v opagent || echo /usr/local/sbin/opagent)
for f in ratio-static exact-a exact-b; do
	[ -x "$STAGE/lab/$f" ] || lab_fail "no $STAGE/lab/$f staged (tests/e2e/$f)"
done
[ -x "$opagent_bin" ] || lab_fail "no opagent installed"
CONS=$XEN_CONSOLES/guest-web.log

# /share for the guest, as a second cpio archive after the lab's initramfs
# (the kernel unpacks both)
root=/tmp/xa-root
rm -rf "$root"
mkdir -p "$root/share"
cp "$opagent_bin" "$root/share/opagent"
cp "$STAGE/lab/ratio-static" "$root/share/ratio"
cp "$STAGE/lab/exact-a" "$STAGE/lab/exact-b" "$root/share/"
cp "$STAGE/lab/exact-a" "$root/share/exact-a2"
# xen-clock: clockpc runs first, alone, for XA_CLOCKPC_S seconds
CLOCKPC_S=${XA_CLOCKPC_S:-0}
if [ "$CLOCKPC_S" -gt 0 ]; then
	cp "$STAGE/lab/clockpc" "$root/share/" || lab_fail "no $STAGE/lab/clockpc staged"
fi
cp "$STAGE/lab/exact-b" "$root/share/exact-b2"
# web's disk: a loop device in dom0, served by blkback; the guest's
# blkfront from dom0's modules (the same kernel), loaded by the workload
kver=$(uname -r)
cp "/lib/modules/$kver/kernel/drivers/block/xen-blkfront.ko" \
	"/lib/modules/$kver/kernel/drivers/net/xen-netfront.ko" "$root/share/" ||
	lab_fail "no xen-blkfront.ko or xen-netfront.ko for $kver in dom0"
modprobe loop && modprobe xen-blkback && modprobe xen-netback ||
	lab_fail "cannot load loop, xen-blkback and xen-netback in dom0"
mkdir -p "$LAB_RUN"
truncate -s 64M "$LAB_RUN/web.disk"
loopdev=$(losetup -f --show "$LAB_RUN/web.disk") || lab_fail "losetup failed"
# libxl's hotplug script for it: the loop device exists, so all it has to
# say is which device it is (Debian's block script, which checks sharing
# through many xenstore-read and losetup runs, timed out after libxl's
# 40 s under the emulator)
cat >"$LAB_RUN/lab-block" <<'EOF'
#!/bin/sh
[ "$1" = add ] || exit 0
dev=$(xenstore-read "$XENBUS_PATH/params") &&
	mm=$(stat -L -c %t:%T "$dev") &&
	xenstore-write "$XENBUS_PATH/physical-device" "$mm" \
		"$XENBUS_PATH/physical-device-path" "$dev" "$XENBUS_PATH/hotplug-status" connected
EOF
chmod +x "$LAB_RUN/lab-block"
# and for its vif: no bridge, an address on dom0's end (10.99.0.1; the
# guest takes 10.99.0.2)
cat >"$LAB_RUN/lab-vif" <<'EOF'
#!/bin/sh
case "$1" in
online|add)
	ip link set "$vif" up
	ip addr add 10.99.0.1/24 dev "$vif" 2>/dev/null
	xenstore-write "$XENBUS_PATH/hotplug-status" connected ;;
esac
exit 0
EOF
chmod +x "$LAB_RUN/lab-vif"
cat >"$root/share/agent.sh" <<'EOF'
#!/bin/sh
exec /share/opagent --verbose
EOF
cat >"$root/share/work.sh" <<EOF
insmod /share/xen-blkfront.ko 2>&1 | head -n 3
insmod /share/xen-netfront.ko 2>&1 | head -n 3
i=0
while [ ! -e /sys/class/net/eth0 ] && [ \$i -lt 100 ]; do sleep 0.2; i=\$((i + 1)); done
ip link set eth0 up && ip addr add 10.99.0.2/24 dev eth0
echo "XA-NET \$(ip -o addr show eth0 2>&1 | tr '\n' ' ')"
i=0
while [ ! -b /dev/xvda ] && [ \$i -lt 100 ]; do sleep 0.2; i=\$((i + 1)); done
echo "XA-DISK \$(ls -l /dev/xvda 2>&1)"
i=0
while ! grep -q "kernel symbols sent" /tmp/agent.log 2>/dev/null && [ \$i -lt 3000 ]; do
	sleep 0.2; i=\$((i + 1))
	# every 30 s of waiting: where the agent is
	[ \$((i % 150)) -eq 0 ] && echo "XA-AGENT-WAIT \$i: \$(tail -n 3 /tmp/agent.log | tr '\n' ' ')"
done
echo "XA-AGENT-LOG-BEGIN"; cat /tmp/agent.log; echo "XA-AGENT-LOG-END"
# where the channel is: xenbus console devices and the hvc ttys
echo "XA-SYSFS \$(ls /sys/bus/xen/devices 2>&1 | tr '\n' ' ')"
for d in /sys/bus/xen/devices/console-*; do
	echo "XA-CONSOLE \${d##*/} driver \$(readlink \$d/driver 2>/dev/null | sed 's,.*/,,')"
done
echo "XA-HVC \$(ls /dev/hvc* 2>&1 | tr '\n' ' ') xenbus: \$(ls -l /dev/xen/xenbus 2>&1)"
sleep 2
echo "WORK-START \$(cut -d' ' -f1 /proc/uptime)"
# the same-address pair with name suffix \$1 ("" or 2)
exact_pair() {
	/share/exact-a\$1 $EXACT_S 70 >/tmp/a.out &
	/share/exact-b\$1 $EXACT_S 40 >/tmp/b.out &
	wait
	echo "EXACT-A\$1 \$(cat /tmp/a.out)"
	echo "EXACT-B\$1 \$(cat /tmp/b.out)"
}
if [ -x /share/clockpc ]; then
	echo "CLOCKPC-START \$(cut -d' ' -f1 /proc/uptime)"
	/share/clockpc $CLOCKPC_S
	echo "CLOCKPC-DONE \$(cut -d' ' -f1 /proc/uptime)"
fi
exact_pair
dd if=/dev/zero of=/dev/null bs=4k count=20000 2>/dev/null &
/share/ratio $RATIO_S 70 >/tmp/r.out
wait
echo "RATIO \$(cat /tmp/r.out)"
# the same check late in the session, after ratio's 40 s
exact_pair 2
# disk I/O through blkback: written through, caches dropped, read back;
# meanwhile dom0 sends UDP (XA-IO-START)
echo "XA-IO-START \$(cut -d' ' -f1 /proc/uptime)"
n=0 end=\$(( \$(cut -d. -f1 /proc/uptime) + $IO_S ))
if [ -b /dev/xvda ]; then
	while [ \$(cut -d. -f1 /proc/uptime) -lt \$end ]; do
		dd if=/dev/zero of=/dev/xvda bs=64k count=256 conv=fsync 2>/dev/null
		echo 3 >/proc/sys/vm/drop_caches
		dd if=/dev/xvda of=/dev/null bs=64k count=256 2>/dev/null
		n=\$((n + 1))
	done
fi
echo "XA-IO rounds \$n (16 MiB written and read each)"
echo "WORK-DONE \$(cut -d' ' -f1 /proc/uptime)"
tail -n 5 /tmp/agent.log
exec sleep 100000
EOF
chmod +x "$root/share/agent.sh"
xen_share_initrd "$root" "$LAB_RUN/web-agent.cpio"

xen_alive web && xen_destroy web
xen_start_agent_guest web 6b1b1d6e-0000-4000-8000-000000000031 "$LAB_RUN/web-agent.cpio" \
	"disk = [ \"format=raw,vdev=xvda,access=rw,script=$LAB_RUN/lab-block,target=$loopdev\" ]" \
	"vif = [ \"mac=00:16:3e:00:00:31,script=$LAB_RUN/lab-vif\" ]"
dm=$(timeout 10 xenstore-read "/local/domain/$(xen_domid web)/image/device-model-pid" 2>/dev/null)
lab_log "web's device model: pid ${dm:-none} ($(cat "/proc/${dm:-0}/cmdline" 2>/dev/null | tr '\0' ' ' | cut -c1-200))"
ls -l "$LAB_RUN/web.agent" || lab_log "no agent socket $LAB_RUN/web.agent"
sleep 3
{ timeout 10 xenstore-ls "/local/domain/$(xen_domid web)/device/console"
  timeout 10 xenstore-ls "/local/domain/0/backend/console/$(xen_domid web)"; } >"$RESULTS/web-consoles.txt" 2>&1
cat "$RESULTS/web-consoles.txt"

rm -rf "$S"
# --verbose: the daemon's log then says when an address space got its
# owner, the clock's exchanges and the samples the clock placed for want
# of an owner (a few hundred lines), what a failed exact check needs
# shellcheck disable=SC2086
# XA_BUDGET= (empty): the collector's default budget
budget=${XA_BUDGET-0}
env ${XA_ENV:-} timeout 120 opcontrol --start --session-dir="$S" --domains=web --verbose \
	${budget:+--xen-read-budget=$budget} ${XA_START_ARGS:-} >"$RESULTS/opcontrol-start.txt" 2>&1 ||
	lab_fail "opcontrol --start failed: $(tail -n 5 "$RESULTS/opcontrol-start.txt")"
t=$(lab_now)
wait_agents_complete "$S" 1 "${XA_AGENT_WAIT_S:-300}"; ok=$?
grep -E "agent|HELLO" "$S/oprofiled.log" | head -n 20
[ $ok -eq 0 ] || { cp "$S/oprofiled.log" "$RESULTS/"; tail -n 30 "$CONS"
	lab_fail "web's agent state not complete after ${XA_AGENT_WAIT_S:-300} s"; }
lab_summary xen_agent_complete_s "$(lab_since "$t")"
udp=0 busy=0
for i in $(seq 1 600); do
	grep -q WORK-DONE "$CONS" && break
	xen_alive web || break
	# the late pair runs with dom0 starved: BUSY busy loops on its one
	# vCPU beside the daemon (whose collector then looks late, and whose
	# worker reads the agent's stream late)
	if [ $busy = 0 ] && [ "$BUSY" -gt 0 ] && grep -q "RATIO .*steps_a=" "$CONS"; then
		busy=1
		for k in $(seq 1 "$BUSY"); do
			timeout $((EXACT_S + 4)) sh -c 'while :; do :; done' &
		done
		lab_log "dom0 made busy for the late pair: $BUSY busy loops for $((EXACT_S + 4)) s"
	fi
	# web's I/O phase: dom0 sends it datagrams through netback's
	# guest-rx thread (nothing listens: the guest's kernel drops them)
	if [ $udp = 0 ] && grep -q XA-IO-START "$CONS"; then
		udp=1
		timeout "$IO_S" socat -u OPEN:/dev/zero UDP-SENDTO:10.99.0.2:9 >"$RESULTS/udp.txt" 2>&1 &
	fi
	sleep 1
done
grep -q WORK-DONE "$CONS" || { cp "$S/oprofiled.log" "$RESULTS/"; tail -n 30 "$CONS"
	timeout 10 xl list >"$RESULTS/xl-list-at-fail.txt" 2>&1
	timeout 10 xl dmesg 2>&1 | tail -n 60 >"$RESULTS/xl-dmesg-at-fail.txt"
	lab_fail "web's workload did not finish ($(xen_alive web && echo "web is alive" ||
		echo "web is gone"); xl dmesg: $(tail -n 3 "$RESULTS/xl-dmesg-at-fail.txt" | tr '\n' ' '))"; }
lab_summary xa_workload_done_s "$(lab_since "$t")"
# dom0's back-end threads: pid, name, flags (PF_KTHREAD is 0x200000)
cat /proc/[0-9]*/stat 2>/dev/null |
	awk '$2 ~ /^\((blkback|vif|[0-9]+\.[a-z])/ { printf "%s %s %x\n", $1, $2, $9 }' >"$RESULTS/backend-threads.txt"
lab_log "dom0 back-end threads: $(tr '\n' ';' <"$RESULTS/backend-threads.txt")"
# privilege separation with the xen collector (doc/trust.md): the worker,
# which parses the agent's bytes, runs unprivileged under seccomp and holds
# no privcmd (the monitor runs the collector and relays its stream)
mon=$(cat "$S/oprofiled.pid")
wk=$(pgrep -P "$mon" -x oprofiled | head -n 1)
ps -o user,pid,ppid,comm -p "$mon,${wk:-$mon}" | tee "$RESULTS/ps.txt"
wk_uid=$(awk '/^Uid:/ { print $3 }' "/proc/${wk:-0}/status" 2>/dev/null)
wk_seccomp=$(awk '/^Seccomp:/ { print $2 }' "/proc/${wk:-0}/status" 2>/dev/null)
# the device itself (a sample file of dom0's xen_privcmd module has the
# word in its path)
privcmd() { ls -l "/proc/$1/fd" 2>/dev/null | grep -cE -- '-> /(dev|proc)/xen/privcmd$' || true; }
mon_privcmd=$(privcmd "$mon") wk_privcmd=$(privcmd "${wk:-0}")
lab_summary xa_privsep "worker ${wk:-none} uid ${wk_uid:-?} seccomp ${wk_seccomp:-?}; privcmd fds: monitor $mon_privcmd, worker $wk_privcmd"
# the binaries come over the same slow channel after their first samples:
# wait (bounded) until the image cache has the three programs (the late
# exact pair are copies: the cache holds them by content)
t=$(lab_now)
for i in $(seq 1 "${XA_IMAGE_WAIT_S:-180}"); do
	n=0
	for p in ratio exact-a exact-b; do
		find "$S/images" -type f ! -name '.*' -name "$p*" 2>/dev/null | grep -q . && n=$((n + 1))
	done
	[ $n -eq 3 ] && break
	sleep 1
done
lab_summary xa_images_wait_s "$(lab_since "$t") ($n of 3 programs cached)"
sleep 2
timeout 30 opcontrol --status --session-dir="$S" >"$RESULTS/status-running.txt" 2>&1 || true
timeout 120 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
cp "$S/oprofiled.log" "$RESULTS/oprofiled.log"
cp "$S/stats" "$RESULTS/stats.txt" 2>/dev/null
cp "$S/domains/web/stats" "$RESULTS/web-stats.txt" 2>/dev/null
grep -E "^XA-" "$CONS"
sed -n '/XA-AGENT-LOG-BEGIN/,/XA-AGENT-LOG-END/p' "$CONS" | head -n 20
timeout 120 opreport --session-dir="$S" --domain=web -l >"$RESULTS/web-report.txt" 2>"$RESULTS/web-report.err" ||
	lab_fail "opreport --domain=web -l failed: $(head -n 5 "$RESULTS/web-report.err")"
head -n 30 "$RESULTS/web-report.txt"
# dom0's own work in the same session (the perf collector embedded in the
# xen collector's stream): the console QEMU that carries web's channel is
# web's device model (xenstore), so its samples are web's {vmm}
timeout 120 opreport --session-dir="$S" >"$RESULTS/report.txt" 2>&1 ||
	lab_fail "opreport failed: $(head -n 3 "$RESULTS/report.txt")"
sed -n '/^DOMAIN SUMMARY/,/^$/p' "$RESULTS/report.txt"
web_vmm=$(awk '/^DOMAIN SUMMARY/ { on = 1; next } on && $1 == "web" { print $6 + 0; exit }' "$RESULTS/report.txt")
lab_summary xa_web_vmm "${web_vmm:-0} samples of web's device model in dom0"
case " ${XA_START_ARGS:-} " in
*" --no-dom0 "*) ;;
*)	grep -q "dom0 sampled by the perf collector" "$RESULTS/oprofiled.log" ||
		lab_fail "the xen collector did not sample dom0"
	[ "${web_vmm:-0}" -gt 0 ] || lab_fail "no dom0 work under web's {vmm} (its console QEMU)" ;;
esac
# dom0's blkback threads: the functions only they run (the interrupt
# handler xen_blkif_be_int and the completions, end_block_io_op and the
# unmaps after it, run in whatever they interrupt)
timeout 120 opreport --session-dir="$S" -l >"$RESULTS/report-all.txt" 2>&1 ||
	lab_fail "opreport -l failed: $(head -n 3 "$RESULTS/report-all.txt")"
blk() {
	awk -v who="$1" '$1 ~ /^[0-9]+$/ && $3 == who &&
		$NF ~ /^(xen_blkif_schedule|__do_block_io_op|do_block_io_op|dispatch_rw_block_io|xen_blkbk_map|xen_blkbk_parse_indirect)/ { n += $1 }
		END { print n + 0 }' "$RESULTS/report-all.txt"
}
web_blk=$(blk web/vmm) host_blk=$(blk host)
# netback's guest-rx thread (dom0 to the guest); its TX side runs in NAPI
# (softirq), whatever it interrupts
net() {
	awk -v who="$1" '$1 ~ /^[0-9]+$/ && $3 == who &&
		$NF ~ /^(xenvif_kthread_guest_rx|xenvif_rx_action|xenvif_rx_skb|xenvif_rx_copy|xenvif_rx_next|xenvif_rx_data_slot|xenvif_rx_complete|xenvif_rx_extra_slot|xenvif_dealloc_kthread)/ { n += $1 }
		END { print n + 0 }' "$RESULTS/report-all.txt"
}
web_net=$(net web/vmm) host_net=$(net host)
io_rounds=$(sed -n 's/.*XA-IO rounds \([0-9]*\).*/\1/p' "$CONS" | tail -n 1)
lab_summary xa_blkback "web's {vmm} $web_blk, host $host_blk samples in blkback's functions; $(grep -c 'back-end threads' "$RESULTS/oprofiled.log") log lines on back-end threads; ${io_rounds:-no} I/O rounds"
lab_summary xa_netback "web's {vmm} $web_net, host $host_net samples in netback's guest-rx functions; $(grep -m1 XA-NET "$CONS" | cut -c1-120)"
for p in a b a2 b2; do
	timeout 120 opreport --session-dir="$S" --domain=web -l "image:exact-$p" \
		>"$RESULTS/report-$p.txt" 2>"$RESULTS/report-$p.err" ||
		lab_fail "opreport image:exact-$p failed: $(head -n 3 "$RESULTS/report-$p.err")"
done

# ratio: the program's split of its loop's steps (its user time) against
# the report's; its thread CPU time split is printed beside
measured=$(sed -n 's/.*RATIO .*steps_a=\([0-9.]*\)%.*/\1/p' "$CONS" | tail -n 1)
measured_time=$(sed -n 's/.*RATIO .*burn_a=\([0-9.]*\)%.*/\1/p' "$CONS" | tail -n 1)
[ -n "$measured" ] || lab_fail "no RATIO line with steps_a in web's console"
read -r na nb <<<"$(awk '$NF == "burn_a" { a += $1 } $NF == "burn_b" { b += $1 }
	END { print a + 0, b + 0 }' "$RESULTS/web-report.txt")"
share=$(awk -v a="$na" -v b="$nb" 'BEGIN { if (a + b == 0) print "n/a"; else printf "%.2f", 100 * a / (a + b) }')
diff=$(absdiff "$measured" "${share/n\/a/-1000}")
# guest kernel rows with a symbol name (not g1/vmm, not {anon:...})
kern_named=$(awk '$1 ~ /^[0-9]+$/ && $3 == "web" && $4 == "vmlinux" && !/\(no symbols\)$/ && $NF !~ /^0x/ { s += $1 }
	END { print s + 0 }' "$RESULTS/web-report.txt")
# exact: samples in never-run code, for the pair with suffix $1 (the
# early pair "", the late "2"): its summary lines under key $2, and
# "MISATTRIBUTED ALL PERCENT HOT_A HOT_B" for check_exact in the variable
# named $3
rows() { awk -v s="$2" '$1 ~ /^[0-9]+$/ && (s == "" || $NF == s) { n += $1 } END { print n + 0 }' "$1"; }
exact_pair() {
	local ra=$RESULTS/report-a$1.txt rb=$RESULTS/report-b$1.txt
	local all a_one a_two a_never b_one b_two b_never mis pct

	all=$(( $(rows "$ra" "") + $(rows "$rb" "") ))
	a_one=$(rows "$ra" a_one) a_two=$(rows "$ra" a_two) a_never=$(rows "$ra" a_never)
	b_one=$(rows "$rb" b_one) b_two=$(rows "$rb" b_two) b_never=$(rows "$rb" b_never)
	mis=$((a_never + b_never))
	pct=$(awk -v m="$mis" -v a="$all" 'BEGIN { if (a == 0) print "n/a"; else printf "%.2f", 100 * m / a }')
	lab_summary "$2_samples" "$all (a $a_one/$a_two/$a_never, b $b_one/$b_two/$b_never)"
	lab_summary "$2_misattributed_pct" "$pct"
	printf -v "$3" '%s' "$mis $all $pct $((a_one + a_two)) $((b_one + b_two))"
}

# the ratio's bar: a read weighted N periods is one observation, so the
# split's sampling spread comes from the reads the two rows are worth,
# the collector's count of independent reads for its samples (Kish's
# (sum w)^2 / sum w^2) scaled to the two rows (the session's reads, not
# ratio's alone: where ratio's reads stand for more periods than the
# session's on average, the spread is larger than said); the bar is
# XA_TOL points or XA_SIGMAS (4) of that spread, the wider, and a miss
# of more than XA_TOL fails as too few reads to tell when the spread is
# over XA_MAX_SIGMA (3) points
read -r c_samples c_indep <<<"$(sed -n 's/.*xen collector: .* \([0-9][0-9]*\) samples from .*worth \([0-9][0-9]*\) independent.*/\1 \2/p' \
	"$RESULTS/oprofiled.log" | tail -n 1)"
read -r neff sigma bar <<<"$(awk -v s="${c_samples:-0}" -v i="${c_indep:-0}" -v n=$((na + nb)) \
	-v m="$measured" -v t="$TOL" -v k="${XA_SIGMAS:-4}" 'BEGIN {
	if (s <= 0 || i <= 0 || n <= 0) { print 0, "n/a", t; exit }
	e = n * i / s; p = m / 100; sg = 100 * sqrt(p * (1 - p) / e)
	b = k * sg > t ? k * sg : t
	printf "%.0f %.2f %.2f\n", e, sg, b }')"
lab_summary xa_measured_share_a "$measured (steps; thread CPU time $measured_time)"
lab_summary xa_samples_burn_a "$na"
lab_summary xa_samples_burn_b "$nb"
lab_summary xa_opreport_share_a "$share"
lab_summary xa_share_diff_points "$diff"
lab_summary xa_share_bar "$bar points (the two rows worth $neff independent reads of the collector's $c_indep for $c_samples samples; spread $sigma points)"
lab_summary xa_guest_kernel_named "$kern_named"
exact_pair "" xa_exact early
exact_pair 2 xa_exact_late late
lab_summary xa_web_asid "$(awk '$1 ~ /^asid_(seen|votes|votes_clear|votes_inferred|votes_same_obs|votes_ahead|provisional|unconfirmed|learned|reversed|demoted|filed|overrode_clock|no_mapping|forgotten|wait_expired|filed_elected|witnessed|wit_owned|wit_overruled|wit_stale|votes_vs_witness)$/ { printf "%s %s ", $1, $2 }' "$RESULTS/web-stats.txt" 2>/dev/null)"
lab_summary xa_witness "$(grep -E 'processes are read from its memory|address spaces named by the guest' "$RESULTS/oprofiled.log" | sed 's/.*xen collector: //' | tr '\n' ' ')"
wit_owned=$(awk '$1 == "asid_wit_owned" { print $2 }' "$RESULTS/web-stats.txt" 2>/dev/null)
lab_summary xa_web_clock "$(grep -E '^clock_' "$RESULTS/web-stats.txt" 2>/dev/null | tr '\n' ' ')"
lab_summary xa_agent_stats "$(grep -E '^agent_(frames|bytes|skipped_bytes|bad_frames|closed_bad|connects|disconnects) ' "$RESULTS/stats.txt" | tr '\n' ' ')"
xen_destroy web
losetup -d "$loopdev" 2>/dev/null || true
lab_summary scenario_s "$(lab_since "$t0")"

fail=0
[ -n "$wk" ] && [ "${wk_uid:-0}" != 0 ] && [ "$wk_seccomp" = 2 ] ||
	{ lab_log "FAIL: no unprivileged worker under seccomp (worker ${wk:-none}, uid ${wk_uid:-?}, seccomp ${wk_seccomp:-?})"; fail=1; }
[ "$wk_privcmd" = 0 ] && [ "$mon_privcmd" -gt 0 ] ||
	{ lab_log "FAIL: privcmd fds: monitor $mon_privcmd, worker $wk_privcmd (want >0 and 0)"; fail=1; }
[ "$na" -gt 0 ] && [ "$nb" -gt 0 ] ||
	{ lab_log "FAIL: opreport --domain=web -l names no guest user symbols burn_a ($na), burn_b ($nb)"; fail=1; }
[ "$kern_named" -gt 0 ] || { lab_log "FAIL: no guest kernel samples on named symbols"; fail=1; }
# the agent's task layout reached the collector, and spaces were named
# from the guest's memory (doc/guest-asid.md, "Witnessed")
[ "${XA_CHECK_WITNESS:-1}" = 0 ] || [ "${wit_owned:-0}" -gt 0 ] ||
	{ lab_log "FAIL: no address space named from the guest's memory (asid_wit_owned ${wit_owned:-none})"; fail=1; }
case " ${XA_START_ARGS:-} " in
*" --no-dom0 "*) ;;
*)	[ "${io_rounds:-0}" -gt 0 ] || { lab_log "FAIL: web did no disk I/O (no /dev/xvda?)"; fail=1; }
	[ "$web_blk" -gt 0 ] && [ "$host_blk" = 0 ] ||
		{ lab_log "FAIL: blkback's functions: web's {vmm} $web_blk samples, host $host_blk (want > 0 and 0)"; fail=1; }
	[ "$web_net" -gt 0 ] && [ "$host_net" = 0 ] ||
		{ lab_log "FAIL: netback's guest-rx functions: web's {vmm} $web_net samples, host $host_net (want > 0 and 0)"; fail=1; } ;;
esac
if [ "${XA_CHECK_RATIO:-1}" = 1 ]; then
	within() { awk -v d="$diff" -v t="$1" 'BEGIN { exit !(d >= 0 && d <= t) }'; }
	if [ -z "$c_indep" ]; then
		lab_log "FAIL: no \"xen collector: ... independent ones\" line in the daemon's log: the split's spread is not known"; fail=1
	elif within "$TOL"; then
		:	# within the fixed bar, whatever the spread
	elif awk -v s="$sigma" -v x="${XA_MAX_SIGMA:-3}" 'BEGIN { exit !(s == "n/a" || s + 0 > x + 0) }'; then
		lab_log "FAIL: burn_a share $share% vs steps $measured% (diff $diff > $TOL), and burn_a and burn_b are worth $neff independent reads (spread $sigma points, more than ${XA_MAX_SIGMA:-3}): too few to tell noise from a fault"; fail=1
	elif ! within "$bar"; then
		lab_log "FAIL: burn_a share $share% vs steps $measured% (diff $diff > $bar; spread $sigma points; thread CPU time $measured_time%)"; fail=1
	fi
else
	lab_log "ratio (printed, not checked): burn_a $share% vs steps $measured% (diff $diff, bar $bar; thread CPU time $measured_time%)"
fi
# $1 the pair's name, then its misattributed, all, misattributed %, and
# the hot-code samples of a and of b
check_exact() {
	[ "$5" -gt 0 ] && [ "$6" -gt 0 ] ||
		{ lab_log "FAIL: opreport names no $1 functions ($5, $6)"; fail=1; }
	if [ "${XA_CHECK_EXACT:-1}" = 1 ]; then
		awk -v m="$4" -v t="$MAXMIS" 'BEGIN { exit !(m != "n/a" && m < t) }' ||
			{ lab_log "FAIL: $1: misattributed $2 of $3 = $4% (bar $MAXMIS%)"; fail=1; }
		[ "$5" -ge "$MINS" ] && [ "$6" -ge "$MINS" ] ||
			{ lab_log "FAIL: $1: too few samples in the programs' hot code ($5, $6; want $MINS)"; fail=1; }
	else
		lab_log "$1 (printed, not checked): misattributed $2 of $3 = $4% (bar $MAXMIS%), hot-code samples $5 and $6"
	fi
}
# (each pair's figures as five words)
# shellcheck disable=SC2086
check_exact "exact-a/exact-b" $early
# shellcheck disable=SC2086
check_exact "exact-a2/exact-b2 (late)" $late
[ $fail -eq 0 ] || lab_fail "see above"
read -r _ e_all e_pct _ <<<"$early"
read -r _ l_all l_pct _ <<<"$late"
lab_log "PASS: Xen agent: guest user symbols (burn_a $na, burn_b $nb), guest kernel named $kern_named, worker uid $wk_uid under seccomp; exact misattributed $e_pct% of $e_all, late $l_pct% of $l_all; ratio burn_a $share% vs steps $measured% (diff $diff, bar $bar; thread CPU time $measured_time%)"
