#!/bin/sh
# runtests.sh - the guest's check mode: run a kselftest install with kselftest's own
# runner (kselftest/runner.sh, from linux-source, installed next to the tests), and check
# after every test that it left nothing behind.
#
#   runtests.sh BASE_DIR [LIST]       KTAP on stdout
#
# BASE_DIR is a kselftest install: kselftest/runner.sh, kselftest-list.txt, a directory per
# collection.  LIST (default BASE_DIR/kselftest-list.txt) has lines COLLECTION:PROG; each is
# run in order by runner.sh's run_one(), which prints "# selftests: COLLECTION: PROG", the
# test's output prefixed with "# " (its own KTAP becomes nested results "# ok N ..."), and
# "ok N selftests: COLLECTION: PROG" (or "# SKIP", "not ok ... # TIMEOUT S seconds", "not ok
# ... # exit=N"), with the timeout of COLLECTION/settings.  What this adds:
#  - the debug kernel (kmemleak, KASAN, lockdep) runs everything 3-10x slower: there the
#    settings' timeout is doubled, in the guest's copy of the settings file, and what
#    debug_omit() names is reported as skipped, with its reason, not run (DEBUG_ALL=1 runs
#    it): the 32-bit builds of the two long C suites (11 of the suite's 58 minutes there),
#    whose tests the 64-bit builds run under KASAN just before them (the compat ioctl
#    entry still runs there in abi_test_32, ioctl_test_32 and ring_test_32, and the whole
#    32-bit suite on every other kernel), cli_sockets.sh, TCP and UDP only, the
#    benchmarks cli_bench.sh and cli_regbench.sh (3.5 minutes), whose paths the tests
#    before them ran under KASAN, and cli_info.sh and cli_atomic.sh (2 minutes), the
#    CLI's queries and atomics over ioctls ioctl_test and xfer_test ran there;
#  - after every PROG, before its result line is printed, a post-check that it left nothing
#    behind:
#      pinned pages: nr_foll_pin_acquired - nr_foll_pin_released (/proc/vmstat) is back to
#      its value before the first test;
#      RDMA objects: `rdma res show` (per device) is back to it (a test's own Soft-RoCE
#      device is checked and removed by the test itself: selftests' rxe_env.sh);
#    releases finish asynchronously, so both are polled for up to POSTCHECK_WAIT seconds
#    (default 20); a leak turns the result into "not ok N ... # post-check", with details;
#  - on a kernel with kmemleak, one more result, "kmemleak", after the last PROG: a scan
#    finds no suspect (what boot left is cleared first).  A scan takes 20-30 s there, so it
#    runs once; POSTCHECK_KMEMLEAK=each scans after every PROG instead (a leak is then
#    charged to the PROG it followed, or, unreferenced for less than kmemleak's 5 s, to the
#    next one).
# The caller (guest/init) adds the "# rig: done" end marker.

BASE_DIR=${1:-/opt/rdmaxfer/selftests}
list=${2:-$BASE_DIR/kselftest-list.txt}
export BASE_DIR
if ! [ -r "$list" ] || ! [ -r "$BASE_DIR/kselftest/runner.sh" ]; then
	echo "TAP version 13"
	echo "1..0"
	echo "# rig: error: no $list or no $BASE_DIR/kselftest/runner.sh in the stage"
	exit 0
fi
# shellcheck source=/dev/null
. "$BASE_DIR/kselftest/runner.sh"
# runner.sh prefixes with prefix.pl, or without perl (as here) with sed, which holds the
# lines of a pipe until the test ends; awk flushes each one, so a hung test shows how far it
# got and pair/vanish.sh's "rig-request:" lines reach the rig at once
tap_prefix() { awk '{ print "# " $0; fflush() }'; }
# runner.sh's timeout has no kill-after and leaves stdin (the console) open: a test
# stuck after SIGTERM would hold up every test after it
# shellcheck disable=SC2086,SC2154 # $1: the command line, split on purpose; the timeout: runner.sh's
tap_timeout() { /usr/bin/timeout -k 30 "$kselftest_timeout" $1 </dev/null; }

KMEMLEAK=/sys/kernel/debug/kmemleak
[ -w "$KMEMLEAK" ] || KMEMLEAK=
POSTCHECK_WAIT=${POSTCHECK_WAIT:-20}
POSTCHECK_KMEMLEAK=${POSTCHECK_KMEMLEAK:-end}
DEBUG_ALL=${DEBUG_ALL:-0}

# debug_omit COLLECTION:PROG: why the debug kernel does not run it (nothing: it does)
debug_omit() {
	case $1 in
	rdmaxfer:xfer_test_32 | rdmaxfer:slots_test_32)
		echo "the 64-bit build ran these tests under KASAN; the 32-bit one runs on the other kernels" ;;
	rdmaxfer:cli_sockets.sh)
		echo "the CLI's TCP and UDP baseline: no code of the module under test" ;;
	rdmaxfer:cli_bench.sh | rdmaxfer:cli_regbench.sh)
		echo "measurement loops over what xfer_test, ring_test and cli_xfer.sh ran under KASAN; numbers under KASAN mean nothing" ;;
	rdmaxfer:cli_info.sh | rdmaxfer:cli_atomic.sh)
		echo "the CLI's queries and atomics: the ioctls behind them ran under KASAN in ioctl_test and xfer_test" ;;
	esac
}

# twice the budget on the debug kernel, and more so when the host is busy
if [ -n "$KMEMLEAK" ]; then
	for d in $(cut -s -d: -f1 "$list" | sort -u); do
		f=$BASE_DIR/$d/settings
		t=$(sed -n 's/^timeout=\([0-9][0-9]*\).*/\1/p' "$f" 2>/dev/null | tail -n 1)
		[ -n "$t" ] && sed -i "s/^timeout=.*/timeout=$((t * 2))/" "$f"
	done
fi

pins() {
	awk '$1 == "nr_foll_pin_acquired" { a = $2 } $1 == "nr_foll_pin_released" { r = $2 }
	     END { print a - r }' /proc/vmstat
}
# per-device counts, without the device index (it changes when a device is re-added);
# CQs by owner but ib_core's CQ pool, whose CQs stay until their device goes
rdma_res() {
	rdma res show 2>/dev/null | sed 's/^[0-9]*: //; s/ cq [0-9]*//' | sort
	rdma res show cq 2>/dev/null | grep -v 'comm \[ib_core\]' |
		sed -n 's/^dev \([^ ]*\) .* comm \(.*\)/\1 cq \2/p' | sort | uniq -c
}
kmemleak_scan() {   # prints the suspects found since the last clear, then clears them
	[ -n "$KMEMLEAK" ] || return 0
	echo scan >"$KMEMLEAK" 2>/dev/null
	cat "$KMEMLEAK" 2>/dev/null
	echo clear >"$KMEMLEAK" 2>/dev/null
}
kmemleak_report() {   # prints the suspects of a scan (nothing if none)
	leaks=$(kmemleak_scan)
	if [ -n "$leaks" ]; then
		echo "kmemleak: $(echo "$leaks" | grep -c 'unreferenced object') new suspect(s):"
		echo "$leaks" | head -n 60
	fi
}
# post_check: prints what the last PROG left behind (nothing if all is back to the baseline)
post_check() {
	t=0
	while :; do
		p=$(pins) r=$(rdma_res)
		[ "$p" = "$base_pins" ] && [ "$r" = "$base_res" ] && break
		[ "$t" -ge "$POSTCHECK_WAIT" ] && break
		sleep 1
		t=$((t + 1))
	done
	[ "$p" = "$base_pins" ] ||
		echo "pinned pages left: $((p - base_pins)) (FOLL_PIN acquired - released)"
	if [ "$r" != "$base_res" ]; then
		echo "RDMA objects left (rdma res show), before:"
		echo "$base_res"
		echo "after:"
		echo "$r"
	fi
	if [ "$POSTCHECK_KMEMLEAK" = each ]; then kmemleak_report; fi
}

# check_one NUM COLLECTION PROG: run_one, with its result line held back until the
# post-check has said whether PROG left something behind
resfile=/tmp/rig-test.result
check_one() {
	# shellcheck disable=SC2034 # run_one's result lines use the global
	test_num=$1
	start=$(date +%s)
	: >"$resfile"
	(cd "$BASE_DIR/$2" && run_one "$2" "$3" "$1") |
		awk -v f="$resfile" -v n="$1" '
			$0 ~ "^(not )?ok " n " selftests: " { print > f; close(f); next }
			{ print; fflush() }'
	result=$(cat "$resfile")
	[ -n "$result" ] || result="not ok $1 selftests: $2: $3 # no result from runner.sh"
	elapsed=$(($(date +%s) - start))
	left=$(post_check)
	echo "# time: ${elapsed} s, post-check $(($(date +%s) - start - elapsed)) s"
	if [ -n "$left" ]; then
		echo "$left" | awk '{ print "# post-check: " $0 }'
		# (no '#' of the test's own result may follow: "# SKIP" would count it as skipped)
		was=$(echo "${result#* $2: $3}" | tr '#' '-')
		echo "not ok $1 selftests: $2: $3 # post-check (was:$was): pins, RDMA objects or leaks left behind"
	else
		echo "$result"
	fi
}

base_pins=$(pins)
base_res=$(rdma_res)
kmemleak_scan >/dev/null   # what boot left: not ours

entries=$(grep -v '^#' "$list" | grep ':')
n=$(echo "$entries" | grep -c .)
[ -n "$KMEMLEAK" ] && n=$((n + 1))
echo "TAP version 13"
echo "1..$n"
i=0
for e in $entries; do
	i=$((i + 1))
	why=
	[ -z "$KMEMLEAK" ] || [ "$DEBUG_ALL" = 1 ] || why=$(debug_omit "$e")
	if [ -n "$why" ]; then
		echo "# selftests: ${e%%:*}: ${e#*:}"
		echo "ok $i selftests: ${e%%:*}: ${e#*:} # SKIP on the debug kernel: $why"
		continue
	fi
	check_one $i "${e%%:*}" "${e#*:}"
done

if [ -n "$KMEMLEAK" ]; then
	i=$((i + 1))
	echo "# selftests: rig: kmemleak"
	start=$(date +%s)
	sleep 6   # kmemleak reports objects unreferenced for 5 s or more
	left=$(kmemleak_report)
	echo "# time: $(($(date +%s) - start)) s (a scan after all of the above)"
	if [ -n "$left" ]; then
		echo "$left" | awk '{ print "# " $0 }'
		echo "not ok $i selftests: rig: kmemleak # suspects left by the tests above"
	else
		echo "ok $i selftests: rig: kmemleak"
	fi
fi
