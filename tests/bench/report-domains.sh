#!/usr/bin/env bash
# Report benchmark for issue 22: "a report of a 50-domain session with debug
# info does not take more than twice its time without".  Builds a synthetic
# session of N domains (default 50) that all run the same guest binaries
# (tests/e2e/ratio and exact-a, built with -g; --libc adds the host's libc
# as the guests' libc), laid out as the daemon lays out guests with agents:
#   - images/h<SHA-256>/<basename>: one stripped copy of each binary, shared
#     by every domain (content-addressed, as daemon/imgcache/opd_imgcache.c stores
#     uploads), its .name, and its images/by-build-id/<build-id> hint;
#   - domains/gNN/images: the map "images/h<SHA-256>/<basename><TAB><guest path>";
#   - samples/current/{domain}/gNN/{root}/<guest path>/{dep}/...: sample files
#     written with lib/sfname and lib/odb (tests/bench/mk-samples.c), keyed by
#     file offsets spread over the binaries' functions (from nm), most of the
#     counts on the hot functions (ratio: burn_a 3:1 burn_b; exact-a: a_one,
#     a_two), the rest over up to 200 other functions.
# No collector can make such a session here: a replayed raw stream has no
# guest tasks or mappings (those come from the agent), so guest user samples
# would all be {anon:guest-user}.
# Then times, RUNS times each (default 3), interleaved, after one warm-up:
#   (a) opreport -l with no debug info (an empty --debug-dir: the stripped
#       copies' dynamic symbols only),
#   (b) opreport -l with the debug files (objcopy --only-keep-debug) in a
#       build-id directory, --debug-dir=DIR (DIR/.build-id/NN/REST.debug),
# for the whole session and for --domain=g01, and prints the median wall
# and CPU seconds (CPU: opreport and its parser children, from bash's
# times) and (b)/(a).
# Under strace it counts the parser children of each report (children that
# dropped root: image loads and identity probes), the loads that parsed
# (the rest took a table already read for their build-id) and the debug
# files opened.  It prints figures and asserts nothing about time; it fails
# when a report fails, when (b) does not name the hot functions in every
# domain, or when (a) names burn_a (the copies would not be stripped).
#   tests/bench/report-domains.sh [--domains N] [--runs R] [--libc] [--keys K]
# (--keys: keys a sample file gets outside the hot functions, default 200)
# Needs DP_PREFIX (installed domprof) and DP_BUILD (tests/e2e/ratio, exact-a,
# and lib/ for mk-samples); strace for the child counts; run as root (the
# parser children run as the user domprof).  DP_BENCH_DIR: the work
# directory is made in it (default /var/tmp; the user domprof must be
# able to pass through it) and kept at the end.
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
export DOMPROF_EVENTS_DIR=$DP_PREFIX/share/domprof/events
export DP_NO_PROGRESS=1
# one decimal point for $EPOCHREALTIME, awk and sort
export LC_ALL=C
# the debug files come from --debug-dir only, never from the network
unset DEBUGINFOD_URLS
src=$(cd "$(dirname "$0")/../.." && pwd)
domains=50 runs=3 libc=0 cold=200
while [ $# -gt 0 ]; do
	case $1 in
	--domains) domains=$2; shift ;;
	--runs) runs=$2; shift ;;
	--libc) libc=1 ;;
	--keys) cold=$2; shift ;;
	*) echo "usage: $0 [--domains N] [--runs R] [--libc] [--keys K]" >&2; exit 1 ;;
	esac
	shift
done
die() { echo "report-domains: $*" >&2; exit 1; }
[[ $domains =~ ^[1-9][0-9]*$ && $domains -le 999 ]] || die "--domains: 1 to 999"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs: a positive number"
[[ $cold =~ ^[0-9]+$ ]] || die "--keys: a number"
for t in nm readelf objcopy strip sha256sum cc; do
	command -v "$t" >/dev/null || die "needs $t"
done
opreport=$DP_PREFIX/bin/opreport
[ -x "$opreport" ] || die "no $opreport"

# (a directory of its own: never what was in DP_BENCH_DIR)
mkdir -p -- "${DP_BENCH_DIR:-/var/tmp}"
work=$(mktemp -d "${DP_BENCH_DIR:-/var/tmp}/dp-bench-dom.XXXXXX")
if [ -n "${DP_BENCH_DIR:-}" ]; then
	echo "report-domains: the work directory $work is kept"
else
	trap 'rm -rf "$work"' EXIT
fi
# the parser children (user domprof) open the debug files themselves
chmod 0755 "$work"
session=$work/session
debug=$work/debug
nodebug=$work/nodebug
mkdir -p "$session/images/by-build-id" "$session/domains" "$debug" "$nodebug" "$work/bin"

cc -std=gnu11 -O2 -I"$src/include" -I"$src/lib" -I"$DP_BUILD" -o "$work/mk-samples" \
	"$src/tests/bench/mk-samples.c" "$DP_BUILD/lib/odb/libodb.a" \
	"$DP_BUILD/lib/sfname/libsfname.a" "$DP_BUILD/lib/util/libdputil.a" ||
	die "cannot build mk-samples against $DP_BUILD/lib"

build_id() {
	readelf -n "$1" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p'
}

# funcs ELF SYMS: "OFFSET SIZE NAME" for each function symbol of SYMS (a
# file with ELF's addresses and a symbol table) with a size, OFFSET the
# file offset of its start in ELF (the sample keys are file offsets).
funcs() {
	{
		readelf -lW "$1" | awk '$1 == "LOAD" { print "L", $2, $3, $5 }'
		nm -S --defined-only "$2" | awk 'NF == 4 && $3 ~ /^[tTwWi]$/ { print "S", $1, $2, $4 }'
	} | awk '
	BEGIN { n = 0 }
	function hex(s,   i, v) {
		sub(/^0[xX]/, "", s)
		v = 0
		for (i = 1; i <= length(s); i++)
			v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
		return v
	}
	$1 == "L" { off[n] = hex($2); va[n] = hex($3); sz[n] = hex($4); n++; next }
	$1 == "S" {
		a = hex($2); s = hex($3)
		if (s == 0)
			next
		for (i = 0; i < n; i++)
			if (a >= va[i] && a + s <= va[i] + sz[i]) {
				printf "%d %d %s\n", a - va[i] + off[i], s, $4
				break
			}
	}'
}

# keys FUNCS SEED HOT: "0xKEY COUNT" lines for one sample file: COLD picks
# among the functions not named in HOT ("name:weight,..."), 1 to 40 samples
# a key, mostly few; the HOT functions get 80% of the samples, 16 keys each
# (none when HOT is empty).
keys() {
	awk -v seed="$2" -v hot="$3" -v cold="$cold" '
	BEGIN {
		srand(seed)
		n = 0
		nh = split(hot, hs, ",")
		for (i = 1; i <= nh; i++) {
			split(hs[i], kv, ":")
			weight[kv[1]] = kv[2]
			wsum += kv[2]
		}
	}
	{
		if ($3 in weight) {
			hoff[$3] = $1; hsize[$3] = $2
		} else {
			off[n] = $1; size[n] = $2; n++
		}
	}
	function put(k, c) { cnt[k] += c }
	END {
		for (i = 0; n && i < cold; i++) {
			f = int(rand() * n)
			c = 1 + int(40 * rand() ^ 4)
			put(off[f] + int(rand() * size[f]), c)
			sum += c
		}
		hotsum = nh ? (sum ? sum : 100) * 4 : 0
		for (h in weight) {
			if (!(h in hoff)) {
				print "report-domains: no function " h > "/dev/stderr"
				exit 1
			}
			for (k = 0; k < 16; k++)
				put(hoff[h] + int(rand() * hsize[h]), int(hotsum * weight[h] / wsum / 16) + 1)
		}
		for (k in cnt)
			printf "0x%x %d\n", k, cnt[k]
	}' "$1"
}

# --- the binaries: stripped copies in the cache, debug files by build-id -----
# name  guest path  unstripped (or the stripped file)  debug file  hot functions
specs=("ratio /usr/bin/ratio $DP_BUILD/tests/e2e/ratio - burn_a:3,burn_b:1"
       "exact-a /usr/bin/exact-a $DP_BUILD/tests/e2e/exact-a - a_one:1,a_two:1")
if [ $libc = 1 ]; then
	libc_so=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
	b=$(build_id "$libc_so")
	libc_dbg=/usr/lib/debug/.build-id/${b:0:2}/${b:2}.debug
	[ -f "$libc_dbg" ] || die "--libc needs the host libc's debug file $libc_dbg (libc6-dbg)"
	specs+=("libc.so.6 /lib/x86_64-linux-gnu/libc.so.6 $libc_so $libc_dbg -")
fi
declare -A guest_path rel hot
names=()
for s in "${specs[@]}"; do
	read -r name gpath file dbg hotfns <<<"$s"
	[ -f "$file" ] || die "no $file (make -C $DP_BUILD/tests)"
	b=$(build_id "$file")
	[ -n "$b" ] || die "$file has no build-id"
	mkdir -p "$debug/.build-id/${b:0:2}"
	if [ "$dbg" = - ]; then
		# a -g build: strip it for the cache, keep its debug info apart
		strip -s -o "$work/bin/$name" "$file"
		objcopy --only-keep-debug "$file" "$debug/.build-id/${b:0:2}/${b:2}.debug"
		syms=$file
	else
		cp "$file" "$work/bin/$name"
		cp "$dbg" "$debug/.build-id/${b:0:2}/${b:2}.debug"
		syms=$dbg
	fi
	[ "$(build_id "$work/bin/$name")" = "$b" ] || die "the stripped $name lost its build-id"
	sum=$(sha256sum "$work/bin/$name" | cut -d' ' -f1)
	mkdir -p "$session/images/h$sum"
	cp "$work/bin/$name" "$session/images/h$sum/$name"
	echo "$name" >"$session/images/h$sum/.name"
	echo "h$sum" >"$session/images/by-build-id/$b"
	funcs "$work/bin/$name" "$syms" >"$work/$name.funcs"
	[ -s "$work/$name.funcs" ] || die "no function symbols in $syms"
	guest_path[$name]=$gpath
	rel[$name]=images/h$sum/$name
	hot[$name]=${hotfns/#-/}
	names+=("$name")
	printf '  %-10s %-40s build-id %s, %s functions, cache %s\n' "$name" "$gpath" "$b" \
		"$(wc -l <"$work/$name.funcs")" "images/h${sum:0:12}.../$name"
done

# --- the domains: image maps and sample files --------------------------------
now=$(date +%s)
for ((d = 1; d <= domains; d++)); do
	g=$(printf 'g%02d' "$d")
	mkdir -p "$session/domains/$g"
	printf 'name %s\nuuid %s\nuuid_source derived\nhypervisor qemu\npid %d\nvcpus 2\nagent_path -\nfirst_seen %d\nlast_seen %d\nstate stopped\nselected yes\nagent_version -\nguest_release -\n' \
		"$g" "$(printf '00000000-0000-4000-8000-%012d' "$d")" $((10000 + d)) "$now" "$now" \
		>"$session/domains/$g/info"
	for n in "${names[@]}"; do
		printf '%s\t%s\n' "${rel[$n]}" "${guest_path[$n]}"
	done >"$session/domains/$g/images"
	for n in ratio exact-a; do
		echo "file $g ${guest_path[$n]} ${guest_path[$n]} CPU_CLK_UNHALTED 100000"
		keys "$work/$n.funcs" $((d * 7919 + ${#n})) "${hot[$n]}"
	done
	if [ $libc = 1 ]; then
		echo "file $g ${guest_path[ratio]} ${guest_path[libc.so.6]} CPU_CLK_UNHALTED 100000"
		keys "$work/libc.so.6.funcs" $((d * 7919 + 3)) ""
	fi
done >"$work/samples.txt"
made=$("$work/mk-samples" "$session" <"$work/samples.txt") || die "mk-samples failed: $made"
printf 'session: %d domains x %d binaries (one stripped copy each in the cache), %s\n' \
	"$domains" "${#names[@]}" "${made#mk-samples: }"

# --- the reports ---------------------------------------------------------------
# cpu_of FILE: user + system seconds in bash's times output FILE of the
# shell's waited-for children so far, their own children included
# (milliseconds)
cpu_of() {
	awk 'NR == 2 {
		for (i = 1; i <= 2; i++) {
			split($i, t, /[ms]/)
			s += t[1] * 60 + t[2]
		}
		printf "%.3f\n", s
	}' "$1"
}

# report OUT ARGS...: opreport ARGS into OUT (its stderr in OUT.err), its
# wall and CPU seconds (its parser children included) into $wall $cpu; a
# failed report ends the benchmark.  (times runs in this shell, before and
# after, with nothing else run between: a $(...) would count its own.)
report() {
	local out=$1 rc=0 t0 t1
	shift
	times >"$work/times.0"
	t0=$EPOCHREALTIME
	"$opreport" "$@" --session-dir="$session" >"$out" 2>"$out.err" || rc=$?
	t1=$EPOCHREALTIME
	times >"$work/times.1"
	if [ $rc != 0 ]; then
		awk 'NR <= 20 { print "  | " $0 }' "$out.err" >&2
		die "opreport $* failed (exit $rc)"
	fi
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	cpu=$(awk -v a="$(cpu_of "$work/times.0")" -v b="$(cpu_of "$work/times.1")" \
		'BEGIN { printf "%.3f", b - a }')
}

. "$src/tests/bench/median.sh"

# names OUT FN: rows of OUT whose symbol is FN
rows_of() { awk -v f="$2" '$NF == f { n++ } END { print n + 0 }' "$1"; }

declare -A walls cpus
configs=(full-a full-b dom-a dom-b)
# args_of CONFIG: its report's arguments, into the array args
args_of() {
	case $1 in
	full-a) args=(-l "--debug-dir=$nodebug") ;;
	full-b) args=(-l "--debug-dir=$debug") ;;
	dom-a) args=(--domain=g01 -l "--debug-dir=$nodebug") ;;
	dom-b) args=(--domain=g01 -l "--debug-dir=$debug") ;;
	esac
}

# the warm-up (page cache, the children's user looked up) and the checks
for c in "${configs[@]}"; do
	args_of "$c"
	report "$work/$c.out" "${args[@]}"
done
for f in burn_a burn_b a_one a_two; do
	n=$(rows_of "$work/full-b.out" "$f")
	[ "$n" = "$domains" ] || {
		awk 'NR <= 5 { print "  | " $0 }' "$work/full-b.out.err" >&2
		die "with debug info, $f is named in $n domains' rows, not $domains"
	}
	n=$(rows_of "$work/dom-b.out" "$f")
	[ "$n" = 1 ] || die "with debug info, --domain=g01: $f named in $n rows, not 1"
done
[ "$(rows_of "$work/full-a.out" burn_a)" = 0 ] ||
	die "without debug info burn_a is named: the cached copies are not stripped"
echo "checks: with debug info burn_a, burn_b, a_one, a_two named in each of the $domains domains; without, not"
printf '  warnings without debug info: %s ("no debug info for ..."), with: %s\n' \
	"$(grep -c 'no debug info' "$work/full-a.out.err" || true)" \
	"$(grep -c 'no debug info' "$work/full-b.out.err" || true)"

for ((r = 1; r <= runs; r++)); do
	for c in "${configs[@]}"; do
		args_of "$c"
		report "$work/$c.out" "${args[@]}"
		walls[$c]+="$wall "
		cpus[$c]+="$cpu "
	done
done

printf '\n%-44s %12s %12s\n' "median of $runs runs" "wall s" "cpu s"
declare -A mw mc
for c in "${configs[@]}"; do
	mw[$c]=$(median <<<"${walls[$c]}")
	mc[$c]=$(median <<<"${cpus[$c]}")
	case $c in
	full-a) label="opreport -l, no debug info" ;;
	full-b) label="opreport -l, debug info (--debug-dir)" ;;
	dom-a) label="opreport --domain=g01 -l, no debug info" ;;
	dom-b) label="opreport --domain=g01 -l, debug info" ;;
	esac
	printf '%-44s %12.3f %12.3f   (runs: wall %s; cpu %s)\n' "$label" "${mw[$c]}" "${mc[$c]}" \
		"${walls[$c]% }" "${cpus[$c]% }"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "n/a" }'; }
printf '%-44s %12s %12s\n' "(b)/(a), whole session" "$(ratio "${mw[full-a]}" "${mw[full-b]}")" \
	"$(ratio "${mc[full-a]}" "${mc[full-b]}")"
printf '%-44s %12s %12s\n' "(b)/(a), --domain=g01" "$(ratio "${mw[dom-a]}" "${mw[dom-b]}")" \
	"$(ratio "${mc[dom-a]}" "${mc[dom-b]}")"

# --- parser children -------------------------------------------------------------
# Children that dropped root (setresuid to the parser's user) are image loads
# (they look for debug info first: an open under some .build-id/) or identity
# probes (confined at once: they open nothing).  A load that installs its
# seccomp filter parses; one that does not took the table of its build-id
# read before (report/rep_image.c, ask_shared).
if ! command -v strace >/dev/null; then
	echo "parser children: strace not installed, not counted"
	exit 0
fi
echo
echo "parser children (strace -f; one report each):"
for c in "${configs[@]}"; do
	args_of "$c"
	strace -f -qq -o "$work/$c.strace" -e trace=setresuid,seccomp,openat \
		"$opreport" "${args[@]}" --session-dir="$session" >/dev/null 2>&1 ||
		die "opreport ${args[*]} failed under strace"
	awk -v dbg="$debug/.build-id/" '
	{ pid = $1 }
	/setresuid\([1-9]/ { dropped[pid] = 1 }
	/seccomp\(SECCOMP_SET_MODE_FILTER/ { confined[pid] = 1 }
	/openat\(/ && /\/\.build-id\// { load[pid] = 1 }
	# a debug file opened: its open returned a descriptor (the call may be
	# cut in two by another process'"'"'s line)
	/openat\(/ && index($0, dbg) {
		if (/<unfinished \.\.\.>$/)
			pend[pid] = 1
		else if (/ = [0-9]+$/)
			opened++
	}
	/<\.\.\. openat resumed>/ && pend[pid] { delete pend[pid]; if ($0 ~ / = [0-9]+$/) opened++ }
	END {
		for (p in dropped) {
			nd++
			if (p in load) {
				nl++
				if (p in confined)
					np++
			}
		}
		printf "%d %d %d %d\n", nd, nl, np, opened
	}' "$work/$c.strace" >"$work/$c.counts"
	read -r nd nl np nopen <"$work/$c.counts"
	printf '  %-6s %4d children: %4d image loads (%4d parsed, %4d shared a table), %4d identity probes; %4d debug files opened\n' \
		"$c" "$nd" "$nl" "$np" $((nl - np)) $((nd - nl)) "$nopen"
done
echo "  (full: ${#names[@]} binaries in each of $domains domains; dom: --domain=g01 alone)"
