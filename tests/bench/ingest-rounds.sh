#!/usr/bin/env bash
# Ingest of two or more installed builds, in interleaved rounds, each
# round's sessions on a newly made ext4 file system (a loop device): the
# daemon's CPU seconds (user + system, its privsep worker included; user
# alone beside the files-open figure, and the ratio of 1,000 guests to
# one with the files open is of user time, as in domains-lib.sh) for
#   new    the stream into a new session (every file and directory made)
#   exist  the same stream again into it (the daemon's start, then the samples)
#   xP     the stream's samples P times over into it: (xP - exist) / (P - 1)
#          is what the samples cost with every file open
# for item 1's stream (50 M samples, 1,000 processes and images) and for
# 10 M samples of one guest and of 1,000 guests (as run-bench.sh --domains).
# A file system of its own each round: ext4 does not reuse an inode freed
# in the last minutes, and looks through its tables for one that was not,
# so a session made just after another was deleted costs several times
# the system time (doc/performance.md, "Seventh round").  Needs root (a
# loop mount) and, in $DP_BENCH_DIR (default /var/tmp), about 10 GB of
# streams and a sparse 40 GB file system image of which a round uses
# about 2 GB.  It prints figures and asserts nothing about time.
#   DP_BUILD=build tests/bench/ingest-rounds.sh [--rounds R] [--passes P] PREFIX...
# (PREFIX: an installed domprof, as DP_PREFIX for run-bench.sh)
set -euo pipefail
: "${DP_BUILD:?set DP_BUILD to the build directory (for tests/bench/gen-stream)}"
rounds=3 passes=4
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift ;;
	--passes) passes=$2; shift ;;
	-*) echo "usage: $0 [--rounds R] [--passes P] PREFIX..." >&2; exit 1 ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 1 ] || { echo "usage: $0 [--rounds R] [--passes P] PREFIX..." >&2; exit 1; }
[[ $rounds =~ ^[1-9][0-9]*$ && $passes =~ ^[1-9][0-9]*$ && $passes -ge 2 ]] ||
	{ echo "ingest-rounds: --rounds wants a number, --passes one of at least 2" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "ingest-rounds: needs root (a loop mount)" >&2; exit 1; }
for p in "$@"; do
	[ -x "$p/sbin/oprofiled" ] || { echo "ingest-rounds: no $p/sbin/oprofiled" >&2; exit 1; }
done
work=$(mktemp -d "${DP_BENCH_DIR:-/var/tmp}/dp-rounds.XXXXXX")
mnt=$work/mnt
cleanup() {
	set +e	# (whatever fails here, the rest is still undone)
	if mountpoint -q "$mnt"; then
		umount "$mnt" || umount -l "$mnt"
	fi
	mountpoint -q "$mnt" || rm -rf "$work"
}
trap cleanup EXIT
mkdir "$mnt"

gen() {
	"$DP_BUILD/tests/bench/gen-stream" --out "$work/$1.raw" "${@:2}" >/dev/null
}
echo "ingest-rounds: making the streams in $work"
item1=(--samples 50000000 --processes 1000 --images 1000 --hot 256)
dom=(--samples 10000000 --processes 1000 --images 1000 --hot 256 --guest-procs 20 --cpus 64)
gen item1 "${item1[@]}"
gen item1-xp "${item1[@]}" --repeat "$passes"
for n in 1 1000; do
	gen "dom$n" "${dom[@]}" --domains "$n"
	gen "dom$n-xp" "${dom[@]}" --domains "$n" --repeat "$passes"
done
declare -A samples=([item1]=50000000 [dom1]=10000000 [dom1000]=10000000) open open_u

# cpu PREFIX STREAM SESSION: one replay's CPU seconds, then its user seconds
cpu() {
	/usr/bin/time -f '%U %S' -o "$work/time.out" "$1/sbin/oprofiled" --collector=file \
		--input="$work/$2.raw" --session-dir="$mnt/$3" --separate=lib --foreground \
		2>"$work/daemon.err" || { echo "ingest-rounds: $1 failed on $2:" >&2; cat "$work/daemon.err" >&2; exit 1; }
	awk '{ printf "%.2f\t%.2f", $1 + $2, $1 }' "$work/time.out"
}

# every figure: "PREFIX STREAM what cpu user" lines, tab-separated
: >"$work/figures"
for ((r = 1; r <= rounds; r++)); do
	order=("$@")	# every other round the other way round: no build always first
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = $#; i >= 1; i--)); do order+=("${!i}"); done
	fi
	for p in "${order[@]}"; do
		truncate -s 40G "$work/fs.img"
		mkfs.ext4 -q -F -N 4000000 "$work/fs.img"
		mount -o loop "$work/fs.img" "$mnt"
		chmod 755 "$mnt"	# (the privsep worker's way to its session)
		line="round $r, $p:"
		for s in item1 dom1 dom1000; do
			cat "$work/$s.raw" "$work/$s-xp.raw" >/dev/null	# paged in: the daemon's time, not the disk's
			# (one assignment each: a failed replay ends the script)
			n=$(cpu "$p" "$s" "$s")
			e=$(cpu "$p" "$s" "$s")
			x=$(cpu "$p" "$s-xp" "$s")
			printf '%s\t%s\tnew\t%s\n%s\t%s\texist\t%s\n%s\t%s\txp\t%s\n' \
				"$p" "$s" "$n" "$p" "$s" "$e" "$p" "$s" "$x" >>"$work/figures"
			line+=" $s new ${n%%$'\t'*} exist ${e%%$'\t'*} x$passes ${x%%$'\t'*};"
		done
		echo "$line"
		umount "$mnt"
		rm -f "$work/fs.img"
	done
done

# medians of each figure, and the rates
. "$(dirname "$0")/median.sh"
# fig PREFIX STREAM WHAT [user]: that figure of each round, in order
# (CPU seconds, or user seconds alone)
fig() {
	awk -F'\t' -v p="$1" -v s="$2" -v w="$3" -v c="$([ "${4:-}" = user ] && echo 5 || echo 4)" \
		'$1 == p && $2 == s && $3 == w { print $c }' "$work/figures"
}
# opened PREFIX STREAM [user]: the files-open cost of each round, its median
opened() {
	paste <(fig "$1" "$2" exist "${3:-}") <(fig "$1" "$2" xp "${3:-}") |
		awk -v k="$passes" '{ print ($2 - $1) / (k - 1) }' | median
}
echo "medians of $rounds rounds (CPU seconds; M samples per CPU-second):"
for p in "$@"; do
	for s in item1 dom1 dom1000; do
		n=$(fig "$p" "$s" new | median)
		e=$(fig "$p" "$s" exist | median)
		o=$(opened "$p" "$s") u=$(opened "$p" "$s" user)
		awk -v p="$p" -v s="$s" -v n="$n" -v e="$e" -v o="$o" -v u="$u" -v m="${samples[$s]}" 'BEGIN {
			rate = o > 0 ? sprintf("%.1f", m / o / 1e6) : "too few samples to tell"
			printf "  %s %s: new %.2f (%.1f), exist %.2f (%.1f), files open %.3f (%s; user alone %.3f)\n", p, s, n, m / n / 1e6,
				e, m / e / 1e6, o, rate, u }'
		open[$s]=$o open_u[$s]=$u
	done
	# (of user time: each of the two replays' system time holds a daemon
	# start's kernel work, for 1,000 domains seconds that vary by tenths,
	# which swamps the passes' own; tests/bench/domains-lib.sh)
	awk -v a="${open_u[dom1000]}" -v b="${open_u[dom1]}" -v ca="${open[dom1000]}" -v cb="${open[dom1]}" \
		-v p="$p" 'BEGIN { if (a > 0 && b > 0)
		printf "  %s: 1,000 domains against one, files open: %.2f times the user time (user + system: %s)\n", p, a / b,
			(ca > 0 && cb > 0) ? sprintf("%.2f", ca / cb) : "-" }'
done
