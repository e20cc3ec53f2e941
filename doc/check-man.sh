#!/bin/sh
# Format each man page with groff, warnings on; any output is a failure.
# Exit 77 (skipped) when groff is not installed.
command -v groff >/dev/null 2>&1 || exit 77
status=0
for page in ${MAN_PAGES:-opcontrol.1 opreport.1 ophelp.1 oprofiled.8}; do
	out=$(groff -man -Tutf8 -ww -z "${srcdir:-.}/$page" 2>&1)
	if [ -n "$out" ]; then
		printf '%s:\n%s\n' "$page" "$out"
		status=1
	fi
done
exit $status
