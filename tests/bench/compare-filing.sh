#!/usr/bin/env bash
# Filing must not change with the daemon's speed: replays the same
# generated streams through two installed daemons (an old build and a new
# one) and compares what they filed.  Every sample file must exist in both
# trees and be equal byte for byte (same keys, counts and node order); the
# stacks file's contents (its name holds a time and a pid) and the filing
# counters of SESSION/stats must be equal too.
#   tests/bench/compare-filing.sh OLD_PREFIX NEW_PREFIX
# Streams (tests/bench/gen-stream): the benchmark's kind; --mixed (four
# threads a process, guest runs with DOMAIN and ASID records) with 16-deep
# call chains, one whose chains repeat the last one's in three samples of
# four (--chain-repeat 4: the callers' arcs counted as repeats), and a
# small one with 3-deep chains; each replayed with several
# --separate lists, and with --max-open-files=64 so files are evicted and
# reopened all the time (an old daemon can take minutes over the chains so).
# Needs DP_BUILD (for tests/bench/gen-stream).  Exit 0: all equal.
set -euo pipefail
: "${DP_BUILD:?set DP_BUILD to the build directory}"
[ $# -eq 2 ] || { echo "usage: $0 OLD_PREFIX NEW_PREFIX" >&2; exit 2; }
old=$1 new=$2
work=${DP_COMPARE_DIR:-$(mktemp -d /var/tmp/dp-compare.XXXXXX)}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
gen=$DP_BUILD/tests/bench/gen-stream
counters='^(samples_|unresolved_|sample_files |sample_file_errors|processes_seen|mmaps|kernel_images|cc_|guest_user_unresolved|guest_kernel_unresolved|stream_)'

"$gen" --out "$work/plain.raw" --samples 400000 --processes 300 --images 200 >/dev/null
"$gen" --out "$work/mixed.raw" --samples 200000 --processes 60 --images 40 --hot 64 \
	--callchain 16 --mixed --seed 7 >/dev/null
"$gen" --out "$work/shallow.raw" --samples 30000 --processes 40 --images 30 \
	--callchain 3 --mixed --seed 11 >/dev/null
"$gen" --out "$work/repeat.raw" --samples 200000 --processes 60 --images 40 --hot 64 \
	--callchain 16 --chain-repeat 4 --seed 5 >/dev/null

# replay PREFIX STREAM SESSION OPTIONS...
replay() {
	local prefix=$1 stream=$2 session=$3; shift 3
	rm -rf "$session"
	"$prefix/sbin/oprofiled" --collector=file --input="$stream" --session-dir="$session" \
		--foreground "$@" >"$session.log" 2>&1 ||
		{ echo "FAIL: $prefix replay of $stream"; tail -5 "$session.log"; return 1; }
}

# same SESSION_A SESSION_B: 0 if they filed the same
same() {
	local a=$1/samples/current b=$2/samples/current bad=0
	# every file present in both and equal byte for byte; the stacks
	# file's name differs, its contents may not
	diff -rq -x '{stacks}' "$a" "$b" >"$work/files.diff" ||
		{ echo "  sample files differ:"; head -5 "$work/files.diff"; bad=1; }
	cmp -s <(cat "$a"/'{stacks}'/* 2>/dev/null) <(cat "$b"/'{stacks}'/* 2>/dev/null) ||
		{ echo "  stacks differ"; bad=1; }
	diff <(grep -E "$counters" "$1/stats") <(grep -E "$counters" "$2/stats") >"$work/stats.diff" ||
		{ echo "  stats differ:"; head -10 "$work/stats.diff"; bad=1; }
	echo "  $(find "$b" -type f | wc -l) files, $(grep -E '^samples_filed ' "$2/stats"), $(grep -E '^cc_arcs ' "$2/stats" || echo cc_arcs 0)"
	return $bad
}

fail=0
for c in "plain.raw --separate=lib" "plain.raw --separate=none" "plain.raw --separate=all" \
	 "mixed.raw --separate=lib" "mixed.raw --separate=thread,cpu" "mixed.raw --separate=kernel" \
	 "plain.raw --separate=lib --max-open-files=64" "shallow.raw --separate=lib --max-open-files=64" \
	 "repeat.raw --separate=lib" "repeat.raw --separate=thread,cpu" \
	 "repeat.raw --separate=lib --max-open-files=64"; do
	set -- $c
	stream=$1; shift
	echo "$stream $*"
	replay "$old" "$work/$stream" "$work/old" "$@"
	replay "$new" "$work/$stream" "$work/new" "$@"
	if same "$work/old" "$work/new"; then
		echo "  same"
	else
		echo "  FAIL: $stream $* filed differently"
		fail=1
	fi
done
[ $fail = 0 ] && echo "OK: both daemons filed every stream the same" || echo "FAIL"
exit $fail
