# Who counts as a domain, and who parses guest bytes (doc/trust.md,
# issue 9 item 1 and privilege separation).  domprof in L1 runs as it
# does by default (privilege separation on) while:
#  - a real KVM guest "victim" runs opagent and a workload;
#  - as nobody, a process started with exec -a qemu-system-x86_64 claims
#    -name guest=victim with an agent -chardev on a socket that a listener
#    (socat, also nobody) serves.
# Must hold:
#  - the daemon never connects to the impostor's socket, refuses the
#    impostor (domain_refused >= 1, a log line), and its stats show no
#    second domain under the name victim;
#  - the real victim is profiled: its agent connects and guest user
#    samples are resolved in its tree;
#  - the worker (the child of the pid in oprofiled.pid) runs as the
#    system user domprof (not nobody, whose processes it would share) with
#    no capabilities and Seccomp: 2, and the monitor holds no agent
#    channel: the guest-facing process is not root;
#  - the session directory, its log and its kallsyms copy stay root's
#    during the run (the worker owns only what it writes), and the
#    impostor's user reads none of them.
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
unset DOMPROF_PRIVSEP	# the default: separated
S=/var/lib/domprof-lab/trust-identity
ATK=/tmp/impostor
ratio_bin=$STAGE/lab/ratio-static
opagent_bin=$(command -v opagent || echo /usr/local/sbin/opagent)
[ -x "$ratio_bin" ] || lab_fail "no $ratio_bin staged (tests/e2e/ratio-static)"
[ -x "$opagent_bin" ] || lab_fail "no opagent installed"
stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

rm -rf /tmp/share-victim "$ATK"
mkdir -p /tmp/share-victim "$ATK"
chmod 0777 "$ATK"
cp "$ratio_bin" /tmp/share-victim/ratio
cp "$opagent_bin" /tmp/share-victim/opagent
cat >/tmp/share-victim/work.sh <<'EOF'
i=0
while [ ! -e /share/go ] && [ $i -lt 3000 ]; do sleep 0.2; i=$((i + 1)); done
/share/ratio 3 70 >/tmp/a.out
echo "WORK-DONE $(cut -d' ' -f1 /proc/uptime)"
exec sleep 100000
EOF
LAB_GUEST_SHARE=/tmp/share-victim LAB_GUEST_AGENT=/share/opagent \
	start_guest victim 6b1b1d6e-0000-4000-8000-0000000000b1 script
wait_guest_booted victim

# the impostor: a listener and a "QEMU" of the same name, both nobody
runuser -u nobody -- socat -d -d "UNIX-LISTEN:$ATK/victim.agent,fork" \
	SYSTEM:'cat >/dev/null' 2>"$ATK/listener.log" &
lsn=$!
for i in $(seq 1 50); do [ -S "$ATK/victim.agent" ] && break; sleep 0.1; done
runuser -u nobody -- bash -c "exec -a qemu-system-x86_64 sh -c 'sleep 100000; :' sh \
	-enable-kvm -name guest=victim,debug-threads=on \
	-chardev socket,id=agent0,path=$ATK/victim.agent,server=on,wait=off \
	-device virtserialport,bus=vser0.0,chardev=agent0,name=$LAB_AGENT_PORT" &
imp=$!
sleep 1
lab_log "impostor pid $imp: $(tr '\0' ' ' </proc/$imp/cmdline | cut -c1-120)"

timeout 60 opcontrol --start --session-dir="$S" --domains=all || lab_fail "opcontrol --start failed"
wait_agents_complete "$S" || lab_fail "victim's agent did not connect in 120 s"
touch /tmp/share-victim/go
lab_wait_console victim WORK-DONE 300 || true
# the processes while it runs
mon=$(cat "$S/oprofiled.pid")
wk=$(pgrep -P "$mon" -x oprofiled | head -n 1)
ps -o user,pid,ppid,comm -p "$mon,$wk" | tee "$RESULTS/ps.txt"
grep -E '^(Uid|Gid|Groups|CapEff|CapPrm|NoNewPrivs|Seccomp):' "/proc/$wk/status" |
	tee "$RESULTS/worker-status.txt"
wk_uid=$(awk '/^Uid:/ { print $3 }' "/proc/$wk/status")
wk_seccomp=$(awk '/^Seccomp:/ { print $2 }' "/proc/$wk/status")
wk_capeff=$(awk '/^CapEff:/ { print $2 }' "/proc/$wk/status")
# the session while it runs: root's, and nothing in it for nobody
sess_owner=$(stat -c %U "$S" "$S/oprofiled.log" "$S/kallsyms" | tr '\n' ' ' | sed 's/ $//')
nobody_read=none
for f in kallsyms oprofiled.log oprofiled.pid stats; do
	runuser -u nobody -- cat "$S/$f" >/dev/null 2>&1 && nobody_read=$f
done
# the agent channel (a connection to victim's socket) lives in the worker
agent_in_mon=$(ss -xp 2>/dev/null | grep "pid=$mon," | grep -c "victim.agent" || true)
sleep 2
timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
kill "$imp" "$lsn" 2>/dev/null
cp "$S/stats" "$RESULTS/stats.txt"
cp "$S/oprofiled.log" "$RESULTS/oprofiled.log"
cp "$ATK/listener.log" "$RESULTS/listener.log" 2>/dev/null || true

conns=$(grep -c "accepting connection" "$ATK/listener.log" 2>/dev/null || true)
refused=$(stat_of "$S/stats" domain_refused)
resolved=$(stat_of "$S/stats" guest_user_resolved)
victim_dirs=$(ls -d "$S"/domains/victim* 2>/dev/null | wc -l)
lab_summary impostor_connections "${conns:-0}"
lab_summary domain_refused "${refused:-0}"
lab_summary guest_user_resolved "${resolved:-0}"
lab_summary worker_uid "$wk_uid"
lab_summary session_owner "$sess_owner"
lab_summary worker_seccomp "$wk_seccomp"
grep -E "claims to be domain|privsep" "$S/oprofiled.log" | head -n 5
fail=0
[ "${conns:-0}" -eq 0 ] || { lab_log "FAIL: the daemon connected $conns times to the impostor's socket"; fail=1; }
[ "${refused:-0}" -ge 1 ] || { lab_log "FAIL: the impostor was not refused (domain_refused ${refused:-0})"; fail=1; }
grep -q "claims to be domain \"victim\"" "$S/oprofiled.log" ||
	{ lab_log "FAIL: no log line refusing the impostor"; fail=1; }
[ "$victim_dirs" -eq 1 ] || { lab_log "FAIL: $victim_dirs session trees for victim"; fail=1; }
[ "${resolved:-0}" -gt 0 ] || { lab_log "FAIL: no resolved guest user samples of victim"; fail=1; }
[ -n "$wk_uid" ] && [ "$wk_uid" = "$(id -u domprof 2>/dev/null)" ] ||
	{ lab_log "FAIL: the worker runs as uid '$wk_uid', not domprof's ($(id -u domprof 2>/dev/null))"; fail=1; }
[ "$sess_owner" = "root root root" ] ||
	{ lab_log "FAIL: session, log, kallsyms owned by '$sess_owner' during the run"; fail=1; }
[ "$nobody_read" = none ] || { lab_log "FAIL: nobody read the session's $nobody_read"; fail=1; }
[ "$wk_seccomp" = 2 ] || { lab_log "FAIL: the worker's Seccomp is '$wk_seccomp'"; fail=1; }
[ "$wk_capeff" = 0000000000000000 ] || { lab_log "FAIL: the worker has capabilities $wk_capeff"; fail=1; }
[ "${agent_in_mon:-0}" -eq 0 ] || { lab_log "FAIL: the root monitor holds the agent channel"; fail=1; }
[ $fail -eq 0 ] || lab_fail "see above"
lab_log "trust-identity: impostor refused, victim profiled by an unprivileged worker in $(lab_since "$t0")s"
