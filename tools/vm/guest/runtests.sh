#!/bin/sh
# KTAP runner for a kselftest install dir: runtests.sh DIR  (KTAP on stdout)
#
# Runs each PROG of DIR/kselftest-list.txt (lines "COLLECTION:PROG", in order) from DIR,
# with the per-test timeout from DIR/settings ("timeout=N", default 45 s), and prints
#   # selftests: rdmaxfer: PROG
#     <its stdout, indented by two spaces: its own KTAP becomes nested subtests>
#     # <its stderr>
#   ok I PROG | ok I PROG # SKIP (exit 4) | not ok I PROG # TIMEOUT | not ok I PROG # exit=N
# The caller (guest/init) adds the "# rig: done" end marker.

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

progs=$(sed -n 's/^[^#:][^:]*:\(.*[^[:space:]]\)[[:space:]]*$/\1/p' "$list")
echo "TAP version 13"
echo "1..$(echo "$progs" | grep -c .)"

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
	if [ "$rc" = 0 ]; then
		echo "ok $i $prog"
	elif [ "$rc" = 4 ]; then
		echo "ok $i $prog # SKIP"
	elif [ "$rc" = 124 ] || { [ "$rc" = 137 ] && [ "$elapsed" -ge "$tmo" ]; }; then
		echo "not ok $i $prog # TIMEOUT"
	else
		echo "not ok $i $prog # exit=$rc"
	fi
done
