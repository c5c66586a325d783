#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh - `make bench`: rdmaxfer next to perftest on the same RDMA device
# (rxe0, or siw0 with PROVIDER=siw; 192.0.2.1, both ends in this guest), alternating, same size, depth
# and iterations, and a ratio table at the end.  Under QEMU TCG only the
# ratios inside one boot mean anything.
#
#   make bench                          (host: boots the guest, runs this)
#   bash /usr/lib/rig/bench.sh [QUICK]  (in a guest: make shell)
#
# Every measurement is taken ROUNDS times, alternating rdmaxfer and perftest,
# and the median of each side is compared.  perftest under TCG sometimes
# reports 0.00 (or inf) for a whole run (a timer glitch of the emulated TSC): such a
# run is discarded and repeated (at most 3 tries).
#
# What is compared with what:
#   bw write/read/send  rdmaxfer bench --op OP --size S --iters N --depth D
#                       vs ib_OP_bw -F -s S -n N -t D           (MiB/s, both 2^20)
#   msg rate 64 B       the same at 64 bytes, depth 128           (Mpps)
#   latency             rdmaxfer ping --op OP --size 8 (p50 of round trips)
#                       vs ib_OP_lat -F -s 8 -n N (t_typical), and for write and
#                       read their p99.9 vs perftest's 99.9% percentile (both
#                       of N round trips: a tail of ~1 sample); ib_write_lat and
#                       ib_send_lat print half a round trip, so they are doubled;
#                       ib_read_lat prints a whole one (one READ), and so does
#                       ib_atomic_lat (fadd: -A FETCH_AND_ADD)
#   atomics rate        rdmaxfer bench --op fadd --iters N --depth D
#                       vs ib_atomic_bw -F -A FETCH_AND_ADD -n N -t D (Mpps)
#   8 connections       bench --conns 8 vs --conns 1, rdmaxfer alone: the
#                       aggregate bandwidth that 8 connections keep
#   file                write --file of BENCH_FILE_MIB (1024) MiB of random data
#                       through a 64 MiB window saved to serve's --out (both in
#                       /tmp, a tmpfs: `make bench` boots with RIG_MEM=6144)
#                       vs bench --op write --size 64M of as many bytes,
#                       rdmaxfer alone: what reading and saving the file cost
# ratio = rdmaxfer / perftest for bandwidth and rates (>= 1: rdmaxfer at least
# as fast) and perftest / rdmaxfer for latency (>= 1: rdmaxfer at most as slow);
# file: write --file / bench (>= 0.9: the file costs at most a tenth).
#
# Pinning (BENCH_PIN=1, the default with 2 or more CPUs): every server side
# (serve, perftest's server) runs on CPU 0 and every client on CPU 1, for
# both tools alike.  Whole rounds of either tool come out in one of two
# modes (ping --op send p50 ~43 or ~65-75 us): the host's CPUs are not
# equally fast at all times, and a vCPU thread runs at the speed of the
# host CPU it is on (Documentation/testing.md, "Benchmarks under TCG").
# `make bench` also pins the vCPU threads on the host (RIG_PIN_VCPUS=1),
# guest CPU 1 on the host CPU that was faster at boot; a host CPU's speed
# can still change during the run.  The 8-connection row is not pinned in
# the guest (its client's threads may use every CPU).  BENCH_PIN=0: no
# pinning in the guest.
set -u

# siw charges a user MR to RLIMIT_MEMLOCK even for root (siw_umem_get()
# ignores CAP_IPC_LOCK): perftest's 4 MiB rows failed with "Couldn't
# allocate MR" under the default 8 MiB
ulimit -l unlimited

ADDR=192.0.2.1
# the guest's device (rxe0, or siw0 with make bench PROVIDER=siw)
DEV=${RIG_DEV:-rxe0}
# iWARP connects through rdma_cm only (perftest -R); atomics where the device has them
PT_CM=()
[ "$(cat "/sys/class/infiniband/$DEV/node_type" 2>/dev/null)" = "4: RNIC" ] && PT_CM=(-R)
ATOMICS=1
ibv_devinfo -d "$DEV" -v 2>/dev/null | grep -q 'atomic_cap:.*ATOMIC_NONE' && ATOMICS=0
PORT=18600		# rdmaxfer serve (its TCP/UDP baseline: +1000); perftest keeps 18515
ROUNDS=${ROUNDS:-5}
QUICK=${1:-}
RESULTS=/tmp/bench.results
: >"$RESULTS"

say() { echo "# $*"; }

SRV=()
CLI=()
if [ "${BENCH_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	SRV=(taskset -c 0)
	CLI=(taskset -c 1)
fi

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }

SERVE_ATOMIC=()
[ $ATOMICS = 1 ] && SERVE_ATOMIC=(--atomic)
"${SRV[@]}" rdmaxfer serve --port $PORT --size 64M "${SERVE_ATOMIC[@]}" >/tmp/bench-serve.log 2>&1 &
SERVE=$!
trap 'kill $SERVE 2>/dev/null' EXIT
for _ in $(seq 50); do
	rdmaxfer ping $ADDR --port $PORT --count 1 --warmup 0 --json >/dev/null 2>&1 && break
	sleep 0.2
done

# perftest TOOL ARGS... -> prints its result line (the one that starts with the size)
perftest_run()
{
	local tool=$1 try out
	shift
	for try in 1 2 3; do
		"${SRV[@]}" timeout 120 "$tool" -d $DEV -F "${PT_CM[@]}" "$@" >/dev/null 2>&1 &
		local srv=$!
		sleep 1
		# the result line (the last one that starts with the size)
		out=$("${CLI[@]}" timeout 120 "$tool" -d $DEV -F "${PT_CM[@]}" "$@" $ADDR 2>/dev/null |
			awk '$1 ~ /^[0-9]+$/ && NF >= 5 { l = $0 } END { if (l != "") print l }')
		wait $srv 2>/dev/null
		# a glitched run reports 0.00, or inf (a latency line's t_max
		# and t_typical, a bandwidth line's average); perftest derives a
		# bandwidth line's average (MiB/s) from its message rate (Mpps),
		# so a line where the two disagree is garbled
		if [ -n "$out" ] &&
			! echo "$out" | awk -v isbw="$([[ $tool == *_bw ]] && echo 1)" '{
				bad = $4 + 0 == 0 || (!isbw && $5 + 0 == 0)
				for (i = 3; i <= NF; i++) if (tolower($i) ~ /inf|nan/) bad = 1
				if (isbw && !bad) {
					from_rate = $5 * 1e6 * $1 / 1048576
					d = $4 - from_rate
					if (d < 0) d = -d
					if (d > 0.02 * $4 + 0.02) bad = 1
				}
				exit !bad }'; then
			echo "$out"
			return 0
		fi
		# on stderr: the caller keeps stdout, the result line
		say "$tool $* gave no usable result (try $try): ${out:-no result line}" >&2
	done
	return 1
}

# bw OP SIZE ITERS DEPTH -> records "bw OP SIZE ours theirs" (MiB/s) and "rate ..." (Mpps)
bw()
{
	local op=$1 size=$2 iters=$3 depth=$4 r ours=() theirs=() ours_r=() theirs_r=() j p
	for r in $(seq "$ROUNDS"); do
		j=$("${CLI[@]}" rdmaxfer bench $ADDR --port $PORT --op "$op" --size "$size" --iters "$iters" \
			--depth "$depth" --json) || { say "rdmaxfer bench $op $size failed"; return; }
		ours+=("$(echo "$j" | jq '.rows[0].bw_mib_s')")
		ours_r+=("$(echo "$j" | jq '.rows[0].msg_rate_mpps')")
		p=$(perftest_run "ib_${op}_bw" -s "$size" -n "$iters" -t "$depth") || continue
		theirs+=("$(echo "$p" | awk '{ print $4 }')")
		theirs_r+=("$(echo "$p" | awk '{ print $5 }')")
		say "round $r: $op $size rdmaxfer ${ours[-1]} MiB/s, ib_${op}_bw ${theirs[-1]:-?} MiB/s"
	done
	echo "bw $op $size $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
	echo "rate $op $size $(printf '%s\n' "${ours_r[@]}" | median) $(printf '%s\n' "${theirs_r[@]}" | median)" >>"$RESULTS"
}

# arate OP ITERS DEPTH -> records "arate OP 8 ours theirs" (Mpps; OP fadd or cas)
arate()
{
	local op=$1 iters=$2 depth=$3 r ours=() theirs=() j p type
	type=$([ "$op" = cas ] && echo CMP_AND_SWAP || echo FETCH_AND_ADD)
	for r in $(seq "$ROUNDS"); do
		j=$("${CLI[@]}" rdmaxfer bench $ADDR --port $PORT --op "$op" --iters "$iters" --depth "$depth" \
			--json) || { say "rdmaxfer bench $op failed"; return; }
		ours+=("$(echo "$j" | jq '.rows[0].msg_rate_mpps')")
		p=$(perftest_run ib_atomic_bw -A "$type" -n "$iters" -t "$depth") || continue
		theirs+=("$(echo "$p" | awk '{ print $5 }')")
		say "round $r: $op rdmaxfer ${ours[-1]} Mpps, ib_atomic_bw ${theirs[-1]:-?} Mpps"
	done
	echo "arate $op 8 $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
}

# lat OP ITERS -> records "lat OP 8 ours_p50_us perftest_round_trip_us" and
# "lat999 OP 8 ours_p99.9_us perftest_p99.9_round_trip_us".  perftest's
# latency line: bytes iterations t_min t_max t_typical t_avg t_stdev
# p99 p99.9; its per-iteration samples are half round trips for write and
# send (doubled here, like t_typical), whole ones for read and atomics.
lat()
{
	local op=$1 iters=$2 r ours=() theirs=() ours9=() theirs9=() j p t t9 k
	for r in $(seq "$ROUNDS"); do
		j=$("${CLI[@]}" rdmaxfer ping $ADDR --port $PORT --op "$op" --size 8 --count "$iters" --json) ||
			{ say "rdmaxfer ping $op failed"; return; }
		ours+=("$(echo "$j" | jq '.p50_us')")
		ours9+=("$(echo "$j" | jq '.p999_us')")
		if [ "$op" = fadd ]; then
			p=$(perftest_run ib_atomic_lat -A FETCH_AND_ADD -n "$iters") || continue
		else
			p=$(perftest_run "ib_${op}_lat" -s 8 -n "$iters") || continue
		fi
		t=$(echo "$p" | awk '{ print $5 }')
		t9=$(echo "$p" | awk '{ print (NF >= 9) ? $9 : 0 }')
		case $op in read | fadd) k=1 ;; *) k=2 ;; esac
		t=$(echo "$t * $k" | bc -l)
		t9=$(echo "$t9 * $k" | bc -l)
		theirs+=("$t")
		theirs9+=("$t9")
		say "round $r: $op latency rdmaxfer p50 ${ours[-1]} us p99.9 ${ours9[-1]} us, $([ "$op" = fadd ] && echo ib_atomic_lat || echo "ib_${op}_lat") round trip ${theirs[-1]} us p99.9 ${theirs9[-1]} us"
	done
	echo "lat $op 8 $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
	echo "lat999 $op 8 $(printf '%s\n' "${ours9[@]}" | median) $(printf '%s\n' "${theirs9[@]}" | median)" >>"$RESULTS"
}

# conns SIZE ITERS -> records "conns 8 SIZE bw8 bw1"
conns()
{
	local size=$1 iters=$2 r one=() eight=() j
	for r in $(seq "$ROUNDS"); do
		j=$(rdmaxfer bench $ADDR --port $PORT --op write --size "$size" --iters "$iters" --depth 16 --conns 1 --json) || return
		one+=("$(echo "$j" | jq '.rows[0].bw_mib_s')")
		j=$(rdmaxfer bench $ADDR --port $PORT --op write --size "$size" --iters $((iters / 8)) --depth 16 --conns 8 --json) || return
		eight+=("$(echo "$j" | jq '.rows[0].bw_mib_s')")
		say "round $r: write $size 1 connection ${one[-1]} MiB/s, 8 connections ${eight[-1]} MiB/s"
	done
	echo "conns write $size $(printf '%s\n' "${eight[@]}" | median) $(printf '%s\n' "${one[@]}" | median)" >>"$RESULTS"
}

# file MIB -> records "file write MIB file_mib_s bench_mib_s"
file_bw()
{
	local mib=$1 port=$((PORT + 1)) r ours=() theirs=() j spid avail bsize=64M
	avail=$(df -m /tmp | awk 'NR == 2 { print $4 }')
	if [ "$avail" -lt $((2 * mib + 256)) ]; then
		say "file: /tmp has $avail MiB free, $((2 * mib + 256)) needed: skipped (boot with a larger RIG_MEM)"
		return
	fi
	dd if=/dev/urandom of=/tmp/bench-in bs=1M count="$mib" status=none || return
	"${SRV[@]}" rdmaxfer serve --port $port --size 64M --out /tmp/bench-out >/tmp/bench-file.log 2>&1 &
	spid=$!
	for _ in $(seq 50); do
		rdmaxfer ping $ADDR --port $port --count 1 --warmup 0 --json >/dev/null 2>&1 && break
		sleep 0.2
	done
	for r in $(seq "$ROUNDS"); do
		j=$("${CLI[@]}" rdmaxfer write $ADDR --port $port --file /tmp/bench-in --json 2>/dev/null) ||
			{ say "rdmaxfer write --file failed"; break; }
		ours+=("$(echo "$j" | jq '.mib_per_s')")
		# 64 MiB operations, or 4 MiB where one operation cannot be that
		# large (siw: max_op_size 4.8 MiB; the CLI says so and exits 1)
		j=$("${CLI[@]}" rdmaxfer bench $ADDR --port $port --op write --size $bsize \
			--iters $((mib / ${bsize%M})) --json 2>/tmp/bench-err) ||
			if [ $bsize = 64M ] && grep -q max_op_size /tmp/bench-err; then
				bsize=4M
				j=$("${CLI[@]}" rdmaxfer bench $ADDR --port $port --op write --size $bsize \
					--iters $((mib / 4)) --json 2>/tmp/bench-err)
			else
				false
			fi || { say "rdmaxfer bench write $bsize failed: $(cat /tmp/bench-err)"; break; }
		theirs+=("$(echo "$j" | jq '.rows[0].bw_mib_s')")
		say "round $r: file of $mib MiB through a 64 MiB window ${ours[-1]} MiB/s, bench write $bsize ${theirs[-1]} MiB/s"
	done
	cmp -s /tmp/bench-in /tmp/bench-out || say "file: serve's --out is not the file written"
	kill $spid 2>/dev/null
	wait $spid 2>/dev/null
	rm -f /tmp/bench-in /tmp/bench-out
	[ ${#ours[@]} -gt 0 ] && [ ${#theirs[@]} -gt 0 ] &&
		echo "file write $mib $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
}

max_send=$(rdmaxfer info --json | jq '.module.max_send_size // 0')
say "rdmaxfer $(rdmaxfer --version | head -1 | cut -d' ' -f2), $(nproc) CPUs, rounds $ROUNDS; SEND into serve's receive slots (copy path: max_send_size=$max_send); $([ ${#CLI[@]} -gt 0 ] && echo "servers on CPU 0, clients on CPU 1" || echo "not pinned")"

if [ "$QUICK" = quick ]; then
	bw write 65536 200 16
	lat write 200
else
	for op in write read; do
		bw $op 4096 5000 128
		bw $op 65536 1000 128
		bw $op 1048576 100 16
		bw $op 4194304 25 4
	done
	# SEND lands zero-copy in receive slots serve posts (sink mode)
	bw send 4096 5000 128
	bw send 65536 1000 128
	bw send 1048576 100 16
	bw send 64 10000 128
	bw write 64 10000 128
	bw read 64 10000 128
	lat write 1000
	lat read 1000
	lat send 1000
	if [ $ATOMICS = 1 ]; then
		arate fadd 10000 16
		lat fadd 1000
	else
		say "fadd rows left out: $DEV has no atomics (atomic_cap ATOMIC_NONE)"
	fi
	conns 65536 800
	file_bw "${BENCH_FILE_MIB:-1024}"
fi

echo
echo "ratio table (median of $ROUNDS rounds each; TCG guest, $(nproc) vCPUs, same boot)"
printf '%-28s %14s %14s %8s %8s  %s\n' measurement rdmaxfer perftest ratio target result
awk '
function row(name, a, b, unit, ratio, target) {
	res = (b == 0 || a == 0) ? "n/a" : (ratio >= target ? "met" : "MISSED")
	printf "%-28s %14s %14s %8.2f %8s  %s\n", name, sprintf("%.4g %s", a, unit), sprintf("%.4g %s", b, unit), ratio, ">=" target, res
}
$1 == "bw" {
	t = ($3 >= 65536) ? 1.0 : 0.9
	row("bw " $2 " " $3 " B", $4, $5, "MiB/s", $5 ? $4 / $5 : 0, t)
}
$1 == "rate" && $3 == 64 { row("msg rate " $2 " 64 B", $4, $5, "Mpps", $5 ? $4 / $5 : 0, 1.0) }
$1 == "arate" { row("msg rate " $2 " 8 B", $4, $5, "Mpps", $5 ? $4 / $5 : 0, 1.0) }
$1 == "lat" { row("latency " $2 " 8 B (p50 RTT)", $4, $5, "us", $4 ? $5 / $4 : 0, 1.0) }
# the issue asks p99.9 of write and read only (send: echoed by a CPU, fadd: no target)
$1 == "lat999" && ($2 == "write" || $2 == "read") {
	row("latency " $2 " 8 B (p99.9 RTT)", $4, $5, "us", $4 ? $5 / $4 : 0, 1.0)
}
$1 == "conns" { row("8 conns / 1 conn, " $3 " B", $4, $5, "MiB/s", $5 ? $4 / $5 : 0, 0.9) }
$1 == "file" { row("file " $3 " MiB / bench", $4, $5, "MiB/s", $5 ? $4 / $5 : 0, 0.9) }
' "$RESULTS"
