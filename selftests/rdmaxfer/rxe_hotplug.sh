#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rxe_hotplug.sh - RDMA devices appearing and disappearing under the loaded
# module: `rdma link add/delete`, a second device, removal with a file open,
# and unloading the rdma_rxe provider.  Every removal goes through the
# module's ib_client .remove, which must not hang or leave anything behind --
# also while an ioctl of a process is stuck copying to a user page that never
# faults in (userfaultfd: the ioctl must not hold the device meanwhile).
#
# Expects the rig's setup: rxe0 on veth0 (veth1 is its peer).
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root"
command -v rdma >/dev/null || ktap_skip_all "no rdma tool (iproute2)"
if ! command -v rdmaxfer >/dev/null || ! command -v jq >/dev/null; then
	ktap_skip_all "needs the rdmaxfer CLI and jq"
fi
rdma_link_exists rxe0 || ktap_skip_all "no rxe0 (rdma link add rxe0 type rxe netdev veth0)"

netdev=$(rdma_link_netdev rxe0)
restore()
{
	exec 3>&- 2>/dev/null
	rdma link delete rxe1 2>/dev/null
	modprobe rdma_rxe 2>/dev/null
	rdma_link_exists rxe0 || rdma link add rxe0 type rxe netdev "$netdev"
	rdmaxfer_load
}
trap restore EXIT

listed()
{
	wait_for "rdmaxfer_lists $1"
}

not_listed()
{
	wait_for "! rdmaxfer_lists $1"
}

port_active()
{
	wait_for "rdmaxfer info --json | jq -e 'any(.devices[]; .name == \"$1\" and .ports[0].state == \"ACTIVE\")'"
}

ktap_plan 8
rdmaxfer_load

ktap_check "rxe0_listed" listed rxe0

rdma link delete rxe0 && not_listed rxe0
ktap_result "link_delete_unlists" $?

rdma link add rxe0 type rxe netdev "$netdev" && listed rxe0 && port_active rxe0
ktap_result "link_add_lists" $?

if [ -d /sys/class/net/veth1 ]; then
	rdma link add rxe1 type rxe netdev veth1 && listed rxe1 && listed rxe0 &&
		[ "$(rdmaxfer info --json | jq '.devices | length')" -eq 2 ] &&
		rdma link delete rxe1 && not_listed rxe1 && listed rxe0
	ktap_result "second_device" $?
else
	ktap_skip "second_device" "no veth1"
fi

# removal while a file is open: .remove must not wait for the file
exec 3<>/dev/rdmaxfer
rdma link delete rxe0 && not_listed rxe0 &&
	rdma link add rxe0 type rxe netdev "$netdev" && listed rxe0
r=$?
exec 3>&-
ktap_result "link_delete_with_open_file" $r

# removal while QUERY_PORT is stuck in its copy to userspace (a userfaultfd
# page nobody serves): the ioctl must not hold the device across the copy
helper=$SELFTEST_DIR/xfer_helper
index=$(rdmaxfer info --json | jq -e '.devices[] | select(.name == "rxe0") | .index')
if [ -x "$helper" ] && [ -n "$index" ]; then
	log=$(mktemp)
	"$helper" stall "$index" >"$log" 2>&1 &
	stall=$!
	if wait_for "grep -q stalling $log" 10; then
		sleep 1		# into the copy
		rdma link delete rxe0 &
		del=$!
		# (a delete stuck in the kernel cannot be killed: the helper is, after 30 s)
		wait_for "! kill -0 $del 2>/dev/null" 30
		done_in_time=$?
		kill -9 $stall 2>/dev/null
		wait $stall 2>/dev/null
		wait $del
		r=$?
		[ $done_in_time -eq 0 ] || ktap_diag "rdma link delete rxe0 waited for a stalled QUERY_PORT"
		[ $r -eq 0 ] || ktap_diag "rdma link delete rxe0 failed ($r)"
		[ $done_in_time -eq 0 ] && [ $r -eq 0 ] && not_listed rxe0
		r=$?
		rdma_link_exists rxe0 || rdma link add rxe0 type rxe netdev "$netdev"
		listed rxe0 && port_active rxe0 && [ $r -eq 0 ]
		ktap_result "link_delete_with_stalled_query_port" $?
	elif grep -q "no userfaultfd" "$log"; then
		kill -9 $stall 2>/dev/null
		wait $stall 2>/dev/null
		ktap_skip "link_delete_with_stalled_query_port" "$(cat "$log")"
	else
		kill -9 $stall 2>/dev/null
		wait $stall 2>/dev/null
		ktap_diag "xfer_helper stall: $(cat "$log")"
		ktap_result "link_delete_with_stalled_query_port" 1
	fi
	rm -f "$log"
else
	ktap_skip "link_delete_with_stalled_query_port" "no xfer_helper or no rxe0 index"
fi

# unloading the provider removes its devices through our .remove
rdma link add rxe1 type rxe netdev veth1 2>/dev/null
if rmmod rdma_rxe; then
	not_listed rxe0 && not_listed rxe1 &&
		[ "$(rdmaxfer info --json | jq '.devices | length')" -eq 0 ]
	r=$?
	modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$netdev" && listed rxe0
	back=$?
	[ $r -eq 0 ] || ktap_diag "devices still listed after rmmod rdma_rxe"
	[ $back -eq 0 ] || ktap_diag "rxe0 did not come back after modprobe rdma_rxe"
	[ $r -eq 0 ] && [ $back -eq 0 ]
	ktap_result "provider_unload" $?
else
	ktap_diag "rmmod rdma_rxe failed: $(lsmod | grep rdma_rxe)"
	ktap_result "provider_unload" 1
fi

rmmod rdmaxfer && rdmaxfer_load && listed rxe0 && port_active rxe0
ktap_result "module_reload_sees_device" $?

ktap_finish
