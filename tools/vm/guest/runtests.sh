#!/bin/sh
# KTAP runner for a kselftest install dir: runtests.sh DIR  (KTAP on stdout)
#
# Runs each PROG of DIR/kselftest-list.txt (lines "COLLECTION:PROG", in order) from DIR,
# with the per-test timeout from DIR/settings ("timeout=N", default 45 s; doubled on a
# kernel with kmemleak, the debug kernel), and prints
#   # selftests: rdmaxfer: PROG
#     <its stdout, indented by two spaces: its own KTAP becomes nested subtests>
#     # <its stderr>
#   ok I PROG | ok I PROG # SKIP (exit 4) | not ok I PROG # TIMEOUT | not ok I PROG # exit=N
#   | not ok I PROG # post-check
# The caller (guest/init) adds the "# rig: done" end marker.
#
# After every PROG, whatever it printed, the runner checks that it left nothing behind:
#  - pinned pages: nr_foll_pin_acquired - nr_foll_pin_released (/proc/vmstat) is back to
#    its value before the first test;
#  - RDMA objects: `rdma res show` (pd, cq, qp, cm_id, mr, ... per device) is back to it;
# Releases finish asynchronously (work items, deferred puts, rxe's cleanup), so both are
# polled for up to POSTCHECK_WAIT seconds (default 20) before they count as a leak.  A
# leak turns the PROG's result into "not ok ... # post-check", with the details as
# diagnostics.
# On a kernel with kmemleak (the debug kernel), one more result, "kmemleak", follows the
# last PROG: a scan after them all finds no suspect (what boot left is cleared first).  A
# scan takes 20-30 s there, so by default it runs once; each suspect comes with the stack
# of its allocation.  POSTCHECK_KMEMLEAK=each scans after every PROG instead (a leak is
# then charged to the PROG it followed: kmemleak reports an object only once it has been
# unreferenced for 5 s, so a leak from the last seconds of one PROG may show after the
# next one).

dir=${1:-/opt/rdmaxfer/selftests}
list=$dir/kselftest-list.txt
if ! [ -r "$list" ]; then
	echo "TAP version 13"
	echo "1..0"
	echo "# rig: error: no $list in the stage"
	exit 0
fi
cd "$dir" || exit 1

tmo=45
if [ -r settings ]; then
	t=$(sed -n 's/^timeout=\([0-9][0-9]*\).*/\1/p' settings | tail -n 1)
	[ -n "$t" ] && tmo=$t
fi

KMEMLEAK=/sys/kernel/debug/kmemleak
[ -w "$KMEMLEAK" ] || KMEMLEAK=
# The debug kernel (kmemleak, KASAN, lockdep) runs everything 3-10x slower,
# and more so when the host is busy: twice the budget there.
[ -n "$KMEMLEAK" ] && tmo=$((tmo * 2))
POSTCHECK_WAIT=${POSTCHECK_WAIT:-20}
POSTCHECK_KMEMLEAK=${POSTCHECK_KMEMLEAK:-end}

pins() {
	awk '$1 == "nr_foll_pin_acquired" { a = $2 } $1 == "nr_foll_pin_released" { r = $2 }
	     END { print a - r }' /proc/vmstat
}
# per-device counts, without the device index (it changes when rxe0 is re-added)
rdma_res() {
	/usr/sbin/rdma res show 2>/dev/null | sed 's/^[0-9]*: //' | sort
}
kmemleak_scan() {   # prints the suspects found since the last clear, then clears them
	[ -n "$KMEMLEAK" ] || return 0
	echo scan >"$KMEMLEAK" 2>/dev/null
	cat "$KMEMLEAK" 2>/dev/null
	echo clear >"$KMEMLEAK" 2>/dev/null
}
# post_check: prints what PROG left behind (nothing if all is back to the baseline)
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
kmemleak_report() {   # prints the suspects of a scan (nothing if none)
	leaks=$(kmemleak_scan)
	if [ -n "$leaks" ]; then
		echo "kmemleak: $(echo "$leaks" | grep -c 'unreferenced object') new suspect(s):"
		echo "$leaks" | head -n 60
	fi
}
base_pins=$(pins)
base_res=$(rdma_res)
kmemleak_scan >/dev/null   # what boot left: not ours

progs=$(sed -n 's/^[^#:][^:]*:\(.*[^[:space:]]\)[[:space:]]*$/\1/p' "$list")
nres=$(echo "$progs" | grep -c .)
[ -n "$KMEMLEAK" ] && nres=$((nres + 1))
echo "TAP version 13"
echo "1..$nres"

rcfile=/tmp/rig-test.rc
i=0
for prog in $progs; do
	i=$((i + 1))
	echo "# selftests: rdmaxfer: $prog"
	start=$(date +%s)
	# stdout -> "  line", stderr -> "  # line"; awk flushes each line so a guest that
	# hangs still shows how far the test got
	{ { timeout -k 10 "$tmo" "./$prog" </dev/null 2>&1 1>&3 3>&-
	    echo $? >"$rcfile"; } |
	  awk '{ print "# " $0; fflush() }' >&3; } 3>&1 |
	awk '{ print "  " $0; fflush() }'
	rc=$(cat "$rcfile")
	elapsed=$(($(date +%s) - start))
	left=$(post_check)
	echo "  # time: ${elapsed} s, post-check $(($(date +%s) - start - elapsed)) s"
	if [ -n "$left" ]; then
		echo "$left" | awk '{ print "  # post-check: " $0 }'
		echo "not ok $i $prog # post-check (exit=$rc): pins, RDMA objects or leaks left behind"
	elif [ "$rc" = 0 ]; then
		echo "ok $i $prog"
	elif [ "$rc" = 4 ]; then
		echo "ok $i $prog # SKIP"
	elif [ "$rc" = 124 ] || { [ "$rc" = 137 ] && [ "$elapsed" -ge "$tmo" ]; }; then
		echo "not ok $i $prog # TIMEOUT"
	else
		echo "not ok $i $prog # exit=$rc"
	fi
done

if [ -n "$KMEMLEAK" ]; then
	i=$((i + 1))
	echo "# selftests: rdmaxfer: kmemleak"
	start=$(date +%s)
	sleep 6   # kmemleak reports objects unreferenced for 5 s or more
	left=$(kmemleak_report)
	echo "  # time: $(($(date +%s) - start)) s (a scan after all of the above)"
	if [ -n "$left" ]; then
		echo "$left" | awk '{ print "  # " $0 }'
		echo "not ok $i kmemleak # suspects left by the tests above"
	else
		echo "ok $i kmemleak"
	fi
fi
