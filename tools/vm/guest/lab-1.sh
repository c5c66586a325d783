#!/bin/bash
# lab-1.sh - Lab 1: set up Soft-RoCE and inspect it (Documentation/labs/1-softroce.md).
#   tools/vm/labs.sh 1            (host: boots the guest, runs this, saves build/labs/1/)
#   bash /usr/lib/rig/lab-1.sh    (in a `make shell` guest)
# Data blocks: gids (the GID table), counters (rxe0's packet counters around a 1 MiB
# RDMA WRITE), mtu (netdev MTU -> rxe's active IB MTU).
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

section "1. What the guest set up at boot"
show "lsmod | grep -E '^(rdma_rxe|ib_core|ib_uverbs|rdma_cm|ib_cm|rdma_ucm|rdmaxfer|veth) '"
show ip link show type veth
show ip -br addr show dev veth0
show rdma link
show rdma dev
show ibv_devices

section "2. The device as verbs applications see it"
show ibv_devinfo -d rxe0
show ibv_devinfo -d rxe0 -v
show rdmaxfer info

section "3. The GID table (RoCE addresses: one per IP address of veth0, plus the link-local one)"
p=/sys/class/infiniband/rxe0/ports/1
echo "\$ for i in $p/gids/*; do ...; done   # index, GID, type, netdev"
data_begin gids "index gid type netdev"
for f in "$p"/gids/*; do
	i=${f##*/}
	gid=$(cat "$f" 2>/dev/null) || continue
	[ "$gid" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
	type=$(cat "$p/gid_attrs/types/$i" 2>/dev/null | tr -d ' ')
	ndev=$(cat "$p/gid_attrs/ndevs/$i" 2>/dev/null)
	echo "$i $gid ${type:--} ${ndev:--}"
done
data_end
echo
echo "rxe sends RoCEv2 packets as UDP datagrams to port 4791 (0x12B7); its kernel socket:"
show "grep -i ':12B7 ' /proc/net/udp /proc/net/udp6"

section "4. Delete the Soft-RoCE device and add it again"
show rdma link delete rxe0
show rdma link
show ls /sys/class/infiniband/
show "rdmaxfer info | head -n 2"
show rdma link add rxe0 type rxe netdev veth0
wait_active || fail "rxe0 did not come back"
show rdma link
show "rdmaxfer info | head -n 4"

section "5. Watch the packet counters move: one 1 MiB RDMA WRITE"
counters() {   # name value pairs, one per line
	rdma statistic show link rxe0/1 2>/dev/null |
		awk '{ for (i = 1; i < NF; i++) if ($i ~ /^[a-z_]+$/ && $(i + 1) ~ /^[0-9]+$/) print $i, $(i + 1) }'
}
start_server || fail "rdmaxfer serve"
show rdma statistic show link rxe0/1
show "ip -s link show veth0 | sed -n '3,6p'"
counters >/tmp/c.before
show rdmaxfer write "$LAB_HOST" --port "$LAB_PORT" --size 1M || fail "rdmaxfer write"
counters >/tmp/c.after
stop_server
show rdma statistic show link rxe0/1
show "ip -s link show veth0 | sed -n '3,6p'"
echo "Client and server share rxe0 here, so both directions count on the same device."
echo "veth0's own counters do not move: a packet whose destination MAC is rxe0's own is"
echo "looped back inside rxe (rxe_xmit_packet -> rxe_loopback -> rxe_rcv), never sent."
data_begin counters "counter before after delta"
awk 'NR == FNR { b[$1] = $2; next } { printf "%s %s %s %s\n", $1, b[$1] + 0, $2, $2 - b[$1] }' \
	/tmp/c.before /tmp/c.after
data_end
echo "1 MiB in 4096-byte packets is 256 data packets; the rest are ACKs and the"
echo "connection's own SEND/RECV control messages (handshake, window advert, teardown)."

section "6. rxe's active MTU follows the netdev MTU"
echo "rxe_set_mtu(): IB MTU = largest of 256/512/1024/2048/4096 <= netdev MTU - 80"
echo "(RXE_MAX_HDR_LENGTH: Ethernet + IP + UDP + BTH + extension headers + ICRC)."
data_begin mtu "netdev_mtu active_ib_mtu"
for m in 1500 2000 2127 2128 2500 4175 4176 4500 9000; do
	if set_mtu "$m"; then echo "$m $(active_mtu)"; else fail "mtu $m"; fi
done
data_end
set_mtu 9000
show ip link show type veth
show "ibv_devinfo -d rxe0 | grep -E 'max_mtu|active_mtu'"

section "7. rping, the course's first RDMA test, and why it does not talk to rdmaxfer serve"
if ! command -v rping >/dev/null; then
	fail "no rping in the guest (Debian package rdmacm-utils on the host)"
	lab_exit
fi
echo "rping (rdma-core's rdmacm-utils) is a userspace rdma_cm program: the client SENDs the"
echo "address and rkey of its buffer, the server RDMA READs it, then WRITEs its own back."
pair_run /tmp/rping.out "rping -s -a $LAB_HOST -p 18610 -C 3 -v" \
	"rping -c -a $LAB_HOST -p 18610 -C 3 -v"
grep -q 'ping data' /tmp/rping.out || fail "rping against rping"
echo "Against rdmaxfer serve the connection request reaches the same rdma_cm listener code,"
echo "but rdmaxfer's listener wants its own hello in the request's private data"
echo "(Documentation/protocol.md): it rejects rping, and serve goes on serving."
start_server || fail "rdmaxfer serve"
show "timeout 30 rping -c -a $LAB_HOST -p $LAB_PORT -C 1 -v" | tee /tmp/rping2.out
grep -q 'REJECTED' /tmp/rping2.out || fail "rping against rdmaxfer serve: not rejected"
show "rdmaxfer send $LAB_HOST --port $LAB_PORT --message 'still serving'" ||
	fail "serve after rping"
stop_server

lab_exit
