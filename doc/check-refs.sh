#!/bin/bash
# Every Markdown page a file of the repository cites must exist.
#
# Looks at the files git tracks, and the new ones it would track (not
# ignored), for words that end in ".md" (a name, or a path with
# directories), and resolves each against the citing file's directory,
# then against the top of the repository.  Prints every reference that
# resolves neither way as FILE:LINE: REF and exits 1; 0 when all resolve.
#
# Not references: URLs (scheme://...), and names that code builds, where
# the word follows a character that starts or ends an expansion or a
# placeholder ($, %, ), }, ], >, *, @, a backslash).  In man pages the
# troff escapes \- \& \e and the font changes are undone first, so
# "doc/sample\-files.md" is read as the path it prints.
#
# Exit 77 (skipped) outside a git work tree: the list of files is git's.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "${srcdir:-$here}/.." && pwd)

if ! command -v git >/dev/null 2>&1 ||
   [ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" != "$top" ]; then
	echo "check-refs: $top is not a git work tree; skipped" >&2
	exit 77
fi

cd "$top" || exit 1

# FILE<TAB>LINE<TAB>REF for every candidate reference in the text files
# that mention ".md" at all.
candidates() {
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 grep -I -l -F -e '.md' -- 2>/dev/null |
		while IFS= read -r f; do
			[ -f "$f" ] && printf '%s\n' "$f"
		done |
		tr '\n' '\0' |
		xargs -0 -r awk '
		FNR == 1 { man = (FILENAME ~ /\.[1-8]$/) }
		{
			s = $0
			if (man) {
				gsub(/\\f(\(..|\[[^]]*\]|.)/, "", s)
				gsub(/\\-/, "-", s)
				gsub(/\\&/, "", s)
				gsub(/\\e/, "\\", s)
			}
			# URLs are not files of this tree
			gsub(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^ \t"'\''<>()`]*/, " ", s)
			pos = 0
			while (match(s, /[A-Za-z0-9_.\/+-]*[A-Za-z0-9_+-]\.md/)) {
				start = pos + RSTART
				ref = substr(s, RSTART, RLENGTH)
				before = RSTART > 1 ? substr(s, RSTART - 1, 1) : ""
				after = substr(s, RSTART + RLENGTH, 1)
				after2 = substr(s, RSTART + RLENGTH + 1, 1)
				rest = RSTART + RLENGTH
				pos += rest - 1
				s = substr(s, rest)
				# "x.mdx", "x.md.bak": not a .md name
				if (after ~ /[A-Za-z0-9_]/ || (after == "." && after2 ~ /[A-Za-z0-9]/))
					continue
				# $x.md, %s.md, $(dir)/x.md, ${x}.md, <dir>/x.md, *.md ...
				if (before != "" && index("$%)}]>*@\\", before))
					continue
				printf "%s\t%d\t%s\n", FILENAME, FNR, ref
			}
		}'
}

bad=0
while IFS=$'\t' read -r file line ref; do
	dir=$(dirname "$file")
	if [ -e "$dir/$ref" ] || [ -e "./$ref" ]; then
		continue
	fi
	echo "$file:$line: $ref"
	bad=$((bad + 1))
done < <(candidates)

if [ "$bad" -gt 0 ]; then
	echo "check-refs: $bad reference(s) to Markdown files that do not exist" >&2
	exit 1
fi
exit 0
