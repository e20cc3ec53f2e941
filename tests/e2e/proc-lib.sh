# Sourced by the end-to-end scripts that watch the daemon's processes.
# alive PID: running and not a zombie (a daemon's parent is init, which
# may reap it late).  The state is read once, so a process reaped between
# two looks counts as gone, not as running (two looks once read an empty
# state as running: "can't read stat").
alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ]
}
