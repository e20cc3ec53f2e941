#!/bin/sh
# No function over 80 lines in the product's C files (CONVENTIONS: a
# function does one thing).  Run by `make check` from the top.
#
# Which files: every .c file of the tree but the tests (tests/, test_*.c,
# fuzz_*.c) and generated code (protoc-c's *.pb-c.c, a kernel build's
# *.mod.c); daemon/'s tests are held to it too, as they always were.  A
# function counts from its opening brace in column 0 to the closing one.
#
# Known exceptions, as FILE:FUNCTION, in files being reworked elsewhere:
# each is to be split and then removed from this list.  An entry whose
# function is no longer over 80 lines fails the check, so the list stays
# true.
known=""

max=80
top=$(cd "${srcdir:-$(dirname "$0")/..}" && pwd) || exit 1
cd "$top" || exit 1

# The files, relative to the top; build trees inside the source tree
# (build/, distcheck's _build/) are not the source.
files=$(find . \( -path ./tests -o -path './build*' -o -path ./_build -o -path ./.git \
		-o -path ./autom4te.cache \) -prune -o \
		-name '*.c' ! -name '*.pb-c.c' ! -name '*.mod.c' -print |
	sed 's|^\./||' |
	awk '!/(^|\/)fuzz_[^\/]*\.c$/ && !/\/tests\// && (!/(^|\/)test_[^\/]*\.c$/ || /^daemon\//)' |
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
}' $files || { echo "check-fnlen: split the functions above (or prune the known exceptions)"; exit 1; }
echo "no function over $max lines in $(echo "$files" | wc -l) C files${known:+ (known exceptions: $known)}"
