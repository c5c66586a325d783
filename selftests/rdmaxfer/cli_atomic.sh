#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cli_atomic.sh - `rdmaxfer atomic`, `ping --op fadd|cas` and
# `bench --op fadd|cas` against `serve --atomic`, in one guest: the values
# before and after are right, the window's bytes say so too (read back),
# every one of a bench's fetch-and-adds landed exactly once (their sum),
# and the error contract (a window without atomics, an offset past it or
# not a multiple of 8 -> one line; usage -> exit 2).
# On a device without atomics (atomic_cap none: iWARP, siw among them) the
# contract instead: serve --atomic says so and serves the window without
# them, and atomic, ping and bench with an atomic --op exit 1 with one line
# that says the device has none.
. "$(dirname "$0")/lib.sh"

rdmaxfer_setup_cli
has_atomics=1
rdmaxfer info --json | jq -e --arg dev "$DEV" \
	'any(.devices[]; .name == $dev and .atomic_cap != "none" and (.caps | index("atomic")))' \
	>/dev/null || has_atomics=0

HOST=$ADDR
P1=18530	# serve --atomic --size 64K: rdmaxfer atomic
P2=18531	# serve --atomic --size 64K: bench
P3=18532	# serve without --atomic

tmp=$(mktemp -d)
pids=""
cleanup()
{
	for _p in $pids; do kill "$_p" 2>/dev/null; done
	rm -rf "$tmp"
}
at_exit cleanup

# json NAME FILTER: the JSON stdout of NAME satisfies the jq FILTER.
json()
{
	jq -e "$2" "$tmp/$1.out" >/dev/null 2>&1
}

# u64 NAME INDEX: the INDEX-th little-endian u64 of the file $tmp/NAME.
u64()
{
	od -An -v -t u8 -j $(($2 * 8)) -N 8 "$tmp/$1" | tr -d ' '
}

# usage errors: exit 2 before anything is connected
usage_checks()
{
	r=0
	for args in "--op fadd --offset 4" "--op cas --compare 1" "--op fadd --swap 1" \
		    "--op xor" "" "--op fadd --add x"; do
		# shellcheck disable=SC2086
		run u rdmaxfer atomic $HOST --port $P1 $args
		[ $rc -eq 2 ] || { r=1; ktap_diag "atomic $args: exit $rc"; show u.err; }
	done
	for args in "--op fadd --size 16" "--op cas --bidir" "--op fadd --transport tcp"; do
		# shellcheck disable=SC2086
		run u rdmaxfer bench $HOST --port $P2 $args
		[ $rc -eq 2 ] || { r=1; ktap_diag "bench $args: exit $rc"; show u.err; }
	done
	run u rdmaxfer ping $HOST --port $P2 --op cas --size 16
	[ $rc -eq 2 ] || { r=1; ktap_diag "ping --op cas --size 16: exit $rc"; }
	ktap_result "usage_errors_exit_2" $r
}

# stop_servers S...: SIGTERM each, exit 0 each
stop_servers()
{
	r=0
	for s in "$@"; do
		stop "$s"
		[ $rc -eq 0 ] || { r=1; ktap_diag "serve $s exit $rc"; show "$s.err"; }
	done
	ktap_result "servers_exit_cleanly" $r
}

if [ $has_atomics -eq 0 ]; then
	ktap_plan 4
	ktap_diag "$DEV has no atomics (atomic_cap none): the contract of a device without them"
	serve s1 --port $P1 --size 64K --atomic
	serve s2 --port $P2 --size 64K --atomic
	# serve --atomic still serves the window (without atomics), and says why, once
	run n0 rdmaxfer read $HOST --port $P1 --size 4K --out "$tmp/n0.data"
	r1=$rc
	r=0
	run n1 rdmaxfer atomic $HOST --port $P1 --op fadd --offset 8 --add 5
	[ $rc -eq 1 ] && one_error_line n1 'has no atomics' && [ ! -s "$tmp/n1.out" ] || { r=1; show n1.out n1.err; }
	run n2 rdmaxfer ping $HOST --port $P2 --op fadd --count 3
	[ $rc -eq 1 ] && one_error_line n2 'has no atomics' || { r=1; show n2.out n2.err; }
	run n3 rdmaxfer bench $HOST --port $P2 --op cas --iters 10
	[ $rc -eq 1 ] && one_error_line n3 'has no atomics' || { r=1; show n3.out n3.err; }
	ktap_result "no_atomics_device_is_one_line" $r
	[ $r1 -eq 0 ] && [ "$(grep -c 'RDMA device has no atomics' "$tmp/s1.err")" -eq 1 ] &&
		[ "$(grep -vc '^rdmaxfer: warning: no --key: ' "$tmp/s1.err")" -eq 1 ]
	r=$?
	[ $r -eq 0 ] || show n0.err s1.log s1.err
	ktap_result "serve_atomic_without_atomics_serves_and_says_so" $r
	usage_checks
	stop_servers s1 s2
	ktap_finish
fi

ktap_plan 9

serve s1 --port $P1 --size 64K --atomic
serve s2 --port $P2 --size 64K --atomic
serve s3 --port $P3 --size 64K

# --- fetch-and-add: old and new values, a negative --add ------------------
r=0
run a1 rdmaxfer atomic $HOST --port $P1 --op fadd --offset 8 --add 5 --json
json a1 '.op == "fadd" and .offset == 8 and .old == 0 and .new == 5' || r=1
run a2 rdmaxfer atomic $HOST --port $P1 --op fadd --offset 8 --add 0x10
grep -q '^fadd at offset 8: old 5 (0x5), new 21$' "$tmp/a2.out" || r=1
run a3 rdmaxfer atomic $HOST --port $P1 --op fadd --offset 8 --add -1 --json
json a3 '.old == 21 and .new == 20' || r=1
[ $r -eq 0 ] || show a1.out a1.err a2.out a2.err a3.out a3.err
ktap_result "fadd_old_and_new_values" $r

# --- compare-and-swap: swapped, then not ----------------------------------
r=0
run c1 rdmaxfer atomic $HOST --port $P1 --op cas --offset 8 --compare 20 --swap 7 --json
json c1 '.op == "cas" and .old == 20 and .new == 7 and .swapped == true' || r=1
run c2 rdmaxfer atomic $HOST --port $P1 --op cas --offset 8 --compare 20 --swap 9
grep -q '^cas at offset 8: old 7 (0x7), not swapped$' "$tmp/c2.out" || r=1
[ $r -eq 0 ] || show c1.out c1.err c2.out c2.err
ktap_result "cas_swaps_only_on_a_match" $r

# --- the window holds what the atomics left, nothing around it changed ----
run rb rdmaxfer read $HOST --port $P1 --size 24 --out "$tmp/rb.data"
r=1
[ $rc -eq 0 ] && [ "$(u64 rb.data 0)" = 0 ] && [ "$(u64 rb.data 1)" = 7 ] &&
	[ "$(u64 rb.data 2)" = 0 ] && r=0
[ $r -eq 0 ] || { show rb.err; ktap_diag "$(od -An -t u8 "$tmp/rb.data")"; }
ktap_result "window_holds_the_result" $r

# --- ping: atomic round trips ---------------------------------------------
run p1 rdmaxfer ping $HOST --port $P1 --op fadd --count 200 --json
r=1
[ $rc -eq 0 ] && json p1 '.count == 200 and .p50_us > 0' && r=0
[ $r -eq 0 ] || show p1.out p1.err
ktap_result "ping_fadd" $r

# --- bench: every fetch-and-add lands exactly once ------------------------
# 3000 FADDs of 1 over depth 16 slots of 8 bytes at offset 0: they sum to 3000
run b1 rdmaxfer bench $HOST --port $P2 --op fadd --iters 3000 --depth 16 --json
run bsum rdmaxfer read $HOST --port $P2 --size 136 --out "$tmp/bsum.data"
r=1
if [ $rc -eq 0 ] && json b1 '.op == "fadd" and .rows[0].size == 8 and .rows[0].iters == 3000'; then
	sum=0
	for i in $(seq 0 15); do sum=$((sum + $(u64 bsum.data "$i"))); done
	[ $sum -eq 3000 ] && [ "$(u64 bsum.data 16)" = 0 ] && r=0
	[ $r -eq 0 ] || ktap_diag "the 16 slots sum to $sum, slot 16 holds $(u64 bsum.data 16)"
fi
[ $r -eq 0 ] || show b1.out b1.err bsum.err
ktap_result "bench_fadd_each_lands_once" $r

run b2 rdmaxfer bench $HOST --port $P2 --op cas --iters 1000 --json
r=1
[ $rc -eq 0 ] && json b2 '.op == "cas" and .rows[0].iters == 1000' && r=0
[ $r -eq 0 ] || show b2.out b2.err
ktap_result "bench_cas" $r

# --- errors -----------------------------------------------------------------
r=0
run e1 rdmaxfer atomic $HOST --port $P3 --op fadd
[ $rc -eq 1 ] && one_error_line e1 'does not allow remote atomics' || { r=1; show e1.err; }
run e2 rdmaxfer atomic $HOST --port $P1 --op fadd --offset 65536
[ $rc -eq 1 ] && one_error_line e2 'past the last 8 bytes' || { r=1; show e2.err; }
run e3 rdmaxfer bench $HOST --port $P3 --op cas --iters 10
[ $rc -eq 1 ] && one_error_line e3 'does not allow remote atomics' || { r=1; show e3.err; }
ktap_result "no_atomics_or_past_the_window_is_one_line" $r

usage_checks
stop_servers s1 s2 s3

ktap_finish
