#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# fuzz_ioctl.sh - the ioctl fuzzer for a bounded time (FUZZ_SECS, default 30;
# FUZZ_SEED replays a run's choices).  Passes if the kernel survived, the
# module still moves data afterwards (fuzz_ioctl's own two results), and the
# kernel log of the run has no oops, WARNING, lockdep, KASAN or UBSAN report.
# Leaks and pins left behind are the runner's post-check.  For long runs:
# make fuzz FUZZ_SECS=N [KERNEL=debug].
. "$(dirname "$0")/lib.sh"

[ -x "$SELFTEST_DIR/fuzz_ioctl" ] || ktap_skip_all "no fuzz_ioctl next to the test"
rdmaxfer_setup

ktap_plan 3
kmsg_mark
set -- -t "${FUZZ_SECS:-30}" -j "${FUZZ_THREADS:-4}"
[ -n "${FUZZ_SEED:-}" ] && set -- "$@" -s "$FUZZ_SEED"
out=$("$SELFTEST_DIR/fuzz_ioctl" "$@" 2>&1)
rc=$?
# its own KTAP, as diagnostics here
printf '%s\n' "$out" | grep -v '^TAP version\|^1\.\.' | sed 's/^# //; s/^/# /'
printf '%s\n' "$out" | grep -q '^ok 1 survived'
ktap_result "survived" $?
[ $rc -eq 0 ]
ktap_result "works_after" $?

hits=$(kernel_log_problems)
r=$?
[ $r -eq 0 ] || ktap_diag "$hits"
ktap_result "kernel_log_clean" $r
ktap_finish
