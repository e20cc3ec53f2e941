# lab-kind: xen
# A diagnosis, not a test (issue 26 item 5): how far a xen collector
# sample's time, mapped to the guest's clock, lies from the moment its
# context shows.  xen-agent runs with clockpc first, alone for
# XA_CLOCKPC_S seconds (default 20), in web (tests/e2e/clockpc.c: it runs
# its function ph_k while its CLOCK_MONOTONIC millisecond mod 16 is k).
# Each vote the daemon logs (--verbose, up to 5 a second) of clockpc's
# space with the pc in ph_k and the guest time GT gives the error
# (GT's millisecond - k) mod 16, taken into -8..+7 ms: positive when the
# sample is stamped later than its context.  Prints the errors'
# histogram and summary lines (xc_votes, xc_err_median_ms,
# xc_err_off_pct: the share 2 ms or more off); the exact pairs and the
# ratio are printed by xen-agent, not checked.  Not in the test command.
# The daemon logs 5 votes a second (of every process): for a histogram of
# a few hundred votes build with
#   make CPPFLAGS=-DOPD_GUEST_DEBUG_VOTES_PER_S=100000
# (touch daemon/guest/opd_guest_asid.c first) and stage that build.
XA_CLOCKPC_S=${XA_CLOCKPC_S:-20}
XA_CHECK_EXACT=0
XA_CHECK_RATIO=0
. "$LAB/scenarios/xen-agent.sh"

[ -s "$STAGE/lab/clockpc.syms" ] || lab_fail "no clockpc.syms staged"
# clockpc's run in the guest's clock (its uptime at start and end), less
# half a second each side: other programs' text is at the same addresses
xc_from=$(sed -n 's/.*CLOCKPC-START \([0-9.]*\).*/\1/p' "$CONS" | tail -n 1)
xc_to=$(sed -n 's/.*CLOCKPC-DONE \([0-9.]*\).*/\1/p' "$CONS" | tail -n 1)
[ -n "$xc_from" ] && [ -n "$xc_to" ] || lab_fail "clockpc's start and end not on web's console"
perl -e '
	my ($syms, $log, $from, $to) = @ARGV;
	my @ph;
	open(my $s, "<", $syms) or die "$syms: $!";
	while (<$s>) {
		my ($a, $n, $t, $name) = split;
		next unless defined $name && $name =~ /^ph(\d+)$/;
		push @ph, [hex($a), hex($a) + hex($n), $1];
	}
	die "no ph functions in $syms\n" unless @ph == 16;
	open(my $l, "<", $log) or die "$log: $!";
	my (%by_pid, %seen);
	while (<$l>) {
		next unless /vote: space \S+ pid (\d+) \S+ pc (0x[0-9a-f]+) at (\d+) \(guest (\d+),/;
		my ($pid, $pc, $host, $gt) = ($1, hex($2), $3, $4);
		next if $gt < ($from + 0.5) * 1e9 || $gt > ($to - 0.5) * 1e9;
		next if $seen{"$pid $host"}++;	# one vote per look
		for my $p (@ph) {
			next unless $pc >= $p->[0] && $pc < $p->[1];
			my $e = (int($gt / 1000000) - $p->[2]) % 16;
			$e -= 16 if $e >= 8;
			push @{$by_pid{$pid}}, $e;
			last;
		}
	}
	my ($pid) = sort { @{$by_pid{$b}} <=> @{$by_pid{$a}} } keys %by_pid;
	die "no vote of clockpc in the log\n" unless defined $pid;
	my @e = sort { $a <=> $b } @{$by_pid{$pid}};
	my %h;
	$h{$_}++ for @e;
	my $off = grep { $_ >= 2 || $_ <= -2 } @e;
	printf "xc_votes %d (pid %d)\n", scalar @e, $pid;
	printf "xc_err_median_ms %d\n", $e[int(@e / 2)];
	printf "xc_err_off_pct %.1f\n", 100 * $off / @e;
	printf "xc_hist %s\n", join(" ", map { "$_:" . ($h{$_} // 0) } -8 .. 7);
' "$STAGE/lab/clockpc.syms" "$RESULTS/oprofiled.log" "$xc_from" "$xc_to" >"$RESULTS/clock-errors.txt" 2>&1 ||
	lab_fail "clock analysis failed: $(cat "$RESULTS/clock-errors.txt")"
while read -r k v; do lab_summary "$k" "$v"; done <"$RESULTS/clock-errors.txt"
xc_n=$(awk '$1 == "xc_votes" { print $2 }' "$RESULTS/clock-errors.txt")
[ "${xc_n:-0}" -ge 30 ] ||
	lab_log "only ${xc_n:-0} votes of clockpc: too few for a histogram (see this file's header)"
lab_log "PASS: xen-clock printed the sample-time errors (not a check)"
