#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# evil_peer.sh - a malicious peer at the verbs level (evil_peer: plain
# librdmacm/libibverbs, a valid hello, then ONE malformed control message)
# against `rdmaxfer serve`.  For each kind of malformed message the kernel
# must drop exactly that connection: the peer sees DISCONNECTED, the
# protocol_errors counter moves by one, and serve keeps serving real
# clients.  A well-formed message (evil_peer's control mode) must not be
# dropped.  Then what a server gives away: the addresses of its ADVERT must
# be window offsets (no kernel, physical or DMA address on the wire) and still
# work for READs, and an rkey advertised on one connection must be refused on
# another connection's QP (another server, i.e. another file), while the first
# connection's own READ works.  A peer that stops answering at the transport
# level is dropped by the keepalive within peer_timeout_ms, and only it.  At
# the end the kernel log of this test has no WARNING or BUG.
# Runs in the single guest (rxe0 on veth0, 192.0.2.1).
. "$(dirname "$0")/lib.sh"

EVIL=$SELFTEST_DIR/evil_peer
MODES="badlen badtype credits advert0 advertovf writedone"
ADDR=192.0.2.1
PORT=18700
PORT2=18701

[ -x "$EVIL" ] || ktap_skip_all "no evil_peer next to the test (built with librdmacm-dev and libibverbs-dev)"
command -v rdmaxfer >/dev/null || ktap_skip_all "the rdmaxfer CLI is not on PATH"
command -v jq >/dev/null || ktap_skip_all "jq is not installed"
rdma_link_exists rxe0 || ktap_skip_all "no rxe0"
rdmaxfer_load || ktap_skip_all "cannot load rdmaxfer.ko"

tmp=$(mktemp -d)
rc=0
srv=
srv2=
cleanup()
{
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	[ -n "$srv2" ] && kill "$srv2" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# still_serves NAME: serve is alive and answers a SEND; sets $r (0 = yes)
still_serves()
{
	r=1
	if kill -0 "$srv" 2>/dev/null; then
		run "$1" timeout 60 rdmaxfer send $ADDR --port $PORT --message ok
		r=$rc
		[ $r -eq 0 ] || { ktap_diag "send exited $rc"; show "$1.out" "$1.err"; }
	else
		ktap_diag "serve is gone" "$(cat "$tmp/serve.out" "$tmp/serve.err")"
	fi
}

protocol_errors()
{
	rdmaxfer stats --json | jq -e '.global.protocol_errors'
}

# Mark the kernel log so that the last check looks at this test only.
kmsg_mark

# 3 checks per mode, the control case and the kernel log
# shellcheck disable=SC2086 # split on purpose
set -- $MODES
ktap_plan $(($# * 3 + 10))

rdmaxfer serve --port $PORT --size 1M >"$tmp/serve.out" 2>"$tmp/serve.err" &
srv=$!
if ! wait_for "grep -q listening $tmp/serve.out" 10; then
	ktap_diag "serve did not start" "$(cat "$tmp/serve.out" "$tmp/serve.err")"
fi

# The control: a well-formed message keeps the connection (evil_peer exits
# 1 after waiting 5 s) and counts no protocol error.  Without this, a peer
# dropped for any reason at all would pass the checks below.
before=$(protocol_errors 2>"$tmp/stats.err")
run evil_valid timeout 30 "$EVIL" $ADDR $PORT valid
after=$(protocol_errors 2>"$tmp/stats.err")
[ $rc -eq 1 ] && [ -n "$before" ] && [ "$after" = "$before" ]
r=$?
[ $r -eq 0 ] || { ktap_diag "evil_peer valid exited $rc, protocol_errors '$before' -> '$after'"; show evil_valid.out evil_valid.err stats.err; }
ktap_result "valid_message_keeps_connection" $r

for mode in $MODES; do
	before=$(protocol_errors 2>"$tmp/stats.err")
	[ -n "$before" ] || ktap_diag "stats: $(cat "$tmp/stats.err")"

	# (a) the server dropped the evil connection
	run "evil_$mode" timeout 30 "$EVIL" $ADDR $PORT "$mode"
	[ $rc -eq 0 ] || { ktap_diag "evil_peer $mode exited $rc"; show "evil_$mode.out" "evil_$mode.err"; }
	ktap_result "${mode}_disconnected" $rc

	# (b) ... as a protocol error, counted once
	after=$(protocol_errors 2>"$tmp/stats.err")
	[ -n "$before" ] && [ -n "$after" ] && [ "$after" -eq $((before + 1)) ]
	r=$?
	[ $r -eq 0 ] || ktap_diag "protocol_errors went from '$before' to '$after'" "$(cat "$tmp/stats.err")"
	ktap_result "${mode}_protocol_error_counted" $r

	# (c) and nothing else: serve lives on and serves a real client
	r=1
	if kill -0 "$srv" 2>/dev/null; then
		run "send_$mode" timeout 60 rdmaxfer send $ADDR --port $PORT --message ok
		r=$rc
		[ $r -eq 0 ] || { ktap_diag "send exited $rc"; show "send_$mode.out" "send_$mode.err"; }
	else
		ktap_diag "serve is gone" "$(cat "$tmp/serve.out" "$tmp/serve.err")"
	fi
	ktap_result "${mode}_others_unaffected" $r
done

# (d) addresses on the wire, and rkeys across connections, against a second
# server whose 3 MiB window has more than one segment
rdmaxfer serve --port $PORT2 --size 3M >"$tmp/serve2.out" 2>"$tmp/serve2.err" &
srv2=$!
if ! wait_for "grep -q listening $tmp/serve2.out" 10; then
	ktap_diag "the second serve did not start" "$(cat "$tmp/serve2.out" "$tmp/serve2.err")"
fi
run evil_advaddr timeout 30 "$EVIL" $ADDR $PORT2 advaddr
[ $rc -eq 0 ] || { ktap_diag "evil_peer advaddr exited $rc"; show evil_advaddr.out evil_advaddr.err; }
ktap_result "advert_addresses_are_window_offsets" $rc

run evil_crossread timeout 30 "$EVIL" $ADDR $PORT2 crossread $PORT
[ $rc -eq 0 ] || { ktap_diag "evil_peer crossread exited $rc"; show evil_crossread.out evil_crossread.err; }
ktap_result "rkey_refused_on_another_connection" $rc

r=1
if kill -0 "$srv" 2>/dev/null && kill -0 "$srv2" 2>/dev/null; then
	run send_after_cross1 timeout 60 rdmaxfer send $ADDR --port $PORT --message ok
	r=$rc
	if [ $r -eq 0 ]; then
		run send_after_cross2 timeout 60 rdmaxfer send $ADDR --port $PORT2 --message ok
		r=$rc
	fi
	[ $r -eq 0 ] || { ktap_diag "send exited $rc"; show send_after_cross1.out send_after_cross1.err send_after_cross2.out send_after_cross2.err; }
else
	ktap_diag "a serve is gone" "$(cat "$tmp/serve.out" "$tmp/serve.err" "$tmp/serve2.out" "$tmp/serve2.err")"
fi
ktap_result "servers_unaffected_by_cross_read" $r

# (e) a revoked window's rkey fails with all 256 key bytes, READ past a
# window's end and WRITE across it fail; the memory stays as written
run evil_keysweep timeout 600 "$EVIL" $ADDR $PORT keysweep
[ $rc -eq 0 ] || { ktap_diag "evil_peer keysweep exited $rc"; show evil_keysweep.out evil_keysweep.err; }
ktap_diag "$(cat "$tmp/evil_keysweep.err" 2>/dev/null)"
ktap_result "revoked_rkey_and_bounds_refused" $rc
still_serves send_after_sweep
ktap_result "server_unaffected_by_key_sweep" $r

# (f) a peer may expose at most 256 windows to one connection
run evil_advflood timeout 120 "$EVIL" $ADDR $PORT advflood
[ $rc -eq 0 ] || { ktap_diag "evil_peer advflood exited $rc"; show evil_advflood.out evil_advflood.err; }
ktap_result "peer_windows_bounded_per_connection" $rc

# (g) a peer that stops answering at the transport level (its QP in the
# error state drops our packets unanswered, rdma_cm still thinks it is
# connected): the server's keepalive drops that connection within
# peer_timeout_ms (4000 here, read when the connection is made), and only it
PARAM=/sys/module/rdmaxfer/parameters/peer_timeout_ms
if [ -w "$PARAM" ]; then
	saved=$(cat "$PARAM")
	echo 4000 >"$PARAM"
	run evil_mute timeout 60 "$EVIL" $ADDR $PORT mute 4000
	echo "$saved" >"$PARAM"
	ktap_diag "$(cat "$tmp/evil_mute.err" 2>/dev/null)"
	[ $rc -eq 0 ] || { ktap_diag "evil_peer mute exited $rc"; show evil_mute.out evil_mute.err; }
	ktap_result "mute_peer_dropped_within_bound" $rc
	still_serves send_after_mute
	ktap_result "server_unaffected_by_mute_peer" $r
else
	ktap_skip "mute_peer_dropped_within_bound" "no $PARAM (a module without keepalive)"
	ktap_skip "server_unaffected_by_mute_peer" "no $PARAM"
fi

kill "$srv" "$srv2" 2>/dev/null
wait "$srv" "$srv2" 2>/dev/null
srv=
srv2=

# (h) the kernel log (since our marker) has no WARNING or BUG
hits=$(kernel_log_problems)
r=$?
[ $r -eq 0 ] || ktap_diag "$hits"
ktap_result "no_kernel_warning" $r

ktap_finish
