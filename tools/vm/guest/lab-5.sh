#!/bin/bash
# lab-5.sh - Lab 5: what the MTU and the number of connections change
# (Documentation/labs/5-mtu-and-connections.md).
#   tools/vm/labs.sh 5            (host: boots the guest, runs this, plots build/labs/)
#   bash /usr/lib/rig/lab-5.sh    (in a `make shell` guest)
# LAB_SECS seconds per point (default 2), messages of LAB_MSG bytes (default 64K).
# Data blocks:
#   mtu    netdev_mtu ib_mtu write_mib_s read_mib_s tcp_mib_s write_cpu_sys_pct
#   conns  conns write_mib_s read_mib_s write_mpps write_cpu_sys_pct read_cpu_sys_pct
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

MSG=${LAB_MSG:-64K}
TCP_MSG=${LAB_TCP_MSG:-64K}

# bw T OP SIZE [bench args...]: one bench point; sets BW (MiB/s), MPPS and CPU (% of one
# CPU the whole guest was busy), NaN when it failed.
bw() {
	local t=$1 op=$2 size=$3 f=/tmp/bw.json
	shift 3
	BW=NaN MPPS=NaN CPU=NaN
	if run_json $f rdmaxfer bench "$LAB_HOST" --port "$LAB_PORT" --transport "$t" --op "$op" \
		--size "$size" --duration "$LAB_SECS" --json "$@"; then
		# (no process substitution: the guest has no /dev/fd)
		read -r BW MPPS CPU <<<"$(jq -r '.rows[0] | [.bw_mib_s, .msg_rate_mpps,
			(.cpu_client_sys_pct // "NaN")] | map(tostring) | join(" ")' $f)"
		echo "  $BW MiB/s, $MPPS Mpps, machine CPU $CPU %"
	else
		fail "bench $t $op $size $*"
	fi
}

section "A. Bandwidth vs MTU: RDMA WRITE and READ of $MSG messages, TCP ($TCP_MSG writes)"
echo "The veth pair's MTU is changed on both ends; rxe0's active IB MTU follows it. A new"
echo "connection takes its path MTU from the netdev's MTU when it is set up (rdma_cm route"
echo "resolution), so the server keeps running and every bench connects afresh."
rows=()
start_server || fail "rdmaxfer serve"
for m in 1500 2500 4500 9000; do
	if ! set_mtu "$m"; then fail "mtu $m"; continue; fi
	ib=$(active_mtu)
	echo
	echo "---- netdev MTU $m: rxe0 active_mtu $ib"
	bw rdma write "$MSG"
	w=$BW wcpu=$CPU
	bw rdma read "$MSG"
	r=$BW
	bw tcp send "$TCP_MSG"
	rows+=("$m $ib $w $r $BW $wcpu")
done
stop_server
data_begin mtu "netdev_mtu ib_mtu write_mib_s read_mib_s tcp_mib_s write_cpu_sys_pct"
printf '%s\n' "${rows[@]}"
data_end
set_mtu 9000

section "B. Bandwidth vs number of connections: $MSG RDMA WRITE and READ, netdev MTU 9000"
rows=()
start_server || fail "rdmaxfer serve"
for c in 1 2 4 8; do
	echo
	echo "---- $c connection(s)"
	bw rdma write "$MSG" --conns "$c"
	w=$BW wm=$MPPS wcpu=$CPU
	bw rdma read "$MSG" --conns "$c"
	rows+=("$c $w $BW $wm $wcpu $CPU")
done
stop_server
data_begin conns "conns write_mib_s read_mib_s write_mpps write_cpu_sys_pct read_cpu_sys_pct"
printf '%s\n' "${rows[@]}"
data_end

lab_exit
