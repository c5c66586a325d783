#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# rxe_hotplug.sh - RDMA devices appearing and disappearing under the loaded
# module: `rdma link add/delete`, a second device, removal with a file open,
# and unloading the provider (rdma_rxe, siw).  Every removal goes through the
# module's ib_client .remove, which must not hang or leave anything behind --
# also while an ioctl of a process is stuck copying to a user page that never
# faults in (userfaultfd: the ioctl must not hold the device meanwhile).
#
# Runs on a Soft-RoCE (or Soft-iWARP) device of its own (lib.sh: rdmaxfer_setup_own), and a
# second one on the other end of its veth pair.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root"
command -v rdma >/dev/null || ktap_skip_all "no rdma tool (iproute2)"
if ! command -v rdmaxfer >/dev/null || ! command -v jq >/dev/null; then
	ktap_skip_all "needs the rdmaxfer CLI and jq"
fi
rdmaxfer_setup_own

DEV2=${DEV}1
restore()
{
	exec 3>&- 2>/dev/null
	rdma link delete "$DEV2" 2>/dev/null
	modprobe "$PROVIDER_MOD" 2>/dev/null
	rdma_link_exists "$DEV" || rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV"
	rdmaxfer_load
}
at_exit restore

# devices the module lists, and devices the kernel has
ndevs() { rdmaxfer info --json | jq '.devices | length'; }
ib_devs() { find /sys/class/infiniband -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }

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

ktap_check "device_listed" listed "$DEV"

rdma link delete "$DEV" && not_listed "$DEV"
ktap_result "link_delete_unlists" $?

rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV" && listed "$DEV" && port_active "$DEV"
ktap_result "link_add_lists" $?

n=$(ndevs)
rdma link add "$DEV2" type "$PROVIDER" netdev "$NETDEV2" && listed "$DEV2" && listed "$DEV" &&
	[ "$(ndevs)" -eq $((n + 1)) ] &&
	rdma link delete "$DEV2" && not_listed "$DEV2" && listed "$DEV"
ktap_result "second_device" $?

# removal while a file is open: .remove must not wait for the file
exec 3<>/dev/rdmaxfer
rdma link delete "$DEV" && not_listed "$DEV" &&
	rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV" && listed "$DEV"
r=$?
exec 3>&-
ktap_result "link_delete_with_open_file" $r

# removal while QUERY_PORT is stuck in its copy to userspace (a userfaultfd
# page nobody serves): the ioctl must not hold the device across the copy
helper=$SELFTEST_DIR/xfer_helper
index=$(rdmaxfer info --json | jq -e --arg d "$DEV" '.devices[] | select(.name == $d) | .index')
if [ -x "$helper" ] && [ -n "$index" ]; then
	log=$(mktemp)
	"$helper" stall "$index" >"$log" 2>&1 &
	stall=$!
	if wait_for "grep -q stalling $log" 10; then
		sleep 1		# into the copy
		rdma link delete "$DEV" &
		del=$!
		# (a delete stuck in the kernel cannot be killed: the helper is, after 30 s)
		wait_for "! kill -0 $del 2>/dev/null" 30
		done_in_time=$?
		kill -9 $stall 2>/dev/null
		wait $stall 2>/dev/null
		wait $del
		r=$?
		[ $done_in_time -eq 0 ] || ktap_diag "rdma link delete $DEV waited for a stalled QUERY_PORT"
		[ $r -eq 0 ] || ktap_diag "rdma link delete $DEV failed ($r)"
		[ $done_in_time -eq 0 ] && [ $r -eq 0 ] && not_listed "$DEV"
		r=$?
		rdma_link_exists "$DEV" || rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV"
		listed "$DEV" && port_active "$DEV" && [ $r -eq 0 ]
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
	ktap_skip "link_delete_with_stalled_query_port" "no xfer_helper or no index of $DEV"
fi

# unloading the provider removes its devices through our .remove (not on a
# host with other RDMA devices: they might be the same provider's)
others=$(other_rdma_devs "$DEV" "$DEV2")
rdma link add "$DEV2" type "$PROVIDER" netdev "$NETDEV2" 2>/dev/null
if [ -n "${others% }" ]; then
	ktap_skip "provider_unload" "other RDMA devices here ($others): $PROVIDER_MOD stays"
elif rmmod "$PROVIDER_MOD"; then
	not_listed "$DEV" && not_listed "$DEV2" && [ "$(ndevs)" -eq "$(ib_devs)" ]
	r=$?
	modprobe "$PROVIDER_MOD" && rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV" && listed "$DEV"
	back=$?
	[ $r -eq 0 ] || ktap_diag "devices still listed after rmmod $PROVIDER_MOD"
	[ $back -eq 0 ] || ktap_diag "$DEV did not come back after modprobe $PROVIDER_MOD"
	[ $r -eq 0 ] && [ $back -eq 0 ]
	ktap_result "provider_unload" $?
else
	ktap_diag "rmmod $PROVIDER_MOD failed: $(lsmod | grep "^$PROVIDER_MOD ")"
	ktap_result "provider_unload" 1
fi

rmmod rdmaxfer && rdmaxfer_load && listed "$DEV" && port_active "$DEV"
ktap_result "module_reload_sees_device" $?

ktap_finish
