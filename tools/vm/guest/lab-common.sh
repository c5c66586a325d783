#!/bin/bash
# lab-common.sh - helpers shared by the course labs (Documentation/labs/), sourced by
# lab-N.sh in the rig's guest (/usr/lib/rig/). Not a lab itself.
#
# Output convention of every lab (tools/vm/labs.sh parses it; a student reads it):
#   $ CMD                 a command as typed, followed by its output
#   ### DATA NAME         start of a data block: one "# col col ..." header line, then
#   ...                   rows of whitespace-separated columns (gnuplot reads them as is)
#   ### END               end of the block
#   ### FAIL WHAT         a measurement that did not run (the lab goes on, exits 1 at the end)
# Everything else is commentary.
#
# Environment (set on the rig.sh run command line): LAB_SECS (seconds per bandwidth
# point, default 2), LAB_COUNT (ping round trips per series, default 2000).

LAB_HOST=${LAB_HOST:-192.0.2.1}
LAB_PORT=${LAB_PORT:-18515}
LAB_SECS=${LAB_SECS:-2}
LAB_COUNT=${LAB_COUNT:-2000}
LAB_FAILS=0
LAB_SERVER_PID=

# show CMD...: print the command line, run it (stderr folded into stdout); returns its status.
show() {
	echo "\$ $*"
	bash -c "$*" 2>&1
	local rc=$?
	echo
	return $rc
}

# The course's own programs (tools/labs/) and the pingpong helpers of labs 6 and 7.
LABS=/opt/rdmaxfer/labs
PP_PORT=18801
PP_PID=

# pp_server ARGS...: the pingpong server in the background, its output in /tmp/pp.log.
pp_server() {
	local i=0
	echo "\$ $LABS/pingpong server -p $PP_PORT $* &"
	"$LABS/pingpong" server -p "$PP_PORT" "$@" >/tmp/pp.log 2>&1 &
	PP_PID=$!
	until grep -q listening /tmp/pp.log 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$PP_PID" 2>/dev/null; then
			cat /tmp/pp.log
			return 1
		fi
		sleep 0.1
	done
}

# pp_client OUT ARGS...: the pingpong client (shown, output also in OUT); then the
# server's output once it has ended (killed after 10 s).
pp_client() {
	local out=$1 i=0
	shift
	show "$LABS/pingpong client $LAB_HOST -p $PP_PORT $*" | tee "$out"
	while kill -0 "$PP_PID" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill "$PP_PID" 2>/dev/null
	wait "$PP_PID" 2>/dev/null
	echo "(the server printed:)"
	cat /tmp/pp.log
	echo
}

# expect FILE PATTERN WHAT: a FAIL line unless FILE has PATTERN.
expect() {
	grep -q -- "$2" "$1" || fail "$3: no \"$2\" in the output"
}

# pair_run OUT SERVER CLIENT: SERVER in the background, CLIENT a second later, then the
# server's output; shown as typed, everything also in OUT (perftest, rping: a program
# that is its own server).
pair_run() {
	show "$2 >/tmp/pair-server.out 2>&1 & sleep 1; $3; wait; cat /tmp/pair-server.out" |
		tee "$1"
}

# section TITLE: a visible heading in the lab's output.
section() {
	echo
	echo "==== $* ===="
	echo
}

fail() {
	echo "### FAIL $*"
	LAB_FAILS=$((LAB_FAILS + 1))
}

data_begin() {   # NAME "col col ..."
	echo "### DATA $1"
	echo "# $2"
}
data_end() { echo "### END"; }

# wait_active: until rxe0's port is ACTIVE (after rdma link add or an MTU change).
wait_active() {
	local i=0
	until rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE'; do
		i=$((i + 1))
		[ $i -gt 100 ] && { echo "rxe0/1 is not ACTIVE"; return 1; }
		sleep 0.1
	done
}

# active_mtu [DEV]: the port's active IB MTU in bytes (ibv_devinfo: "active_mtu: 4096 (5)").
active_mtu() {
	ibv_devinfo -d "${1:-rxe0}" 2>/dev/null | awk '$1 == "active_mtu:" { print $2; exit }'
}

# set_mtu BYTES: both ends of the veth pair (veth drops frames larger than the receiver's MTU).
set_mtu() {
	ip link set veth0 mtu "$1" && ip link set veth1 mtu "$1" && wait_active
}

# start_server: `rdmaxfer serve` in the background (RDMA, and TCP + UDP on the same port);
# waits until it listens. Its log: /tmp/serve.log.
start_server() {
	local i=0
	stop_server
	rdmaxfer serve --port "$LAB_PORT" >/tmp/serve.log 2>&1 &
	LAB_SERVER_PID=$!
	until grep -q listening /tmp/serve.log 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$LAB_SERVER_PID" 2>/dev/null; then
			echo "rdmaxfer serve did not start:"
			cat /tmp/serve.log
			LAB_SERVER_PID=
			return 1
		fi
		sleep 0.1
	done
}

stop_server() {
	[ -n "$LAB_SERVER_PID" ] || return 0
	kill "$LAB_SERVER_PID" 2>/dev/null
	wait "$LAB_SERVER_PID" 2>/dev/null
	LAB_SERVER_PID=
}

# run_json OUT CMD...: run a measuring command with --json; its JSON goes to OUT, its
# stderr to OUT.err (shown on failure). Returns the command's status (1 also when OUT
# is not valid JSON).
run_json() {
	local out=$1 rc
	shift
	echo "\$ $*"
	"$@" >"$out" 2>"$out.err"
	rc=$?
	if [ $rc -ne 0 ] || ! jq -e . "$out" >/dev/null 2>&1; then
		echo "(exit status $rc)"
		cat "$out.err" "$out" 2>/dev/null | head -n 20
		return 1
	fi
	return 0
}

lab_exit() {
	stop_server
	echo
	if [ "$LAB_FAILS" -gt 0 ]; then
		echo "$LAB_FAILS measurement(s) failed (### FAIL lines above)"
		exit 1
	fi
	exit 0
}
