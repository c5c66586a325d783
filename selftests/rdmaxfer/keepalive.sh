#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# keepalive.sh - the dead-peer detection's probes, on one RDMA device.
#
# Every established connection posts a zero-length RDMA WRITE every
# peer_timeout_ms / 4 (module parameter; conn.c, "Dead peers"); its peer's
# adapter acknowledges it.  Here both ends are on one device (loopback), so the
# peer never vanishes: what this checks is that the parameter is validated,
# that idle connections do send probes (the device's packet counter grows, and does
# not without them), and that probes neither break an idle connection nor
# one moving data.  The peer that vanishes is pair/vanish.sh's.
# The packets: the device's sent_pkts counter (Soft-RoCE's, and an HCA's
# that has one); Soft-iWARP has no counters, but its iWARP frames are the
# kernel's TCP segments: there the host's TCP OutSegs (/proc/net/snmp) count
# them, probes and their TCP ACKs alike.
. "$(dirname "$0")/lib.sh"

HELPER=$SELFTEST_DIR/xfer_helper
PARAM=/sys/module/rdmaxfer/parameters/peer_timeout_ms
NCONNS=4	# each is two established ends: 8 probing QPs
IDLE=4		# seconds of idleness measured

[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root"
command -v rdma >/dev/null || ktap_skip_all "no rdma tool (iproute2)"
[ -x "$HELPER" ] || ktap_skip_all "no $HELPER"
rdmaxfer_setup
if rdma statistic show link "$DEV/1" 2>/dev/null | grep -qw sent_pkts; then
	COUNTER="$DEV packets"
elif [ "$PROVIDER" = siw ] && [ -r /proc/net/snmp ]; then
	COUNTER="TCP segments"
else
	ktap_skip_all "$DEV has no sent_pkts counter (Soft-RoCE's), and is not Soft-iWARP (TCP OutSegs)"
fi
"$HELPER" probe || ktap_skip_all "the module has no transfers (RDMAXFER_FEATURE_TRANSFER)"
[ -w "$PARAM" ] || ktap_skip_all "no $PARAM (a module without keepalive)"

T=$(mktemp -d /tmp/keepalive.XXXXXX)
saved=$(cat "$PARAM")
pids=""

restore()
{
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	echo "$saved" >"$PARAM"
	rm -rf "$T"
}
at_exit restore

# the device's packets sent (both ends of a loopback connection are on it),
# or on Soft-iWARP the host's TCP segments sent
sent_pkts()
{
	if [ "$COUNTER" = "TCP segments" ]; then
		awk '$1 == "Tcp:" { if (!c) { for (i = 2; i <= NF; i++) if ($i == "OutSegs") c = i } else { print $c; exit } }' /proc/net/snmp
		return
	fi
	rdma statistic show link "$DEV/1" |
		awk '{ for (i = 1; i < NF; i++) if ($i == "sent_pkts") { print $(i + 1); exit } }'
}

# QPs of the device in state RTS.  siw's query_qp does not report a QP's
# state (`rdma res` shows every siw QP in RESET): there the established
# rdma_cm ids, state CONNECT (a connection that fails is disconnected, and
# its id leaves that state)
if [ "$PROVIDER" = siw ]; then
	UP="rdma_cm ids in CONNECT"
else
	UP="QPs in RTS"
fi
rts_qps()
{
	if [ "$PROVIDER" = siw ]; then
		rdma res show cm_id link "$DEV/1" 2>/dev/null | grep -c 'state CONNECT'
		return
	fi
	rdma res show qp link "$DEV/1" 2>/dev/null | grep -c 'state RTS'
}

# idle_packets NAME: park NCONNS connections (made with the current
# peer_timeout_ms), wait until they are up; sets $pkts to the packets $DEV
# sent in IDLE seconds and $rts to the QPs in RTS at the end; leaves them.
idle_packets()
{
	"$HELPER" park "$ADDR" 0 "$NCONNS" >"$T/$1-park.log" 2>&1 &
	pids="$pids $!"
	wait_for "grep -q '^listening' '$T/$1-park.log'" 10
	_port=$(sed -n 's/^listening //p' "$T/$1-park.log")
	"$HELPER" conns "$ADDR" "${_port:-1}" "$NCONNS" >"$T/$1-conns.log" 2>&1 &
	pids="$pids $!"
	wait_for "grep -q '^connected' '$T/$1-conns.log'" 60
	_n=$(sed -n 's/^connected //p' "$T/$1-conns.log")
	[ "${_n:-0}" -eq "$NCONNS" ] || ktap_diag "$1: connected ${_n:-0} of $NCONNS"
	_a=$(sent_pkts)
	sleep "$IDLE"
	_b=$(sent_pkts)
	pkts=$((_b - _a))
	rts=$(rts_qps)
}

stop_all()
{
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pids=""
}

ktap_plan 4

# 1. out of range or not a number: refused, the value stays
r1=0
echo 3600001 >"$PARAM" 2>/dev/null && r1=1
echo 1999 >"$PARAM" 2>/dev/null && r1=1
echo 1x >"$PARAM" 2>/dev/null && r1=1
echo -1 >"$PARAM" 2>/dev/null && r1=1
ktap_check "param_rejects_bad_values" [ "$r1:$(cat "$PARAM")" = "0:$saved" ]

# 2. probes flow on idle connections: off, then every 500 ms.  One probe is a
#    request and an ACK, both sent by the device (siw: a TCP segment and its
#    TCP ACK): 8 QPs * IDLE s * 2 probes/s * 2 packets = 128; at least a
#    quarter of that, and more than without.
rts_before=$(rts_qps)
echo 0 >"$PARAM"
idle_packets off
off_pkts=$pkts
stop_all
echo 2000 >"$PARAM"
idle_packets on
on_pkts=$pkts
on_rts=$rts
ktap_diag "$COUNTER sent in $IDLE s by $NCONNS idle connections: keepalive off $off_pkts," \
	"peer_timeout_ms=2000 $on_pkts"
want=$((NCONNS * 2 * IDLE * 2 * 2 / 4))
ok=0
[ "$on_pkts" -ge "$want" ] && [ "$on_pkts" -gt "$off_pkts" ] && ok=1
ktap_check "idle_connections_probe" [ "$ok" -eq 1 ]

# 3. ... and stay up: the probes are acknowledged, not errors
ktap_diag "$UP: $on_rts (before: $rts_before; want $((rts_before + 2 * NCONNS)))"
ktap_check "idle_connections_stay_up" [ "$on_rts" -eq $((rts_before + 2 * NCONNS)) ]
stop_all

# 4. probes between the work requests of a busy connection: 4 s of WRITE
#    and READ with 4 in flight, no error (probes every second; 268 ms ACK
#    timeout: under KASAN an ACK can take longer than the shortest one)
echo 4000 >"$PARAM"
"$HELPER" serve "$ADDR" 0 4M >"$T/serve.log" 2>&1 &
pids="$pids $!"
wait_for "grep -q '^listening' '$T/serve.log'" 10
port=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$T/serve.log")
"$HELPER" blast "$ADDR" "${port:-1}" 4M >"$T/blast.log" 2>&1 &
blast=$!
pids="$pids $blast"
wait_for "grep -q '^blasting' '$T/blast.log'" 30
sleep 4
alive=0
kill -0 "$blast" 2>/dev/null && alive=1
grep -q '^error' "$T/blast.log" && alive=0
[ "$alive" -eq 1 ] || ktap_diag "blast.log:" "$(cat "$T/blast.log")"
ktap_check "busy_connection_unharmed" [ "$alive" -eq 1 ]
stop_all
ktap_finish
