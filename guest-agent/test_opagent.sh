#!/bin/sh
# Run opagent --once --output=FILE on this machine and decode FILE:
# HELLO, modules, kallsyms, the snapshot and an MMAP of a binary we start
# must be there, and the file must be a clean sequence of frames.
# Needs root (system-wide perf events); skipped otherwise.
set -u
OPAGENT=${OPAGENT:-./opagent}
AGENT_DUMP=${AGENT_DUMP:-./agent-dump}
[ "$(id -u)" = 0 ] || { echo "not root: skipped"; exit 77; }

tmp=$(mktemp -d) || exit 99
trap 'kill $sleeper 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# A process with a distinctive binary, started before the agent (so the
# /proc snapshot must find it) ...
cp /bin/sleep "$tmp/dp-agent-test-sleeper" || exit 99
"$tmp/dp-agent-test-sleeper" 30 &
sleeper=$!

file "$OPAGENT" 2>/dev/null | grep -q 'statically linked' ||
	{ command -v file >/dev/null && fail "opagent is not statically linked"; }

"$OPAGENT" --once --output="$tmp/frames" || fail "opagent exited $?"
"$AGENT_DUMP" -v "$tmp/frames" > "$tmp/dump" || { cat "$tmp/dump"; fail "agent-dump"; }
grep -v '^\(mmap\|comm\|task\) ' "$tmp/dump"

grep -q "^hello proto 1-2 .* clock 1 release $(uname -r)\$" "$tmp/dump" || fail "no HELLO"
# x86: TSC pairs for the host's exact clock, the first right after HELLO
case $(uname -m) in x86_64|i?86)
	grep -q '^tsc cpu [0-9]* time [1-9][0-9]* tsc [1-9][0-9]* window [0-9]*$' "$tmp/dump" ||
		fail "no TSC pair"
	"$OPAGENT" --once --no-tsc --output="$tmp/frames-notsc" || fail "opagent --no-tsc exited $?"
	"$AGENT_DUMP" "$tmp/frames-notsc" | grep -q '^tsc ' && fail "TSC pair despite --no-tsc"
	;;
esac
if [ -r /proc/modules ]; then
	grep -q '^modules bytes [0-9]* chunks [0-9]* status 0$' "$tmp/dump" || fail "no modules"
else	# a kernel built without modules: the END says so
	grep -q '^modules bytes 0 chunks 0 status 1$' "$tmp/dump" || fail "no MODULES_END"
fi
grep -q '^kallsyms bytes [1-9][0-9]* chunks [1-9][0-9]* status 0$' "$tmp/dump" || fail "no kallsyms"
grep -q '^state tasks [1-9]' "$tmp/dump" || fail "no STATE_END"
grep -q "^mmap .* pid $sleeper .* cookie [1-9][0-9]* bid [0-9a-f]\{40\} $tmp/dp-agent-test-sleeper\$" "$tmp/dump" ||
	fail "no MMAP of the sleeper with cookie and build id"
grep -q "^comm .* pid $sleeper tid $sleeper dp-agent-test-" "$tmp/dump" || fail "no COMM of the sleeper"
grep -q "^mmap .*/libc.so.6\$" "$tmp/dump" || fail "no MMAP of libc"

# ... and one started while it runs, which only perf can report.
"$OPAGENT" --duration=2 --output="$tmp/frames2" &
agent=$!
sleep 1
/bin/true; "$tmp/dp-agent-test-sleeper" 0
wait $agent || fail "opagent --duration exited $?"
"$AGENT_DUMP" -v "$tmp/frames2" > "$tmp/dump2" || fail "agent-dump (2)"
grep -q '^comm .* exec dp-agent-test-' "$tmp/dump2" || fail "no COMM exec from perf"
grep -q "^mmap [1-9][0-9]* cpu [0-9] .*$tmp/dp-agent-test-sleeper\$" "$tmp/dump2" ||
	fail "no MMAP from perf"
grep -q '^frames .* switches [1-9]' "$tmp/dump2" || fail "no context switches"
# The symbol table follows the snapshot, beside the stream, and is whole.
grep -q '^kallsyms bytes [1-9][0-9]* chunks [1-9][0-9]* status 0$' "$tmp/dump2" ||
	fail "no whole kallsyms in the streaming run"
ks_line=$(grep -n '^kallsyms bytes' "$tmp/dump2" | cut -d: -f1)
st_line=$(grep -n '^state tasks' "$tmp/dump2" | cut -d: -f1)
[ "$st_line" -lt "$ks_line" ] || fail "kallsyms ended before the snapshot (lines $ks_line, $st_line)"
echo "PASS"
