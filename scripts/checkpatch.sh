#!/usr/bin/env bash
# Run the kernel's checkpatch.pl (--no-tree, files) on the given files.
# checkpatch comes from Debian's linux-source-6.1 tarball (install-deps.sh
# installs it); the three files it needs are extracted once into a cache.
#   scripts/checkpatch.sh FILE...      non-zero on any error or warning
#   scripts/checkpatch.sh --available  is the tarball there?
set -euo pipefail
tarball=${DP_LINUX_SOURCE:-$(ls /usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)}
if [ "${1:-}" = --available ]; then
	[ -n "$tarball" ] && [ -f "$tarball" ]
	exit
fi
[ -n "$tarball" ] && [ -f "$tarball" ] ||
	{ echo "checkpatch: no /usr/src/linux-source-*.tar.xz (scripts/install-deps.sh)" >&2; exit 2; }
top=$(basename "$tarball" .tar.xz)
cache=${DP_CHECKPATCH_DIR:-${TMPDIR:-/tmp}/domprof-checkpatch-$(id -u)}
cp=$cache/$top/scripts/checkpatch.pl
if [ ! -x "$cp" ] || [ "$tarball" -nt "$cp" ]; then
	mkdir -p "$cache"
	tar -xJf "$tarball" -C "$cache" "$top/scripts/checkpatch.pl" \
		"$top/scripts/spelling.txt" "$top/scripts/const_structs.checkpatch"
	touch "$cp"
fi
"$cp" --no-tree --terse --show-types -f "$@"
echo "checkpatch: $# files clean"
