#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rxe_env.sh - the RDMA device and addresses the rdmaxfer selftests run on.
#
#   rxe_env.sh up      set it up; print it as shell assignments (below)
#   rxe_env.sh down    remove what "up" made; exit 1 if the device still held
#                      RDMA objects (a QP, MR, cm_id, ... left by the test)
#
# Every test that needs a device calls it (lib.sh: rdmaxfer_env_up; the C
# tests: rdmaxfer_test_env() in rdmaxfer_test.h), so the tests run on any
# host with rdma_rxe, not only in the project's QEMU guest.  "up" prints
#
#   RDMAXFER_TEST_DEV=rxe_rdmaxfer       the RDMA device
#   RDMAXFER_TEST_NETDEV=rdmaxfer-v0     its netdev
#   RDMAXFER_TEST_ADDR=203.0.113.1       an IPv4 address on it
#   RDMAXFER_TEST_ADDR6=2001:db8:113::1  an IPv6 address on it
#   RDMAXFER_TEST_OTHER=203.0.113.2      an address of this host NOT on it
#   RDMAXFER_TEST_SILENT=203.0.113.99    an address on its subnet nobody has
#   RDMAXFER_TEST_NETDEV2=rdmaxfer-v1    a netdev for a second Soft-RoCE device
#   RDMAXFER_TEST_OWN=1                  1: made here, tests may delete and
#                                        re-add it (netdev rdmaxfer-v0); 0: not
#   RDMAXFER_TEST_PROVIDER=rxe           its provider, as `rdma link add ... type`
#                                        takes it: rxe or siw
#   RDMAXFER_TEST_PROVIDER_MOD=rdma_rxe  the provider's kernel module
#
# Only the caller that made the device (RDMAXFER_TEST_DEV was unset when it
# called "up") calls "down"; a program a test starts finds the variables
# exported and uses the same device.
#
# By default "up" makes its own Soft-RoCE device, as the kernel's
# tools/testing/selftests/rdma/rxe_*.sh do: a veth pair rdmaxfer-v0 /
# rdmaxfer-v1 (MTU 9000) with 203.0.113.1/24 and 2001:db8:113::1/64 on
# rdmaxfer-v0, 203.0.113.2/24 and 2001:db8:113::2/64 on rdmaxfer-v1, and
# rxe_rdmaxfer on rdmaxfer-v0, in the initial network namespace (Soft-RoCE
# works only there before 7.1).  With RDMAXFER_TEST_PROVIDER=siw it makes a
# Soft-iWARP device, siw_rdmaxfer, the same way instead (iWARP: RDMA over TCP,
# the model of cxgb4 and of irdma in iWARP mode).  These are documentation ranges (RFC 5737,
# RFC 3849), never routed, and not the ones the project's guests use.  Whatever an earlier, killed test left of them is
# removed first.  On a host with an RDMA device of its own (a real HCA),
# name it instead and nothing is created or removed:
#
#   RDMAXFER_TEST_DEV=mlx5_0 RDMAXFER_TEST_ADDR=10.1.0.5 RDMAXFER_TEST_ADDR6=fd00::5 \
#   [RDMAXFER_TEST_OTHER=an address of this host on another netdev]
#   [RDMAXFER_TEST_SILENT=an unused address on the device's subnet]
#
# (the tests that delete and re-add the device then skip those cases).
# Exit status of "up": 0, or 4 (kselftest's skip) with the reason on stderr.
#
# "down" compares the device's `rdma res show` counts with those right
# after "up" (polling up to RXE_ENV_WAIT seconds, default 20: releases
# finish asynchronously) before it deletes anything, so a leak of RDMA
# objects fails the test that caused it rather than vanishing with the
# device.
set -u

PROVIDER=${RDMAXFER_TEST_PROVIDER:-rxe}
case $PROVIDER in
rxe) DEV=rxe_rdmaxfer PROVIDER_MOD=rdma_rxe ;;
siw) DEV=siw_rdmaxfer PROVIDER_MOD=siw ;;
*) echo "RDMAXFER_TEST_PROVIDER must be rxe or siw" >&2; exit 2 ;;
esac
NETDEV=rdmaxfer-v0
PEER=rdmaxfer-v1
STATE=${TMPDIR:-/tmp}/rdmaxfer-rxe-env.res

skip() { echo "$*" >&2; exit 4; }

# the device's resource counts (without its index, which a re-add changes), CQs
# apart: those of ib_core's CQ pool stay until the device goes, the others are
# counted by owner
res() {
	rdma res show 2>/dev/null | sed -n "s/^[0-9]*: $1: //p" | sed 's/ cq [0-9]*//'
	rdma res show cq 2>/dev/null | grep "^dev $1 " | grep -v 'comm \[ib_core\]' |
		sed -n 's/.* comm \(.*\)/cq \1/p' | sort | uniq -c
}

remove() {
	rdma link delete "$DEV" 2>/dev/null
	ip link delete "$NETDEV" 2>/dev/null
	rm -f "$STATE"
}

up() {
	if [ -n "${RDMAXFER_TEST_DEV:-}" ]; then
		[ -n "${RDMAXFER_TEST_ADDR:-}" ] && [ -n "${RDMAXFER_TEST_ADDR6:-}" ] ||
			skip "RDMAXFER_TEST_DEV is set: set RDMAXFER_TEST_ADDR and RDMAXFER_TEST_ADDR6 (an IPv4 and an IPv6 address on it) too"
		printf 'RDMAXFER_TEST_DEV=%s\nRDMAXFER_TEST_NETDEV=%s\n' "$RDMAXFER_TEST_DEV" \
			"$(rdma link show 2>/dev/null |
			   sed -n "s|^link $RDMAXFER_TEST_DEV/1 .* netdev \([^ ]*\).*|\1|p")"
		printf 'RDMAXFER_TEST_ADDR=%s\nRDMAXFER_TEST_ADDR6=%s\nRDMAXFER_TEST_OTHER=%s\n' \
			"$RDMAXFER_TEST_ADDR" "$RDMAXFER_TEST_ADDR6" "${RDMAXFER_TEST_OTHER:-}"
		echo "RDMAXFER_TEST_SILENT=${RDMAXFER_TEST_SILENT:-}"
		echo "RDMAXFER_TEST_NETDEV2=${RDMAXFER_TEST_NETDEV2:-}"
		echo "RDMAXFER_TEST_OWN=${RDMAXFER_TEST_OWN:-0}"
		# the provider of a named device, from its driver (rdma link type)
		printf 'RDMAXFER_TEST_PROVIDER=%s\nRDMAXFER_TEST_PROVIDER_MOD=%s\n' "$PROVIDER" "$PROVIDER_MOD"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || skip "needs root to create a $PROVIDER device (or set RDMAXFER_TEST_DEV)"
	command -v rdma >/dev/null || skip "no rdma tool (iproute2)"
	command -v ip >/dev/null || skip "no ip tool (iproute2)"
	# before 6.15 rxe's ICRC needs the crc32 transform, siw's CRC32C always: not
	# autoloaded everywhere
	modprobe -q crc32_generic 2>/dev/null
	[ "$PROVIDER" = siw ] && modprobe -q crc32c_generic 2>/dev/null
	modprobe -q veth 2>/dev/null
	modprobe -q "$PROVIDER_MOD" 2>/dev/null || [ -d "/sys/module/$PROVIDER_MOD" ] ||
		skip "no $PROVIDER_MOD module (CONFIG_RDMA_$(echo "$PROVIDER" | tr a-z A-Z))"
	remove
	# one ip process for all of it: each exec costs under emulation
	out=$(ip -batch - 2>&1 <<-EOF
		link set lo up
		link add $NETDEV type veth peer name $PEER
		link set $NETDEV mtu 9000 up
		link set $PEER mtu 9000 up
		addr add 203.0.113.1/24 dev $NETDEV
		addr add 2001:db8:113::1/64 dev $NETDEV nodad
		addr add 203.0.113.2/24 dev $PEER
		addr add 2001:db8:113::2/64 dev $PEER nodad
	EOF
	) || { remove; skip "cannot make a veth pair: $(echo "$out" | tr '\n' ' ')"; }
	out=$(rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV" 2>&1) ||
		{ remove; skip "rdma link add $DEV type $PROVIDER netdev $NETDEV failed: $out"; }
	i=0
	until rdma link show "$DEV/1" 2>/dev/null | grep -q ACTIVE; do
		i=$((i + 1))
		[ $i -gt 100 ] && { remove; skip "$DEV did not become ACTIVE in 10 s"; }
		sleep 0.1
	done
	# without the baseline "down" could not check for leaks: that is a failure
	res "$DEV" >"$STATE" || { remove; echo "cannot write $STATE" >&2; exit 1; }
	printf 'RDMAXFER_TEST_DEV=%s\nRDMAXFER_TEST_NETDEV=%s\n' "$DEV" "$NETDEV"
	printf 'RDMAXFER_TEST_ADDR=203.0.113.1\nRDMAXFER_TEST_ADDR6=2001:db8:113::1\n'
	printf 'RDMAXFER_TEST_OTHER=203.0.113.2\nRDMAXFER_TEST_SILENT=203.0.113.99\n'
	printf 'RDMAXFER_TEST_NETDEV2=%s\nRDMAXFER_TEST_OWN=1\n' "$PEER"
	printf 'RDMAXFER_TEST_PROVIDER=%s\nRDMAXFER_TEST_PROVIDER_MOD=%s\n' "$PROVIDER" "$PROVIDER_MOD"
}

down() {
	[ -r "$STATE" ] || { remove; return 0; }
	base=$(cat "$STATE")
	t=0
	while now=$(res "$DEV") && [ -n "$now" ] && [ "$now" != "$base" ] &&
		[ $t -lt "${RXE_ENV_WAIT:-20}" ]; do
		sleep 1
		t=$((t + 1))
	done
	rc=0
	if [ -n "$now" ] && [ "$now" != "$base" ]; then
		echo "RDMA objects left on $DEV after ${t} s (rdma res show):" $now "; after up:" $base
		rdma res show qp link "$DEV" 2>/dev/null | grep -v ' qp-type GSI ' | head -n 20
		rc=1
	fi
	remove
	return $rc
}

case ${1:-} in
up) up ;;
down) down ;;
*) echo "usage: rxe_env.sh up|down" >&2; exit 2 ;;
esac
