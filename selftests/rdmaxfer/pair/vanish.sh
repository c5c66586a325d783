#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# vanish.sh - guest A of the two-guest run: a peer that vanishes.  Runs last
# in the pair run: it ends with guest B killed.
#
# Two connections to `rdmaxfer serve` in B (peer.sh, port 18516): one idle
# (xfer_helper idle: it only waits for a DISCONNECTED event) and one busy
# (rdmaxfer bench writing 64 KiB WRITEs, 16 in flight).  Then, asked of the
# rig on the host by "rig-request:" lines in our output (tools/vm/rig.sh,
# rig_requests):
#  1. link-cut: QEMU's set_link on B's network backend, a cable pulled and
#     put back peer_timeout_ms / 7 later (1.4 s), timed by the host.  The
#     QP's first try and its 6 retries take between a quarter and a half of
#     peer_timeout_ms (keepalive.c rounds the ACK timeout down to a power of
#     two: 3.8 s of 10 s): both connections must survive the cut.
#  2. kill-server: B's cable pulled for good and its guest paused, a host
#     that dies (its QEMU is killed after our end; rig_requests says why not
#     at once).  Each connection
#     must fail within peer_timeout_ms of the request (the probes of an idle
#     connection, the transfer's own retries), the idle one with a
#     DISCONNECTED event of status -ETIMEDOUT, `rdmaxfer bench` with exit
#     status 1 and "the peer stopped answering"; everything they pinned is
#     unpinned once they exit.
# Times are measured from the request (the rig acts on it within ~0.2 s), in
# /proc/uptime's 10 ms steps.
# On iWARP the idle connection's probe is an RDMA READ of the peer's probe
# bytes (a WRITE probe completes as TCP takes it, dead peer or not), which
# both sides tell each other at the first keepalive tick; the connection is
# up for more than two ticks before the kill (Documentation/architecture.md,
# "Dead peers").
dir=$(dirname "$0")
if [ -r "$dir/lib.sh" ]; then
	# shellcheck source=../lib.sh
	. "$dir/lib.sh"
else
	# shellcheck source=../lib.sh
	. "$dir/../lib.sh"
fi

HELPER=$dir/../xfer_helper
PARAM=/sys/module/rdmaxfer/parameters/peer_timeout_ms
PORT=18516	# peer.sh: a 64 MiB window, saved nowhere

command -v rdmaxfer >/dev/null || ktap_skip_all "the rdmaxfer CLI is not on PATH"
[ -x "$HELPER" ] || ktap_skip_all "no $HELPER"
[ -n "$RIG_PEER_ADDR" ] || ktap_skip_all "not in a two-guest rig (RIG_PEER_ADDR is not set)"
[ -r "$PARAM" ] || ktap_skip_all "no $PARAM (a module without keepalive)"
PEER=$RIG_PEER_ADDR
bound_ms=$(cat "$PARAM")
[ "$bound_ms" -gt 0 ] || ktap_skip_all "keepalive is off (peer_timeout_ms=0)"

tmp=$(mktemp -d)
pids=""
cleanup()
{
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
pins() {
	awk '$1 == "nr_foll_pin_acquired" { a = $2 } $1 == "nr_foll_pin_released" { r = $2 }
	     END { print a - r }' /proc/vmstat
}
request() { echo "rig-request: $1"; }

ktap_plan 6
pins0=$(pins)
kmsg_mark

"$HELPER" idle "$PEER" "$PORT" >"$tmp/idle.log" 2>&1 &
idle_pid=$!
pids="$pids $idle_pid"
rdmaxfer bench "$PEER" --port "$PORT" --op write --size 64K --depth 16 --duration 200 \
	>"$tmp/bench.out" 2>"$tmp/bench.err" &
bench_pid=$!
pids="$pids $bench_pid"
wait_for "grep -q '^idle' '$tmp/idle.log'" 30
sleep 3		# bench is connected and writing by now
up=0
grep -q '^idle' "$tmp/idle.log" && kill -0 "$bench_pid" 2>/dev/null && up=1
[ "$up" -eq 1 ] || ktap_diag "idle: $(cat "$tmp/idle.log")" "bench: $(cat "$tmp/bench.err")"

# 1. a short cut, timed by the host (a guest's sleeps and pings stretch with
# its load: cut by the guest, 2 s took 2.4 s in a KASAN guest, and failed the
# connections in CI once)
cut_ms=$((bound_ms / 7))
t0=$(now)
request "link-cut $cut_ms"
cut=0
while awk -v s="$(since "$t0")" -v c="$cut_ms" 'BEGIN { exit !(s * 1000 < c) }'; do
	ping -c 1 -W 1 "$PEER" >/dev/null 2>&1 || { cut=1; break; }
	sleep 0.1
done
wait_for "ping -c 1 -W 1 '$PEER' >/dev/null 2>&1" 10
t_cut=$(since "$t0")
sleep "$((bound_ms / 2000 + 1))"	# past the retries of anything the cut delayed
alive=0
kill -0 "$bench_pid" 2>/dev/null && ! grep -q '^disconnected' "$tmp/idle.log" && alive=1
ktap_diag "link cut for $cut_ms ms (seen by ping: $cut; answering again after $t_cut s);" \
	"idle and busy connection up after it: $alive"
[ "$alive" -eq 1 ] || ktap_diag "idle: $(cat "$tmp/idle.log")" "bench: $(cat "$tmp/bench.err")"
ktap_check "short_link_cut_survived" [ "$up$cut$alive" = 111 ]

# 2. the server's host dies
t0=$(now)
request kill-server
t_idle=
t_busy=
limit=$((bound_ms / 1000 + 30))
i=0
while [ $i -lt $((limit * 5)) ] && { [ -z "$t_idle" ] || [ -z "$t_busy" ]; }; do
	[ -z "$t_idle" ] && grep -q '^disconnected' "$tmp/idle.log" && t_idle=$(since "$t0")
	[ -z "$t_busy" ] && ! kill -0 "$bench_pid" 2>/dev/null && t_busy=$(since "$t0")
	sleep 0.2
	i=$((i + 1))
done
wait "$bench_pid"
bench_rc=$?
wait "$idle_pid"
pids=""
# within T: T seconds (empty: never) are within peer_timeout_ms
within() { [ -n "$1" ] && awk -v t="$1" -v b="$bound_ms" 'BEGIN { exit !(t * 1000 <= b) }'; }
ktap_diag "server killed: idle connection down after ${t_idle:-never} s, busy after" \
	"${t_busy:-never} s (bound: peer_timeout_ms=$bound_ms)"

status=$(sed -n 's/^disconnected status //p' "$tmp/idle.log")
ktap_diag "idle: $(cat "$tmp/idle.log")"
ok=0
within "$t_idle" && [ "$status" = -110 ] && ok=1
ktap_check "idle_connection_fails_within_bound" [ "$ok" -eq 1 ]

ktap_diag "bench exit $bench_rc: $(tail -n 2 "$tmp/bench.err")"
ok=0
within "$t_busy" && [ "$bench_rc" -eq 1 ] && ok=1
ktap_check "busy_transfer_fails_within_bound" [ "$ok" -eq 1 ]
ktap_check "cli_says_peer_stopped_answering" grep -q 'stopped answering' "$tmp/bench.err"

# 3. nothing of theirs stays pinned
wait_for "[ \"\$(pins)\" -eq $pins0 ]" 10
ktap_diag "pinned pages: $(pins) (before: $pins0)"
ktap_check "pins_released" [ "$(pins)" -eq "$pins0" ]

# 4. and this kernel said nothing bad (the pair run leaves A's log to its tests)
hits=$(kernel_log_problems)
r=$?
[ $r -eq 0 ] || ktap_diag "$hits"
ktap_result "no_kernel_warning" $r
ktap_finish
