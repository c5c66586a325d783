#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# memcg.sh - what a peer makes the kernel allocate is paid for by the
# application that listens.  A listener completes up to its backlog of
# connections before any ACCEPT, each with its control buffers; those are
# allocated in rdma_cm's handler, a kernel thread, and must be charged to the
# memory cgroup of the process that opened the listening file
# (GFP_KERNEL_ACCOUNT under set_active_memcg()), not to nobody (v0.3.0: plain
# GFP_KERNEL, so a peer could make an unprivileged listener's host allocate
# ~1-2 GiB per listener that no limit saw).
#
# A listener (xfer_helper park) runs in a fresh cgroup v2 with the memory
# controller; a client in the root cgroup opens NCONNS connections to it; the
# listener's cgroup's memory.current must grow by at least half of what their
# receive buffers alone take, and come back down when they are gone.
#
# What the provider allocates for the queues is charged to no cgroup
# (Documentation/security.md): the test prints it per connection end, from
# /proc/vmallocinfo, and holds it under QUEUE_KIB_MAX (rxe: 1.3 MiB since
# the send queue stays under 2048 entries of 16 SGEs, 1.8 MiB while the
# device's shared CQ pool still grows; 4.4-5.1 MiB before).
. "$(dirname "$0")/lib.sh"

HELPER=$SELFTEST_DIR/xfer_helper
NCONNS=32
RECV_DEPTH=32		# RDMAXFER_RECV_DEPTH: 4 KiB receive buffers per connection
CGROOT=/sys/fs/cgroup
QUEUE_KIB_MAX=3072	# provider queue memory per connection end (vmalloc)

[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root"
[ -x "$HELPER" ] || ktap_skip_all "no $HELPER"
rdmaxfer_setup
"$HELPER" probe || ktap_skip_all "the module has no transfers (RDMAXFER_FEATURE_TRANSFER)"
grep -qw cgroup2 /proc/filesystems || ktap_skip_all "no cgroup v2 in this kernel"
if [ ! -f "$CGROOT/cgroup.controllers" ]; then
	mkdir -p "$CGROOT" && mount -t cgroup2 none "$CGROOT" ||
		ktap_skip_all "cannot mount cgroup2 on $CGROOT"
	mounted=1
fi
grep -qw memory "$CGROOT/cgroup.controllers" ||
	ktap_skip_all "no memory controller (CONFIG_MEMCG)"

T=$(mktemp -d /tmp/memcg.XXXXXX)
CG=$CGROOT/rdmaxfer-memcg.$$
park_pid=
conns_pid=

restore()
{
	for p in $conns_pid $park_pid; do
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -d "$CG" ] && wait_for "rmdir '$CG' 2>/dev/null" 10
	[ -n "${mounted:-}" ] && umount "$CGROOT"
	rm -rf "$T"
}
at_exit restore

echo +memory >"$CGROOT/cgroup.subtree_control" 2>/dev/null
mkdir "$CG" || ktap_skip_all "cannot create $CG"
[ -f "$CG/memory.current" ] || ktap_skip_all "no memory.current in $CG"
ktap_plan 4

# bytes of vmalloc in use, from the areas' sizes (VmallocUsed is coarser)
vmalloc_bytes() { awk '$3 != "unpurged" { n += $2 } END { print n + 0 }' /proc/vmallocinfo; }

# the listener opens /dev/rdmaxfer from inside the cgroup
sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" park "$3" 0 "$4"' sh \
	"$CG" "$HELPER" "$ADDR" "$NCONNS" >"$T/park.log" 2>&1 &
park_pid=$!
wait_for "grep -q '^listening' '$T/park.log'" 10
port=$(sed -n 's/^listening //p' "$T/park.log")
[ -n "$port" ] || ktap_diag "park.log:" "$(cat "$T/park.log")"
base=$(cat "$CG/memory.current")
vbase=$(vmalloc_bytes)

"$HELPER" conns "$ADDR" "${port:-1}" "$NCONNS" >"$T/conns.log" 2>&1 &
conns_pid=$!
wait_for "grep -q '^connected' '$T/conns.log'" 120
n=$(sed -n 's/^connected //p' "$T/conns.log")
ktap_check "connections_parked" [ "${n:-0}" -eq "$NCONNS" ]
[ "${n:-0}" -eq "$NCONNS" ] || ktap_diag "conns.log:" "$(cat "$T/conns.log")"

now=$(cat "$CG/memory.current")
vgrew=$(($(vmalloc_bytes) - vbase))
grew=$((now - base))
want=$((NCONNS * RECV_DEPTH * 4096 / 2))
ktap_diag "listener's cgroup: $base -> $now bytes (+$((grew / 1024)) KiB for $NCONNS" \
	"unaccepted connections, $((grew / NCONNS / 1024)) KiB each; at least $((want / 1024)) KiB expected)"
ktap_check "charged_to_listener_cgroup" [ "$grew" -ge "$want" ]
# both ends of every connection are in this guest
ktap_diag "vmalloc: +$((vgrew / 1024)) KiB, $((vgrew / NCONNS / 2048)) KiB a connection end" \
	"(the provider's queues, charged to no cgroup; at most $QUEUE_KIB_MAX KiB expected)"
ktap_check "queue_memory_bounded" [ $((vgrew / NCONNS / 2048)) -le "$QUEUE_KIB_MAX" ]

# the client goes: the listener's connections are torn down and uncharged
kill -9 "$conns_pid" 2>/dev/null
wait "$conns_pid" 2>/dev/null
conns_pid=
wait_for "[ \$((\$(cat '$CG/memory.current') - $base)) -lt $((want / 2)) ]" 30
after=$(cat "$CG/memory.current")
ktap_diag "after the client left: $after bytes"
ktap_check "uncharged_when_gone" [ $((after - base)) -lt $((want / 2)) ]
ktap_finish
