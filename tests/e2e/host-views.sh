#!/usr/bin/env bash
# End to end on the host, as root: profile the ratio program (as
# host-ratio.sh does) and check the views built on opreport's library
# against opreport itself:
#   opannotate   the samples of burn_a land on burn_a's inner loop
#   opflame      rendered in headless Chromium: the frames host/ratio/ratio/
#                burn_a exist, the top symbols' counts equal opreport's, and
#                a search marks exactly the matching frames
#   oppprof      read back with go tool pprof -top and -traces: totals,
#                top symbols and burn_a's labelled sample equal opreport's
#   --domain     opflame and oppprof of --domain=host hold opreport's host total
#   oparchive    archive (directory and tarball), move it elsewhere, delete
#                the profiled binary: opreport -l and opannotate unchanged
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/e2e/ratio).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
ratio=$DP_BUILD/tests/e2e/ratio
seconds=${DP_RATIO_SECONDS:-4}
export DP_NO_PROGRESS=1

work=$(mktemp -d /tmp/dp-views.XXXXXX)
# the daemon's unprivileged worker (privsep, the default) reaches the
# session through this directory
chmod 0755 "$work"
session=$work/session
cleanup() {
	"$bin/opcontrol" --stop --session-dir="$session" >/dev/null 2>&1 || true
	[ -n "${DP_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "OK: $*"; }

cp "$ratio" "$work/ratio"
# with call graphs: the views must keep opreport's counts per symbol and
# show the recorded stacks above it (checked below)
"$bin/opcontrol" --start --session-dir="$session" --separate=lib --callgraph=16 >/dev/null
"$work/ratio" "$seconds" 75
"$bin/opcontrol" --dump --session-dir="$session"
"$bin/opcontrol" --stop --session-dir="$session" >/dev/null
# opreport -l's rows (views_report), and the flame graph's and pprof's
# checks against them, are shared with the lab's view test
. "$(dirname "$0")/views-lib.sh"
views_report "$session" "$work"
sed -n '1,12p' "$work/report.out"
burn_a=$(awk -F'\t' '$1 == "host;ratio;ratio;burn_a" { n += $2 } END { print n + 0 }' "$work/report.rows")
[ "$burn_a" -gt 0 ] || { fail "opreport shows no samples in burn_a"; exit 1; }

# --- opannotate -----------------------------------------------------------
"$bin/opannotate" --assembly --session-dir="$session" "image:$work/ratio" >"$work/asm.out"
# burn_a's block: its total, its innermost backward branch (the inner loop),
# and how many of its samples fall in [branch target, branch].
read -r a_total in_loop hot_out < <(awk '
	function hex(s,  i, v) {
		v = 0; sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	/<burn_a>: \/\* total \*\// { inb = 1; total = $1; next }
	inb && NF == 0 { inb = 0 }
	inb {
		n = 0; addr = ""
		if ($1 ~ /^[0-9]+$/) { n = $1; rest = $3 } else rest = $1
		for (i = 1; i <= NF; i++) if ($i ~ /^[0-9a-f]+:$/) { addr = $i; idx = i; break }
		if (addr == "") next
		sub(/:$/, "", addr); a = hex(addr)
		cnt[a] = n; hot[a] = (rest == "*"); addrs[++na] = a
		if ($(idx + 1) ~ /^j/ && $(idx + 2) ~ /^0x/) {
			t = hex($(idx + 2))
			if (t < a && (best == "" || a - t < best)) { best = a - t; lo = t; hi = a }
		}
	}
	END {
		for (k = 1; k <= na; k++) {
			a = addrs[k]
			if (a >= lo && a <= hi) inl += cnt[a]; else if (hot[a]) ho++
		}
		print total + 0, inl + 0, ho + 0
	}' "$work/asm.out")
sed -n '/<burn_a>: \/\* total/,/^$/p' "$work/asm.out" | awk '$1 ~ /^[0-9]+$/'
echo "opannotate: burn_a $a_total samples (opreport $burn_a), $in_loop in its inner loop, $hot_out hot outside it"
if [ "$a_total" != "$burn_a" ]; then
	fail "opannotate's burn_a total $a_total differs from opreport's $burn_a"
elif [ $((in_loop * 100)) -lt $((a_total * 90)) ] || [ "$hot_out" -ne 0 ]; then
	fail "opannotate: burn_a's samples are not on its loop instructions"
else
	ok "opannotate --assembly puts burn_a's samples on its inner loop"
fi
"$bin/opannotate" --source --session-dir="$session" "image:$work/ratio" >"$work/src.out"
# burn_a and burn_b both inline e2e_spin's loop (tests/e2e/spin.h): its
# two lines (the for and its body) hold the samples of both.  Which of the
# two a sample lands on depends on where the CPU takes the timer's
# interrupt in that five-instruction loop (73/26 on one machine, nearly
# all on the body on another): the check is on the loop, both lines.
burn_b=$(awk -F'\t' '$1 == "host;ratio;ratio;burn_b" { n += $2 } END { print n + 0 }' "$work/report.rows")
loop_for=$(grep -E 'for \(uint64_t i = 0; i < n; i\+\+\)' "$work/src.out" | head -n 1 || true)
loop_body=$(grep -E 'x = x \* mul \+ add;' "$work/src.out" | head -n 1 || true)
echo "opannotate --source: $loop_for"
echo "opannotate --source: $loop_body"
count_of() { [[ "$1" =~ ^\ *([0-9]+)\ +[0-9.]+\ +[*:]\  ]] && echo "${BASH_REMATCH[1]}" || echo 0; }
loop=$(( $(count_of "$loop_for") + $(count_of "$loop_body") ))
if [ "$loop" -gt 0 ] && [ $((loop * 100)) -ge $(((burn_a + burn_b) * 90)) ]; then
	ok "opannotate --source marks the spin loop hot: its lines hold $loop of burn_a and burn_b's $((burn_a + burn_b))"
else
	fail "opannotate --source: the spin loop's lines are not the hot ones ($loop of $((burn_a + burn_b)))"
fi

# --- opflame --------------------------------------------------------------
# shared: the top symbols' counts; here: burn_a's frame, its hover text,
# and a search (run by the page from the URL fragment) marking exactly it
if views_flame "$session" "$work" "search=%5Eburn_a%24"; then
	fg_a=$(awk -F'\t' '$1 == "host;ratio;ratio;burn_a" { print $2 }' "$work/fg.frames")
	marked=$(awk -F'\t' '$3 == 1 { split($1, p, ";"); print p[length(p)] }' "$work/fg.frames" | sort -u | tr '\n' ' ')
	nmarked=$(awk -F'\t' '$3 == 1' "$work/fg.frames" | wc -l)
	matched=$(sed -n 's/.*data-matched="\([0-9]*\)".*/\1/p' "$work/fg.dom")
	echo "opflame: host;ratio;ratio;burn_a = ${fg_a:-none} (opreport $burn_a)"
	echo "opflame: search ^burn_a\$ marked $nmarked frame(s): $marked, matched ${matched:-none} samples"
	if [ "$marked" != "burn_a " ] || [ "${matched:-0}" -lt "$burn_a" ]; then
		fail "opflame: the search did not mark exactly the burn_a frames"
	elif ! grep -q "<title>burn_a ($fg_a samples, [0-9.]*%)</title>" "$work/fg.dom"; then
		fail "opflame: burn_a's frame has no hover text with its count and percentage"
	else
		ok "opflame: burn_a's frame, its hover text and the search agree with opreport"
	fi
fi

# --- stacks (--callgraph) in the flame graph and opreport --flamegraph -----
# The default view is flamegraph.pl's: main, the recorded caller, stands
# between ratio's binary frame and burn_a, with no more samples than burn_a
# has; drawn in Chromium, the root is at the bottom, main below burn_a, a
# zoom on main fills the window's width and hides what is not main's.
"$bin/opflame" --session-dir="$session" -o "$work/fg1.svg"
"$bin/opreport" --flamegraph="$work/fg2.svg" --session-dir="$session"
fg_paths() {
	awk '/<g class="f/ {
	d = $0; sub(/.*data-d="/, "", d); sub(/".*/, "", d); d += 0
	n = $0; sub(/.*data-n="/, "", n); sub(/".*/, "", n)
	nm = $0; sub(/.*data-name="/, "", nm); sub(/".*/, "", nm)
	y = $0; sub(/.*<rect x="[^"]*" y="/, "", y); sub(/".*/, "", y)
	x = $0; sub(/.*<rect x="/, "", x); sub(/".*/, "", x)
	w = $0; sub(/.*<rect x="[^"]*" y="[^"]*" width="/, "", w); sub(/".*/, "", w)
	hid = /style="display: none;"/
	path[d] = nm; s = path[1]; for (i = 2; i <= d; i++) s = s ";" path[i]
	printf "%s\t%s\t%s\t%s\t%s\t%d\n", (d ? s : "all"), n, y, x, w, hid }' "$1"
}
fg_paths "$work/fg2.svg" >"$work/fg2.paths"
# (what calls main depends on how much of the C library has names)
leaf_path=$(awk -F'\t' '$1 ~ /^host;ratio;ratio;(.*;)?main;burn_a$/ { print $1; exit }' "$work/fg2.paths")
# (its count holds burn_a's callees' too, which are too narrow to draw:
# ratio's stacks are all recorded, so it holds nearly all of burn_a's)
fg_main=$(awk -F'\t' -v p="$leaf_path" '$1 == p { print $2 }' "$work/fg2.paths")
echo "opreport --flamegraph: ${leaf_path:-host;ratio;ratio;...;main;burn_a} = ${fg_main:-none} (burn_a $burn_a)"
if ! cmp -s "$work/fg1.svg" "$work/fg2.svg"; then
	fail "opreport --flamegraph does not write what opflame writes"
elif [ -z "$fg_main" ] || [ $((fg_main * 10)) -lt $((burn_a * 9)) ]; then
	fail "opflame: no recorded stack main -> burn_a, main below burn_a"
else
	ok "opflame/opreport --flamegraph: the recorded stack main -> burn_a stands on main"
fi
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -n "$browser" ]; then
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$(mktemp -d "$work/chromium.XXXXXX")" --window-size=1600,900 \
		--dump-dom "file://$work/fg1.svg#zoom=main" >"$work/fg1.dom" 2>"$work/chromium1.err" || true
	fg_paths "$work/fg1.dom" >"$work/fg1.paths"
	get() { awk -F'\t' -v p="$1" -v c="$2" '$1 == p { print $c; exit }' "$work/fg1.paths"; }
	main_path=${leaf_path%;burn_a}
	# the frame the page zoomed on: the first named main
	zoomed=$(awk -F'\t' '$1 ~ /(^|;)main$/ { print $1; exit }' "$work/fg1.paths")
	y_root=$(get all 3) y_main=$(get "$main_path" 3) y_leaf=$(get "$leaf_path" 3)
	x_main=$(get "$zoomed" 4) w_main=$(get "$zoomed" 5)
	# frames neither above nor below main: "hidden shown"
	read -r n_hid n_shown <<<"$(awk -F'\t' -v m="$zoomed" '
		$1 == "all" || $1 == m || index(m, $1 ";") == 1 || index($1, m ";") == 1 { next }
		{ if ($6) h++; else s++ } END { print h + 0, s + 0 }' "$work/fg1.paths")"
	svg_w=$(sed -n 's/.*<svg[^>]* width="\([0-9]*\)".*/\1/p' "$work/fg1.dom" | head -n 1)
	echo "opflame in Chromium (1600 px, #zoom=main, on $zoomed): y root ${y_root:-none}, main ${y_main:-none}, burn_a ${y_leaf:-none}; main x ${x_main:-none} width ${w_main:-none} of svg ${svg_w:-none}; frames outside main hidden $n_hid, shown $n_shown"
	if [ -z "$y_root" ] || [ -z "$y_main" ] || [ -z "$y_leaf" ] ||
		! awk -v r="$y_root" -v m="$y_main" -v l="$y_leaf" 'BEGIN { exit !(r > m && m > l) }'; then
		fail "opflame: the root is not at the bottom with main below burn_a"
	elif [ "${svg_w:-0}" != 1600 ] ||
		! awk -v x="$x_main" -v w="$w_main" 'BEGIN { exit !(x + 0 == 10 && w + 0 == 1580) }'; then
		fail "opflame: zoomed on main, its frame does not fill the 1600 px window (x $x_main, width $w_main, svg $svg_w)"
	elif [ "$n_hid" -eq 0 ] || [ "$n_shown" -ne 0 ]; then
		fail "opflame: zoomed on main, a frame outside main is still shown"
	else
		ok "opflame: root at the bottom, zoom fills the window's width and hides the rest"
	fi
else
	fail "no chromium to render the flame graph (scripts/install-deps.sh installs it)"
fi

# --- oppprof --------------------------------------------------------------
# shared: total and top symbols; here: burn_a's sample in -traces, with
# its labels
if views_pprof "$session" "$work"; then
	tr_a=$(awk '/^-+\+/ { if (leaf == "burn_a" && dom == "host" && comm == "ratio") n += v; dom = comm = leaf = ""; first = 1; next }
		$1 == "domain:" { dom = $2 } $1 == "comm:" { comm = $2 }
		first && $1 ~ /^[0-9]+$/ && $1 != "" && $2 != "" { v = $1; leaf = $2; first = 0 }
		END { if (leaf == "burn_a" && dom == "host" && comm == "ratio") n += v; print n + 0 }' "$work/pprof.traces")
	echo "oppprof: burn_a traced as domain:host comm:ratio $tr_a (opreport $burn_a)"
	grep -A3 -B1 -m1 'burn_a' "$work/pprof.traces" || true
	if [ "$tr_a" != "$burn_a" ]; then
		fail "oppprof: burn_a's labelled sample in -traces differs from opreport"
	elif ! awk '/^-+\+/ { first = 1; leaf = ""; next }
		first && $1 ~ /^[0-9]+$/ && NF >= 2 { leaf = $2; first = 0; next }
		leaf == "burn_a" && NF == 1 && $1 == "main" { found = 1 } { leaf = (NF == 1 ? "" : leaf) }
		END { exit !found }' "$work/pprof.traces"; then
		fail "oppprof: no trace burn_a <- main from the recorded stacks"
	else
		ok "oppprof: go tool pprof -traces has burn_a's labelled samples"
	fi
fi

# --- one domain: --domain=host in all three --------------------------------
"$bin/opreport" -l --domain=host --session-dir="$session" >"$work/host.out" 2>/dev/null
host_total=$(views_rows "$work/host.out" | awk -F'\t' '{ n += $2 } END { print n + 0 }')
"$bin/opflame" --domain=host --session-dir="$session" -o "$work/host.svg" 2>/dev/null
fg_total=$(sed -n 's/.*data-n="\([0-9]*\)" data-x="0" data-d="0" data-name="all".*/\1/p' "$work/host.svg")
fg_other=$(grep -c 'data-d="1" data-name="[^"]*"' "$work/host.svg" || true)
pp_host=none
if [ -x "$bin/oppprof" ] && command -v go >/dev/null; then
	"$bin/oppprof" --domain=host --session-dir="$session" -o "$work/host.pb.gz" 2>/dev/null
	pp_host=$(views_go_pprof -top -nodecount=1 "$work/host.pb.gz" 2>/dev/null |
		sed -n 's/.*accounting for [0-9]*, .* of \([0-9]*\) total.*/\1/p')
fi
echo "--domain=host: opreport $host_total, opflame ${fg_total:-none} ($fg_other domain frame(s)), oppprof ${pp_host:-none}"
if [ "$fg_total" = "$host_total" ] && [ "$fg_other" = 1 ] && [ "$pp_host" = "$host_total" ]; then
	ok "--domain=host: opflame and oppprof hold exactly opreport's host samples"
else
	fail "--domain=host: opflame or oppprof differ from opreport"
fi

# --- oparchive (last: it deletes the profiled binary) ---------------------
spec="image:$work/ratio"
"$bin/opreport" -l --session-dir="$session" "$spec" >"$work/arch-before.rep" 2>/dev/null
"$bin/opannotate" -a -s --session-dir="$session" "$spec" 2>/dev/null | grep -v '^  file ' >"$work/arch-before.ann"
"$bin/oparchive" --session-dir="$session" -o "$work/archive" "$spec"
"$bin/oparchive" --session-dir="$session" --tar="$work/archive.tar.gz" "$spec"
# a sample file is mostly a hole (room to grow): the copy keeps it one
s_kb=$(du -sk "$session/samples" | cut -f1)
a_kb=$(du -sk "$work/archive/samples" | cut -f1)
if [ "$a_kb" -gt $((s_kb + s_kb / 4 + 8)) ]; then
	fail "oparchive: the archived sample files take $a_kb KiB of disk, the session's $s_kb (holes written out)"
else
	ok "oparchive: the archived sample files take $a_kb KiB of disk, the session's $s_kb"
fi
mkdir -p "$work/elsewhere/tree" "$work/elsewhere/untar"
mv "$work/archive" "$work/elsewhere/tree/moved"
tar -C "$work/elsewhere/untar" -xzf "$work/archive.tar.gz"
rm -f "$work/ratio"
echo "oparchive: $(find "$work/elsewhere/tree/moved/archive" -type f | wc -l) binaries and debug files archived:"
find "$work/elsewhere/tree/moved/archive" -type f | sed "s|$work/elsewhere/tree/moved/archive|  |"
for a in tree/moved untar; do
	"$bin/opreport" -l --session-dir="$work/elsewhere/$a" "$spec" >"$work/arch-after.rep" 2>"$work/arch.err"
	"$bin/opannotate" -a -s --session-dir="$work/elsewhere/$a" "$spec" 2>>"$work/arch.err" |
		grep -v '^  file ' >"$work/arch-after.ann"
	if ! grep -q burn_a "$work/arch-after.rep"; then
		fail "oparchive ($a): the moved archive reports no burn_a"; cat "$work/arch.err"
	elif ! diff -u "$work/arch-before.rep" "$work/arch-after.rep" >"$work/arch.diff" ||
	     ! diff -u "$work/arch-before.ann" "$work/arch-after.ann" >>"$work/arch.diff"; then
		fail "oparchive ($a): the moved archive reports differently"; head -20 "$work/arch.diff"
	else
		ok "oparchive ($a): opreport -l and opannotate identical after moving and deleting the binary"
	fi
done

[ $fails -eq 0 ] || { echo "host-views: $fails check(s) failed"; exit 1; }
echo "host-views: all checks passed"
