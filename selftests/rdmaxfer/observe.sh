#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# observe.sh - what an admin sees of connections without their process:
# the tracepoints (kmod/trace.h) fire, with the right ids, when a connection
# comes up, moves data, idles and goes down; and debugfs's
# rdmaxfer/connections lists each connection's state.
#
# With every rdmaxfer event enabled in a tracefs instance of its own (other
# tracing is not disturbed): xfer_helper serve exposes a
# window to each client; xfer_helper write connects, WRITEs and READs back
# (64 KiB); xfer_helper idle connects and idles for 1.5 s with
# peer_timeout_ms=2000 (a keepalive probe every 0.5 s).  The trace must show
# conn_up on both sides (client and server), window_expose, an op_post and
# exactly one op_done with status 0 for each operation (matched by
# user_data), credits, flow control (the ADVERT sent and received),
# keepalive probes, and conn_down for every connection
# that came up.  While the idle connection is up, rdmaxfer/connections lists
# exactly its two ends (the write client's are gone), established, with a
# QP number, the peer's address, one window each way, no bytes moved.
# Runs on one RDMA device (lib.sh: rdmaxfer_setup).
. "$(dirname "$0")/lib.sh"

HELPER=$SELFTEST_DIR/xfer_helper
PARAM=/sys/module/rdmaxfer/parameters/peer_timeout_ms
TRACEFS=/sys/kernel/tracing
INST=$TRACEFS/instances/rdmaxfer_observe
CONNS=/sys/kernel/debug/rdmaxfer/connections

[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root"
[ -x "$HELPER" ] || ktap_skip_all "no $HELPER"
rdmaxfer_setup
"$HELPER" probe || ktap_skip_all "the module has no transfers (RDMAXFER_FEATURE_TRANSFER)"
[ -d "$TRACEFS/events" ] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null
[ -d "$TRACEFS/events" ] || ktap_skip_all "no tracefs at $TRACEFS (CONFIG_TRACING)"
[ -d "$TRACEFS/events/rdmaxfer" ] || ktap_skip_all "the module has no tracepoints"
rmdir "$INST" 2>/dev/null
mkdir "$INST" || ktap_skip_all "no tracefs instances at $TRACEFS/instances"

T=$(mktemp -d /tmp/tracepoints.XXXXXX)
saved=$(cat "$PARAM" 2>/dev/null)
srv=
cleanup()
{
	rmdir "$INST" 2>/dev/null
	[ -n "$saved" ] && echo "$saved" >"$PARAM"
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$T"
}
at_exit cleanup

ktap_plan 10

# events of one name, from the captured trace
events()
{
	grep " $1: " "$T/trace"
}
count()
{
	events "$1" | grep -c -- "${2:-.}"
}

[ -n "$saved" ] && echo 2000 >"$PARAM"
echo 1 >"$INST/events/rdmaxfer/enable"

"$HELPER" serve "$ADDR" 0 1M 3 >"$T/serve.log" 2>&1 &
srv=$!
wait_for "grep -q '^listening' '$T/serve.log'" 10
port=$(sed -n 's/^listening //p' "$T/serve.log")
"$HELPER" write "$ADDR" "${port:-1}" 64K >"$T/write.log" 2>&1
wrc=$?
"$HELPER" idle "$ADDR" "${port:-1}" >"$T/idle.log" 2>&1 &
idle=$!
wait_for "grep -q '^idle' '$T/idle.log'" 10
# the write client's two ends are torn down in the background
wait_for "[ \$(grep -c ' conn ' $CONNS) -eq 2 ]" 10
cat "$CONNS" >"$T/conns" 2>&1
sleep 1.5
kill "$idle" 2>/dev/null
wait "$idle" 2>/dev/null
# both ends of both connections are down once serve has seen 2 disconnects
wait_for "[ \$(grep -c '^disconnected' '$T/serve.log') -ge 2 ]" 10
sleep 0.5
echo 0 >"$INST/tracing_on"
cat "$INST/trace" >"$T/trace"
echo 0 >"$INST/events/rdmaxfer/enable"
echo >"$INST/trace"
echo 1 >"$INST/tracing_on"
# a third client with the events disabled: serve then exits
"$HELPER" write "$ADDR" "${port:-1}" 64K >"$T/write2.log" 2>&1
wait_for "! kill -0 $srv" 10
wait "$srv" 2>/dev/null
srv=
ktap_diag "$(grep -c rdmaxfer_ "$T/trace") events; $(cat "$T/write.log" | tr '\n' ' ')"
grep -E ' rdmaxfer_(conn_up|op_done|window_expose): ' "$T/trace" | head -n 4 | sed 's/^ *//; s/^/# /'

# 1. both connections came up on both sides, with a QP and the peer's address
up_c=$(count rdmaxfer_conn_up " client ")
up_s=$(count rdmaxfer_conn_up " server ")
[ "$wrc" -eq 0 ] && [ "$up_c" -eq 2 ] && [ "$up_s" -eq 2 ] &&
	[ "$(events rdmaxfer_conn_up | grep -c "qpn=[1-9][0-9]* dev=$DEV peer=$ADDR:")" -eq 4 ]
r=$?
[ $r -eq 0 ] || { ktap_diag "write exit $wrc; conn_up client $up_c server $up_s, want 2 and 2"; events rdmaxfer_conn_up | sed 's/^/# /'; }
ktap_result "conn_up_on_both_sides" $r

# 2. serve's two windows, and idle's own
n=$(count rdmaxfer_window_expose "window=[1-9]")
[ "$n" -eq 3 ]
r=$?
[ $r -eq 0 ] || ktap_diag "window_expose: $n, want 3"
ktap_result "window_expose" $r

# 3. the write helper's WRITE and READ pieces: every op_post has exactly one
#    op_done with status 0, for the same user_data
posts=$(events rdmaxfer_op_post | sed -n 's/.* file=\([0-9]*\) .*user_data=\(0x[0-9a-f]*\).*/\1:\2/p' | sort)
dones=$(events rdmaxfer_op_done | grep ' status=0 ' |
	sed -n 's/.* file=\([0-9]*\) .*user_data=\(0x[0-9a-f]*\).*/\1:\2/p' | sort)
np=$(echo "$posts" | grep -c .)
[ "$np" -ge 2 ] && [ "$posts" = "$dones" ] && [ "$(count rdmaxfer_op_post " WRITE ")" -ge 1 ] &&
	[ "$(count rdmaxfer_op_post " READ ")" -ge 1 ] && [ "$(count rdmaxfer_op_done)" -eq "$np" ]
r=$?
ktap_diag "$np operations posted"
[ $r -eq 0 ] || { ktap_diag "op_post/op_done do not pair up"; events 'rdmaxfer_op_[a-z]*' | sed 's/^/# /' | head -n 20; }
ktap_result "op_post_and_op_done_pair_up" $r

# 4. credits came back from a peer
n=$(count rdmaxfer_credits "granted=[1-9]")
[ "$n" -ge 1 ]
r=$?
[ $r -eq 0 ] || ktap_diag "no credits event"
ktap_result "credits" $r

# 4b. flow control: the server's ADVERT went out and came in
tx=$(count rdmaxfer_flow " tx ADVERT ")
rx=$(count rdmaxfer_flow " rx ADVERT ")
[ "$tx" -ge 1 ] && [ "$rx" -ge 1 ]
r=$?
[ $r -eq 0 ] || ktap_diag "rdmaxfer_flow ADVERT: $tx sent, $rx received"
ktap_result "flow_advert_sent_and_received" $r

# 5. the idle connection's keepalive probes (both ends, every 0.5 s)
n=$(count rdmaxfer_keepalive " probe")
if [ -z "$saved" ]; then
	ktap_skip "keepalive_probes" "no $PARAM"
else
	[ "$n" -ge 2 ]
	ktap_result "keepalive_probes" $?
	[ "$n" -ge 2 ] || ktap_diag "keepalive probes: $n, want >= 2"
fi

# 6. every connection that came up went down, and no peer was declared dead
n=$(count rdmaxfer_conn_down "was_up=1")
[ "$n" -eq 4 ] && [ "$(count rdmaxfer_keepalive "peer dead")" -eq 0 ]
r=$?
[ $r -eq 0 ] || { ktap_diag "conn_down (was up): $n, want 4"; events rdmaxfer_conn_down | sed 's/^/# /'; }
ktap_result "conn_down_for_each" $r

# 7. disabled again: a whole connection (write2) records nothing
grep -q '^ok' "$T/write2.log" && ! grep -q rdmaxfer_ "$INST/trace"
r=$?
[ $r -eq 0 ] || ktap_diag "write2: $(cat "$T/write2.log"); $(grep -c rdmaxfer_ "$INST/trace") events while disabled"
ktap_result "disabled_records_nothing" $r

# 8-9. debugfs: the idle connection's two ends, and nothing else
if [ -r "$CONNS" ]; then
	sed 's/^/# /' "$T/conns"
	grep -q "^device $DEV index [0-9]*\$" "$T/conns" &&
		[ "$(grep -c ' conn ' "$T/conns")" -eq 2 ] &&
		[ "$(grep -c "^file [0-9]* conn [1-9][0-9]* established qpn [1-9][0-9]* sq [1-9][0-9]* rq [1-9][0-9]* peer $ADDR:[0-9]* credits [0-9]*/[1-9][0-9]* pieces 0 windows 1 peer_windows 1 msgs 0 bytes 0 error 0\$" "$T/conns")" -eq 2 ]
	ktap_result "debugfs_lists_connections" $?
	# the same QP numbers as the trace's conn_up of the idle connection
	r=0
	for q in $(sed -n 's/.* qpn \([0-9]*\) .*/\1/p' "$T/conns"); do
		events rdmaxfer_conn_up | grep -q " qpn=$q " || r=1
	done
	[ $r -eq 0 ] || ktap_diag "a QP number of debugfs is not in the trace's conn_up"
	ktap_result "debugfs_qpn_matches_trace" $r
else
	ktap_skip "debugfs_lists_connections" "no $CONNS (debugfs not mounted?)"
	ktap_skip "debugfs_qpn_matches_trace" "no $CONNS"
fi

ktap_finish
