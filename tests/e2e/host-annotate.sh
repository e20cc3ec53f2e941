#!/usr/bin/env bash
# opannotate as an OProfile user knows it (issue 25), on a session of the
# ratio program profiled as host-views.sh profiles it (as root):
#   -a -s          mixed mode: with the source lines taken out it is
#                  opannotate -a's output exactly, and the source line right
#                  above burn_a's hottest instruction is the spin loop's,
#                  its text the file's
#   --output-dir   an annotated copy of each sampled source file at
#                  DIR/<its path>: every line of the source, in order, with
#                  opannotate --source's counts, and OProfile's closing
#                  comment with the file's total
#   --base-dirs, --search-dirs
#                  the sources moved elsewhere: read from there (a marker
#                  in the copy shows it), the tree made relative to the base
#   refusals       an output directory that holds the source (the source
#                  is not overwritten), a link inside the output directory
#                  (nothing written through it), --output-dir with
#                  --assembly, --base-dirs with nowhere to look
# Needs DP_PREFIX (installed domprof) and DP_BUILD (for tests/e2e/ratio).
set -euo pipefail
: "${DP_PREFIX:?set DP_PREFIX to the installed domprof prefix}"
: "${DP_BUILD:?set DP_BUILD to the build directory}"
bin=$DP_PREFIX/bin
ratio=$DP_BUILD/tests/e2e/ratio
seconds=${DP_RATIO_SECONDS:-3}
export DP_NO_PROGRESS=1

work=$(mktemp -d /tmp/dp-annotate.XXXXXX)
# the daemon's unprivileged worker reaches the session through it
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
ann() { "$bin/opannotate" --session-dir="$session" "$@" "image:$work/ratio"; }

cp "$ratio" "$work/ratio"
"$bin/opcontrol" --start --session-dir="$session" >/dev/null
"$work/ratio" "$seconds" 75
"$bin/opcontrol" --dump --session-dir="$session"
"$bin/opcontrol" --stop --session-dir="$session" >/dev/null

ann --source >"$work/src.out"
# the sources as the binary's debug info names them (the build's srcdir)
spin=$(sed -n 's/^ *[0-9]* *[0-9.]* *: source file \(.*spin\.h\)$/\1/p' "$work/src.out")
rsrc=$(sed -n 's/^ *[0-9]* *[0-9.]* *: source file \(.*ratio\.c\)$/\1/p' "$work/src.out")
if [ ! -f "$spin" ] || [ ! -f "$rsrc" ]; then
	fail "opannotate --source names no readable spin.h and ratio.c: '$spin' '$rsrc'"
	exit 1
fi
srcdir=$(dirname "$spin")
echo "sources: $spin, $rsrc"
# a --source listing's count for each line of FILE, "LINE COUNT"
line_counts() {
	awk -v f="$2" '$0 ~ "source file " f "$" { on = 1; next } on && NF == 0 { exit }
		on && match($0, /[*:] +[0-9]+: /) {
			n = substr($0, RSTART + 1, RLENGTH - 3) + 0
			c = ($1 ~ /^[0-9]+$/) ? $1 : 0; if (c) print n, c }' "$1"
}
line_counts "$work/src.out" "$spin" >"$work/spin.counts"
spin_total=$(awk '{ s += $2 } END { print s + 0 }' "$work/spin.counts")
echo "opannotate --source: spin.h holds $spin_total samples on $(wc -l <"$work/spin.counts") lines"
[ "$spin_total" -gt 0 ] || { fail "no samples on spin.h's lines"; exit 1; }

# --- mixed mode -----------------------------------------------------------
# a source line: blank counts, ':', three spaces, FILE:LINE, two spaces, text
is_src='^ +:   [^[:space:]:]+:[0-9]+(  |$)'
ann -a >"$work/asm.out"
ann -a -s >"$work/mixed.out"
nsrc=$(grep -cE "$is_src" "$work/mixed.out" || true)
if grep -vE "$is_src" "$work/mixed.out" | diff -q - "$work/asm.out" >/dev/null && [ "$nsrc" -gt 0 ]; then
	ok "opannotate -a -s: opannotate -a's output with $nsrc source lines interleaved"
else
	fail "opannotate -a -s without its $nsrc source lines is not opannotate -a's output"
	grep -vE "$is_src" "$work/mixed.out" | diff - "$work/asm.out" | head -n 10
fi
# burn_a's hottest instruction and the source line printed last above it
read -r hot_n hot_src < <(awk -v re="$is_src" '
	/<burn_a>: \/\* total \*\// { on = 1; next } on && NF == 0 { on = 0 }
	on && $0 ~ re { src = $2; next }
	on && $1 ~ /^[0-9]+$/ && $1 + 0 > best { best = $1; at = src }
	END { print best + 0, at }' "$work/mixed.out")
hot_line=${hot_src##*:}
hot_text=$(grep -m1 -E "^ +:   ${hot_src//./\\.}  " "$work/mixed.out" | sed -E 's/^ +:   [^ ]+  //')
echo "opannotate -a -s: burn_a's hottest instruction ($hot_n samples) under $hot_src: $hot_text"
if [[ "$hot_src" == spin.h:* ]] && [ "$hot_text" = "$(sed -n "${hot_line}p" "$spin")" ] &&
	grep -qE 'x = x \* mul \+ add;|for \(uint64_t i = 0; i < n; i\+\+\)' <<<"$hot_text"; then
	ok "opannotate -a -s: the spin loop's line, with its text, heads burn_a's hot instruction"
else
	fail "opannotate -a -s: burn_a's hot instruction is under '$hot_src' '$hot_text', not the spin loop"
fi

# --- --output-dir ---------------------------------------------------------
ann --output-dir="$work/tree" >"$work/tree.out"
cat "$work/tree.out" | sed -n '/^Annotated source files:/,$p'
copy=$work/tree$spin
# the annotation is 22 columns (one event): counts, mark, a space
if [ -f "$copy" ] && [ -f "$work/tree$rsrc" ]; then
	n=$(wc -l <"$spin")
	if head -n "$n" "$copy" | cut -c23- | diff -q - "$spin" >/dev/null &&
		grep -q "^ \* Total samples for file : \"$spin\"$" "$copy"; then
		ok "--output-dir: $copy holds spin.h's $n lines in order and OProfile's closing comment"
	else
		fail "--output-dir: $copy is not spin.h annotated line by line"
		head -n "$n" "$copy" | cut -c23- | diff - "$spin" | head -n 5
	fi
	head -n "$n" "$copy" | awk '$1 ~ /^[0-9]+$/ { print NR, $1 }' >"$work/copy.counts"
	if diff -q "$work/copy.counts" "$work/spin.counts" >/dev/null; then
		ok "--output-dir: spin.h's copy has opannotate --source's count on each line ($spin_total)"
	else
		fail "--output-dir: spin.h's counts differ from opannotate --source's"
		diff "$work/copy.counts" "$work/spin.counts" | head -n 5
	fi
else
	fail "--output-dir: no $copy or $work/tree$rsrc"
fi

# --- --base-dirs and --search-dirs: the sources moved --------------------
mkdir "$work/moved"
sed 's|x = x \* mul + add;|& /* the moved copy */|' "$spin" >"$work/moved/spin.h"
cp "$rsrc" "$work/moved/"
ann --source --base-dirs="$srcdir" --search-dirs="$work/moved" >"$work/moved.out"
ann -o "$work/tree2" -b "$srcdir/" -d "$work/moved" >/dev/null
if grep -qE '^ +[0-9]+ +[0-9.]+ +[*:] +[0-9]+: .*/\* the moved copy \*/' "$work/moved.out" &&
	grep -qE '^ +[0-9]+ +[0-9.]+ +[*:] .*/\* the moved copy \*/' "$work/tree2/spin.h" &&
	[ -f "$work/tree2/ratio.c" ]; then
	ok "--base-dirs, --search-dirs: the moved copy read; the tree relative to the base ($work/tree2/spin.h)"
else
	fail "--base-dirs, --search-dirs: the moved copy not read, or the tree not relative to the base"
	ls -R "$work/tree2" | head -n 5
fi

# --- refusals -------------------------------------------------------------
before=$(md5sum <"$work/moved/spin.h")
if ann -o "$work/moved" -b "$srcdir" -d "$work/moved" >/dev/null 2>"$work/self.err"; then
	fail "--output-dir onto the sources exited 0"
fi
if [ "$(md5sum <"$work/moved/spin.h")" = "$before" ] && grep -q "the source file itself" "$work/self.err"; then
	ok "--output-dir onto the sources: refused, the source unchanged ($(head -n 1 "$work/self.err"))"
else
	fail "--output-dir onto the sources: overwritten or not said: $(cat "$work/self.err")"
fi
mkdir -p "$work/tree3" "$work/elsewhere"
first=${spin#/}
first=${first%%/*}
ln -s "$work/elsewhere" "$work/tree3/$first"
if ann -o "$work/tree3" >/dev/null 2>"$work/link.err"; then
	fail "--output-dir with a link in it exited 0"
fi
if [ -z "$(find "$work/elsewhere" -mindepth 1)" ] && grep -q "a link" "$work/link.err"; then
	ok "--output-dir: nothing written through a link ($(head -n 1 "$work/link.err"))"
else
	fail "--output-dir wrote through a link or did not say so: $(cat "$work/link.err")"
fi
for bad in "-a -o $work/x" "-s -b $srcdir"; do
	# shellcheck disable=SC2086
	if ann $bad >/dev/null 2>"$work/bad.err"; then fail "opannotate $bad exited 0"; fi
	if [ "$(wc -l <"$work/bad.err")" -eq 2 ] && grep -q "Try 'opannotate --help'" "$work/bad.err"; then
		ok "opannotate $bad: $(head -n 1 "$work/bad.err")"
	else
		fail "opannotate $bad: not one line and a pointer to --help: $(cat "$work/bad.err")"
	fi
done

echo "host-annotate: $fails failed"
[ $fails -eq 0 ]
