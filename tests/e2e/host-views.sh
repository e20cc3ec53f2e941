#!/usr/bin/env bash
# End to end on the host, as root: profile the ratio program (as
# host-ratio.sh does) and check the views built on opreport's library
# against opreport itself:
#   opannotate   the samples of burn_a land on burn_a's inner loop
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/e2e/ratio).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
ratio=$DP_BUILD/tests/e2e/ratio
seconds=${DP_RATIO_SECONDS:-4}
export DP_NO_PROGRESS=1

work=$(mktemp -d /tmp/dp-views.XXXXXX)
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
"$bin/opcontrol" --start --session-dir="$session" --separate=lib >/dev/null
"$work/ratio" "$seconds" 75
"$bin/opcontrol" --dump --session-dir="$session"
"$bin/opcontrol" --stop --session-dir="$session" >/dev/null
"$bin/opreport" -l --session-dir="$session" >"$work/report.out"
sed -n '1,12p' "$work/report.out"
# samples of SYMBOL in IMAGE (basename) from an opreport -l listing
rep_count() { awk -v s="$2" -v i="$3" '$NF == s && $3 == i { n += $1 } END { print n + 0 }' "$1"; }
burn_a=$(rep_count "$work/report.out" burn_a ratio)
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
line=$(grep -E 'x = x \* 6364136223846793005ull' "$work/src.out" || true)
echo "opannotate --source: $line"
if [[ "$line" =~ ^\ *([0-9]+)\ +[0-9.]+\ +\*\  ]] && [ $((BASH_REMATCH[1] * 100)) -ge $((burn_a * 90)) ]; then
	ok "opannotate --source marks burn_a's loop line hot"
else
	fail "opannotate --source: burn_a's loop line is not the hot one"
fi

[ $fails -eq 0 ] || { echo "host-views: $fails check(s) failed"; exit 1; }
echo "host-views: all checks passed"
