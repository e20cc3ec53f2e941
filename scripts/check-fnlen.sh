#!/bin/sh
# No function over 80 lines in the product's C files (CONVENTIONS: a
# function does one thing), and no product C file over 800 lines (a file
# has one job).  Run by `make check` from the top.
#
# Which files: every .c file of the tree but the tests (tests/, test_*.c,
# fuzz_*.c) and generated code (protoc-c's *.pb-c.c, a kernel build's
# *.mod.c); daemon/'s tests are held to the function rule too, as they
# always were, not to the file rule.  A function counts from its opening
# brace in column 0 to the closing one; a file, its lines.
#
# Known exceptions, as FILE:FUNCTION for functions and FILE for files, in
# files being reworked elsewhere: each is to be split and then removed from
# its list.  An entry that is no longer over its limit fails the check, so
# the lists stay true.
known=""
known_files=""

max=80
max_lines=800
bad=
top=$(cd "${srcdir:-$(dirname "$0")/..}" && pwd) || exit 1
cd "$top" || exit 1

# The files, relative to the top; build trees inside the source tree
# (build/, distcheck's _build/) are not the source.
files=$(find . \( -path ./tests -o -path './build*' -o -path ./_build -o -path ./.git \
		-o -path ./autom4te.cache \) -prune -o \
		-name '*.c' ! -name '*.pb-c.c' ! -name '*.mod.c' -print |
	sed 's|^\./||' |
	awk '!/(^|\/)fuzz_[^\/]*\.c$/ && (!/\/tests\// || /^daemon\/tests\//) && (!/(^|\/)test_[^\/]*\.c$/ || /^daemon\//)' |
	sort)
if [ -z "$files" ]; then
	echo "check-fnlen: no C files below $top" >&2
	exit 1
fi

# shellcheck disable=SC2086 # one word per file name, none has a space
awk -v max="$max" -v known="$known" '
BEGIN { nk = split(known, k, " "); for (i = 1; i <= nk; i++) allowed[k[i]] = 1 }
FNR == 1 { start = 0 }
/^\{/ { start = FNR }
/^\}/ && start {
	n = FNR - start + 1
	if (n > max) {
		key = FILENAME ":" fn
		if (key in allowed) {
			printf "%s:%d: %s: %d lines (a known exception)\n", FILENAME, start, fn, n
			seen[key] = 1
		} else {
			printf "%s:%d: %s: %d lines\n", FILENAME, start, fn, n
			bad = 1
		}
	}
	start = 0
}
/^[a-zA-Z_].*\(/ && !start { fn = $0; sub(/\(.*/, "", fn); sub(/.*[ *]/, "", fn) }
END {
	for (key in allowed)
		if (!(key in seen)) {
			printf "%s: not over %d lines (any more): remove it from the known exceptions in scripts/check-fnlen.sh\n", key, max
			bad = 1
		}
	exit bad
}' $files || { echo "check-fnlen: split the functions above (or prune the known exceptions)"; bad=1; }

# The product's files: the same but daemon/'s tests.
product=$(echo "$files" | awk '!/(^|\/)test_[^\/]*\.c$/')
# shellcheck disable=SC2086 # as above
awk -v max="$max_lines" -v known="$known_files" '
BEGIN { nk = split(known, k, " "); for (i = 1; i <= nk; i++) allowed[k[i]] = 1 }
function check(file, n) {
	if (n <= max)
		return
	if (file in allowed) {
		printf "%s: %d lines (a known exception)\n", file, n
		seen[file] = 1
	} else {
		printf "%s: %d lines\n", file, n
		bad = 1
	}
}
FNR == 1 && NR > 1 { check(prev, lines) }
{ prev = FILENAME; lines = FNR }
END {
	if (NR)
		check(prev, lines)
	for (file in allowed)
		if (!(file in seen)) {
			printf "%s: not over %d lines (any more): remove it from the known exceptions in scripts/check-fnlen.sh\n", file, max
			bad = 1
		}
	exit bad
}' $product || { echo "check-fnlen: split the files above by role (or prune the known exceptions)"; bad=1; }
[ -z "$bad" ] || exit 1
echo "no function over $max lines in $(echo "$files" | wc -l) C files${known:+ (known exceptions: $known)}"
echo "no file over $max_lines lines in $(echo "$product" | wc -l) product C files${known_files:+ (known exceptions: $known_files)}"
