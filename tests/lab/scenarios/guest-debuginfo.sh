# Guest binaries named through debuginfod (issue 22): a guest runs programs
# as a distribution ships them, stripped, and the names come from debug
# info that only a debuginfod server on the lab host (L1) has.
#
# Guest g1 (opagent, a dynamic C library copied from L1 into the guest)
# runs:
#  - ratio-dyn: ratio (burn_a/burn_b 70/30, static functions) stripped of
#    every symbol, without a debug link; its debug file is served by
#    debuginfod only;
#  - strburn: its time in the C library's strlen and memchr, whose variants
#    (__strlen_avx2, __memchr_evex, ...) are local symbols that only the C
#    library's detached debug info (libc6-dbg) names.
# L1's /usr/lib/debug is moved into debuginfod's directory first, so the
# report can find the C library's debug info only through the server.
# Must hold:
#  - opreport --domain=g1 -l with DEBUGINFOD_URLS names burn_a and burn_b
#    of the stripped program, burn_a's share within 5 points of what the
#    program measured.  It measures two ways: burn_a (its share of the
#    thread's CPU time) and steps_a (its share of the loop's steps); they
#    agree when the emulated L1 runs the guest at one speed, and in the
#    test command's run of 2026-11-29 they did not (69.65% and 64.37%; the
#    profile said 69.45%).  The bar is 5 points from the nearer of the
#    two: the check is of the names (burn_a and burn_b swapped would be
#    40 points off), not of the emulator's speed;
#  - the C library's top symbol in that report is a strlen or memchr
#    variant (a name only the debug info has), and those variants hold
#    most of the C library's samples;
#  - without DEBUGINFOD_URLS the same report names neither burn_a nor a
#    variant (so the names above came from the server), and says which
#    image went unnamed.
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
S=/var/lib/domprof-lab/guest-debuginfo
TOL=5
PORT=8002
for f in ratio-dyn ratio-dyn.debug ratio-dyn.build-id strburn; do
	[ -f "$STAGE/lab/$f" ] || lab_fail "no $STAGE/lab/$f staged (tests/lab/run.sh)"
done
command -v debuginfod >/dev/null || lab_fail "no debuginfod in L1 (build-images.sh L1_PKGS)"
opagent_bin=$(command -v opagent || echo /usr/local/sbin/opagent)
[ -x "$opagent_bin" ] || lab_fail "no opagent installed"
libdir=/lib/x86_64-linux-gnu
[ -f $libdir/libc.so.6 ] && [ -f $libdir/ld-linux-x86-64.so.2 ] || lab_fail "no C library in L1"

# The server's tree: the program's debug file, and L1's C library debug
# info moved out of /usr/lib/debug (nothing left there for a local lookup).
srv=/tmp/debuginfod-srv
rm -rf "$srv"
mkdir -p "$srv"
cp "$STAGE/lab/ratio-dyn.debug" "$srv/"
[ -d /usr/lib/debug/.build-id ] || lab_fail "no /usr/lib/debug/.build-id in L1 (libc6-dbg)"
mv /usr/lib/debug "$srv/usr-lib-debug"
debuginfod -p $PORT -F "$srv" -d /tmp/debuginfod.sqlite >"$RESULTS/debuginfod.log" 2>&1 &
dbg_pid=$!
export DEBUGINFOD_CACHE_PATH=/tmp/debuginfod-client
URLS=http://127.0.0.1:$PORT

# a fresh share: another scenario of this boot may have left a go file
rm -rf /tmp/share-g1
mkdir -p /tmp/share-g1
cp "$STAGE/lab/ratio-dyn" "$STAGE/lab/strburn" "$opagent_bin" /tmp/share-g1/
cp $libdir/libc.so.6 $libdir/ld-linux-x86-64.so.2 /tmp/share-g1/
cat >/tmp/share-g1/work.sh <<'EOF'
mkdir -p /lib64 /lib/x86_64-linux-gnu /bin
cp /share/libc.so.6 /share/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/
ln -sf /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2
cp /share/ratio-dyn /share/strburn /bin/
i=0
while [ ! -e /share/go ] && [ $i -lt 3000 ]; do sleep 0.2; i=$((i + 1)); done
echo "WORK-START $(cut -d' ' -f1 /proc/uptime)"
/bin/ratio-dyn 4 70 >/tmp/r.out
/bin/strburn 3 >/tmp/s.out
echo "RATIO $(cat /tmp/r.out)"
echo "STRBURN $(cat /tmp/s.out)"
echo "WORK-DONE $(cut -d' ' -f1 /proc/uptime)"
exec sleep 100000
EOF
LAB_GUEST_SHARE=/tmp/share-g1 LAB_GUEST_AGENT=/share/opagent \
	start_guest g1 6b1b1d6e-0000-4000-8000-0000000000d1 script
wait_guest_booted g1

# the server has indexed both trees before anything asks it (bounded)
ratio_bid=$(cat "$STAGE/lab/ratio-dyn.build-id" 2>/dev/null)
[ -n "$ratio_bid" ] || lab_fail "no GNU build id in ratio-dyn"
# (a client caches a miss for ten minutes: each try gets a cache of its own)
found=0
for i in $(seq 1 120); do
	DEBUGINFOD_URLS=$URLS DEBUGINFOD_CACHE_PATH=/tmp/debuginfod-poll.$i timeout 10 \
		debuginfod-find debuginfo "$ratio_bid" >/dev/null 2>&1 && { found=1; break; }
	sleep 1
done
rm -rf /tmp/debuginfod-poll.*
[ $found = 1 ] ||
	lab_fail "debuginfod does not serve ratio-dyn's debug info (log: $(tail -n 3 "$RESULTS/debuginfod.log"))"
# the C library's tree is larger: its scan ends after ratio's file is in
for i in $(seq 1 60); do
	grep -q "fts traversed" "$RESULTS/debuginfod.log" && break
	sleep 1
done
sleep 3
lab_log "debuginfod serves ratio-dyn ($ratio_bid); $(grep -c . "$RESULTS/debuginfod.log") log lines"
rm -rf "$DEBUGINFOD_CACHE_PATH"

timeout 60 opcontrol --start --session-dir="$S" --domains=all || lab_fail "opcontrol --start failed"
wait_agents_complete "$S" 1 || lab_fail "agent not connected after 120 s"
touch /tmp/share-g1/go
lab_wait_console g1 WORK-DONE 600 || lab_fail "g1's workload did not finish"
sleep 3
timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
cp "$S/oprofiled.log" "$RESULTS/oprofiled.log"

t_with=$(lab_now)
DEBUGINFOD_URLS=$URLS timeout 300 opreport --session-dir="$S" --domain=g1 -l \
	>"$RESULTS/g1-debuginfod.txt" 2>"$RESULTS/g1-debuginfod.err" ||
	lab_fail "opreport with debuginfod failed: $(head -n 5 "$RESULTS/g1-debuginfod.err")"
t_with=$(lab_since "$t_with")
t_without=$(lab_now)
env -u DEBUGINFOD_URLS timeout 300 opreport --session-dir="$S" --domain=g1 -l \
	>"$RESULTS/g1-plain.txt" 2>"$RESULTS/g1-plain.err" ||
	lab_fail "opreport without debuginfod failed: $(head -n 5 "$RESULTS/g1-plain.err")"
t_without=$(lab_since "$t_without")
kill "$dbg_pid" 2>/dev/null || true
head -n 30 "$RESULTS/g1-debuginfod.txt"
cat "$RESULTS/g1-debuginfod.err" "$RESULTS/g1-plain.err"

# samples of symbol NAME (last field) in report $1
sym_count() { awk -v s="$2" '$1 ~ /^[0-9]+$/ && $NF == s { n += $1 } END { print n + 0 }' "$1"; }
# the C library's rows of report $1: "COUNT SYMBOL", most first
libc_rows() { awk '$1 ~ /^[0-9]+$/ && /libc\.so\.6/ { print $1, $NF }' "$1" | sort -rn; }
na=$(sym_count "$RESULTS/g1-debuginfod.txt" burn_a)
nb=$(sym_count "$RESULTS/g1-debuginfod.txt" burn_b)
pa=$(sym_count "$RESULTS/g1-plain.txt" burn_a)
steps=$(sed -n 's/.*RATIO .*steps_a=\([0-9.]*\)%.*/\1/p' "$RESULTS/g1.console" | tail -n 1)
timeshare=$(sed -n 's/.*RATIO .*burn_a=\([0-9.]*\)%.*/\1/p' "$RESULTS/g1.console" | tail -n 1)
[ -n "$steps" ] && [ -n "$timeshare" ] || lab_fail "no RATIO line in g1's console"
share=$(awk -v a="$na" -v b="$nb" 'BEGIN { if (a + b) printf "%.2f", 100 * a / (a + b); else print "none" }')
# the distance from the profile's share to the nearer of the program's two
diff=$(awk -v p="${share/none/0}" -v s="$steps" -v t="$timeshare" 'BEGIN {
	lo = s < t ? s : t; hi = s < t ? t : s
	d = p < lo ? lo - p : (p > hi ? p - hi : 0); printf "%.2f", d }')
libc_rows "$RESULTS/g1-debuginfod.txt" >"$RESULTS/libc-debuginfod.txt"
libc_rows "$RESULTS/g1-plain.txt" >"$RESULTS/libc-plain.txt"
libc_top=$(awk 'NR == 1 { print $2 }' "$RESULTS/libc-debuginfod.txt")
plain_top=$(awk 'NR == 1 { print $2 }' "$RESULTS/libc-plain.txt")
variant='^__(strlen|memchr)_[a-z0-9_]+$'
libc_all=$(awk '{ n += $1 } END { print n + 0 }' "$RESULTS/libc-debuginfod.txt")
libc_var=$(awk -v re="$variant" '$2 ~ re { n += $1 } END { print n + 0 }' "$RESULTS/libc-debuginfod.txt")
plain_var=$(awk -v re="$variant" '$2 ~ re { n += $1 } END { print n + 0 }' "$RESULTS/libc-plain.txt")
lab_summary burn_a_samples "$na"
lab_summary burn_b_samples "$nb"
lab_summary burn_a_share "$share"
lab_summary steps_a "$steps"
lab_summary burn_a_time "$timeshare"
lab_summary burn_a_without_debuginfod "$pa"
lab_summary libc_samples "$libc_all"
lab_summary libc_variant_samples "$libc_var"
lab_summary libc_top_with "$libc_top"
lab_summary libc_top_without "${plain_top:-none}"
lab_summary libc_variant_without "$plain_var"
lab_summary report_s_with "$t_with"
lab_summary report_s_without "$t_without"
lab_log "C library, with debuginfod:"; head -n 5 "$RESULTS/libc-debuginfod.txt"
lab_log "C library, without:"; head -n 5 "$RESULTS/libc-plain.txt"

fail=0
[ "$na" -gt 0 ] && [ "$nb" -gt 0 ] ||
	{ lab_log "FAIL: the stripped program's burn_a ($na) and burn_b ($nb) not named"; fail=1; }
awk -v d="$diff" -v t="$TOL" 'BEGIN { exit !(d <= t) }' ||
	{ lab_log "FAIL: burn_a share $share% vs the program's steps_a $steps% and time $timeshare% ($diff points from the nearer > $TOL)"; fail=1; }
[[ "$libc_top" =~ $variant ]] ||
	{ lab_log "FAIL: the C library's top symbol is '$libc_top', not a strlen/memchr variant"; fail=1; }
awk -v v="$libc_var" -v a="$libc_all" 'BEGIN { exit !(a > 0 && v * 2 > a) }' ||
	{ lab_log "FAIL: strlen/memchr variants hold $libc_var of the C library's $libc_all samples"; fail=1; }
[ "$pa" -eq 0 ] && [ "$plain_var" -eq 0 ] ||
	{ lab_log "FAIL: without debuginfod the report still names burn_a ($pa) or variants ($plain_var): the names did not need the server"; fail=1; }
grep -q "ratio-dyn" "$RESULTS/g1-plain.err" ||
	{ lab_log "FAIL: without debuginfod the report does not say that ratio-dyn went unnamed"; fail=1; }
stop_guest g1
lab_summary scenario_s "$(lab_since "$t0")"
[ $fail -eq 0 ] || lab_fail "see above"
lab_log "PASS: burn_a $share% vs steps $steps% (diff $diff); C library top $libc_top ($libc_var of $libc_all in variants), without the server: $plain_top"
