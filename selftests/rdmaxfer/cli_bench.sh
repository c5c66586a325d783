#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cli_bench.sh - `rdmaxfer ping` and `rdmaxfer bench` against `rdmaxfer serve`
# in one guest (both ends on one RDMA device): the JSON of ping (percentiles in order,
# count, histogram) for send, write and read; bench rows for write, read and
# send (bandwidth and message rate agree, iterations as asked), a sweep,
# several connections (also several on one thread, and on two threads of
# unequal shares), both directions, --duration, one-way SENDs past
# max_send_size into serve's receive slots; the error contract (a copied
# SEND larger than max_send_size, a SEND larger than max_msg_size -> exit
# 2, larger than the window -> exit 1,
# no server -> exit 1, usage -> exit 2, one line each); the module counted no
# errors for all that, serve printed none of the bench messages and still
# serves a verified write.  Iterations are small: TCG is slow.
. "$(dirname "$0")/lib.sh"

rdmaxfer_setup_cli

HOST=$ADDR
PORT=18610	# serve --size 4M
PNONE=18699	# nobody listens here

tmp=$(mktemp -d)
pid=""
cleanup()
{
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
at_exit cleanup

# ping_ok NAME N ARGS...: `rdmaxfer ping --json ARGS` gives N samples whose
# statistics are positive and in order.
ping_ok()
{
	_n=$1
	_c=$2
	shift 2
	run "$_n" rdmaxfer ping $HOST --port $PORT --json "$@"
	[ $rc -eq 0 ] && [ ! -s "$tmp/$_n.err" ] &&
		jq -e --argjson n "$_c" '.count == $n and
			([.min_us, .p50_us, .p99_us, .p999_us, .max_us, .mean_us] | all(. > 0)) and
			.min_us <= .p50_us and .p50_us <= .p99_us and .p99_us <= .p999_us and
			.p999_us <= .max_us and .mean_us >= .min_us and .mean_us <= .max_us' \
			"$tmp/$_n.out" >/dev/null
}

# bench_ok NAME ROWS ITERS ARGS...: `rdmaxfer bench --json ARGS` gives ROWS
# rows of ITERS operations each, bandwidth > 0 and a message rate that
# agrees with it (bw * 2^20 / size = rate * 10^6 within 1%).
bench_ok()
{
	_n=$1
	_r=$2
	_i=$3
	shift 3
	run "$_n" rdmaxfer bench $HOST --port $PORT --json "$@"
	[ $rc -eq 0 ] && [ ! -s "$tmp/$_n.err" ] &&
		jq -e --argjson r "$_r" --argjson i "$_i" '(.rows | length) == $r and
			(.rows | all(.bw_mib_s > 0 and .msg_rate_mpps > 0 and
				($i < 0 or .iters == $i) and
				((.bw_mib_s * 1048576 / .size - .msg_rate_mpps * 1e6) | fabs) <=
					0.01 * .msg_rate_mpps * 1e6))' \
			"$tmp/$_n.out" >/dev/null
}

ktap_plan 23

run stats0 rdmaxfer stats --json

rdmaxfer serve --port $PORT --size 4M >"$tmp/serve.log" 2>"$tmp/serve.err" &
pid=$!
wait_for "grep -q '^listening on' '$tmp/serve.log'" 15
r=$?
[ $r -eq 0 ] || show serve.log serve.err
ktap_result "serve_listens" $r

# --- ping -------------------------------------------------------------------
for op in send write read; do
	ping_ok ping_$op 200 --op $op --count 200 --warmup 10
	r=$?
	[ $r -eq 0 ] || show ping_$op.out ping_$op.err
	ktap_result "ping_${op}_json" $r
done

ping_ok ping_hist 100 --count 100 --warmup 0 --size 64 --poll block --histogram &&
	jq -e '(.histogram | length) > 0 and ([.histogram[].count] | add) == 100 and
		(.histogram | all(.from_us < .to_us))' "$tmp/ping_hist.out" >/dev/null
r=$?
[ $r -eq 0 ] || show ping_hist.out ping_hist.err
ktap_result "ping_histogram_json" $r

run ping_human rdmaxfer ping $HOST --port $PORT --op write --size 4K --count 50 --warmup 5
[ $rc -eq 0 ] && [ ! -s "$tmp/ping_human.err" ] &&
	grep -q "^rdma write ping to $HOST, 4096 bytes, 50 round trips" "$tmp/ping_human.out" &&
	grep -q '^ *min  *p50  *p99  *p99.9  *max  *mean$' "$tmp/ping_human.out"
r=$?
[ $r -eq 0 ] || show ping_human.out ping_human.err
ktap_result "ping_human" $r

# --- bench ------------------------------------------------------------------
for op in write read send; do
	bench_ok bench_$op 1 200 --op $op --size 2K --iters 200 &&
		jq -e '.op == "'$op'" and .rows[0].size == 2048 and
			.rows[0].bytes == 2048 * 200' "$tmp/bench_$op.out" >/dev/null
	r=$?
	[ $r -eq 0 ] || show bench_$op.out bench_$op.err
	ktap_result "bench_${op}_json" $r
done

bench_ok sweep 5 50 --op write --sweep 4K:64K --iters 50 --depth 16 &&
	jq -e '[.rows[].size] == [4096, 8192, 16384, 32768, 65536]' "$tmp/sweep.out" >/dev/null
r=$?
[ $r -eq 0 ] || show sweep.out sweep.err
ktap_result "bench_sweep_rows" $r

bench_ok conns 2 400 --op read --sweep 1K:2K --iters 100 --conns 4 &&
	jq -e --argjson c "$(nproc)" '.conns == 4 and .threads == ([$c, 4] | min)' \
		"$tmp/conns.out" >/dev/null
r=$?
[ $r -eq 0 ] || show conns.out conns.err
ktap_result "bench_conns_4" $r

# several connections on one thread (it polls their files), and on two
# threads of unequal shares: every operation counted, every SEND received
# (serve's count must equal ours), every echo back
bench_ok thr1 1 400 --op write --size 4K --iters 100 --depth 8 --conns 4 --threads 1 &&
	jq -e '.threads == 1' "$tmp/thr1.out" >/dev/null &&
	bench_ok thr1s 1 300 --op send --size 1K --iters 100 --conns 3 --threads 2 &&
	bench_ok thr1e 1 600 --op send --size 64 --iters 100 --bidir --conns 3 --threads 1 &&
	bench_ok thr1d 1 -1 --op read --size 4K --duration 1 --conns 3 --threads 1 &&
	jq -e '.rows[0].iters > 0' "$tmp/thr1d.out" >/dev/null
r=$?
[ $r -eq 0 ] || show thr1.out thr1.err thr1s.err thr1e.err thr1d.out thr1d.err
ktap_result "bench_conns_on_fewer_threads" $r

# --windows: each connection gets that many windows from serve, over equal
# parts of its 4 MiB, and spreads its operations over them
bench_ok wins 1 512 --op write --size 4K --iters 256 --conns 2 --windows 64 &&
	jq -e '.windows == 64 and .expose_us_per_window > 0' "$tmp/wins.out" >/dev/null
r=$?
[ $r -eq 0 ] || show wins.out wins.err
ktap_result "bench_windows_64" $r

# 1,024 windows of 4 KiB each (the most a connection carries), on two
# connections at once: serve's budget for all of them (2,048) is then used
# up and a third connection's request is refused with ENOSPC (exit 1, one
# line); once they closed, their windows are gone and the budget is back
bench_ok wins1k 1 2048 --op read --size 4K --iters 1024 --conns 2 --windows 1024
r=$?
[ $r -eq 0 ] || show wins1k.out wins1k.err
if [ $r -eq 0 ]; then
	rdmaxfer bench $HOST --port $PORT --op write --size 4K --duration 5 --depth 1 --conns 2 \
		--windows 1024 >"$tmp/hold.out" 2>"$tmp/hold.err" &
	hold=$!
	# both connections hold their windows once the table's first line is out
	wait_for "grep -q 'windows per connection' '$tmp/hold.out'" 60 || r=1
	run over rdmaxfer bench $HOST --port $PORT --op write --size 4K --iters 10 --windows 1
	if [ $rc -ne 1 ] || ! one_error_line over 'exposed 0 of 1 windows: No space left on device'; then
		ktap_diag "a request past serve's budget: exit $rc"
		show over.err
		r=1
	fi
	wait $hold || { ktap_diag "the bench holding 2048 windows failed"; show hold.err; r=1; }
	bench_ok wins1 1 10 --op write --size 4K --iters 10 --windows 1 || { show wins1.err; r=1; }
fi
ktap_result "bench_windows_1024_and_serve_budget" $r

# both directions: WRITE and READ alternate (iters per connection); every
# SEND comes back (sent + echoed: 2 x iters per connection)
bench_ok bidirw 1 200 --op write --size 4K --iters 100 --bidir --conns 2
r1=$?
bench_ok bidirs 1 400 --op send --size 64 --iters 100 --bidir --conns 2 &&
	jq -e '.bidir == true' "$tmp/bidirs.out" >/dev/null
r=$?
[ $r1 -eq 0 ] || show bidirw.out bidirw.err
[ $r -eq 0 ] || show bidirs.out bidirs.err
[ $r1 -eq 0 ] && [ $r -eq 0 ]
ktap_result "bench_bidir" $?

bench_ok duration 1 -1 --op send --size 512 --duration 1 &&
	jq -e '.rows[0].iters > 0 and .rows[0].secs > 0.5' "$tmp/duration.out" >/dev/null
r=$?
[ $r -eq 0 ] || show duration.out duration.err
ktap_result "bench_duration" $r

# one way, serve posts receive slots: SENDs go zero-copy, past max_send_size
bench_ok slots 3 -1 --op send --sweep 4089:16356 --iters 20 &&
	jq -e '[.rows[].iters] == [20, 20, 20]' "$tmp/slots.out" >/dev/null &&
	ping_ok ping_kecho 20 --op send --size 100000 --count 20 --warmup 2
r=$?
[ $r -eq 0 ] || show slots.out slots.err ping_kecho.out ping_kecho.err
ktap_result "send_into_slots_past_max_send_size" $r

# --- errors -----------------------------------------------------------------
run toobig rdmaxfer bench $HOST --port $PORT --op send --size 4089 --iters 10 --bidir
r1=$rc
run toobigp rdmaxfer ping $HOST --port $PORT --op send --size 2G --count 10
r2=$rc
run toobigm rdmaxfer bench $HOST --port $PORT --op send --size 2G --iters 1
[ $r1 -eq 2 ] && one_error_line toobig 'max_send_size' &&
	[ $r2 -eq 2 ] && one_error_line toobigp 'max_msg_size' && [ ! -s "$tmp/toobig.out" ] &&
	[ $rc -eq 2 ] && one_error_line toobigm 'max_msg_size'
r=$?
[ $r -eq 0 ] || show toobig.out toobig.err toobigp.err toobigm.err
ktap_result "send_larger_than_max_send_size_exit_2" $r

run window rdmaxfer bench $HOST --port $PORT --op write --size 8M --iters 10
r1=$rc
run windowp rdmaxfer ping $HOST --port $PORT --op read --size 5M --count 10
[ $r1 -eq 1 ] && one_error_line window 'does not fit' &&
	[ $rc -eq 1 ] && one_error_line windowp 'does not fit'
r=$?
[ $r -eq 0 ] || show window.out window.err windowp.err
ktap_result "size_larger_than_window_exit_1" $r

run noserver rdmaxfer bench $HOST --port $PNONE --op write --size 4K --iters 10 --conns 3
r1=$rc
run noserverp rdmaxfer ping $HOST --port $PNONE
[ $r1 -eq 1 ] && one_error_line noserver 'refused' && [ $rc -eq 1 ] &&
	one_error_line noserverp 'refused'
r=$?
[ $r -eq 0 ] || show noserver.err noserverp.err
ktap_result "no_server_exit_1" $r

r=0
while read -r cmd; do
	[ -z "$cmd" ] && continue
	# shellcheck disable=SC2086
	run usage rdmaxfer $cmd
	if [ $rc -ne 2 ] || ! one_error_line usage '.'; then
		ktap_diag "'rdmaxfer $cmd' exited $rc"
		show usage.err
		r=1
	fi
done <<EOF
ping
ping $HOST --op atomic
ping $HOST --count 0
ping $HOST --poll sometimes
ping $HOST --transport sctp
ping $HOST extra
bench $HOST
bench $HOST --op write --size 4K --sweep 4K:8K
bench $HOST --op write --sweep 8K:4K
bench $HOST --op write --depth 0
bench $HOST --op write --depth 1025
bench $HOST --op write --conns 257
bench $HOST --op write --threads 0
bench $HOST --op write --conns 2 --threads 3
bench $HOST --op write --transport tcp --threads 1
bench $HOST --op write --windows 0
bench $HOST --op write --windows 1025
bench $HOST --op send --windows 4
bench $HOST --op write --iters 5 --duration 1
bench $HOST --op write --duration -1
bench nowhere --op write
EOF
ktap_result "usage_errors_exit_2" $r

# --- afterwards -------------------------------------------------------------
run stats1 rdmaxfer stats --json
[ $rc -eq 0 ] && jq -e -s '.[0].global as $a | .[1].global as $b |
	$b.errors.write == $a.errors.write and $b.errors.read == $a.errors.read and
	$b.errors.send == $a.errors.send and $b.protocol_errors == $a.protocol_errors and
	$b.ops.write > $a.ops.write and $b.ops.read > $a.ops.read and $b.ops.send > $a.ops.send' \
	"$tmp/stats0.out" "$tmp/stats1.out" >/dev/null
r=$?
[ $r -eq 0 ] || show stats0.out stats1.out
ktap_result "stats_no_errors" $r

# serve printed none of the bench messages (0x5a bytes: "ZZZZ...") and still
# serves a normal verified write
run write rdmaxfer write $HOST --port $PORT --size 1M --verify
[ $rc -eq 0 ] && grep -q ', verified$' "$tmp/write.out" && ! grep -q ZZZZ "$tmp/serve.log" &&
	serve_quiet serve
r=$?
[ $r -eq 0 ] || show write.out write.err serve.log serve.err
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
pid=""
[ $rc -eq 0 ] || ktap_diag "serve exited $rc"
[ $r -eq 0 ] && [ $rc -eq 0 ]
ktap_result "serve_still_serves" $?

ktap_finish
