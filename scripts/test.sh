#!/usr/bin/env bash
# Install what is needed, build, and run every test: unit tests (CUnit),
# short fuzz runs, the host end-to-end test and the lab scenarios.
# Ends with one line "tests: N passed, M failed"; exit 0 only if none failed.
#   scripts/test.sh [--no-lab]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
lab=1
[ "${1:-}" = --no-lab ] && lab=0

passed=0 failed=0 failures=()
checks_passed=0 checks_failed=0
step() {
	local name=$1; shift
	echo "=== $name"
	local t0=$SECONDS
	if "$@"; then
		passed=$((passed + 1)); echo "=== $name: PASS ($((SECONDS - t0)) s)"
	else
		failed=$((failed + 1)); failures+=("$name"); echo "=== $name: FAIL ($((SECONDS - t0)) s)"
	fi
}
# A check of the test environment, not of domprof: reported like a step but
# counted apart, so "tests: N passed" counts domprof's tests only.
self_check() {
	local p=$passed f=$failed
	step "$@"
	checks_passed=$((checks_passed + passed - p)) checks_failed=$((checks_failed + failed - f))
	passed=$p failed=$f
}

if [ $lab = 1 ]; then scripts/install-deps.sh --lab || exit 1; else scripts/install-deps.sh || exit 1; fi
scripts/build.sh || { echo "tests: 0 passed, 1 failed"; exit 1; }
build=${DP_BUILD_DIR:-$top/build}
export DP_BUILD=$build DP_PREFIX=$build/stage/usr/local
export DOMPROF_EVENTS_DIR=$DP_PREFIX/share/domprof/events

unit_tests() {
	# test_ctl's real-daemon case skips without perf unless told not to
	DOMPROF_TEST_REQUIRE_PERF=1 make -C "$build" -j"$(nproc)" check >"$build/check.out" 2>&1
	local rc=$?
	grep -E '^(PASS|FAIL|XFAIL|XPASS|ERROR|SKIP):' "$build/check.out"
	grep -E '^# (TOTAL|PASS|FAIL|ERROR)' "$build/check.out" | tail -4
	if [ $rc -ne 0 ]; then
		find "$build" -name 'test-suite.log' -newer "$build/check.out" -o -name 'test_*.log' -newer "$build/make.out" |
			while read -r f; do grep -q -E 'FAIL|Failed|failed [1-9]' "$f" && { echo "--- $f"; tail -40 "$f"; }; done
	fi
	return $rc
}
step "unit tests" unit_tests
step "fuzz (short)" make -C "$build" fuzz-short
step "host end-to-end: known ratio vs opreport and perf" tests/e2e/host-ratio.sh
step "host end-to-end: opannotate, flame graph, pprof, oparchive vs opreport" tests/e2e/host-views.sh
step "host end-to-end: call graph 2:1 (opreport -c) beside perf record -g" tests/e2e/host-callgraph.sh
step "host end-to-end: session directory and opreport input attacks (issue 9)" tests/e2e/trust-files.sh
step "host end-to-end: privsep worker unprivileged under seccomp, profile whole" tests/e2e/host-privsep.sh
# Lab self-checks: smoke (KVM guests in L1, perf sees their samples) and
# libvirt (libvirtd in L1 runs a domain with its agent channel) test the
# lab, not domprof.  They run first: when they fail, the lab tests after
# them say nothing about domprof.
lab_checks="smoke libvirt"
# The lab scenarios that test domprof; demo (the README's main job) and
# boot-loop (the emulator's fault rate) are not tests.
lab_tests="agent domains exact kmod kmod-compare kmod-exact libvirt-domprof trust-identity"
if [ $lab = 1 ]; then
	for n in $lab_checks; do
		self_check "lab self-check: $n" tests/lab/run.sh "$n" --stage "$build/stage"
	done
	for n in $lab_tests; do
		step "lab: $n" tests/lab/run.sh "$n" --stage "$build/stage"
	done
	# the demo's session, read here: flame graph, pprof and opreport agree
	step "lab: demo views (flame graph, pprof vs opreport)" tests/lab/lab-views.sh --stage "$build/stage"
	echo "lab self-checks: $checks_passed passed, $checks_failed failed"
fi
[ ${#failures[@]} -eq 0 ] || printf 'failed: %s\n' "${failures[@]}"
echo "tests: $passed passed, $failed failed"
[ $failed -eq 0 ] && [ $checks_failed -eq 0 ]
