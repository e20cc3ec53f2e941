#!/usr/bin/env bash
# End to end on the host, as root (issue 22): a program rebuilt after it was
# profiled is never silently named from its new binary.  Profile version A
# (functions alpha_spin, beta_spin), save a copy and an archive, rebuild
# version B (other functions, other layout) at the same path, then:
#   - the daemon's image record (samples/current/{images}) holds the
#     build ids of the program and of libc;
#   - opreport -l names A's functions from a copy: -p with the saved copy,
#     and the archive even without its path copy (oparchive's .build-id
#     store);
#   - opreport -l on the plain session warns, naming the program, marks
#     every row of it "(unverified)" (and "unverified": true in JSON), and
#     exits 0.
# Needs DP_PREFIX (installed domprof) and a C compiler; DP_KEEP=1 keeps the
# work directory.
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
bin=$DP_PREFIX/bin
seconds=${DP_REBUILT_SECONDS:-4}
cc=${CC:-cc}

work=$(mktemp -d /tmp/dp-rebuilt.XXXXXX)
chmod 0755 "$work"	# the privsep worker reaches the session through it
session=$work/session
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
[ -z "${DP_KEEP:-}" ] || trap - EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

cat >"$work/a.c" <<'SRC'
#include <stdlib.h>
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void alpha_spin(void) { for (int i = 0; i < 200000; i++) sink += i; }
__attribute__((noinline)) void beta_spin(void) { for (int i = 0; i < 100000; i++) sink ^= i; }
int main(int argc, char **argv)
{
	time_t end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end) { alpha_spin(); beta_spin(); }
	return 0;
}
SRC
# B: other names, and padding so that A's offsets fall inside B's functions
cat >"$work/b.c" <<'SRC'
volatile unsigned long sink;
__attribute__((noinline)) void gamma_pad(void) { __asm__ volatile(".fill 64, 1, 0x90"); }
__attribute__((noinline)) void delta_wide(void) { __asm__ volatile(".fill 4096, 1, 0x90"); }
__attribute__((noinline)) void epsilon_wide(void) { __asm__ volatile(".fill 4096, 1, 0x90"); }
int main(void) { gamma_pad(); delta_wide(); epsilon_wide(); return 0; }
SRC
prog=$work/prog
"$cc" -O1 -o "$prog" "$work/a.c"
mkdir "$work/saved"
cp -p "$prog" "$work/saved/prog"
bid_a=$(readelf -n "$prog" | awk '/Build ID/ { print $3 }')

"$bin/opcontrol" --start --session-dir="$session"
"$prog" "$seconds"
"$bin/opcontrol" --dump --session-dir="$session"
"$bin/opcontrol" --stop --session-dir="$session"

# the daemon's record: the program's build id and libc's
record=$session/samples/current/{images}
[ -f "$record" ] || fail "no image record $record"
grep -qP "^image\t\Q$prog\E\t$bid_a\t" "$record" || fail "no record of $prog with build id $bid_a"
libc=$(awk -F'\t' '$2 ~ /\/libc\.so\.6$/ { print $2; exit }' "$record")
[ -n "$libc" ] || fail "libc not in the image record"
bid_libc=$(readelf -n "$libc" | awk '/Build ID/ { print $3 }')
grep -qP "^image\t\Q$libc\E\t$bid_libc\t" "$record" || fail "libc's build id $bid_libc not recorded"
echo "record: $prog $bid_a; $libc $bid_libc"

"$bin/oparchive" -o "$work/arch" --session-dir="$session" "image:$prog"
# libc's separate debug file (libc6-dbg) is stored by build id too
dbg=/usr/lib/debug/.build-id/${bid_libc:0:2}/${bid_libc:2}.debug
if [ -f "$dbg" ]; then
	"$bin/oparchive" -o "$work/arch-libc" --session-dir="$session" "lib-image:$libc"
	[ -f "$work/arch-libc/archive/.build-id/${bid_libc:0:2}/${bid_libc:2}.debug" ] &&
		[ -f "$work/arch-libc/archive/.build-id/${bid_libc:0:2}/${bid_libc:2}" ] ||
		fail "oparchive: libc or its debug file not stored by build id"
	echo "OK: oparchive stores libc and its debug file under archive/.build-id/${bid_libc:0:2}/"
else
	echo "skipped: no $dbg (libc6-dbg): oparchive's debug file store not checked"
fi
"$cc" -O1 -o "$prog" "$work/b.c"	# rebuilt at the same path
bid_b=$(readelf -n "$prog" | awk '/Build ID/ { print $3 }')
[ "$bid_a" != "$bid_b" ] || fail "the rebuilt program has the same build id"

names_ok() {	# $1: a report; A's names, none of B's, no mark
	grep -qw alpha_spin "$1" || fail "$2: alpha_spin not named"
	! grep -Eq 'gamma_pad|delta_wide|epsilon_wide' "$1" || fail "$2: the new binary's names"
	! grep -q 'unverified' "$1" || fail "$2: marked unverified"
}

# 1. from the saved copy (-p)
"$bin/opreport" -l --session-dir="$session" -p "$work/saved" "image:$prog" >"$work/p.out"
names_ok "$work/p.out" "opreport -p saved"
echo "OK: -p saved copy: $(grep -cw -e alpha_spin -e beta_spin "$work/p.out") rows of A's functions"

# pprof from the copy: the mapping has the build id and the code
# segment's range; locations are sample addresses inside it
if [ -x "$bin/oppprof" ] && command -v go >/dev/null; then
	"$bin/oppprof" --session-dir="$session" -p "$work/saved" -o "$work/saved.pb.gz" "image:$prog"
	HOME=$work GOTOOLCHAIN=local timeout 300 go tool pprof -symbolize=none -raw \
		"$work/saved.pb.gz" >"$work/saved.raw" 2>&1 || true
	map=$(grep -E "^ *[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ $prog $bid_a" "$work/saved.raw" || true)
	[ -n "$map" ] || { cat "$work/saved.raw"; fail "oppprof: no mapping of prog with its build id and range"; }
	read -r start limit < <(echo "$map" | sed -E 's|.* 0x([0-9a-f]+)/0x([0-9a-f]+)/.*|\1 \2|')
	[ "$((16#$start))" -gt 0 ] || fail "oppprof: prog's mapping starts at 0"
	HOME=$work GOTOOLCHAIN=local timeout 300 go tool pprof -symbolize=none -top -addresses \
		-nodecount=1000 "$work/saved.pb.gz" 2>/dev/null | awk '$NF ~ /prog$/ && $(NF-1) == "alpha_spin"' >"$work/addr.out"
	[ "$(wc -l <"$work/addr.out")" -ge 2 ] || fail "oppprof: alpha_spin not at its samples' addresses (one location per symbol?)"
	while read -r _ _ _ _ _ addr _; do
		a=$((16#$addr))
		{ [ "$a" -ge "$((16#$start))" ] && [ "$a" -lt "$((16#$limit))" ]; } ||
			fail "oppprof: alpha_spin's address $addr outside its mapping $start-$limit"
	done <"$work/addr.out"
	echo "OK: oppprof: prog's mapping 0x$start-0x$limit with build id $bid_a, $(wc -l <"$work/addr.out") sample address(es) of alpha_spin in it"
fi

# 2. from the archive, by build id alone (its path copy removed)
rm -f "$work/arch/archive$prog"
[ -f "$work/arch/archive/.build-id/${bid_a:0:2}/${bid_a:2}" ] || fail "archive has no .build-id copy"
"$bin/opreport" -l --session-dir="$work/arch" "image:$prog" >"$work/arch.out"
names_ok "$work/arch.out" "opreport on the archive"
echo "OK: archive by build id names A's functions"

# 3. the plain session: warned, by name, rows marked, exit 0
set +e
"$bin/opreport" -l --session-dir="$session" "image:$prog" >"$work/plain.out" 2>"$work/plain.err"
status=$?
set -e
cat "$work/plain.out"
[ "$status" = 0 ] || fail "opreport exited $status with an unverified image"
grep -q "^Warning: $prog changed since profiling (build-id $bid_a, now $bid_b" "$work/plain.out" ||
	fail "no header warning naming $prog"
grep -q "$prog changed since profiling" "$work/plain.err" || fail "no warning on stderr"
rows=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/ && $3 ~ /^prog/' "$work/plain.out")
[ -n "$rows" ] || fail "no rows of prog"
if printf '%s\n' "$rows" | grep -v '(unverified)' | grep -q .; then
	fail "a row of prog is not marked"
fi
"$bin/opreport" --session-dir="$session" "image:$prog" 2>/dev/null >"$work/images.out"
grep -Eq '^ *[0-9]+ +[0-9.]+ +prog \(unverified\)$' "$work/images.out" ||
	{ cat "$work/images.out"; fail "the image listing does not mark prog"; }
"$bin/opreport" -l --json --session-dir="$session" "image:$prog" 2>/dev/null >"$work/plain.json"
python3 - "$work/plain.json" "$prog" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d['rows'] if r['image']['name'] == sys.argv[2]]
assert rows and all(r['unverified'] for r in rows), rows
assert any(sys.argv[2] in w for w in d['warnings']), d['warnings']
PY
echo "OK: the rebuilt program is warned about by name, its $(printf '%s\n' "$rows" | wc -l) rows marked, exit 0"

# 4. opannotate, the flame graph and pprof mark it too
"$bin/opannotate" --assembly --session-dir="$session" "image:$prog" >"$work/annotate.out" 2>/dev/null
grep -q ": image $prog (host) (unverified)" "$work/annotate.out" || fail "opannotate: prog not marked"
echo "OK: opannotate marks prog's image (unverified)"
"$bin/opflame" --session-dir="$session" -o "$work/flame.svg" "image:$prog" 2>/dev/null
grep -q 'prog (unverified)' "$work/flame.svg" || fail "opflame: prog's frame not marked"
grep -Eq '>(gamma_pad|delta_wide|epsilon_wide)[ <]' "$work/flame.svg" &&
	! grep -q 'prog (unverified)' "$work/flame.svg" && fail "opflame: unmarked names of the new binary"
echo "OK: opflame marks prog's frame (unverified)"
if [ -x "$bin/oppprof" ] && command -v go >/dev/null; then
	"$bin/oppprof" --session-dir="$session" -o "$work/prof.pb.gz" "image:$prog" 2>/dev/null
	HOME=$work GOTOOLCHAIN=local timeout 300 go tool pprof -symbolize=none -tags \
		"$work/prof.pb.gz" >"$work/tags.out" 2>&1 || true
	grep -A2 -w 'unverified' "$work/tags.out" | grep -q 'true' ||
		{ cat "$work/tags.out"; fail "oppprof: no unverified label"; }
	HOME=$work GOTOOLCHAIN=local timeout 300 go tool pprof -symbolize=none -raw \
		"$work/prof.pb.gz" >"$work/raw.out" 2>&1 || true
	grep -q "changed since profiling" "$work/raw.out" || fail "oppprof: the warning is not a comment"
	echo "OK: oppprof labels prog's samples unverified=true, the warning in its comments"
fi

# 5. rebuilt while profiled: both identities recorded, the rows marked
s2=$work/session2
"$cc" -O1 -o "$prog" "$work/a.c"
"$bin/opcontrol" --start --session-dir="$s2" >/dev/null
"$prog" 2
"$bin/opcontrol" --dump --session-dir="$s2"
sed 's/200000/300000/' "$work/a.c" >"$work/a2.c"
"$cc" -O1 -o "$prog.new" "$work/a2.c"
mv "$prog.new" "$prog"	# a new inode, as a build or an upgrade makes
"$prog" 2
"$bin/opcontrol" --dump --session-dir="$s2"
"$bin/opcontrol" --stop --session-dir="$s2" >/dev/null
n=$(grep -cP "^image\t\Q$prog\E\t" "$s2/samples/current/{images}" || true)
[ "$n" = 2 ] || { cat "$s2/samples/current/{images}"; fail "$n identities of $prog recorded, not 2"; }
"$bin/opreport" -l --session-dir="$s2" "image:$prog" >"$work/mixed.out" 2>/dev/null
grep -q "^Warning: $prog changed while it was profiled" "$work/mixed.out" || fail "no warning of a change during the run"
grep -q 'prog (unverified)' "$work/mixed.out" || fail "rows of the changed program not marked"
echo "OK: a program rebuilt during the run: both identities recorded, warned about, rows marked"
