#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# netns.sh - rdmaxfer in network namespaces: a file descriptor of
# /dev/rdmaxfer makes its connections (rdma_cm ids) in the network namespace
# of the process that opened it.  The test makes what it needs and removes
# it: namespaces A, B and C, a veth pair between A (198.51.100.1) and B
# (198.51.100.2), an RDMA device on each end (Soft-RoCE, or Soft-iWARP with
# RDMAXFER_TEST_PROVIDER=siw), nothing in C but lo.  Then
#  - `rdmaxfer serve` in A and `rdmaxfer write` in B move data intact;
#  - the initial namespace and C cannot reach A's address (no route there),
#    and a write in the initial namespace to its own address at A's port is
#    refused: A's listener (on the wildcard address) is A's alone;
#  - A's server still serves B after those attempts;
#  - with the namespaces gone, the RDMA devices are gone and the kernel log
#    has no warning.
# Soft-RoCE works in a non-initial namespace from 7.1 on (its UDP sockets
# were the initial namespace's before): on older kernels the test skips.
. "$(dirname "$0")/lib.sh"

command -v rdmaxfer >/dev/null || ktap_skip_all "the rdmaxfer CLI is not on PATH"
command -v rdma >/dev/null || ktap_skip_all "the rdma tool (iproute2) is not installed"
[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root (namespaces, RDMA devices)"
PROVIDER=${RDMAXFER_TEST_PROVIDER:-rxe}
case $PROVIDER in
rxe) PROVIDER_MOD=rdma_rxe ;;
siw) PROVIDER_MOD=siw ;;
*) ktap_skip_all "RDMAXFER_TEST_PROVIDER=$PROVIDER: makes only rxe or siw devices" ;;
esac
krel=$(uname -r)
kmaj=${krel%%.*}
kmin=${krel#*.}
kmin=${kmin%%[!0-9]*}
[ "$PROVIDER" != rxe ] || [ "$kmaj" -gt 7 ] || { [ "$kmaj" -eq 7 ] && [ "$kmin" -ge 1 ]; } ||
	ktap_skip_all "Soft-RoCE works in a non-initial network namespace from 7.1 on (this is $krel)"
rdmaxfer_load || ktap_skip_all "cannot load the module"
modprobe "$PROVIDER_MOD" 2>/dev/null
ip netns list >/dev/null 2>&1 || ktap_skip_all "ip netns does not work here"

A=rdmaxfer-a-$$
B=rdmaxfer-b-$$
C=rdmaxfer-c-$$
ADDR_A=198.51.100.1
ADDR_B=198.51.100.2
PORT=18540

tmp=$(mktemp -d)
pids=""
cleanup()
{
	for _p in $pids; do kill "$_p" 2>/dev/null; done
	wait 2>/dev/null
	for _ns in $A $B $C; do ip netns del "$_ns" 2>/dev/null; done
	rm -rf "$tmp"
}
at_exit cleanup
# an address of the initial namespace with an RDMA device, if one can be had
SELF=
rdmaxfer_env_try && SELF=$RDMAXFER_TEST_ADDR

# nsrun NS CMD...: CMD in namespace NS
nsrun() { _ns=$1; shift; ip netns exec "$_ns" "$@"; }

kmsg_mark
ktap_plan 7

# --- setup ----------------------------------------------------------------
setup()
{
	ip netns add "$A" && ip netns add "$B" && ip netns add "$C" &&
		ip link add nsx-a netns "$A" type veth peer name nsx-b netns "$B" &&
		nsrun "$A" ip link set lo up && nsrun "$B" ip link set lo up && nsrun "$C" ip link set lo up &&
		nsrun "$A" ip addr add $ADDR_A/24 dev nsx-a && nsrun "$B" ip addr add $ADDR_B/24 dev nsx-b &&
		nsrun "$A" ip link set nsx-a up && nsrun "$B" ip link set nsx-b up &&
		nsrun "$A" rdma link add "$PROVIDER-nsa" type "$PROVIDER" netdev nsx-a &&
		nsrun "$B" rdma link add "$PROVIDER-nsb" type "$PROVIDER" netdev nsx-b &&
		wait_for "nsrun $A rdma link show $PROVIDER-nsa/1 | grep -q ACTIVE" 10 &&
		wait_for "nsrun $B rdma link show $PROVIDER-nsb/1 | grep -q ACTIVE" 10
}
out=$(setup 2>&1)
r=$?
[ $r -eq 0 ] || ktap_diag "setup failed: $out"
ktap_result "${PROVIDER}_on_veth_in_two_namespaces" $r
if [ $r -ne 0 ]; then
	for t in serve_and_write_across_namespaces initial_namespace_cannot_reach \
		 third_namespace_cannot_reach listener_is_its_namespace_only \
		 still_serves_after_refusals nothing_left_with_namespaces_gone; do
		ktap_skip "$t" "the setup failed"
	done
	ktap_finish
fi

# --- data between A and B -------------------------------------------------
# (ip netns exec execs the CLI: $! is the server itself, not a subshell)
ip netns exec "$A" rdmaxfer serve --port $PORT --size 1M --out "$tmp/a.data" \
	>"$tmp/serve.log" 2>"$tmp/serve.err" &
echo $! >"$tmp/serve.pid"
pids="$pids $!"
wait_for "grep -q '^listening on' '$tmp/serve.log'" 15
head -c 1048576 /dev/urandom >"$tmp/data"
run wb nsrun "$B" rdmaxfer write $ADDR_A --port $PORT --file "$tmp/data" --verify
r=1
[ $rc -eq 0 ] && grep -q "^wrote 1048576 bytes in .*, verified\$" "$tmp/wb.out" &&
	cmp -s "$tmp/data" "$tmp/a.data" && r=0
[ $r -eq 0 ] || show serve.log serve.err wb.out wb.err
ktap_result "serve_and_write_across_namespaces" $r

# --- what other namespaces cannot do --------------------------------------
run w0 rdmaxfer write $ADDR_A --port $PORT --size 4096
r=1
[ $rc -eq 1 ] && one_error_line w0 'cannot reach\|no answer' && r=0
[ $r -eq 0 ] || show w0.out w0.err
ktap_result "initial_namespace_cannot_reach" $r

run wc nsrun "$C" rdmaxfer write $ADDR_A --port $PORT --size 4096
r=1
[ $rc -eq 1 ] && one_error_line wc 'cannot reach\|no answer' && r=0
[ $r -eq 0 ] || show wc.out wc.err
ktap_result "third_namespace_cannot_reach" $r

# The initial namespace's own address at A's port: A listens on the
# wildcard address, but only in A.
if [ -n "$SELF" ]; then
	run ws rdmaxfer write "$SELF" --port $PORT --size 4096
	r=1
	[ $rc -eq 1 ] && one_error_line ws 'refused' && r=0
	[ $r -eq 0 ] || show ws.out ws.err
	ktap_result "listener_is_its_namespace_only" $r
else
	ktap_skip "listener_is_its_namespace_only" "no RDMA device in the initial namespace: $rdmaxfer_env_why"
fi

head -c 4096 /dev/urandom >"$tmp/data2"
run wb2 nsrun "$B" rdmaxfer write $ADDR_A --port $PORT --file "$tmp/data2" --verify
r=1
[ $rc -eq 0 ] && head -c 4096 "$tmp/a.data" | cmp -s - "$tmp/data2" && r=0
[ $r -eq 0 ] || show wb2.out wb2.err serve.err
ktap_result "still_serves_after_refusals" $r

# --- teardown -------------------------------------------------------------
r=0
kill "$(cat "$tmp/serve.pid")" 2>/dev/null
wait "$(cat "$tmp/serve.pid")" 2>/dev/null
pids=""
! kill -0 "$(cat "$tmp/serve.pid")" 2>/dev/null || { r=1; ktap_diag "the server outlived SIGTERM"; }
for ns in $A $B $C; do ip netns del "$ns"; done
# rxe and siw remove a device when its netdev goes, which the namespace's end takes
wait_for "! rdma link show 2>/dev/null | grep -q '$PROVIDER-ns[ab]'" 20 ||
	{ r=1; ktap_diag "still there: $(rdma link show 2>&1 | grep "$PROVIDER-ns")"; }
out=$(kernel_log_problems) || { r=1; ktap_diag "kernel log:" "$out"; }
ktap_result "nothing_left_with_namespaces_gone" $r
ktap_finish
