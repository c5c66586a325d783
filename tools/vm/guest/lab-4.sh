#!/bin/bash
# lab-4.sh - Lab 4: bandwidth vs message size, RDMA WRITE/READ/SEND vs TCP
# (Documentation/labs/4-bandwidth.md).
#   tools/vm/labs.sh 4            (host: boots the guest, runs this, plots build/labs/)
#   bash /usr/lib/rig/lab-4.sh    (in a `make shell` guest)
# LAB_SECS seconds per size (default 2). Data blocks bw-T-OP, one row per message size:
#   size iters bytes secs bw_mib_s msg_rate_mpps cpu_client_pct cpu_client_sys_pct cpu_server_pct
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

# transport:op:sweep. RDMA SEND goes zero-copy into receive slots that serve posts for
# bench, up to the connection's max_msg_size; against an older kernel (no slots) a SEND is
# copied and limited to max_send_size (4088): bench then exits 2 naming the limit and the
# sweep is run again up to max_send_size.
SERIES="${LAB_SERIES:-rdma:write:64:1M rdma:read:64:1M rdma:send:64:1M tcp:send:64:1M}"
COLS="size iters bytes secs bw_mib_s msg_rate_mpps cpu_client_pct cpu_client_sys_pct cpu_server_pct"

section "Bandwidth vs message size, $LAB_SECS s per size, one connection, client and server on rxe0"
start_server || fail "rdmaxfer serve"
for s in $SERIES; do
	IFS=: read -r t op lo hi <<<"$s"
	name=$t-$op
	ok=0
	for try in 1 2; do
		if run_json "/tmp/bw-$name.json" rdmaxfer bench "$LAB_HOST" --port "$LAB_PORT" \
			--transport "$t" --op "$op" --sweep "$lo:$hi" --duration "$LAB_SECS" --json; then
			ok=1
			break
		fi
		max=$(sed -n 's/.*max_send_size \([0-9][0-9]*\).*/\1/p' "/tmp/bw-$name.json.err")
		[ "$try" = 1 ] && [ -n "$max" ] || break
		echo "(SEND: the connection's max_send_size is $max bytes: sweeping $lo:$max instead)"
		hi=$max
	done
	if [ $ok = 1 ]; then
		data_begin "bw-$name" "$COLS"
		jq -r '.rows[] | [.size, .iters, .bytes, .secs, .bw_mib_s, .msg_rate_mpps,
			(.cpu_client_pct // "NaN"), (.cpu_client_sys_pct // "NaN"),
			(.cpu_server_pct // "NaN")] | map(tostring) | join(" ")' \
			"/tmp/bw-$name.json"
		data_end
		jq -r '"  depth \(.depth): " + ([.rows[] | "\(.size) B \(.bw_mib_s * 10 | round / 10) MiB/s"] | join(", "))' \
			"/tmp/bw-$name.json"
	else
		fail "bench $t $op"
	fi
done
stop_server

section "Textbook vs measured: the course's command 2, ib_write_bw with 64 KiB messages"
echo "perftest's own WRITE bandwidth test, both ends on rxe0 as above (it prints MB/s of 2^20"
echo "bytes: MiB/s). The course's example output says 4800 MB/s on Soft-RoCE."
pair_run /tmp/bwc.out "ib_write_bw -d rxe0 -s 65536 -D $LAB_SECS -F" \
	"ib_write_bw -d rxe0 -s 65536 -D $LAB_SECS -F $LAB_HOST"
grep -q '^ 65536' /tmp/bwc.out || fail "ib_write_bw"

lab_exit
