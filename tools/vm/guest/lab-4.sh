#!/bin/bash
# lab-4.sh - Lab 4: bandwidth vs message size, RDMA WRITE/READ/SEND vs TCP
# (Documentation/labs/4-bandwidth.md).
#   tools/vm/labs.sh 4            (host: boots the guest, runs this, plots build/labs/)
#   bash /usr/lib/rig/lab-4.sh    (in a `make shell` guest)
# LAB_SECS seconds per size (default 1). Data blocks bw-T-OP, one row per message size:
#   size iters bytes secs bw_mib_s msg_rate_mpps cpu_client_pct cpu_client_sys_pct
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

# transport:op:sweep. RDMA SEND is limited to the connection's largest message (~4 KiB),
# a sockets message to 64 KiB - 29 bytes (one UDP datagram; one write for TCP).
SERIES="${LAB_SERIES:-rdma:write:64:1M rdma:read:64:1M rdma:send:64:4K tcp:send:64:32K}"
COLS="size iters bytes secs bw_mib_s msg_rate_mpps cpu_client_pct cpu_client_sys_pct"

section "Bandwidth vs message size, $LAB_SECS s per size, one connection, client and server on rxe0"
start_server || fail "rdmaxfer serve"
for s in $SERIES; do
	IFS=: read -r t op lo hi <<<"$s"
	name=$t-$op
	if run_json "/tmp/bw-$name.json" rdmaxfer bench "$LAB_HOST" --port "$LAB_PORT" \
		--transport "$t" --op "$op" --sweep "$lo:$hi" --duration "$LAB_SECS" --json; then
		data_begin "bw-$name" "$COLS"
		jq -r '.rows[] | [.size, .iters, .bytes, .secs, .bw_mib_s, .msg_rate_mpps,
			(.cpu_client_pct // "NaN"), (.cpu_client_sys_pct // "NaN")] | map(tostring) | join(" ")' \
			"/tmp/bw-$name.json"
		data_end
		jq -r '"  depth \(.depth): " + ([.rows[] | "\(.size) B \(.bw_mib_s * 10 | round / 10) MiB/s"] | join(", "))' \
			"/tmp/bw-$name.json"
	else
		fail "bench $t $op"
	fi
done
stop_server

lab_exit
