# The checks every view test shares (sourced by host-views.sh on a host
# session and by tests/lab/lab-views.sh on a lab scenario's session): the
# flame graph, rendered by a real browser, and the pprof file, read back by
# go tool pprof, count the top symbols of opreport -l exactly as opreport
# does.  The caller defines $bin (domprof's bin directory) and the
# functions fail MSG and ok MSG.

# The rows of an opreport -l listing as "stack<TAB>samples", the stack as
# the flame graph and pprof build it: host;app;image;symbol,
# DOMAIN;{vmm};image;symbol or DOMAIN;app;image;symbol.  The domain and
# app columns are there only when the session has domains or --separate=lib.
views_rows() {
	awk '/^samples +%/ { dom = / domain /; app = / app name /; on = 1; next }
	on && $1 ~ /^[0-9]+$/ {
		i = 3; d = "host"; if (dom) d = $(i++)
		img = $(i++); a = img; if (app) a = $(i++)
		s = $i; for (i++; i <= NF; i++) s = s " " $i
		if (d ~ /\/vmm$/) { sub(/\/vmm$/, "", d); a = "{vmm}" }
		printf "%s;%s;%s;%s\t%s\n", d, a, img, s, $1 }' "$1"
}

# views_report SESSION WORK: opreport -l into WORK/report.out, its rows
# into WORK/report.rows and the top ones (the first VIEWS_TOP, 10) into
# WORK/top.rows.
views_report() {
	"$bin/opreport" -l --session-dir="$1" >"$2/report.out"
	views_rows "$2/report.out" >"$2/report.rows"
	head -n "${VIEWS_TOP:-10}" "$2/report.rows" >"$2/top.rows"
}

# views_flame SESSION WORK [FRAGMENT]: opflame --reverse's SVG (WORK/fg.svg) opened
# in headless Chromium with the URL fragment FRAGMENT (the page runs a
# search from it, as a user's click would), its DOM after the page's
# script ran in WORK/fg.dom, every frame as "stack<TAB>samples<TAB>matched"
# in WORK/fg.frames.  Then the top rows' counts must be the flame's.
# Needs views_report's files.  0 when they agree.
views_flame() {
	local session=$1 work=$2 frag=${3:-} browser profile bad
	browser=$(command -v chromium || command -v chromium-browser || true)
	# --reverse: each function's frame right on its binary holds its count
	# (the default view splits it among the stacks that reach it)
	"$bin/opflame" --reverse --session-dir="$session" -o "$work/fg.svg"
	if [ -z "$browser" ]; then
		fail "no chromium to render the flame graph (scripts/install-deps.sh installs it)"
		return 1
	fi
	profile=$(mktemp -d "$work/chromium.XXXXXX")
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$profile" --dump-dom "file://$work/fg.svg${frag:+#$frag}" \
		>"$work/fg.dom" 2>"$work/chromium.err" || true
	# stacks joined with ';'
	awk '/<g class="f/ {
		d = $0; sub(/.*data-d="/, "", d); sub(/".*/, "", d); d += 0
		n = $0; sub(/.*data-n="/, "", n); sub(/".*/, "", n)
		nm = $0; sub(/.*data-name="/, "", nm); sub(/".*/, "", nm)
		path[d] = nm; s = path[1]; for (i = 2; i <= d; i++) s = s ";" path[i]
		if (d > 0) printf "%s\t%s\t%d\n", s, n, /class="f[^"]* match/ }' "$work/fg.dom" >"$work/fg.frames"
	if [ ! -s "$work/fg.frames" ]; then
		fail "opflame: Chromium rendered no frames"
		tail -5 "$work/chromium.err"
		return 1
	fi
	# Rows of different binaries with one basename share a label, in
	# opreport as in the flame graph: compare sums over all rows.
	bad=$(awk -F'\t' 'FILENAME == ARGV[1] { fg[$1] = $2; next }
		FILENAME == ARGV[2] { all[$1] += $2; next }
		{ top[$1] = 1 }
		END { for (k in top) if (fg[k] != all[k]) printf "%s: flame %s, opreport %s; ", k, fg[k], all[k] }' \
		"$work/fg.frames" "$work/report.rows" "$work/top.rows")
	echo "opflame: $(wc -l <"$work/fg.frames") frames; top $(wc -l <"$work/top.rows") rows of opreport -l, flame/opreport (all rows of the label):"
	awk -F'\t' 'FILENAME == ARGV[1] { fg[$1] = $2; next }
		FILENAME == ARGV[2] { all[$1] += $2; next }
		{ printf "  %8s %8s  %s\n", fg[$1], all[$1], $1 }' \
		"$work/fg.frames" "$work/report.rows" "$work/top.rows"
	if [ -n "$bad" ]; then
		fail "opflame's counts differ from opreport's: $bad"
		return 1
	fi
	ok "opflame: the top symbols' counts equal opreport's"
}

# views_pprof SESSION WORK: oppprof's file (WORK/prof.pb.gz) read back by
# go tool pprof (-top -noinlines in WORK/pprof.top: a location's inlined
# frames folded into the function that holds them, as opreport counts; flat samples per function name in
# WORK/pprof.flat, -traces -noinlines in WORK/pprof.traces): its total and the top
# symbols' counts must be opreport's.  Needs views_report's files.  0 when
# they agree.
views_pprof() {
	local session=$1 work=$2 bad
	if [ ! -x "$bin/oppprof" ]; then
		fail "oppprof was not built (configure found no protobuf-c)"
		return 1
	elif ! command -v go >/dev/null; then
		fail "no go tool to read the pprof file back (scripts/install-deps.sh installs golang-go)"
		return 1
	fi
	"$bin/oppprof" --session-dir="$session" -o "$work/prof.pb.gz"
	views_go_pprof -top -noinlines -nodecount=1000000 -nodefraction=0 -edgefraction=0 "$work/prof.pb.gz" \
		>"$work/pprof.top" 2>"$work/pprof.err" || true
	views_go_pprof -traces -noinlines "$work/prof.pb.gz" >"$work/pprof.traces" 2>>"$work/pprof.err" || true
	rep_total=$(awk -F'\t' '{ n += $2 } END { print n + 0 }' "$work/report.rows")
	pp_total=$(sed -n 's/.*accounting for \([0-9]*\), .* of \([0-9]*\) total.*/\2/p' "$work/pprof.top")
	awk '/^ *flat +flat%/ { on = 1; next } on && NF >= 6 { s = $6; for (i = 7; i <= NF; i++) s = s " " $i; n[s] += $1 }
		END { for (k in n) printf "%s\t%s\n", k, n[k] }' "$work/pprof.top" >"$work/pprof.flat"
	# flat samples per function name in -top; opreport's per symbol name
	bad=$(awk -F'\t' 'FILENAME == ARGV[1] { pp[$1] = $2; next }
		FILENAME == ARGV[2] { split($1, p, ";"); all[p[4]] += $2; next }
		{ split($1, p, ";"); if (!(p[4] in seen)) { seen[p[4]] = 1
			if (pp[p[4]] != all[p[4]]) printf "%s: pprof %s, opreport %s; ", p[4], pp[p[4]], all[p[4]] } }' \
		"$work/pprof.flat" "$work/report.rows" "$work/top.rows")
	echo "oppprof: total ${pp_total:-none} (opreport $rep_total); top symbols, pprof/opreport (all rows of the name):"
	awk -F'\t' 'FILENAME == ARGV[1] { pp[$1] = $2; next }
		FILENAME == ARGV[2] { split($1, p, ";"); all[p[4]] += $2; next }
		{ split($1, p, ";"); if (!(p[4] in seen)) { seen[p[4]] = 1
			printf "  %8s %8s  %s\n", pp[p[4]], all[p[4]], p[4] } }' \
		"$work/pprof.flat" "$work/report.rows" "$work/top.rows"
	if [ "$pp_total" != "$rep_total" ]; then
		fail "oppprof: go tool pprof's total differs from opreport's"
		tail -3 "$work/pprof.err"
		return 1
	elif [ -n "$bad" ]; then
		fail "oppprof: top symbols differ: $bad"
		return 1
	fi
	ok "oppprof: go tool pprof -top's total and top symbols equal opreport's"
}

# go tool pprof on a file, offline, with no symbolization (the file has
# the names) and its cache in the work directory.
views_go_pprof() {
	HOME=${work:-$(mktemp -d)} GOTOOLCHAIN=local go tool pprof -symbolize=none "$@"
}
