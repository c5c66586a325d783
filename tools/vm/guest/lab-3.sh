#!/bin/bash
# lab-3.sh - Lab 3: round-trip latency distributions, RDMA SEND/WRITE/READ vs UDP (and TCP)
# (Documentation/labs/3-latency.md).
#   tools/vm/labs.sh 3            (host: boots the guest, runs this, plots build/labs/)
#   bash /usr/lib/rig/lab-3.sh    (in a `make shell` guest)
# LAB_COUNT round trips per series (default 2000) after 200 warm-up ones, LAB_SIZE bytes
# (default 64). Data blocks:
#   latency            series transport op size count min_us p50_us p99_us p999_us max_us mean_us
#   hist-T-OP          from_us to_us count      (ping --histogram: log2 buckets)
#   cdf-T-OP           x_us fraction            (cumulative, exact at the bucket edges)
#   pct-T-OP           x_us fraction            (the exact percentiles: min p50 p99 p99.9 max)
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

SIZE=${LAB_SIZE:-64}
# transport:op[:busy|block]: the RDMA series name ping's --poll mode explicitly when given
# (ping's default is busy for write and read, block for send): busy spins on REAP, block
# sleeps in the kernel until the completion wakes the client.
SERIES="rdma:send:busy rdma:send:block rdma:write rdma:read udp:send tcp:send"

# name SERIES-ENTRY: the data block suffix, e.g. rdma-send-busy, rdma-write
name() { echo "$1" | tr : -; }

section "Round-trip latency, $SIZE bytes, $LAB_COUNT round trips each, client and server on rxe0"
start_server || fail "rdmaxfer serve"
for s in $SERIES; do
	IFS=: read -r t op poll <<<"$s"
	f=/tmp/lat-$(name "$s").json
	# the sockets baseline carries at most a UDP datagram: 65,507 bytes
	# (65,535 less the IP and UDP headers), over TCP too
	if [ "$t" != rdma ] && [ "$SIZE" -gt 65507 ]; then
		echo "  $t: left out, the sockets baseline carries at most 65507 bytes"
		continue
	fi
	set -- --transport "$t" --op "$op"
	[ -n "$poll" ] && set -- "$@" --poll "$poll"
	if run_json "$f" rdmaxfer ping "$LAB_HOST" --port "$LAB_PORT" "$@" --size "$SIZE" \
		--count "$LAB_COUNT" --warmup 200 --json --histogram; then
		jq -r '"  p50 \(.p50_us) us, p99 \(.p99_us) us, max \(.max_us) us"' "$f"
	else
		fail "ping $*"
		rm -f "$f"
	fi
done
stop_server

echo
data_begin latency "series transport op size count min_us p50_us p99_us p999_us max_us mean_us"
for s in $SERIES; do
	f=/tmp/lat-$(name "$s").json
	[ -e "$f" ] || continue
	jq -r --arg n "$(name "$s")" '[$n, .transport, .op, .size, .count, .min_us, .p50_us, .p99_us,
		.p999_us, .max_us, .mean_us] | map(tostring) | join(" ")' "$f"
done
data_end

for s in $SERIES; do
	name=$(name "$s")
	f=/tmp/lat-$name.json
	[ -e "$f" ] || continue
	data_begin "hist-$name" "from_us to_us count"
	jq -r '.histogram[]? | "\(.from_us) \(.to_us) \(.count)"' "$f"
	data_end
	data_begin "cdf-$name" "x_us fraction"
	jq -r '(.histogram // []) as $h | ($h | map(.count) | add // 0) as $n
		| select($n > 0)
		| "\($h[0].from_us) 0",
		  (foreach $h[] as $b (0; . + $b.count; "\($b.to_us) \(. / $n)"))' "$f"
	data_end
	data_begin "pct-$name" "x_us fraction"
	jq -r '"\(.min_us) 0", "\(.p50_us) 0.5", "\(.p99_us) 0.99", "\(.p999_us) 0.999", "\(.max_us) 1"' "$f"
	data_end
done

lab_exit
