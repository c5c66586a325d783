#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh - `make bench`: rdmaxfer next to perftest on the same RDMA device
# (rxe0, or siw0 with PROVIDER=siw), alternating, same size, depth and
# iterations, a ratio table and a CPU table at the end.  Under QEMU TCG only
# the ratios inside one boot mean anything.  Two layouts:
#   single  one guest, both ends on its device (192.0.2.1, a veth pair):
#           the clients and the servers share its two vCPUs
#   pair    run in the client guest of `rig.sh pair-run` (RIG_ROLE=client):
#           every server side (rdmaxfer serve, perftest's server) runs in
#           the server guest, started through its peer-shell.sh (TCP port
#           18700); each guest has one vCPU, the rig's link between them
#
#   make bench                          (host: both layouts, one boot each)
#   bash /usr/lib/rig/bench.sh [QUICK]  (in a guest: make shell, or the
#                                        client of make pair-shell... )
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
#                       read their p99.9 vs perftest's 99.9% percentile, N =
#                       10000 (3000 in the pair: a second or more of each);
#                       ib_write_lat and
#                       ib_send_lat print half a round trip, so they are doubled;
#                       ib_read_lat prints a whole one (one READ), and so does
#                       ib_atomic_lat (fadd: -A FETCH_AND_ADD)
#   atomics rate        rdmaxfer bench --op fadd --iters N --depth D
#                       vs ib_atomic_bw -F -A FETCH_AND_ADD -n N -t D (Mpps)
#   connections         64 KiB WRITEs, 4096 in all, over 1, 8, 64 and 256
#                       connections: bench --conns N vs ib_write_bw -q N
#                       (scale_conns below); and rdmaxfer's 8 against its 1
#   windows             4 KiB WRITEs spread over 1, 64 and 1024 windows of
#                       serve's 64 MiB (bench --windows N), rdmaxfer alone
#                       (perftest has one MR per QP): rate, CPU per
#                       operation, serve's EXPOSE time per window
#                       (scale_windows below)
#   file                write --file of BENCH_FILE_MIB (1024) MiB of random data
#                       through a 64 MiB window saved to serve's --out (both in
#                       /tmp, a tmpfs: `make bench` boots with RIG_MEM=6144)
#                       vs bench --op write --size 64M of as many bytes,
#                       rdmaxfer alone: what reading and saving the file cost;
#                       the busy s per GiB of each end for both runs (the
#                       whole transfer) and what copying a GiB through tmpfs
#                       costs alone: the client reading, the server writing
# BENCH_ONLY="SECTION ...": only those measurements (bw: the bandwidth and
# rate rows; lat: the four latency rows; conns; windows; file), e.g. to
# repeat one with more ROUNDS.
# The pair's bandwidth and rate rows run BENCH_SCALE (3) times the
# iterations: the link moves about a third of what one guest does.
# ratio = rdmaxfer / perftest for bandwidth and rates (>= 1: rdmaxfer at least
# as fast) and perftest / rdmaxfer for latency (>= 1: rdmaxfer at most as slow);
# file: write --file / bench (>= 0.9: the file costs at most a tenth).
#
# CPU (the CPU table, BENCH_CPU=1, the default): the busy time (user, nice,
# system, irq, softirq jiffies of /proc/stat's "cpu" line) of each guest
# from just before a tool's client starts (its server already waiting) to
# just after it ends.  Each measurement runs each tool twice per round: the
# full run and a short one (an eighth of the operations); their difference
# over the operations (bytes) the full run has more is what one more
# operation (GiB) costs, set-up and tear-down having cancelled out.  In the
# pair layout the client and server columns are the two guests (1 vCPU
# each); in the single layout both ends share the guest and "both" is it
# (up to 2 CPU-seconds per second).  perftest busy-polls its completions
# (both ends of ib_send_bw and of every ib_*_lat), and so does ping (its
# default --poll busy): a polling end costs its CPU's whole run.  bench
# sleeps in REAP when nothing has completed, and serve is woken only by
# what it must answer (slots are counted and echoed by its kernel).
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

LAYOUT=single
ADDR=192.0.2.1
if [ "${RIG_ROLE:-single}" = client ]; then
	LAYOUT=pair
	ADDR=$RIG_PEER_ADDR
fi
PEER_SHELL_PORT=18700
# the guest's device (rxe0, or siw0 with make bench PROVIDER=siw)
DEV=${RIG_DEV:-rxe0}
# iWARP connects through rdma_cm only (perftest -R); atomics where the device has them
PT_CM=()
[ "$(cat "/sys/class/infiniband/$DEV/node_type" 2>/dev/null)" = "4: RNIC" ] && PT_CM=(-R)
ATOMICS=1
ibv_devinfo -d "$DEV" -v 2>/dev/null | grep -q 'atomic_cap:.*ATOMIC_NONE' && ATOMICS=0
PORT=18600		# rdmaxfer serve (its TCP/UDP baseline: +1000); perftest keeps 18515
ROUNDS=${ROUNDS:-5}
# iterations of the bandwidth and rate rows: x1 in one guest, x3 between
# two (a third of the speed there: runs of one to a few seconds either way)
SCALE=${BENCH_SCALE:-1}
[ $LAYOUT = pair ] && SCALE=${BENCH_SCALE:-3}
# round trips of the latency rows: a second or more of busy time, so that
# the CPU table's 10 ms jiffies resolve what one costs
LAT_N=${BENCH_LAT_N:-10000}
[ $LAYOUT = pair ] && LAT_N=${BENCH_LAT_N:-3000}
# the CPU table (each measurement also runs a short run of each tool)
BENCH_CPU=${BENCH_CPU:-1}
QUICK=${1:-}
RESULTS=/tmp/bench.results
CPUS=/tmp/bench.cpu
: >"$RESULTS"
: >"$CPUS"

say() { echo "# $*"; }

SRV=()
CLI=()
if [ $LAYOUT = single ] && [ "${BENCH_PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] &&
	command -v taskset >/dev/null; then
	SRV=(taskset -c 0)
	CLI=(taskset -c 1)
fi

HZ=$(getconf CLK_TCK 2>/dev/null || echo 100)
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print 0 }'; }

# peer_sh COMMANDS: run shell commands in the server guest, print their output
peer_sh()
{
	local fd
	exec {fd}<>"/dev/tcp/$ADDR/$PEER_SHELL_PORT" || return 1
	printf '%s\nexit\n' "$1" >&"$fd"
	cat <&"$fd"
	exec {fd}>&-
}

# [SRV_LOG=FILE] srv_bg CMD ARGS...: start a server side in the background,
# where the servers run, its output to FILE there (default: none); SRV_PID:
# its pid there (the guest has busybox's kill, pidof and killall, no pgrep
# or pkill)
srv_bg()
{
	local log=${SRV_LOG:-/dev/null}
	SRV_PID=
	if [ $LAYOUT = pair ]; then
		SRV_PID=$(peer_sh "$(printf '%q ' "$@") </dev/null >$log 2>&1 & echo \$!")
	else
		"${SRV[@]}" "$@" </dev/null >"$log" 2>&1 &
		SRV_PID=$!
	fi
}

# srv_wait: wait (up to 20 s) until the server side srv_bg started last has
# exited, then kill it
srv_wait()
{
	if [ $LAYOUT = pair ]; then
		peer_sh "for i in \$(seq 200); do kill -0 $SRV_PID 2>/dev/null || exit 0; sleep 0.1; done; kill $SRV_PID"
	elif [ -n "$SRV_PID" ]; then
		wait "$SRV_PID" 2>/dev/null
	fi
}

# busy jiffies of /proc/stat's "cpu" line on stdin: user nice system irq softirq
busy() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8; exit }'; }

# cpu_mark: "CLIENT SERVER" busy jiffies now (single layout: the guest, twice)
cpu_mark()
{
	local c s
	c=$(busy </proc/stat)
	if [ $LAYOUT = pair ]; then
		s=$(peer_sh 'cat /proc/stat' | busy)
	else
		s=$c
	fi
	echo "$c ${s:-0}"
}

# cpu_note KEY TOOL TAG MARK0 MARK1 OPS BYTES: one run's CPU into $CPUS,
# "KEY TOOL TAG client-jiffies server-jiffies OPS BYTES"; TAG full or short
cpu_note()
{
	# shellcheck disable=SC2086  # the marks are two numbers each
	set -- "$1" "$2" "$3" $4 $5 "$6" "$7"
	echo "$1 $2 $3 $(($6 - $4)) $(($7 - $5)) $8 $9" >>"$CPUS"
}

# gib_cpu MARK0 MARK1 MIB [FIELD]: busy s per GiB of MIB MiB between two
# marks, "client server" (FIELD 1 or 2: that one only)
gib_cpu()
{
	# shellcheck disable=SC2086  # the marks are two numbers each
	set -- $1 $2 "$3" "${4:-0}"
	awk -v c=$(($3 - $1)) -v s=$(($4 - $2)) -v m="$5" -v f="$6" -v hz="$HZ" 'BEGIN {
		c = c / hz * 1024 / m; s = s / hz * 1024 / m
		if (f == 1) printf "%.2f\n", c; else if (f == 2) printf "%.2f\n", s
		else printf "%.2f %.2f\n", c, s }'
}

# short N: the iterations of the short run beside a run of N (CPU table)
short() { echo $(($1 / 8 > $2 ? $1 / 8 : $2)); }

# bench_run KEY TAG ARGS...: rdmaxfer bench ARGS --json, its CPU noted;
# prints its JSON
bench_run()
{
	local key=$1 tag=$2 j m0 m1
	shift 2
	m0=$(cpu_mark)
	j=$("${CLI[@]}" rdmaxfer bench "$ADDR" --port $PORT "$@" --json) || return
	m1=$(cpu_mark)
	cpu_note "$key" rdmaxfer "$tag" "$m0" "$m1" "$(echo "$j" | jq '.rows[0].iters')" \
		"$(echo "$j" | jq '.rows[0].bytes')"
	echo "$j"
}

if [ $LAYOUT = pair ]; then
	for _ in $(seq 100); do
		peer_sh true 2>/dev/null && break
		sleep 0.2
	done
	peer_sh true || { say "the server guest's peer-shell.sh does not answer on $ADDR port $PEER_SHELL_PORT"; exit 1; }
fi

SERVE_ATOMIC=()
[ $ATOMICS = 1 ] && SERVE_ATOMIC=(--atomic)
SRV_LOG=/tmp/bench-serve.log srv_bg rdmaxfer serve --port $PORT --size 64M "${SERVE_ATOMIC[@]}"
SERVE=$SRV_PID
if [ $LAYOUT = pair ]; then
	trap 'peer_sh "killall rdmaxfer" >/dev/null' EXIT
else
	trap 'kill $SERVE 2>/dev/null' EXIT
fi
for _ in $(seq 50); do
	rdmaxfer ping "$ADDR" --port $PORT --count 1 --warmup 0 --json >/dev/null 2>&1 && break
	sleep 0.2
done
# what an idle server guest's busy time is (the command channel, timers)
if [ $LAYOUT = pair ]; then
	m0=$(cpu_mark)
	sleep 5
	m1=$(cpu_mark)
	cpu_note idle none full "$m0" "$m1" 0 0
fi

# pt_ready: wait (up to 5 s) until perftest's server listens on its TCP
# port 18515 (0x4853), where the servers run
pt_ready()
{
	local c='r=1; for i in $(seq 50); do if grep -q ":4853 [0-9A-F]*:0000 0A" /proc/net/tcp /proc/net/tcp6; then r=0; break; fi; sleep 0.1; done'
	if [ $LAYOUT = pair ]; then
		[ "$(peer_sh "$c; echo \$r" | tail -1)" = 0 ]
	else
		sh -c "$c; exit \$r"
	fi
}

# [TAG=short] perftest_run KEY TOOL ARGS... -> prints its result line (the
# one that starts with the size); notes the run's CPU under KEY and TAG
perftest_run()
{
	local key=$1 tool=$2 try out m0 m1
	shift 2
	for try in 1 2 3; do
		srv_bg timeout 120 "$tool" -d "$DEV" -F "${PT_CM[@]}" "$@"
		pt_ready || sleep 1
		m0=$(cpu_mark)
		# the result line (the last one that starts with the size)
		out=$("${CLI[@]}" timeout 120 "$tool" -d "$DEV" -F "${PT_CM[@]}" "$@" "$ADDR" 2>/dev/null |
			awk '$1 ~ /^[0-9]+$/ && NF >= 5 { l = $0 } END { if (l != "") print l }')
		m1=$(cpu_mark)
		srv_wait
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
					# Mpps has 6 decimals: 0.000011 at 4 MiB
					# is 44-46 MiB/s
					if (d > 0.02 * $4 + 0.5e-6 * 1e6 * $1 / 1048576 + 0.02) bad = 1
				}
				exit !bad }'; then
			echo "$out"
			# shellcheck disable=SC2086  # two fields of the result line
			set -- $out
			cpu_note "$key" perftest "${TAG:-full}" "$m0" "$m1" "$2" $(($1 * $2))
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
	local op=$1 size=$2 iters=$3 depth=$4 r ours=() theirs=() ours_r=() theirs_r=() j p n
	local key=bw-$op-$size
	n=$(short "$iters" $((2 * depth)))
	for r in $(seq "$ROUNDS"); do
		j=$(bench_run "$key" full --op "$op" --size "$size" --iters "$iters" --depth "$depth") ||
			{ say "rdmaxfer bench $op $size failed"; return; }
		ours+=("$(echo "$j" | jq '.rows[0].bw_mib_s')")
		ours_r+=("$(echo "$j" | jq '.rows[0].msg_rate_mpps')")
		[ "$BENCH_CPU" = 1 ] && bench_run "$key" short --op "$op" --size "$size" --iters "$n" \
			--depth "$depth" >/dev/null
		p=$(perftest_run "$key" "ib_${op}_bw" -s "$size" -n "$iters" -t "$depth") || continue
		theirs+=("$(echo "$p" | awk '{ print $4 }')")
		theirs_r+=("$(echo "$p" | awk '{ print $5 }')")
		[ "$BENCH_CPU" = 1 ] && TAG=short perftest_run "$key" "ib_${op}_bw" -s "$size" -n "$n" \
			-t "$depth" >/dev/null
		say "round $r: $op $size rdmaxfer ${ours[-1]} MiB/s, ib_${op}_bw ${theirs[-1]:-?} MiB/s"
	done
	echo "bw $op $size $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
	echo "rate $op $size $(printf '%s\n' "${ours_r[@]}" | median) $(printf '%s\n' "${theirs_r[@]}" | median)" >>"$RESULTS"
}

# arate OP ITERS DEPTH -> records "arate OP 8 ours theirs" (Mpps; OP fadd or cas)
arate()
{
	local op=$1 iters=$2 depth=$3 r ours=() theirs=() j p type n key=arate-$1-8
	type=$([ "$op" = cas ] && echo CMP_AND_SWAP || echo FETCH_AND_ADD)
	n=$(short "$iters" $((2 * depth)))
	for r in $(seq "$ROUNDS"); do
		j=$(bench_run "$key" full --op "$op" --iters "$iters" --depth "$depth") ||
			{ say "rdmaxfer bench $op failed"; return; }
		ours+=("$(echo "$j" | jq '.rows[0].msg_rate_mpps')")
		[ "$BENCH_CPU" = 1 ] && bench_run "$key" short --op "$op" --iters "$n" --depth "$depth" >/dev/null
		p=$(perftest_run "$key" ib_atomic_bw -A "$type" -n "$iters" -t "$depth") || continue
		theirs+=("$(echo "$p" | awk '{ print $5 }')")
		[ "$BENCH_CPU" = 1 ] && TAG=short perftest_run "$key" ib_atomic_bw -A "$type" -n "$n" \
			-t "$depth" >/dev/null
		say "round $r: $op rdmaxfer ${ours[-1]} Mpps, ib_atomic_bw ${theirs[-1]:-?} Mpps"
	done
	echo "arate $op 8 $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
}

# ping_run KEY TAG OP COUNT: rdmaxfer ping (100 warm-up round trips and
# COUNT measured ones), its CPU noted; prints its JSON
ping_run()
{
	local j m0 m1
	m0=$(cpu_mark)
	j=$("${CLI[@]}" rdmaxfer ping "$ADDR" --port $PORT --op "$3" --size 8 --count "$4" --warmup 100 \
		--json) || return
	m1=$(cpu_mark)
	cpu_note "$1" rdmaxfer "$2" "$m0" "$m1" $(($4 + 100)) $((($4 + 100) * 8))
	echo "$j"
}

# lat OP ITERS -> records "lat OP 8 ours_p50_us perftest_round_trip_us" and
# "lat999 OP 8 ours_p99.9_us perftest_p99.9_round_trip_us".  perftest's
# latency line: bytes iterations t_min t_max t_typical t_avg t_stdev
# p99 p99.9; its per-iteration samples are half round trips for write and
# send (doubled here, like t_typical), whole ones for read and atomics.
lat()
{
	local op=$1 iters=$2 r ours=() theirs=() ours9=() theirs9=() j p t t9 k n key=lat-$1-8 pt
	n=$(short "$iters" 100)
	pt=("ib_${op}_lat" -s 8)
	[ "$op" = fadd ] && pt=(ib_atomic_lat -A FETCH_AND_ADD)
	for r in $(seq "$ROUNDS"); do
		j=$(ping_run "$key" full "$op" "$iters") || { say "rdmaxfer ping $op failed"; return; }
		ours+=("$(echo "$j" | jq '.p50_us')")
		ours9+=("$(echo "$j" | jq '.p999_us')")
		[ "$BENCH_CPU" = 1 ] && ping_run "$key" short "$op" "$n" >/dev/null
		p=$(perftest_run "$key" "${pt[@]}" -n "$iters") || continue
		[ "$BENCH_CPU" = 1 ] && TAG=short perftest_run "$key" "${pt[@]}" -n "$n" >/dev/null
		t=$(echo "$p" | awk '{ print $5 }')
		t9=$(echo "$p" | awk '{ print (NF >= 9) ? $9 : 0 }')
		case $op in read | fadd) k=1 ;; *) k=2 ;; esac
		t=$(echo "$t * $k" | bc -l)
		t9=$(echo "$t9 * $k" | bc -l)
		theirs+=("$t")
		theirs9+=("$t9")
		say "round $r: $op latency rdmaxfer p50 ${ours[-1]} us p99.9 ${ours9[-1]} us, ${pt[0]} round trip ${theirs[-1]} us p99.9 ${theirs9[-1]} us"
	done
	echo "lat $op 8 $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
	echo "lat999 $op 8 $(printf '%s\n' "${ours9[@]}" | median) $(printf '%s\n' "${theirs9[@]}" | median)" >>"$RESULTS"
}

# scale_conns SIZE TOTAL: RDMA WRITEs of SIZE over 1, 8, 64 and 256
# connections (BENCH_CONNS), TOTAL operations in all, spread evenly; in
# flight 64 per connection at one, 64/N at N (at least 1): the same work
# and the same depth in all on every row, only the number of QPs grows.
# rdmaxfer bench --conns N (an open file each, driven by bench's default
# of one thread per CPU it may run on: one, the client's vCPU, in either
# layout; its own serve with a 16 MiB window and --max-per-host 256, the
# module's max_conns_per_file raised for it) vs ib_write_bw -q N (one
# process, N QPs).  Records "sconns N ours theirs" (MiB/s) and "conns write SIZE bw8
# bw1" (rdmaxfer's 8 against its 1); CPU under the key conns-N.
scale_conns()
{
	local size=$1 total=$2 port=$((PORT + 2)) n d per sper r ours theirs j p key mcpf spid
	mcpf=/sys/module/rdmaxfer/parameters/max_conns_per_file
	if [ $LAYOUT = pair ]; then
		mcpf=$(peer_sh "cat $mcpf; echo 512 >$mcpf")
	else
		read -r mcpf_old <$mcpf && echo 512 >$mcpf && mcpf=$mcpf_old
	fi
	SRV_LOG=/tmp/bench-conns.log srv_bg rdmaxfer serve --port $port --size 16M --max-per-host 256
	spid=$SRV_PID
	for _ in $(seq 50); do
		rdmaxfer ping "$ADDR" --port $port --count 1 --warmup 0 --json >/dev/null 2>&1 && break
		sleep 0.2
	done
	for n in ${BENCH_CONNS:-1 8 64 256}; do
		d=$((64 / n))
		[ $d -ge 1 ] || d=1
		# perftest takes 5 iterations per QP or more
		per=$((total / n))
		[ $per -ge $((2 * d)) ] || per=$((2 * d))
		[ $per -ge 8 ] || per=8
		sper=$(short "$per" $((d > 5 ? d : 5)))
		key=conns-$n
		ours=() theirs=()
		for r in $(seq "$ROUNDS"); do
			j=$(PORT=$port bench_run "$key" full --op write --size "$size" --iters "$per" \
				--depth "$d" --conns "$n") || { say "rdmaxfer bench --conns $n failed"; break; }
			ours+=("$(echo "$j" | jq '.rows[0].bw_mib_s')")
			[ "$BENCH_CPU" = 1 ] && PORT=$port bench_run "$key" short --op write --size "$size" \
				--iters "$sper" --depth "$d" --conns "$n" >/dev/null
			p=$(perftest_run "$key" ib_write_bw -s "$size" -n "$per" -t "$d" -q "$n") || continue
			theirs+=("$(echo "$p" | awk '{ print $4 }')")
			[ "$BENCH_CPU" = 1 ] && TAG=short perftest_run "$key" ib_write_bw -s "$size" -n "$sper" \
				-t "$d" -q "$n" >/dev/null
			say "round $r: write $size over $n connection(s), $d in flight each: rdmaxfer ${ours[-1]} MiB/s, ib_write_bw -q $n ${theirs[-1]:-?} MiB/s"
		done
		[ ${#ours[@]} -gt 0 ] || continue
		echo "sconns $n $size $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
	done
	awk -v s="$size" '$1 == "sconns" && $2 == 1 { one = $4 } $1 == "sconns" && $2 == 8 { eight = $4 }
		END { if (one && eight) print "conns write " s " " eight " " one }' "$RESULTS" >>"$RESULTS"
	if [ $LAYOUT = pair ]; then
		peer_sh "kill $spid; echo $mcpf >/sys/module/rdmaxfer/parameters/max_conns_per_file"
	else
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		echo "$mcpf" >/sys/module/rdmaxfer/parameters/max_conns_per_file
	fi
}

# scale_windows TOTAL: TOTAL 4 KiB WRITEs, 64 in flight, over 1, 64 and
# 1024 windows (BENCH_WINDOWS) that serve exposes in place of its one
# (bench --windows N: window k % N takes operation k).  Records "swins N
# mpps expose_us_per_window"; CPU under the key windows-N.
scale_windows()
{
	local total=$1 n r j mpps=() exp=()
	for n in ${BENCH_WINDOWS:-1 64 1024}; do
		mpps=() exp=()
		for r in $(seq "$ROUNDS"); do
			j=$(bench_run "windows-$n" full --op write --size 4096 --iters "$total" \
				--depth 64 --windows "$n") || { say "rdmaxfer bench --windows $n failed"; break; }
			mpps+=("$(echo "$j" | jq '.rows[0].msg_rate_mpps')")
			exp+=("$(echo "$j" | jq '.expose_us_per_window')")
			[ "$BENCH_CPU" = 1 ] && bench_run "windows-$n" short --op write --size 4096 \
				--iters "$(short "$total" 64)" --depth 64 --windows "$n" >/dev/null
			say "round $r: 4 KiB WRITEs over $n window(s): ${mpps[-1]} Mpps, EXPOSE ${exp[-1]} us per window"
		done
		[ ${#mpps[@]} -gt 0 ] || continue
		echo "swins $n $(printf '%s\n' "${mpps[@]}" | median) $(printf '%s\n' "${exp[@]}" | median)" >>"$RESULTS"
	done
}

# file MIB -> records "file write MIB file_mib_s bench_mib_s"
file_bw()
{
	local mib=$1 port=$((PORT + 1)) r ours=() theirs=() j avail need bsize=64M sum m0 m1 c
	local fcpu=() bcpu=() spid
	# in and out in this guest's /tmp (single), or one in each guest's (pair)
	need=$((2 * mib + 256))
	[ $LAYOUT = pair ] && need=$((mib + 256))
	avail=$(df -m /tmp | awk 'NR == 2 { print $4 }')
	if [ "$avail" -lt $need ]; then
		say "file: /tmp has $avail MiB free, $need needed: skipped (boot with a larger RIG_MEM)"
		return
	fi
	dd if=/dev/urandom of=/tmp/bench-in bs=1M count="$mib" status=none || return
	# what copying the file costs each end by itself: the client reads it
	# from tmpfs, the server writes as much into tmpfs (busy s per GiB)
	m0=$(cpu_mark)
	cat /tmp/bench-in >/dev/null
	m1=$(cpu_mark)
	c=$(gib_cpu "$m0" "$m1" "$mib" 1)
	if [ $LAYOUT = pair ]; then
		m0=$(cpu_mark)
		peer_sh "dd if=/dev/zero of=/tmp/bench-cp bs=1M count=$mib status=none; rm -f /tmp/bench-cp"
		m1=$(cpu_mark)
		echo "copycpu $c $(gib_cpu "$m0" "$m1" "$mib" 2)" >>"$RESULTS"
	else
		echo "copycpu $c -" >>"$RESULTS"
	fi
	SRV_LOG=/tmp/bench-file.log srv_bg rdmaxfer serve --port $port --size 64M --out /tmp/bench-out
	spid=$SRV_PID
	for _ in $(seq 50); do
		rdmaxfer ping "$ADDR" --port $port --count 1 --warmup 0 --json >/dev/null 2>&1 && break
		sleep 0.2
	done
	for r in $(seq "$ROUNDS"); do
		m0=$(cpu_mark)
		j=$("${CLI[@]}" rdmaxfer write "$ADDR" --port $port --file /tmp/bench-in --json 2>/dev/null) ||
			{ say "rdmaxfer write --file failed"; break; }
		m1=$(cpu_mark)
		fcpu+=("$(gib_cpu "$m0" "$m1" "$mib")")
		ours+=("$(echo "$j" | jq '.mib_per_s')")
		m0=$(cpu_mark)
		# 64 MiB operations, or 4 MiB where one operation cannot be that
		# large (siw: max_op_size 4.8 MiB; the CLI says so and exits 1)
		j=$("${CLI[@]}" rdmaxfer bench "$ADDR" --port $port --op write --size $bsize \
			--iters $((mib / ${bsize%M})) --json 2>/tmp/bench-err) ||
			if [ $bsize = 64M ] && grep -q max_op_size /tmp/bench-err; then
				bsize=4M
				j=$("${CLI[@]}" rdmaxfer bench "$ADDR" --port $port --op write --size $bsize \
					--iters $((mib / 4)) --json 2>/tmp/bench-err)
			else
				false
			fi || { say "rdmaxfer bench write $bsize failed: $(cat /tmp/bench-err)"; break; }
		m1=$(cpu_mark)
		bcpu+=("$(gib_cpu "$m0" "$m1" "$mib")")
		theirs+=("$(echo "$j" | jq '.rows[0].bw_mib_s')")
		say "round $r: file of $mib MiB through a 64 MiB window ${ours[-1]} MiB/s, bench write $bsize ${theirs[-1]} MiB/s"
	done
	if [ $LAYOUT = pair ]; then
		sum=$(peer_sh "md5sum </tmp/bench-out; kill $spid; rm -f /tmp/bench-out")
		[ "$sum" = "$(md5sum </tmp/bench-in)" ] || say "file: serve's --out is not the file written"
	else
		cmp -s /tmp/bench-in /tmp/bench-out || say "file: serve's --out is not the file written"
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	rm -f /tmp/bench-in /tmp/bench-out
	[ ${#ours[@]} -gt 0 ] && [ ${#theirs[@]} -gt 0 ] || return 0
	echo "file write $mib $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${theirs[@]}" | median)" >>"$RESULTS"
	for c in 1 2; do
		printf 'filecpu %s %s %s\n' $c "$(printf '%s\n' "${fcpu[@]}" | cut -d' ' -f$c | median)" \
			"$(printf '%s\n' "${bcpu[@]}" | cut -d' ' -f$c | median)" >>"$RESULTS"
	done
}

# bw_rows: the bandwidth and rate rows (BENCH_ONLY=bw): WRITE and READ at
# 4 KiB-4 MiB, SEND into serve's receive slots (sink mode, zero-copy) at 4
# KiB-1 MiB, 64-byte SEND/WRITE/READ rates, and the fadd rate.
bw_rows()
{
	local op
	for op in write read; do
		bw $op 4096 $((5000 * SCALE)) 128
		bw $op 65536 $((1000 * SCALE)) 128
		bw $op 1048576 $((100 * SCALE)) 16
		bw $op 4194304 $((25 * SCALE)) 4
	done
	bw send 4096 $((5000 * SCALE)) 128
	bw send 65536 $((1000 * SCALE)) 128
	bw send 1048576 $((100 * SCALE)) 16
	bw send 64 $((10000 * SCALE)) 128
	bw write 64 $((10000 * SCALE)) 128
	bw read 64 $((10000 * SCALE)) 128
	[ $ATOMICS = 1 ] && arate fadd $((10000 * SCALE)) 16
	return 0
}

max_send=$(rdmaxfer info --json | jq '.module.max_send_size // 0')
say "rdmaxfer $(rdmaxfer --version | head -1 | cut -d' ' -f2), $(nproc) CPUs, rounds $ROUNDS; SEND into serve's receive slots (copy path: max_send_size=$max_send); $([ ${#CLI[@]} -gt 0 ] && echo "servers on CPU 0, clients on CPU 1" || echo "not pinned")"

if [ "$QUICK" = quick ]; then
	bw write 65536 200 16
	lat write 200
	scale_conns 65536 1024
	scale_windows 1024
elif [ -n "${BENCH_ONLY:-}" ]; then
	for only in $BENCH_ONLY; do
		case $only in
		lat)
			for op in write read send; do lat $op "$LAT_N"; done
			[ $ATOMICS = 1 ] && lat fadd "$LAT_N"
			;;
		bw) bw_rows ;;
		conns) scale_conns 65536 4096 ;;
		windows) scale_windows $((8192 * SCALE)) ;;
		file) file_bw "${BENCH_FILE_MIB:-1024}" ;;
		*) say "BENCH_ONLY: no section '$only' (bw, lat, conns, windows, file)"; exit 2 ;;
		esac
	done
else
	bw_rows
	lat write "$LAT_N"
	lat read "$LAT_N"
	lat send "$LAT_N"
	if [ $ATOMICS = 1 ]; then
		lat fadd "$LAT_N"
	else
		say "fadd rows left out: $DEV has no atomics (atomic_cap ATOMIC_NONE)"
	fi
	scale_conns 65536 4096
	scale_windows $((8192 * SCALE))
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
$1 == "sconns" { row("bw write " $3 " B, " $2 " conns", $4, $5, "MiB/s", $5 ? $4 / $5 : 0, 1.0) }
$1 == "conns" { row("8 conns / 1 conn, " $3 " B", $4, $5, "MiB/s", $5 ? $4 / $5 : 0, 0.9) }
$1 == "file" { row("file " $3 " MiB / bench", $4, $5, "MiB/s", $5 ? $4 / $5 : 0, 0.9) }
' "$RESULTS"

# The CPU table: per measurement and tool, the medians over the rounds of
# what one more operation costs (us) and one more GiB (s), each end: the
# busy time of a full run less that of its short run, over the operations
# (bytes) the full run has more.  Set-up and tear-down cost both runs the
# same and drop out.
# cpu_marginal KEY TOOL: per round "client-us/op server-us/op client-s/GiB server-s/GiB"
cpu_marginal()
{
	awk -v k="$1" -v t="$2" -v hz="$HZ" '$1 == k && $2 == t { n[$3]++; c[$3, n[$3]] = $4
		s[$3, n[$3]] = $5; o[$3, n[$3]] = $6; b[$3, n[$3]] = $7 }
	END {
		for (i = 1; i <= n["full"] && i <= n["short"]; i++) {
			dc = (c["full", i] - c["short", i]) / hz
			ds = (s["full", i] - s["short", i]) / hz
			do_ = o["full", i] - o["short", i]
			db = (b["full", i] - b["short", i]) / 1073741824
			if (do_ > 0 && db > 0)
				print dc * 1e6 / do_, ds * 1e6 / do_, dc / db, ds / db
		}
	}' "$CPUS"
}
cpu_col() { cpu_marginal "$1" "$2" | awk -v f="$3" '{ print $f }' | median; }

[ "$BENCH_CPU" = 1 ] || exit 0
echo
if [ $LAYOUT = pair ]; then
	idle=$(awk '$1 == "idle" { printf "%.1f", $5 * 100 / '"$HZ"' / 5 }' "$CPUS")
	echo "CPU table (median of $ROUNDS rounds; busy time per operation and per GiB, each guest, beyond set-up: a full run less a short one; an idle server guest is ${idle:-?} % busy)"
	printf '%-24s %-9s %12s %12s %12s %12s\n' measurement tool "client us/op" "server us/op" "client s/GiB" "server s/GiB"
else
	echo "CPU table (median of $ROUNDS rounds; the guest's busy time, both ends, per operation and per GiB beyond set-up: a full run less a short one)"
	printf '%-24s %-9s %12s %12s\n' measurement tool "both us/op" "both s/GiB"
fi
# per GiB only where a row moves data: 4 KiB operations and larger
gib() { case $1 in bw-*-[0-9][0-9][0-9][0-9]* | conns-* | windows-*) printf '%.2f' "$2" ;; *) echo - ;; esac; }
awk '$1 != "idle" && !seen[$1]++ { print $1 }' "$CPUS" | while read -r key; do
	for tool in rdmaxfer perftest; do
		grep -q "^$key $tool short " "$CPUS" || continue
		if [ $LAYOUT = pair ]; then
			printf '%-24s %-9s %12.1f %12.1f %12s %12s\n' "$key" $tool \
				"$(cpu_col "$key" $tool 1)" "$(cpu_col "$key" $tool 2)" \
				"$(gib "$key" "$(cpu_col "$key" $tool 3)")" "$(gib "$key" "$(cpu_col "$key" $tool 4)")"
		else
			printf '%-24s %-9s %12.1f %12s\n' "$key" $tool \
				"$(cpu_col "$key" $tool 1)" "$(gib "$key" "$(cpu_col "$key" $tool 3)")"
		fi
	done
done

# the file row's CPU: the whole transfer (set-up included: small beside 1 GiB)
if grep -q '^filecpu ' "$RESULTS"; then
	echo
	awk -v pair="$([ $LAYOUT = pair ] && echo 1)" '
	$1 == "copycpu" { cc = $2; cs = $3 }
	$1 == "filecpu" { f[$2] = $3; b[$2] = $4 }
	END {
		if (pair) {
			printf "file row, busy s per GiB, client / server guest: write --file %s / %s, bench %s / %s;", f[1], f[2], b[1], b[2]
			printf " copying a GiB through tmpfs alone: reading %s (client), writing %s (server)\n", cc, cs
		} else {
			printf "file row, busy s per GiB (both ends): write --file %s, bench %s;", f[1], b[1]
			printf " reading a GiB from tmpfs alone: %s\n", cc
		}
	}' "$RESULTS"
fi

# the scaling plots' data (tools/vm/bench.sh plots them), "### DATA" blocks as the labs'
# cpu2 KEY TOOL: CPU us/op of TOOL's client and server (NaN: one guest is both)
cpu2()
{
	if [ $LAYOUT = pair ]; then
		echo "$(cpu_col "$1" "$2" 1) $(cpu_col "$1" "$2" 2)"
	else
		echo "$(cpu_col "$1" "$2" 1) NaN"
	fi
}
if grep -q '^sconns ' "$RESULTS"; then
	echo
	echo "### DATA conns-$LAYOUT"
	echo "# conns rdmaxfer_mib_s perftest_mib_s rdmaxfer_client_us_op rdmaxfer_server_us_op perftest_client_us_op perftest_server_us_op"
	awk '$1 == "sconns" { print $2, $4, $5 }' "$RESULTS" | while read -r n o t; do
		echo "$n $o $t $(cpu2 "conns-$n" rdmaxfer) $(cpu2 "conns-$n" perftest)"
	done
	echo "### END"
fi
if grep -q '^swins ' "$RESULTS"; then
	echo
	echo "### DATA windows-$LAYOUT"
	echo "# windows rdmaxfer_mpps expose_us_per_window client_us_op server_us_op"
	awk '$1 == "swins" { print $2, $3, $4 }' "$RESULTS" | while read -r n m e; do
		echo "$n $m $e $(cpu2 "windows-$n" rdmaxfer)"
	done
	echo "### END"
fi
