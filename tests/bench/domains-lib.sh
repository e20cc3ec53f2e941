# The domain scale benchmark of tests/bench/run-bench.sh --domains N (sourced
# by it: $work, $samples, $procs, $images, $hot, $domains, $guest_procs,
# $runs, $passes, $DP_PREFIX and $DP_BUILD are set).
#
# Two streams of $samples samples over 64 CPUs (gen-stream --domains): one
# with N guests and one with a single guest, the rest alike (the host's
# processes, 85% of the runs a guest's), and each again with its samples
# $passes times over (--repeat).  Each is replayed $runs times,
# interleaved, into a new session, then again into it (steady: a
# daemon's start with the files there, and the samples), then the
# repeated stream (every pass after its first with every file open:
# (repeated - steady) / ($passes - 1) is the samples' cost in a daemon
# that has run a while; one extra pass left that difference at a tenth
# of the replay, inside the run-to-run spread).  The sessions of every run
# stay until the end (about 5 GB in all, streams included, for 1,000
# domains and 10 M samples: 571 MiB a 1,000-domain session).
# Printed: each replay's CPU seconds and ingest rate and their medians,
# N's steady rate and its rate with the files open against one guest's;
# the daemon's peak memory
# (anonymous and file-backed, polled from /proc: the replay maps its
# input, which counts as file-backed) and its extra anonymous memory per
# domain; the peak of its open descriptors against its cap of open sample
# files, and the files evicted; opreport's summary and --domain=X -l.
# Fails when a sample is lost: after each session's replays the daemon's
# stats must say every sample of the last filed, none lost or in error,
# and the sample files must hold exactly $passes + 2 times the stream
# (tests/bench/sum-samples).

# watch_daemon TIMEPID OUT: polls the processes under TIMEPID (the daemon
# and its privsep worker) until it exits; OUT gets "peak-anon-KiB
# peak-file-KiB peak-fds" summed over them.
watch_daemon() {
	local top=$1 out=$2 anon=0 file=0 fds=0 pids p a f n pa pf
	set +e	# a process may go between two looks
	while kill -0 "$top" 2>/dev/null; do
		pids=$(pgrep -P "$top" || true)
		for p in $pids; do pids+=" $(pgrep -P "$p" || true)"; done
		a=0 f=0 n=0
		for p in $pids; do
			read -r pa pf < <(awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 }
				END { print a + 0, f + 0 }' "/proc/$p/status" 2>/dev/null || echo "0 0")
			a=$((a + pa)) f=$((f + pf))
			n=$((n + $(find "/proc/$p/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)))
		done
		[ $a -gt $anon ] && anon=$a
		[ $f -gt $file ] && file=$f
		[ $n -gt $fds ] && fds=$n
		sleep 0.2
	done
	echo "$anon $file $fds" >"$out"
}

# replay_watched STREAM SESSION: one replay; sets $cpu (user + system of the
# daemon and its worker), $ucpu (user alone), $peak_anon $peak_file (KiB),
# $peak_fds
replay_watched() {
	local user sys wall rss
	/usr/bin/time -f '%e %U %S %M' -o "$work/time.out" "$DP_PREFIX/sbin/oprofiled" \
		--collector=file --input="$1" --session-dir="$2" --separate=lib --foreground &
	local tpid=$!
	watch_daemon "$tpid" "$work/mem.out" &
	local wpid=$!
	wait "$tpid" || { echo "run-bench: oprofiled failed replaying $1" >&2; exit 1; }
	wait "$wpid" || true
	read -r wall user sys rss <"$work/time.out"
	read -r peak_anon peak_file peak_fds <"$work/mem.out"
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
	ucpu=$user
}

stat_of() { awk -v k="$2" '$1 == k { print $2 }' "$1/stats"; }

# check_no_loss SESSION LAST ALL: the daemon filed every sample of the
# last replay (LAST samples) and the files hold all replays' (ALL)
check_no_loss() {
	local s=$1 last=$2 all=$3 got
	for k in samples_received samples_filed; do
		[ "$(stat_of "$s" "$k")" = "$last" ] ||
			{ echo "run-bench: LOST: $k $(stat_of "$s" "$k"), not $last" >&2; exit 1; }
	done
	for k in samples_lost sample_file_errors; do
		[ "$(stat_of "$s" "$k")" = 0 ] ||
			{ echo "run-bench: LOST: $k $(stat_of "$s" "$k")" >&2; exit 1; }
	done
	got=$("$DP_BUILD/tests/bench/sum-samples" "$s") || { echo "run-bench: sum-samples failed" >&2; exit 1; }
	[ "${got##* }" = "$all" ] ||
		{ echo "run-bench: LOST: the sample files hold ${got##* } samples, not $all" >&2; exit 1; }
	printf '  no loss: %s samples replayed, %s in %s sample files\n' "$all" "${got##* }" \
		"$(echo "$got" | cut -d' ' -f2)"
}

. "$(dirname "${BASH_SOURCE[0]}")/median.sh"
# per_pass XP X1: a replay P times over less the same once, a pass
per_pass() { awk -v a="$1" -v b="$2" -v p="$passes" 'BEGIN { print (a - b) / (p - 1) }'; }
# (a difference of two replays can come out at 0 or below with few samples)
rate() { awk -v n="${2:-$samples}" -v c="$1" 'BEGIN { if (c > 0) printf "%.2f", n / c / 1e6; else printf "-" }'; }

# The replays of one run for N domains into a new session S: new (the
# files made), steady (the files there: a daemon's start, then the
# samples), passes (the stream's samples $passes times over: from the
# second pass on, every file open).  (passes - steady) / ($passes - 1)
# is what the samples cost a daemon
# that has run a while, without its start (the hand-over of the session,
# opening its files).  That difference is taken of user time too, and
# the ratio of N domains to one is of user time: the samples' work is the
# daemon's own (with the files open and mapped the kernel does nothing a
# sample), while the two replays' system times each hold a start's
# kernel work (for 1,000 domains about 2 s, varying by 0.3 s between
# replays), whose difference swamped the passes' (doc/performance.md,
# "Ninth round").
replay_kinds() {
	local n=$1 s=$2 kind stream nsamp st_u
	for kind in new steady passes; do
		stream=$work/dom$n.raw nsamp=$samples
		[ $kind = passes ] && stream=$work/dom$n-xp.raw nsamp=$((passes * samples))
		cat "$stream" >/dev/null
		replay_watched "$stream" "$s"
		case $kind in
		new) new[$n]+="$cpu " ;;
		steady) steady[$n]+="$cpu " st=$cpu st_u=$ucpu ;;
		passes)
			open[$n]+="$(per_pass "$cpu" "$st") " open_u[$n]+="$(per_pass "$ucpu" "$st_u") " ;;
		esac
		[ $kind = passes ] ||	# (it maps the input $passes times over)
			anon[$n]+="$peak_anon " file[$n]+="$peak_file " fds[$n]+="$peak_fds "
		printf '%-6s domains %5d, run %d, %-6s cpu %7.2f s  %6s M/CPU-s  peak anon %7.1f MiB, file %7.1f MiB, fds %6d\n' \
			"" "$n" "$r" "$kind" "$cpu" "$(rate "$cpu" "$nsamp")" \
			"$(awk -v k="$peak_anon" 'BEGIN { print k / 1024 }')" \
			"$(awk -v k="$peak_file" 'BEGIN { print k / 1024 }')" "$peak_fds"
	done
	check_no_loss "$s" $((passes * samples)) $(((passes + 2) * samples))
}

bench_domains() {
	local n d r s cap st
	declare -A new steady open open_u anon file fds
	for n in 1 "$domains"; do
		for x in 1 "$passes"; do
			run "generate, $n domains x$x" - "$DP_BUILD/tests/bench/gen-stream" \
				--out "$work/dom$n$([ "$x" != 1 ] && echo -xp).raw" --repeat "$x" \
				--samples "$samples" --processes "$procs" --images "$images" --hot "$hot" \
				--domains "$n" --guest-procs "$guest_procs" --cpus 64
		done
	done
	for ((r = 1; r <= runs; r++)); do
		for n in 1 "$domains"; do
			s=$work/dsession$n
			# set aside, deleted with $work at the end: ext4 makes
			# new inodes slowly for a while after many were deleted
			# (its allocator skips recently deleted ones, reading
			# their tables), and a new session's 30,000 files
			# after the last one's deletion took up to five times
			# the CPU, growing from run to run
			if [ -e "$s" ]; then
				mv "$s" "$s.run$((r - 1))"
			fi
			replay_kinds "$n" "$s"
		done
	done
	cap=$(sed -n 's/.*up to \([0-9]*\) open sample files.*/\1/p' "$work/dsession$domains/oprofiled.log" | tail -1)
	echo
	echo "median of $runs runs (CPU seconds of the daemon; wall time means little on a shared machine)"
	for n in 1 "$domains"; do
		printf '  %5d domains: new files %7.2f cpu s (%s M/CPU-s), steady %7.2f cpu s (%s M/CPU-s)\n' "$n" \
			"$(median <<<"${new[$n]}")" "$(rate "$(median <<<"${new[$n]}")")" \
			"$(median <<<"${steady[$n]}")" "$(rate "$(median <<<"${steady[$n]}")")"
	done
	for n in 1 "$domains"; do
		printf '  %5d domains: files open ((x%d - steady) / %d) %7.2f cpu s (%s M/CPU-s), user alone %7.2f s (%s M/user-s)\n' "$n" \
			"$passes" $((passes - 1)) \
			"$(median <<<"${open[$n]}")" "$(rate "$(median <<<"${open[$n]}")")" \
			"$(median <<<"${open_u[$n]}")" "$(rate "$(median <<<"${open_u[$n]}")")"
	done
	awk -v a="$(median <<<"${steady[1]}")" -v b="$(median <<<"${steady[$domains]}")" -v n="$domains" \
		'BEGIN { printf "  steady ingest, %d domains against one: %.2f (CPU time x%.2f)\n", n, a / b, b / a }'
	awk -v a="$(median <<<"${open_u[1]}")" -v b="$(median <<<"${open_u[$domains]}")" -v n="$domains" \
		-v ca="$(median <<<"${open[1]}")" -v cb="$(median <<<"${open[$domains]}")" \
		'BEGIN { if (a > 0 && b > 0) printf "  ingest with the files open, %d domains against one: %.2f (user time x%.2f; user + system x%s)\n", n, a / b, b / a, (ca > 0 && cb > 0) ? sprintf("%.2f", cb / ca) : "-"
		else printf "  ingest with the files open, %d domains against one: too few samples to tell\n", n }'
	awk -v a="$(median <<<"${anon[1]}")" -v b="$(median <<<"${anon[$domains]}")" -v n="$domains" \
		-v fa="$(median <<<"${file[1]}")" -v fb="$(median <<<"${file[$domains]}")" 'BEGIN {
		printf "  peak memory: anonymous %.1f MiB (one domain %.1f), file-backed %.1f MiB (one domain %.1f)\n", b / 1024, a / 1024, fb / 1024, fa / 1024
		printf "  anonymous memory per domain: %.1f KiB ((%d domains - one) / %d)\n", (b - a) / (n - 1), n, n - 1 }'
	s=$work/dsession$domains
	printf '  sample files: %s (%s MiB on disk), open at most %s (descriptors, daemon and worker: peak %s), evicted %s in the last replay\n' \
		"$(stat_of "$s" sample_files)" "$(du -sm "$s/samples" | cut -f1)" "${cap:-?}" \
		"$(median <<<"${fds[$domains]}")" "$(stat_of "$s" sample_files_evicted)"
	d=$(ls "$s/samples/current/{domain}" | sed -n "$(((domains + 1) / 2))p")
	for ((r = 1; r <= runs; r++)); do
		run "opreport ($domains domains)" "$work/opreport.out" "$DP_PREFIX/bin/opreport" --session-dir="$s"
		run "opreport --domain=$d -l" "$work/opreport-d.out" "$DP_PREFIX/bin/opreport" --domain="$d" -l --session-dir="$s"
	done
	head -8 "$work/opreport.out" | sed 's/^/  | /'
	sed -n '6,10p' "$work/opreport-d.out" | sed 's/^/  | /'
}
