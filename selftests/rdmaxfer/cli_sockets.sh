#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cli_sockets.sh - the sockets baseline of `rdmaxfer ping` and `bench`
# (--transport tcp|udp) in one guest, against the TCP and UDP server that
# `rdmaxfer serve` runs on its port: latency keys and their order, bandwidth
# rows (sizes, iterations, bytes, bw and message rate consistent), --op read,
# --conns, --bidir, --duration, UDP loss accounting (received + lost = sent),
# IPv6, and the error contract (nothing listens -> exit 1 with one line; a
# UDP message larger than a datagram -> exit 2).  Numbers are not judged.
. "$(dirname "$0")/lib.sh"

rdmaxfer_setup_cli

HOST=$ADDR
HOST6=$ADDR6
P1=18525	# serve: RDMA, TCP and UDP
PNONE=18598	# nobody listens here
N=200		# ping round trips, bench messages per connection and size

tmp=$(mktemp -d)
pids=""
cleanup()
{
	for _p in $pids; do kill "$_p" 2>/dev/null; done
	rm -rf "$tmp"
}
at_exit cleanup

# serve NAME ARGS... and stop NAME: see lib.sh.

# jq_ok NAME FILTER: exit 0, nothing on stderr (but the UDP ping's report of
# datagrams it had to send again), and stdout is one JSON document for which
# FILTER (applied to it, with the helpers below) is true.
JQ_DEFS='
def pos: type == "number" and . > 0;
def lat_ok($t; $n): .transport == $t and .count == $n and
	([.min_us, .p50_us, .p99_us, .p999_us, .max_us, .mean_us] | all(pos)) and
	.min_us <= .p50_us and .p50_us <= .p99_us and .p99_us <= .p999_us and
	.p999_us <= .max_us and .min_us <= .mean_us and .mean_us <= .max_us;
def abs: if . < 0 then -. else . end;
def row_ok: (.bw_mib_s | pos) and (.msg_rate_mpps | pos) and (.secs | pos) and
	.bytes == .iters * .size and
	((.bw_mib_s * 1048576 / .size) - (.msg_rate_mpps * 1e6) | abs) <= 0.01 * .msg_rate_mpps * 1e6;
def tcp_rows($sizes; $iters): .transport == "tcp" and ([.rows[].size] == $sizes) and
	all(.rows[]; row_ok and .iters == $iters and (has("lost") | not));
def udp_rows($sizes; $sent): .transport == "udp" and ([.rows[].size] == $sizes) and
	all(.rows[]; row_ok and .iters > 0 and .iters + .lost == $sent);
'
jq_ok()
{
	[ $rc -eq 0 ] &&
		! grep -v '^rdmaxfer: UDP ping: [0-9]* datagrams* lost' "$tmp/$1.err" >/dev/null &&
		jq -e -s "$JQ_DEFS length == 1 and (.[0] | $2)" "$tmp/$1.out" >/dev/null
}

# check NAME FILTER CMD...: run CMD, record jq_ok NAME FILTER as result NAME.
check()
{
	_n=$1
	_f=$2
	shift 2
	run "$_n" "$@"
	jq_ok "$_n" "$_f"
	_r=$?
	[ $_r -eq 0 ] || { ktap_diag "'$*' exited $rc"; show "$_n.out" "$_n.err"; }
	ktap_result "$_n" $_r
}

ktap_plan 19

# --- the server ----------------------------------------------------------
serve s1 --port $P1
r=$?
# serve prints "listening" before its sockets are up: wait for them too
[ $r -eq 0 ] && wait_for "rdmaxfer ping $HOST --port $P1 --transport tcp --count 1" 10 &&
	! grep -q 'sockets baseline not available' "$tmp/s1.err"
r=$?
[ $r -eq 0 ] || show s1.log s1.err
ktap_result "serve_listens_tcp_udp" $r

# --- ping ----------------------------------------------------------------
check ping_tcp_json "lat_ok(\"tcp\"; $N)" \
	rdmaxfer ping $HOST --port $P1 --transport tcp --count $N --json
check ping_udp_json "lat_ok(\"udp\"; $N)" \
	rdmaxfer ping $HOST --port $P1 --transport udp --count $N --json
check ping_tcp_ipv6 "lat_ok(\"tcp\"; $N) and .size == 4096" \
	rdmaxfer ping $HOST6 --port $P1 --transport tcp --size 4K --count $N --json
check ping_udp_ipv6_histogram "lat_ok(\"udp\"; $N) and (.histogram | length > 0)" \
	rdmaxfer ping $HOST6 --port $P1 --transport udp --op write --count $N --json --histogram

# --- bench ---------------------------------------------------------------
check bench_tcp_write "tcp_rows([65536]; $N) and .op == \"write\" and .conns == 1" \
	rdmaxfer bench $HOST --port $P1 --transport tcp --op write --size 64K --iters $N --json
# 64K is more than a datagram (SOCK_MAX_MSG, 65507): 32K over UDP
check bench_udp_write "udp_rows([32768]; $N) and .op == \"write\"" \
	rdmaxfer bench $HOST --port $P1 --transport udp --op write --size 32K --iters $N --json
check bench_tcp_sweep "tcp_rows([1024, 2048, 4096, 8192, 16384]; $N)" \
	rdmaxfer bench $HOST --port $P1 --transport tcp --op write --sweep 1K:16K --iters $N --json
check bench_udp_sweep "udp_rows([1024, 2048, 4096, 8192, 16384]; $N)" \
	rdmaxfer bench $HOST --port $P1 --transport udp --op send --sweep 1K:16K --iters $N --json
check bench_tcp_read "tcp_rows([65536]; $N) and .op == \"read\"" \
	rdmaxfer bench $HOST --port $P1 --transport tcp --op read --size 64K --iters $N --json
check bench_udp_read "udp_rows([16384]; $N) and .op == \"read\"" \
	rdmaxfer bench $HOST6 --port $P1 --transport udp --op read --size 16K --iters $N --json
check bench_tcp_conns2 "tcp_rows([65536]; $((2 * N))) and .conns == 2" \
	rdmaxfer bench $HOST --port $P1 --transport tcp --op write --size 64K --iters $N --conns 2 --json
check bench_tcp_bidir "tcp_rows([8192]; $((2 * N))) and .bidir == true" \
	rdmaxfer bench $HOST --port $P1 --transport tcp --op write --size 8K --iters $N --bidir --json
check bench_tcp_duration "(.rows | length == 1) and (.rows[0] | row_ok and .iters > 0 and .secs >= 0.9)" \
	rdmaxfer bench $HOST --port $P1 --transport tcp --op write --size 4K --duration 1 --json

# the human table: a header, then one row for the size
run human rdmaxfer bench $HOST --port $P1 --transport tcp --op write --size 4K --iters $N
[ $rc -eq 0 ] && [ ! -s "$tmp/human.err" ] &&
	grep -q "^ *4096  *$N  *[0-9.]*[1-9][0-9.]*  *[0-9.]*" "$tmp/human.out"
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show human.out human.err; }
ktap_result "bench_tcp_human" $r

# --- errors ----------------------------------------------------------------
run udpbig rdmaxfer bench $HOST --port $P1 --transport udp --op write --size 100000 --iters $N
[ $rc -eq 2 ] && one_error_line udpbig '.' && [ ! -s "$tmp/udpbig.out" ]
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show udpbig.out udpbig.err; }
ktap_result "bench_udp_too_large_exit_2" $r

run tcpnone rdmaxfer ping $HOST --port $PNONE --transport tcp --count 10
[ $rc -eq 1 ] && one_error_line tcpnone 'refused'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show tcpnone.out tcpnone.err; }
ktap_result "ping_tcp_refused_exit_1" $r

# nothing on the UDP port: ICMP port unreachable ends it at once
run udpnone rdmaxfer ping $HOST --port $PNONE --transport udp --count 10
[ $rc -eq 1 ] && one_error_line udpnone 'refused\|no echo'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show udpnone.out udpnone.err; }
ktap_result "ping_udp_nothing_listens_exit_1" $r

# serve went on serving RDMA, printed nothing about the sockets sessions,
# and stops
run rdma rdmaxfer write $HOST --port $P1 --size 64K --verify
r1=$rc
stop s1
[ $r1 -eq 0 ] && [ $rc -eq 0 ] && serve_quiet s1 &&
	grep -q '^connection [0-9]* from ' "$tmp/s1.log" &&
	! grep -v -e '^listening on ' -e '^connection [0-9]* from ' "$tmp/s1.log" >/dev/null
r=$?
[ $r -eq 0 ] || { ktap_diag "write exited $r1, serve $rc"; show rdma.err s1.log s1.err; }
ktap_result "serve_rdma_and_sigterm_exit_0" $r

ktap_finish
