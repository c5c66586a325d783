#!/bin/sh
# perftest-compare.sh - rdmaxfer next to perftest in the same boot: 64 MiB
# RDMA WRITE and READ, alternating, three rounds, on rxe0 (192.0.2.1).
# Under TCG only the ratios inside one boot mean anything.
#   tools/vm/rig.sh run -- 'sh /usr/lib/rig/perftest-compare.sh'
# Output: one JSON line per measurement (rdmaxfer: MiB/s; perftest: average MB/s, MB = 2^20).
size=67108864
rdmaxfer serve --size 64M --count 6 --out /dev/null >/tmp/serve.log 2>&1 &
sleep 1
perf()
{
	"$1" -d rxe0 -F -s $size -n 10 >/dev/null 2>&1 &
	sleep 1
	"$1" -d rxe0 -F -s $size -n 10 192.0.2.1 2>/dev/null |
		awk -v t="$1" '$1 == '$size' { printf "{\"op\":\"%s 64M\",\"MB_s_avg\":%s}\n", t, $4 }'
	wait $!
}
for round in 1 2 3; do
	echo "# round $round"
	rdmaxfer write 192.0.2.1 --size 64M --json | jq -Mc '{op: "rdmaxfer write 64M", mib_per_s}'
	perf ib_write_bw
	rdmaxfer read 192.0.2.1 --size 64M --out /dev/null --json |
		jq -Mc '{op: "rdmaxfer read 64M", mib_per_s}'
	perf ib_read_bw
done
wait
