# domprof through libvirt (doc/libvirt.md, issue 10): a real libvirtd in L1,
# the daemon on its libvirt backend.
#
# Two domains defined with libvirt XML, both busy: web with the agent
# channel from the start, db without (it gets it from `opcontrol
# --add-channel` while it runs).  Must hold:
#  A. web's metadata set by virsh (profiling on): web's guest samples are
#     in its tree within 2 s; db, without the element, has no tree.
#  B. web's metadata off (opcontrol --unprofile-domain): its counts stop.
#  C. db gets the channel hot-plugged (live XML and the daemon's info show
#     its socket) and is profiled through opcontrol: samples within 2 s.
#  D. web profiled again, then virsh destroy + virsh start: the daemon
#     lives, web's samples go on growing in the same tree (no aside copy).
#  E. libvirtd killed and started again while profiling: the daemon says
#     it reconnected, web's samples go on, and a metadata change made
#     after the restart (db off, by virsh) is still followed.
#  F. The same two running domains profiled at once by two fresh daemons,
#     one on the libvirt backend (selected by metadata) and one on the
#     procfs backend (--domains=web,db): their reports name the same
#     domains with the same UUIDs, and each domain's share of the samples
#     differs by at most 5 points (issue 10's agreement check).
# Every toggle is checked in the daemon's per-domain info file and in
# `opcontrol --status` (its "NAME profiled yes|no" line).
lab_require_kvm
lab_check_domprof_libs
t0=$(lab_now)
S=/var/lib/domprof-lab/libvirt
V="virsh -q -c qemu:///system"
NS=https://domprof.org/xmlns/libvirt/1
UUID_WEB=6b1b1d6e-0000-4000-8000-000000000021
UUID_DB=6b1b1d6e-0000-4000-8000-000000000022
# The issue's bar: a domain's guest samples are readable in its tree within
# 2 s of the toggle.  The daemon holds a guest's samples only 250 ms while
# no agent speaks (OPD_GUEST_HOLD_NOAGENT_NS; these guests run none) and
# writes a new sample file's first samples at its first turn 0.1 s after
# its batch was last empty (opd_batch; turns at least every 200 ms),
# so the time is mostly the event's way through libvirtd and the perf
# ring's wake-up; it is in the summary (a_web_first_samples_s,
# c_db_first_samples_s), measured from the moment the command returned.
LIMIT_S=${LIBVIRT_TOGGLE_LIMIT_S:-2}

stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$S/stats"; }
info_of() { awk -v k="$2" '$1 == k { print $2 }' "$S/domains/$1/info" 2>/dev/null; }
dlog() { cat "$S/oprofiled.log" 2>/dev/null; }
# opcontrol's libvirt commands; their output is kept in opcontrol-libvirt.txt.
octl() {
	timeout 60 opcontrol "$@" >"$RESULTS/octl.out" 2>&1
	local rc=$?
	cat "$RESULTS/octl.out" >>"$RESULTS/opcontrol-libvirt.txt"
	lab_log "opcontrol $*: $(tr '\n' ' ' <"$RESULTS/octl.out")"
	[ $rc -eq 0 ] || lab_fail "opcontrol $* failed"
}

# Regular sample files of @1's guest work (not its {vmm} part).
guest_files() {
	[ -d "$S/samples/current/{domain}/$1" ] || return 0
	find "$S/samples/current/{domain}/$1" -path '*{vmm}*' -prune -o -type f -print
}

# Seconds (2 decimals) from @3 (an uptime, lab_now) until domain @1 has
# guest samples readable in its tree, "" if not within @2 s: the sum of its
# guest sample files' committed node counts (odb_format.h: u64 at offset
# 104), what opreport would read, with no dump to flush the daemon.  One
# perl process polls every 20 ms: a shell loop of find and od took most
# of a second per look in a loaded L1.
wait_guest_samples() {
	perl -e '
		my ($dir, $limit, $start) = @ARGV;
		sub now { open(my $u, "<", "/proc/uptime") or die; (split(" ", <$u>))[0] }
		sub nodes {
			my ($d) = @_;
			my $n = 0;
			opendir(my $h, $d) or return 0;
			for my $e (readdir $h) {
				next if $e eq "." || $e eq ".." || $e eq "{vmm}";
				my $p = "$d/$e";
				if (-d $p) {
					$n += nodes($p);
				} elsif (-f _ && open(my $f, "<", $p)) {
					my $b;
					$n += unpack("Q<", $b) if sysseek($f, 104, 0) && sysread($f, $b, 8) == 8;
				}
			}
			return $n;
		}
		while (1) {
			if (nodes($dir) > 0) { printf "%.2f\n", now() - $start; exit 0 }
			exit 0 if now() - $start > $limit;
			select(undef, undef, undef, 0.02);
		}' "$S/samples/current/{domain}/$1" "$2" "$3"
}
# What the daemon, libvirt and the processes said when domain @1's stop was
# not seen: kept in the results and the scenario's log.
stopped_diag() {
	{
		echo "== domains/$1/info"; cat "$S/domains/$1/info"
		echo "== virsh domstate $1"; timeout -k 2 10 $V domstate "$1" --reason
		echo "== processes"; timeout -k 2 10 ps -eo pid,stat,etime,comm | grep -E "qemu|oprofiled|libvirtd"
		echo "== oprofiled.log (tail)"; tail -n 40 "$S/oprofiled.log"
	} >"$RESULTS/stopped-diag.txt" 2>&1
	while read -r l || [ -n "$l" ]; do lab_log "diag: $l"; done <"$RESULTS/stopped-diag.txt"
}

# @1 (seconds) within the limit
within_limit() { awk -v t="$1" -v l="$LIMIT_S" 'BEGIN { exit !(t != "" && t <= l) }'; }

# Total samples of domain @1 (guest + {vmm}), from opreport's summary after a dump.
dom_total() {
	timeout 30 opcontrol --dump --session-dir="$S" >/dev/null || lab_fail "opcontrol --dump failed"
	timeout 120 opreport --session-dir="$S" 2>"$RESULTS/opreport.err" |
		awk -v d="$1" '/^DOMAIN SUMMARY/ { on = 1; next }
			on && NF == 0 { exit }
			on && $1 == d { v = $2 } END { print v + 0 }'
}

# The daemon's info file and opcontrol --status say @1 is (not) profiled (@2 yes|no).
check_profiled() {
	local name=$1 want=$2 i=0 line
	while [ "$(info_of "$name" selected)" != "$want" ]; do
		[ $i -lt 20 ] || lab_fail "domains/$name/info says selected '$(info_of "$name" selected)', not $want"
		sleep 0.1
		i=$((i + 1))
	done
	timeout 30 opcontrol --status --session-dir="$S" >"$RESULTS/status.out" 2>&1 ||
		lab_fail "opcontrol --status failed: $(tail -n 5 "$RESULTS/status.out")"
	cat "$RESULTS/status.out" >>"$RESULTS/status.txt"
	line=$(awk -v d="$name" '$1 == d && $2 == "profiled"' "$RESULTS/status.out")
	case "$line" in
	*"profiled $want,"*) ;;
	*) lab_fail "opcontrol --status does not say $name profiled $want: '$line'" ;;
	esac
	lab_log "$name: selected $want; opcontrol --status: $line"
}

# Domain XML like lab_guest_xml's, without the agent channel but with the
# virtio-serial controller a hot-plugged port needs.
xml_without_channel() {
	lab_guest_xml "$@" | sed -e "/<channel type='unix'>/,/<\/channel>/d" \
		-e "s|<memballoon|<controller type='virtio-serial' index='0'/>\n    <memballoon|"
}

# Start a defined domain (vstart_only) and wait for its guest to boot
# (vwait; wait_guest_booted reads $LAB_RUN/NAME.pid: libvirt's own pid file).
vstart_only() {
	local name=$1
	rm -f "$RESULTS/$name.console" "$LAB_RUN/$name.booted"
	lab_now >"$LAB_RUN/$name.start"
	# QEMU's start took over 60 s in an L1 slowed by a loaded build host
	timeout 240 $V start "$name" || lab_fail "virsh start $name failed"
	cp "/run/libvirt/qemu/$name.pid" "$LAB_RUN/$name.pid" || lab_fail "no libvirt pid file for $name"
}
vwait() {
	local name=$1
	# libvirt guests booted in 44 s on a quiet machine, but took over 120 s
	# (the default limit) with four lab hosts sharing two cores
	wait_guest_booted "$name" "${LIBVIRT_BOOT_LIMIT_S:-300}"
	lab_summary "${name}_boot_s" "$(lab_since "$(cat "$LAB_RUN/$name.start")")"
}
vstart() {
	vstart_only "$1"
	vwait "$1"
}

lab_start_libvirtd
mkdir -p "$LAB_RUN"
lab_guest_xml web "$UUID_WEB" busy >/tmp/web.xml
xml_without_channel db "$UUID_DB" busy >/tmp/db.xml
timeout 30 $V define /tmp/web.xml || lab_fail "virsh define web failed"
timeout 30 $V define /tmp/db.xml || lab_fail "virsh define db failed"
grep -q "$LAB_AGENT_PORT" /tmp/db.xml && lab_fail "db.xml has the channel"
vstart web
vstart db

timeout 60 opcontrol --start --session-dir="$S" || lab_fail "opcontrol --start failed"
dpid=$(cat "$S/oprofiled.pid")
sleep 3
dlog | grep -qi 'libvirt' || lab_fail "the daemon does not use libvirt: $(dlog | tail -n 5)"
for d in web db; do
	[ "$(info_of $d uuid)" = "$(timeout 10 $V domuuid $d)" ] ||
		lab_fail "$d: info uuid $(info_of $d uuid) is not libvirt's"
done
[ -z "$(guest_files web)" ] || lab_fail "web profiled before its metadata said so"
check_profiled web no

# ---- A: on by virsh metadata ----
t=$(lab_now)
timeout 30 $V metadata web --uri "$NS" --key domprof --set '<profile enabled="yes"/>' --live ||
	lab_fail "virsh metadata --set failed"
t1=$(lab_now)
lab_summary a_virsh_metadata_s "$(lab_since "$t")"
dt=$(wait_guest_samples web "$LIMIT_S" "$t1")
lab_summary a_web_first_samples_s "$dt"
within_limit "$dt" || lab_fail "web's guest samples not in its tree ${LIMIT_S}s after its metadata turned profiling on (${dt:-none})"
check_profiled web yes
sleep 3
[ -z "$(guest_files db)" ] || lab_fail "db (no metadata element) is profiled per domain"
timeout 30 opcontrol --dump --session-dir="$S" >/dev/null || lab_fail "opcontrol --dump failed"
[ "$(stat_of samples_domain_unselected)" -gt 0 ] || lab_fail "no samples counted as unselected (db)"
lab_log "A PASS: web's samples after ${dt}s; db not profiled"

# ---- B: off by opcontrol ----
octl --unprofile-domain=web
check_profiled web no
sleep 2
c1=$(dom_total web)
sleep 6
c2=$(dom_total web)
lab_summary b_web_off_counts "$c1 $c2"
[ "$c1" -gt 0 ] || lab_fail "web has no samples in the report"
[ "$c2" -eq "$c1" ] || lab_fail "web's counts grew while off: $c1 -> $c2"
[ "$(timeout 10 $V metadata web --uri "$NS" --config)" != "" ] ||
	lab_fail "opcontrol did not write the persistent definition"
lab_log "B PASS: web stays at $c1 samples while off"

# ---- C: channel hot-plugged into db, db profiled by opcontrol ----
octl --add-channel=db
grep -q "hot-plugged" "$RESULTS/octl.out" || lab_fail "the channel was not hot-plugged into db"
timeout 10 $V dumpxml db >"$RESULTS/db-live.xml"
sock=$(grep -A2 "<channel type='unix'>" "$RESULTS/db-live.xml" | sed -n "s/.*path='\([^']*\)'.*/\1/p" | head -n 1)
[ -n "$sock" ] && [ -S "$sock" ] || lab_fail "db's live XML has no agent socket ($sock)"
timeout 10 $V dumpxml db --inactive | grep -q "$LAB_AGENT_PORT" || lab_fail "db's definition has no channel"
octl --profile-domain=db
dt=$(wait_guest_samples db "$LIMIT_S" "$(lab_now)")
lab_summary c_db_first_samples_s "$dt"
within_limit "$dt" || lab_fail "db's guest samples not in its tree ${LIMIT_S}s after opcontrol --profile-domain (${dt:-none})"
check_profiled db yes
[ "$(info_of db agent_path)" = "$sock" ] || lab_fail "db's info has agent_path '$(info_of db agent_path)', libvirt says $sock"
lab_log "C PASS: db has its channel at $sock, samples after ${dt}s"

# ---- D: web on again, destroyed and started ----
octl --profile-domain=web
check_profiled web yes
sleep 3
d1=$(dom_total web)
td=$(lab_now)
timeout 30 $V destroy web || lab_fail "virsh destroy web failed"
lab_summary d_web_destroy_s "$(lab_since "$td")"
# The daemon hears of the stop from libvirt's lifecycle event (the monitor
# runs the backend and tells the worker).  The limit is on the clock, not
# on a count of looks: a look took 0.35 s in a loaded L1.
td=$(lab_now)
while [ "$(info_of web state)" != stopped ]; do
	if awk -v s="$(lab_since "$td")" 'BEGIN { exit !(s > 20) }'; then
		stopped_diag web
		lab_fail "web's info does not say stopped 20 s after virsh destroy returned"
	fi
	sleep 0.1
done
lab_summary d_web_stopped_s "$(lab_since "$td")"
kill -0 "$dpid" || lab_fail "the daemon died when web was destroyed"
# web's samples go on while it boots (its kernel's, its QEMU's); its boot
# is waited for before F, which needs it busy
vstart_only web
sleep 5
d2=$(dom_total web)
lab_summary d_web_before_after "$d1 $d2"
[ "$d2" -gt "$d1" ] || lab_fail "web's samples did not grow after virsh start ($d1 -> $d2)"
ls -d "$S/samples/current/{domain}/"web.* 2>/dev/null && lab_fail "web's tree was renamed aside"
[ "$(info_of web uuid)" = "$UUID_WEB" ] || lab_fail "web's uuid changed"
lab_log "D PASS: web $d1 -> $d2 samples across destroy + start"

# ---- E: libvirtd restarted while profiling ----
lpid=$(cat /run/libvirtd.pid 2>/dev/null || pgrep -x libvirtd)
[ -n "$lpid" ] || lab_fail "no libvirtd pid"
kill "$lpid"
i=0
while kill -0 "$lpid" 2>/dev/null; do
	[ $i -lt 100 ] || { kill -9 "$lpid"; break; }
	sleep 0.1
	i=$((i + 1))
done
lab_log "libvirtd (pid $lpid) stopped"
sleep 2
kill -0 "$dpid" || lab_fail "the daemon died with libvirtd"
e1=$(dom_total web)
libvirtd -d || lab_fail "libvirtd did not start again"
i=0
while ! timeout 10 $V version >/dev/null 2>&1; do
	[ $i -lt 60 ] || lab_fail "libvirtd not answering after its restart"
	sleep 1
	i=$((i + 1))
done
i=0
while ! dlog | grep -q 'connected to .* again'; do
	[ $i -lt 100 ] || lab_fail "the daemon did not reconnect to libvirtd: $(dlog | tail -n 5)"
	sleep 0.1
	i=$((i + 1))
done
timeout 30 $V metadata db --uri "$NS" --key domprof --set '<profile enabled="no"/>' --live ||
	lab_fail "virsh metadata (db off) failed after the restart"
check_profiled db no
sleep 5
e2=$(dom_total web)
f1=$(dom_total db)
sleep 5
f2=$(dom_total db)
lab_summary e_web_across_restart "$e1 $e2"
lab_summary e_db_off_counts "$f1 $f2"
[ "$e2" -gt "$e1" ] || lab_fail "web's samples stopped after libvirtd restarted ($e1 -> $e2)"
[ "$f2" -eq "$f1" ] || lab_fail "db's counts grew after it was turned off post-restart: $f1 -> $f2"
kill -0 "$dpid" || lab_fail "the daemon died"
lab_log "E PASS: reconnected; web $e1 -> $e2, db stays at $f1"

timeout 60 opcontrol --stop --session-dir="$S" || lab_fail "opcontrol --stop failed"
cp "$S/stats" "$RESULTS/stats.txt"
cp "$S/oprofiled.log" "$RESULTS/oprofiled.log"
tar -C "$S" -cf "$RESULTS/domains.tar" domains 2>/dev/null
timeout 120 opreport --session-dir="$S" >"$RESULTS/report.txt" 2>"$RESULTS/report.err" ||
	lab_fail "final opreport failed: $(head -n 5 "$RESULTS/report.err")"
[ ! -s "$RESULTS/report.err" ] || lab_fail "opreport warned: $(head -n 5 "$RESULTS/report.err")"

# ---- F: the libvirt and procfs backends agree on the same domains ----
# Both domains on by metadata (db was turned off in E), web booted again
# (its shares must be those of steady work in both windows); then two
# daemons sample the same seconds, one per backend.
octl --profile-domain=db
vwait web
SL=/var/lib/domprof-lab/cmp-libvirt
SP=/var/lib/domprof-lab/cmp-procfs
rm -rf "$SL" "$SP"
ev=$(awk '$1 == "event" { print $2; exit }' "$S/session.conf")
timeout 60 opcontrol --start --session-dir="$SL" >/dev/null || lab_fail "opcontrol --start ($SL) failed"
timeout 60 oprofiled --session-dir="$SP" --domain-backend=procfs --domains=web,db ${ev:+--event="$ev"} ||
	lab_fail "oprofiled --domain-backend=procfs failed: $(tail -n 5 "$SP/oprofiled.log")"
sleep "${LIBVIRT_CMP_S:-20}"
for s in "$SL" "$SP"; do
	timeout 60 opcontrol --stop --session-dir="$s" >/dev/null || lab_fail "opcontrol --stop ($s) failed"
done
grep -q 'libvirt: connected' "$SL/oprofiled.log" || lab_fail "the libvirt daemon did not use libvirt"
grep -q 'libvirt: connected' "$SP/oprofiled.log" && lab_fail "the procfs daemon used libvirt"
cmp_rows() {
	local sess=$1 tag=$2
	timeout 120 opreport --session-dir="$sess" >"$RESULTS/report-$tag.txt" 2>"$RESULTS/report-$tag.err" ||
		lab_fail "opreport ($tag) failed: $(head -n 5 "$RESULTS/report-$tag.err")"
	awk '/^DOMAIN SUMMARY/ { on = 1; getline; next }
		on && NF == 0 { exit }
		on && $1 != "host" { print $1, $3 }' "$RESULTS/report-$tag.txt" |
		while read -r name pct; do
			echo "$name $(awk '$1 == "uuid" { print $2 }' "$sess/domains/$name/info" 2>/dev/null) $pct"
		done | sort
}
cmp_rows "$SL" libvirt >"$RESULTS/cmp-libvirt.txt"
cmp_rows "$SP" procfs >"$RESULTS/cmp-procfs.txt"
join -a1 -a2 -e - -o 0,1.2,2.2,1.3,2.3 "$RESULTS/cmp-libvirt.txt" "$RESULTS/cmp-procfs.txt" \
	>"$RESULTS/backends.txt"
{ echo "domain uuid(libvirt) uuid(procfs) share%(libvirt) share%(procfs)"; cat "$RESULTS/backends.txt"; } |
	awk '{ printf "%-8s %-38s %-38s %-16s %s\n", $1, $2, $3, $4, $5 }' | tee "$RESULTS/backends-table.txt" | while read -r l; do lab_log "F: $l"; done
[ "$(cut -d' ' -f1 "$RESULTS/backends.txt" | tr '\n' ' ')" = "db web " ] ||
	lab_fail "the backends' reports name other domains: $(cut -d' ' -f1 "$RESULTS/backends.txt" | tr '\n' ' ')"
while read -r name ul up sl sp; do
	[ "$ul" = "$up" ] && [ "$ul" != - ] || lab_fail "$name: UUID $ul (libvirt) vs $up (procfs)"
	awk -v a="$sl" -v b="$sp" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 5) }' ||
		lab_fail "$name: share $sl% (libvirt) vs $sp% (procfs): more than 5 points apart"
	lab_summary "f_${name}_share_libvirt_procfs" "$sl $sp"
done <"$RESULTS/backends.txt"
lab_log "F PASS: both backends name db and web with libvirt's UUIDs, shares within 5 points"

octl --remove-channel=db
timeout 10 $V dumpxml db --inactive | grep -q "$LAB_AGENT_PORT" && lab_fail "db's definition still has the channel"
timeout 30 $V destroy web
timeout 30 $V destroy db
lab_summary scenario_s "$(lab_since "$t0")"
lab_log "PASS: libvirt metadata toggles, channel hot-plug, destroy/start, libvirtd restart, libvirt = procfs"
