#!/bin/sh
# No function in daemon/ over 80 lines (DESIGN's "must hold"; CONVENTIONS:
# a function does one thing).  Counts from the opening brace in column 0
# to the closing one, for every .c file of the daemon, tests included.
: "${srcdir:=.}"
awk -v max=80 '
FNR == 1 { start = 0 }
/^\{/ { start = FNR }
/^\}/ && start { n = FNR - start + 1; if (n > max) { printf "%s:%d: %s: %d lines\n", FILENAME, start, fn, n; bad = 1 } start = 0 }
/^[a-zA-Z_].*\(/ && !start { fn = $0; sub(/\(.*/, "", fn); sub(/.*[ *]/, "", fn) }
END { exit bad }' "$srcdir"/*.c || { echo "functions over 80 lines in daemon/ (split them)"; exit 1; }
echo "no function over 80 lines in daemon/"
