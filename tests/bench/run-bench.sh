#!/usr/bin/env bash
# Ingest and report benchmark.  Generates a synthetic raw stream (default 50
# million samples over 1,000 processes and 1,000 images) plus the same
# profile as a perf.data, then times:
#   - oprofiled replaying the stream (ingest rate: samples per CPU-second)
#   - opreport on the resulting session
#   - perf report on the equivalent perf.data
#   - the same replays of a stream whose every sample has a 16-deep call
#     chain (--cc-samples, default 2 million; 0: none), as --callgraph=16
#     records them: arcs into {cg} files and the stacks
# Each replay is timed twice: creating every sample file, then into the
# same session with the files in place (steady state).  Ingest figures are
# per CPU-second of the daemon (user + system), so other work on the
# machine does not count (--domains takes its ratio of N domains to one
# with the files open from user time: see domains-lib.sh).  It prints
# figures and asserts nothing about time.
#   tests/bench/run-bench.sh [--samples N] [--processes P] [--images I] [--hot H]
#                            [--cc-samples N] [--no-perf] [--passes P]
#                            [--domains N [--guest-procs G] [--runs R]]
# (--passes: the stream's samples P times over (default 4, at least 2)
# into the session whose files exist; (that - files exist) / (P - 1) is
# the samples' cost with every file open)
# (--hot: distinct hot offsets per image, see gen-stream.c)
# --domains N (N >= 2): instead, the scale of domains
# (tests/bench/domains-lib.sh): a stream of N guests (gen-stream --domains,
# G processes each, default 20, 64 CPUs) against the same stream with one
# guest, each replayed R times (default 3, at least 1) into a new session,
# again into it, and P times over into it; it prints the medians (the
# files-open ratio of N to one of user time, and of user + system), the
# daemon's peak memory and open files, the reports' times, and fails
# when a sample is lost (samples replayed != samples in the files).
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/bench/gen-stream);
# its streams and sessions go in a directory it makes in DP_BENCH_DIR
# (default /var/tmp) and removes at the end.
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
samples=50000000 procs=1000 images=1000 hot=256 perf=1 cc_samples=2000000
domains=0 guest_procs=20 runs=3 passes=4
while [ $# -gt 0 ]; do
	case $1 in
	--domains) domains=$2; shift ;;
	--guest-procs) guest_procs=$2; shift ;;
	--runs) runs=$2; shift ;;
	--passes) passes=$2; shift ;;
	--samples) samples=$2; shift ;;
	--processes) procs=$2; shift ;;
	--images) images=$2; shift ;;
	--hot) hot=$2; shift ;;
	--cc-samples) cc_samples=$2; shift ;;
	--no-perf) perf=0 ;;
	*) echo "usage: $0 [--samples N] [--processes P] [--images I] [--hot H] [--cc-samples N] [--no-perf] [--passes P] [--domains N [--guest-procs G] [--runs R]]" >&2; exit 1 ;;
	esac
	shift
done
[[ $passes =~ ^[0-9]+$ ]] && [ "$passes" -ge 2 ] ||
	{ echo "run-bench: --passes wants a number of at least 2, not '$passes'" >&2; exit 1; }
passes=$((10#$passes))	# (a leading zero is not octal)
[[ $domains =~ ^[0-9]+$ && $runs =~ ^[0-9]+$ ]] && [ "$((10#$domains))" != 1 ] && [ "$((10#$runs))" -ge 1 ] ||
	{ echo "run-bench: --domains wants 0 (none) or a number of at least 2, --runs one of at least 1" >&2; exit 1; }
domains=$((10#$domains)) runs=$((10#$runs))
# (a directory of its own in DP_BENCH_DIR, default /var/tmp: the exit
# removes it, never what was there before)
mkdir -p -- "${DP_BENCH_DIR:-/var/tmp}"
work=$(mktemp -d "${DP_BENCH_DIR:-/var/tmp}/dp-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

# run LABEL OUT CMD...: runs CMD with its stdout in OUT (- for the terminal),
# prints wall, user, sys seconds and peak RSS; sets $wall $cpu
run() {
	local label=$1 out=$2; shift 2
	if [ "$out" = - ]; then
		/usr/bin/time -f '%e %U %S %M' -o "$work/time.out" "$@"
	else
		/usr/bin/time -f '%e %U %S %M' -o "$work/time.out" "$@" >"$out"
	fi
	read -r wall user sys rss <"$work/time.out"
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
	printf '%-28s wall %7.2f s  cpu %7.2f s  peak RSS %7.1f MiB\n' "$label" "$wall" "$cpu" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')"
}

if [ "$domains" -gt 0 ]; then
	. "$(dirname "$0")/domains-lib.sh"
	bench_domains
	exit
fi

gen_args=(--out "$work/bench.raw" --samples "$samples" --processes "$procs" --images "$images" --hot "$hot")
[ $perf = 1 ] && gen_args+=(--perf "$work/bench.perf")
run "generate" - "$DP_BUILD/tests/bench/gen-stream" "${gen_args[@]}"
ls -l "$work"/bench.* | awk '{ printf "  %s: %.0f MiB\n", $NF, $5 / 1048576 }'

# Page the stream in first so the ingest figure is the daemon's, not the disk's.
cat "$work/bench.raw" >/dev/null
# First replay: creates every sample file (and its directories) on the way;
# second replay: the same stream into the same session, files in place (a
# daemon's start with the files there, and the samples); third, below: the
# samples alone with every file open.
# ingest LABEL [STREAM SESSION SAMPLES]
ingest() {
	local stream=${2:-$work/bench.raw} session=${3:-$work/session} n=${4:-$samples}

	run "$1" - "$DP_PREFIX/sbin/oprofiled" --collector=file \
		--input="$stream" --session-dir="$session" --separate=lib --foreground
	awk -v n="$n" -v c="$cpu" -v w="$wall" 'BEGIN {
		printf "  ingest: %.2f million samples per CPU-second (%.2f M/s wall)\n", n / c / 1e6, n / w / 1e6 }'
}
ingest "oprofiled replay, new files"
ingest "oprofiled replay, files exist"
exist_cpu=$cpu
# Third: the samples $passes times over into the same session; from the
# second pass on every file is open, so the difference is what the
# samples cost a daemon that has run a while, its start (hand-over,
# opening the files) left out.  (With one extra pass the difference was
# a tenth of the replay, inside the spread of the replays themselves.)
run "generate, samples x$passes" - "$DP_BUILD/tests/bench/gen-stream" --out "$work/bench-xp.raw" \
	--samples "$samples" --processes "$procs" --images "$images" --hot "$hot" --repeat "$passes"
cat "$work/bench-xp.raw" >/dev/null
ingest "oprofiled replay, x$passes" "$work/bench-xp.raw" "$work/session" $((passes * samples))
awk -v n="$samples" -v a="$cpu" -v b="$exist_cpu" -v p="$passes" 'BEGIN { if (a > b)
	printf "  ingest with the files open ((x%d - files exist) / %d): %.2f million samples per CPU-second\n", p, p - 1, n * (p - 1) / (a - b) / 1e6
	else print "  ingest with the files open: too few samples to tell" }'
rm -f "$work/bench-xp.raw"
if [ "$cc_samples" -gt 0 ]; then
	run "generate, 16-deep chains" - "$DP_BUILD/tests/bench/gen-stream" --out "$work/cc.raw" \
		--samples "$cc_samples" --processes "$procs" --images "$images" --hot "$hot" --callchain 16
	cat "$work/cc.raw" >/dev/null
	ingest "replay, 16-deep chains, new" "$work/cc.raw" "$work/cc-session" "$cc_samples"
	ingest "replay, 16-deep chains, exist" "$work/cc.raw" "$work/cc-session" "$cc_samples"
	grep -E '^(cc_arcs|cc_stacks|cc_stacks_dropped) ' "$work/cc-session/stats" | sed 's/^/  /'
	rm -rf "$work/cc.raw" "$work/cc-session"
fi
grep -E '^(samples_received|samples_filed|sample_files|processes_seen) ' "$work/session/stats" | sed 's/^/  /'
printf '  sample files: %s, %s MiB\n' "$(find "$work/session/samples" -type f | wc -l)" \
	"$(du -sm "$work/session/samples" | cut -f1)"

run "opreport (by image)" "$work/opreport.out" "$DP_PREFIX/bin/opreport" --session-dir="$work/session"
run "opreport -l (symbols)" "$work/opreport-l.out" "$DP_PREFIX/bin/opreport" -l --session-dir="$work/session" 2>/dev/null
head -12 "$work/opreport.out" | sed 's/^/  | /'

if [ $perf = 1 ] && command -v perf >/dev/null; then
	run "perf report --sort dso" "$work/perf.out" sh -c "perf report -i - --stdio --sort dso < '$work/bench.perf' 2>/dev/null"
	# (awk reads the file itself: no pipe for pipefail to trip on)
	awk '!/^#/ && NF { print "  | " $0; if (++n == 5) exit }' "$work/perf.out"
	run "perf report --sort dso,sym" "$work/perf-l.out" sh -c "perf report -i - --stdio --sort dso,sym < '$work/bench.perf' 2>/dev/null"
fi
