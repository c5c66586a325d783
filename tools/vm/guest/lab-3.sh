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
#   polling            series p50_us p99_us proc_cpu_us guest_cpu_us   (per round trip, over
#                      10 x LAB_COUNT round trips: CPU of the measuring process, and of all
#                      the guest's CPUs from /proc/stat, both ends and softirqs included;
#                      busy polling vs sleeping, rdmaxfer ping and the course's own verbs
#                      program tools/labs/pingpong.c)
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

SIZE=${LAB_SIZE:-64}
# round trips of the polling section: /proc/stat counts CPU time in 10 ms ticks
POLL_COUNT=$((LAB_COUNT * 10))
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

section "Polling or sleeping, and what each costs in CPU (the course's exercise 3 as a verbs program)"
echo "tools/labs/pingpong.c is exercise 3 written against libibverbs/librdmacm (no rdmaxfer):"
echo "RDMA SEND/RECV or UDP, waiting for each completion asleep (a completion channel, or a"
echo "blocking recv) or spinning (--busy). Next to it, rdmaxfer ping's --poll block|busy."
echo "CPU per round trip: the measuring process's own (user + system), and all the guest's"
echo "CPUs' busy time from /proc/stat (both ends, rxe's softirqs): $POLL_COUNT round trips"
echo "each, as /proc/stat counts in ticks of 10 ms."
PP=/opt/rdmaxfer/labs/pingpong
# guest_busy: ticks (1/100 s) the guest's CPUs were not idle, from /proc/stat
guest_busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
: >/tmp/polling.dat
for t in rdma udp; do
	[ "$t" = udp ] && [ "$SIZE" -gt 65507 ] && continue
	for poll in block busy; do
		set --
		[ "$t" = udp ] && set -- --udp
		[ "$poll" = busy ] && set -- "$@" --busy
		"$PP" server -p "$PP_PORT" "$@" >/tmp/pps.log 2>&1 &
		pps=$!
		sleep 0.5
		show "$PP client $LAB_HOST -p $PP_PORT $* -n $POLL_COUNT -s $SIZE" | tee /tmp/pp.out
		wait "$pps" || { fail "pingpong server $*"; cat /tmp/pps.log; }
		# "...: N round trips, us: min A p50 B p99 C ...; cpu D us per round trip (...), all CPUs E us"
		row=$(sed -nE 's/.* p50 ([0-9.]+) p99 ([0-9.]+) .*cpu ([0-9.]+) us per round trip.*all CPUs ([0-9.]+) us.*/\1 \2 \3 \4/p' /tmp/pp.out)
		[ -n "$row" ] || { fail "pingpong $t $poll"; continue; }
		echo "pingpong-$t-$poll $row" >>/tmp/polling.dat
	done
done
start_server || fail "rdmaxfer serve"
for poll in block busy; do
	g0=$(guest_busy)
	echo "\$ time rdmaxfer ping $LAB_HOST --op send --poll $poll --size $SIZE --count $POLL_COUNT --json"
	{ TIMEFORMAT='%U %S'; time rdmaxfer ping "$LAB_HOST" --port "$LAB_PORT" --op send \
		--poll "$poll" --size "$SIZE" --count "$POLL_COUNT" --warmup 0 --json >/tmp/ping.json; } 2>/tmp/ping.time
	g1=$(guest_busy)
	if ! jq -e .p50_us /tmp/ping.json >/dev/null 2>&1; then
		fail "ping --poll $poll"
		continue
	fi
	jq -r '"  p50 \(.p50_us) us, p99 \(.p99_us) us"' /tmp/ping.json
	echo "  user, system seconds: $(tail -n 1 /tmp/ping.time); guest busy ticks: $((g1 - g0))"
	awk -v n="$POLL_COUNT" -v p50="$(jq .p50_us /tmp/ping.json)" -v p99="$(jq .p99_us /tmp/ping.json)" \
		-v g="$((g1 - g0))" -v s="rdmaxfer-send-$poll" 'END {
		printf "%s %s %s %.1f %.1f\n", s, p50, p99, ($1 + $2) * 1e6 / n, g * 1e4 / n }' \
		/tmp/ping.time >>/tmp/polling.dat
done
stop_server
data_begin polling "series p50_us p99_us proc_cpu_us guest_cpu_us"
cat /tmp/polling.dat
data_end

section "Textbook vs measured: the course's command 4, ib_write_lat against ping"
echo "perftest's ib_write_lat (2-byte WRITEs, both ends on rxe0) prints half a round trip;"
echo "ping (ICMP over lo) prints whole ones."
pair_run /tmp/latc.out "ib_write_lat -d rxe0 -s 2 -n 2000 -F" \
	"ib_write_lat -d rxe0 -s 2 -n 2000 -F $LAB_HOST"
grep -q '^ 2 ' /tmp/latc.out || fail "ib_write_lat"
show "ping -c 20 -q 127.0.0.1"

lab_exit
