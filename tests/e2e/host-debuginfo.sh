#!/usr/bin/env bash
# End to end on the host, as root: images named from debug info found as gdb
# and perf find it (doc/naming.md).  The ratio program (as host-ratio.sh
# runs it) is profiled unstripped and as stripped copies whose debug info is
#   (a) beside it through .gnu_debuglink,
#   (b) only under a build-id directory (--debug-dir),
#   (c) only on a real debuginfod server serving a directory,
# and opreport -l must give each the unstripped split within 2 points; a
# copy with no debug info anywhere is not named (the control), with its
# one-line reason.  Bad input: a debug link whose CRC or build-id does not
# match is refused and said; a debuginfod that accepts and never answers,
# and one that answers garbage, cost a bounded time and name nothing.
# libc: a strlen/memchr workload, recorded by perf beside the daemon: the
# top libc symbols equal perf report's (libc6-dbg installed).  And no ELF is
# parsed by uid 0: strace shows who opens the debug files.
# Servers listen in a network namespace of their own: loopback only.
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/e2e/ratio).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
self=$(readlink -f "$0")
export DP_NO_PROGRESS=1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "OK: $*"; }

# share of burn_a among the two functions in an opreport -l listing
share_a() {
	awk '$NF == "burn_a" { a += $1 } $NF == "burn_b" { b += $1 }
	     END { if (a + b == 0) { print "none"; exit } printf "%.2f\n", 100 * a / (a + b) }' "$1"
}
within() {	# within A B POINTS
	awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "none" && b != "none" && d <= t) }'
}

# --- the part run in a network namespace: debuginfod and fake servers ----
if [ "${1:-}" = --in-netns ]; then
	work=$2
	session=$work/session
	ip link set lo up
	# (c) a real debuginfod serving the directory that holds the debug file
	debuginfod -p 18002 -d "$work/dbgd.sqlite" -F "$work/srv" -t 0 -g 0 >"$work/dbgd.log" 2>&1 &
	dpid=$!
	bid=$(readelf -n "$work/full/ratio" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
	for _ in $(seq 100); do
		python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:18002/buildid/$bid/debuginfo', timeout=2)" \
			2>/dev/null && break
		sleep 0.2
	done
	mkdir -m 1777 "$work/cache-hang" "$work/cache-junk"
	# (c) with the root report's own cache (doc/naming.md), this build-id's
	# entry of an earlier run removed first
	rm -rf /var/cache/domprof/debuginfod.*/"$bid"
	DEBUGINFOD_URLS=http://127.0.0.1:18002 \
		"$bin/opreport" -l --session-dir="$session" "image:$work/c/ratio" >"$work/c.out" 2>"$work/c.err"
	stat -c '%U %a' /var/cache/domprof/debuginfod.*/"$bid" >"$work/c.cache" 2>&1 || true
	kill "$dpid"
	wait "$dpid" 2>/dev/null || true
	# a server that accepts and never answers; one that answers garbage
	python3 - "$work" <<'EOF' &
import socket, sys, threading, os
def hang():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 18003)); s.listen(64); held = []
    while True:
        held.append(s.accept()[0])
def junk():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 18004)); s.listen(64)
    while True:
        c = s.accept()[0]
        c.recv(65536)
        body = os.urandom(4096)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        c.close()
threading.Thread(target=hang, daemon=True).start()
junk()
EOF
	fpid=$!
	sleep 1
	start=$(date +%s.%N)
	DEBUGINFOD_URLS=http://127.0.0.1:18003 DEBUGINFOD_TIMEOUT=2 DEBUGINFOD_CACHE_PATH=$work/cache-hang \
		"$bin/opreport" -l --session-dir="$session" >"$work/hang.out" 2>"$work/hang.err" || true
	end=$(date +%s.%N)
	echo "$start $end" | awk '{ printf "%.1f\n", $2 - $1 }' >"$work/hang.secs"
	# without DEBUGINFOD_TIMEOUT (the client's default is 90 s): our own bound
	mkdir -m 1777 "$work/cache-hang2"
	start=$(date +%s.%N)
	DEBUGINFOD_URLS=http://127.0.0.1:18003 DEBUGINFOD_CACHE_PATH=$work/cache-hang2 \
		"$bin/opreport" -l --session-dir="$session" "image:$work/c/ratio" >"$work/hang2.out" 2>"$work/hang2.err" || true
	end=$(date +%s.%N)
	echo "$start $end" | awk '{ printf "%.1f\n", $2 - $1 }' >"$work/hang2.secs"
	DEBUGINFOD_URLS=http://127.0.0.1:18004 DEBUGINFOD_CACHE_PATH=$work/cache-junk \
		"$bin/opreport" -l --session-dir="$session" "image:$work/c/ratio" >"$work/junk.out" 2>"$work/junk.err" || true
	kill "$fpid"
	wait "$fpid" 2>/dev/null || true
	exit 0
fi

ratio=$DP_BUILD/tests/e2e/ratio
other=$DP_BUILD/tests/e2e/exact-a
seconds=${DP_RATIO_SECONDS:-3}
work=$(mktemp -d /tmp/dp-debuginfo.XXXXXX)
chmod 0755 "$work"
session=$work/session
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	[ -n "${DP_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# --- the binaries -----------------------------------------------------------
cd "$work"
mkdir full a b c none crc bid srv dbgroot
cp "$ratio" full/ratio
bid=$(readelf -n full/ratio | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
[ -n "$bid" ] || { echo "FAIL: the ratio program has no build-id"; exit 1; }
objcopy --only-keep-debug full/ratio ratio.debug
for d in a b c none crc bid; do strip -s -o "$d/ratio" full/ratio; done
cp ratio.debug a/ratio.debug
objcopy --add-gnu-debuglink=a/ratio.debug a/ratio
mkdir -p "dbgroot/.build-id/${bid:0:2}"
cp ratio.debug "dbgroot/.build-id/${bid:0:2}/${bid:2}.debug"
cp ratio.debug srv/ratio.debug
# bad input: the right build-id with other bytes (CRC), another program's
# debug file with its right CRC (build-id)
cp ratio.debug crc/ratio.debug
objcopy --add-gnu-debuglink=crc/ratio.debug crc/ratio
printf x >>crc/ratio.debug
objcopy --only-keep-debug "$other" bid/ratio.debug
objcopy --add-gnu-debuglink=bid/ratio.debug bid/ratio
cat >libcload.c <<'EOF'
#include <stdlib.h>
#include <string.h>
#include <time.h>
static char buf[1 << 16];
volatile size_t sink;
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3;
	struct timespec t0, t;
	memset(buf, 'a', sizeof(buf) - 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 200; i++) {
			sink += strlen(buf);
			sink += (size_t)memchr(buf, 'b', sizeof(buf));
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
EOF
cc -O1 -o libcload libcload.c

# --- one profile of them all ------------------------------------------------
"$bin/opcontrol" --start --session-dir="$session" --separate=lib >/dev/null
for d in full a b c none; do "$d/ratio" "$seconds" 75 >/dev/null; done
for d in crc bid; do "$d/ratio" 1 75 >/dev/null; done
perf record -q -e cpu-clock -o perf.data -- ./libcload "$seconds" >/dev/null 2>&1 || echo "(perf record failed)"
"$bin/opcontrol" --dump --session-dir="$session"
"$bin/opcontrol" --stop --session-dir="$session"

rep() {	# rep NAME [OPTIONS]: opreport -l of NAME/ratio into NAME.out/.err
	local d=$1
	shift
	"$bin/opreport" -l --session-dir="$session" "$@" "image:$work/$d/ratio" >"$d.out" 2>"$d.err"
}
rep full
rep a
rep b --debug-dir="$work/dbgroot"
rep none
rep crc
rep bid
"$bin/opreport" -l --session-dir="$session" >base.out 2>base.err
unshare -n -- "$self" --in-netns "$work"

ref=$(share_a full.out)
echo "unstripped: burn_a $ref%"
[ "$ref" != none ] || fail "the unstripped program is not named"
for d in a b c; do
	s=$(share_a "$d.out")
	case $d in a) how=".gnu_debuglink beside it" ;; b) how="build-id directory" ;; c) how="debuginfod" ;; esac
	if within "$s" "$ref" 2; then ok "($d) $how: burn_a $s% (unstripped $ref%)"
	else fail "($d) $how: burn_a $s%, unstripped $ref%"; sed 's/^/    /' "$d.err"; fi
done
pu=domprof
id -u domprof >/dev/null 2>&1 || pu=nobody
if [ "$(cat c.cache)" = "$pu 700" ]; then
	ok "(c) debuginfod's file cached in /var/cache/domprof/debuginfod.$pu, owned by the parser children's user"
else
	fail "(c) debuginfod's cache: $(cat c.cache)"
fi
if [ "$(share_a none.out)" = none ] && grep -q "no debug info for $work/none/ratio (build-id $bid): " none.err; then
	ok "control: no debug info anywhere: not named, said: $(grep -o 'no debug info.*' none.err | cut -c1-150)"
else
	fail "control: a copy with no debug info: $(share_a none.out), $(cat none.err)"
fi
for d in crc bid; do
	if [ "$(share_a "$d.out")" = none ] && grep -q "refused" "$d.err"; then
		ok "bad $d: refused, said: $(grep -o "$work/$d/ratio.debug: [^;]*" "$d.err" | head -1)"
	else
		fail "bad $d: $(share_a "$d.out") named; $(cat "$d.err")"
	fi
done

# --- debuginfod that hangs or answers garbage -------------------------------
secs=$(cat hang.secs)
if awk -v s="$secs" 'BEGIN { exit !(s < 12) }' && grep -q "debuginfod did not answer in time" hang.err &&
	[ "$(grep -c "did not answer in time" hang.err)" -eq 1 ] &&
	cmp -s <(grep -E 'burn_|ratio ' base.out) <(grep -E 'burn_|ratio ' hang.out); then
	ok "a debuginfod that never answers: the whole report ($(grep -c "no debug info" hang.err) images unnamed) took ${secs}s, said once, rows as without it"
else
	fail "hanging debuginfod: ${secs}s; $(head -5 hang.err)"
fi
secs=$(cat hang2.secs)
if awk -v s="$secs" 'BEGIN { exit !(s < 25) }' && grep -q "debuginfod did not answer in time" hang2.err; then
	ok "the same without DEBUGINFOD_TIMEOUT: ${secs}s (the report's own bound, 15 s an image)"
else
	fail "hanging debuginfod without DEBUGINFOD_TIMEOUT: ${secs}s; $(head -3 hang2.err)"
fi
if [ "$(share_a junk.out)" = none ] && grep -q "not an ELF file, refused" junk.err; then
	ok "a debuginfod that answers garbage: refused, nothing named"
else
	fail "garbage debuginfod: $(share_a junk.out); $(cat junk.err)"
fi

# --- libc: our names and perf's ---------------------------------------------
"$bin/opreport" -l --session-dir="$session" "image:$work/libcload" >libc.out 2>libc.err
awk '/libc\.so/ && $1 ~ /^[0-9]+$/ { print $1, $NF }' libc.out | sort -rn | head -2 | awk '{ print $2 }' | sort >libc.ours
perf report -i perf.data --stdio --sort dso,sym 2>/dev/null |
	awk '/libc\.so/ && $1 ~ /%$/ { print $1 + 0, $NF }' | sort -rn | head -2 | awk '{ print $2 }' | sort >libc.perf
echo "libc top 2, domprof: $(tr '\n' ' ' <libc.ours)  perf: $(tr '\n' ' ' <libc.perf)"
if [ -s libc.ours ] && cmp -s libc.ours libc.perf; then
	ok "libc's top symbols are perf's"
else
	fail "libc's top symbols differ from perf's"
fi

# --- no ELF parsed by uid 0 --------------------------------------------------
strace -f -qq -y -e trace=openat,setresuid,read,pread64 -o strace.out \
	"$bin/opreport" -l --session-dir="$session" "image:$work/a/ratio" >/dev/null 2>&1
# the pids that dropped root, and every open of an image or debug file
dropped=$(awk '/setresuid\([1-9][0-9]*, [1-9]/ { print $1 }' strace.out | sort -u | tr '\n' ' ')
bad=$(awk -v d=" $dropped " '/openat\(.*(ratio\.debug|\/usr\/lib\/debug)/ && index(d, " " $1 " ") == 0' strace.out)
# root opens the image (its identity check and the parse each hand the
# fd to a child), and reads not one byte of it: every read of the image
# is a child's, after it dropped root
root_opens=$(awk -v d=" $dropped " -v f="\"$work/a/ratio\"" '/ openat\(/ && index($0, f) && index(d, " " $1 " ") == 0' strace.out | wc -l)
root_reads=$(awk -v d=" $dropped " -v f="<$work/a/ratio>" '/ (read|pread64)\(/ && index($0, f) && index(d, " " $1 " ") == 0' strace.out | wc -l)
child_reads=$(awk -v d=" $dropped " -v f="<$work/a/ratio>" '/ (read|pread64)\(/ && index($0, f) && index(d, " " $1 " ") > 0' strace.out | wc -l)
if [ -n "$dropped" ] && grep -q "ratio.debug" strace.out && [ -z "$bad" ] && [ "$root_reads" -eq 0 ] &&
	[ "$child_reads" -gt 0 ]; then
	ok "the image and its debug file read only by parser children (pids $dropped) after they dropped root: root opened the image $root_opens time(s) and read 0 bytes of it; the children read it $child_reads time(s)"
else
	fail "an ELF file read by uid 0: dropped=$dropped; root read the image $root_reads time(s), children $child_reads; $bad"
fi

# --- pprof: the function's source, through its debug link -------------------
# Every location carries its own line and the frames inlined there
# (ratio's burn_a inlines e2e_spin, which inlines e2e_steps: spin.h), so
# -list puts the counts on the lines that ran, as perf report --inline.
"$bin/oppprof" --session-dir="$session" -o a.pb.gz "image:$work/a/ratio" 2>/dev/null
go tool pprof -list '^burn_a$' a.pb.gz >a.list 2>&1 || true
go tool pprof -list '^e2e_steps$' a.pb.gz >steps.list 2>&1 || true
# burn_a: its counts on the line of the inlined call, not its first line
call=$(awk '/ROUTINE/ { on = 1 } on && $3 ~ /^[0-9]+:$/ && $2 ~ /^[0-9]+$/ && $2 > 100 { print $3; exit }' a.list)
# e2e_steps: most of the samples, in spin.h, on a line of its own
steps=$(awk '/ROUTINE/ { on = 1 } on && $3 ~ /^[0-9]+:$/ && $1 ~ /^[0-9]+$/ && $1 > m { m = $1; l = $3 } END { print m + 0, l }' steps.list)
if grep -q "ROUTINE =* burn_a in .*/ratio.c" a.list && [ -n "$call" ] && [ "$call" != "22:" ] &&
	grep -q "ROUTINE =* e2e_steps in .*/spin.h" steps.list && [ "${steps%% *}" -gt 100 ]; then
	ok "go tool pprof -list: burn_a in ratio.c with its counts on line ${call%:} (the inlined call); e2e_steps, inlined into it, in spin.h: ${steps%% *} samples on line ${steps#* }"
else
	fail "go tool pprof -list burn_a / e2e_steps: $(head -8 a.list) / $(head -8 steps.list)"
fi

# --- once per build-id: two copies with one build-id, one parse --------------
strace -f -qq -e trace=setresuid,seccomp -o strace2.out \
	"$bin/opreport" -l --session-dir="$session" "image:$work/full/ratio,$work/a/ratio" >two.out 2>&1
read -r asked parsed < <(awk '/setresuid\([1-9]/ { a[$1] = 1 } /seccomp\(SECCOMP_SET_MODE_FILTER, 0,/ { p[$1] = 1 }
	END { for (k in a) na++; for (k in p) np++; print na + 0, np + 0 }' strace2.out)
if [ "$parsed" -eq $((asked - 1)) ] && [ "$(grep -c ' burn_a$' two.out)" -eq 2 ]; then
	ok "two copies of one build-id: $asked parser children, $parsed parsed (one table shared), both named"
else
	fail "two copies of one build-id: $asked children, $parsed parsed; $(grep -c ' burn_a$' two.out) named"
fi

[ "$fails" -eq 0 ] || { echo "host-debuginfo: $fails failure(s)"; exit 1; }
echo "host-debuginfo: all checks passed"
