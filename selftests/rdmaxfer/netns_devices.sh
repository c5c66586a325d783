#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# netns_devices.sh - which RDMA devices a file of /dev/rdmaxfer may learn of.
# In the RDMA core's exclusive network-namespace mode (`rdma system set
# netns exclusive`) a device belongs to one namespace and `rdma dev` in
# another lists nothing; rdmaxfer's device queries (LIST_DEVICES,
# QUERY_DEVICE, QUERY_PORT) answer a file opened in another namespace the
# same way: no name, GUID or GID of the host's devices (kmod/device.c).  In
# the default shared mode every namespace sees every device.  The mode can
# change only while no namespace but the initial one exists: the test
# switches it, and puts it back.
. "$(dirname "$0")/lib.sh"

HELPER=$SELFTEST_DIR/xfer_helper
[ -x "$HELPER" ] || ktap_skip_all "no xfer_helper next to the test"
command -v rdma >/dev/null || ktap_skip_all "the rdma tool (iproute2) is not installed"
command -v jq >/dev/null || ktap_skip_all "jq is not installed"
[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root (namespaces, the RDMA netns mode)"
rdma system show 2>/dev/null | grep -q 'netns shared' ||
	ktap_skip_all "the RDMA core is not in its shared netns mode: $(rdma system show 2>&1 | head -n1)"
[ -z "$(ip netns list 2>/dev/null)" ] ||
	ktap_skip_all "other network namespaces exist: the RDMA netns mode cannot change now"
rdmaxfer_setup

N=rdmaxfer-n-$$
index=$(rdmaxfer info --json | jq -r --arg dev "$DEV" '.devices[] | select(.name == $dev) | .index')
[ -n "$index" ] || ktap_fail_all "rdmaxfer info does not list $DEV"

# set_mode shared|exclusive: the namespaces of a test go away asynchronously,
# and until then the RDMA core refuses to change the mode (EBUSY)
set_mode()
{
	wait_for "rdma system set netns $1 2>/dev/null" 20
}
cleanup()
{
	ip netns del "$N" 2>/dev/null
	set_mode shared || ktap_diag "the RDMA netns mode could not be put back to shared"
}
at_exit cleanup

ktap_plan 5

# what a file opened in namespace N is told: "devices D device E port E"
query_in_n()
{
	ip netns add "$N" && ip netns exec "$N" "$HELPER" query "$index"
}

out=$(query_in_n 2>&1)
ip netns del "$N"
ktap_diag "shared mode, from another namespace: $out"
[ "${out#devices 0 }" = "$out" ] && [ "${out%device ok port ok}" != "$out" ]
ktap_result "shared_mode_another_namespace_sees_devices" $?

set_mode exclusive
r=$?
[ $r -eq 0 ] || ktap_diag "rdma system set netns exclusive failed"
ktap_result "exclusive_mode_set" $r
if [ $r -ne 0 ]; then
	for t in exclusive_mode_another_namespace_learns_nothing exclusive_mode_info_lists_none \
		 exclusive_mode_own_namespace_sees_its_device; do
		ktap_skip "$t" "the exclusive mode could not be set"
	done
	ktap_finish
fi

out=$(query_in_n 2>&1)
ktap_diag "exclusive mode, from another namespace: $out (rdma dev there: $(ip netns exec "$N" rdma dev 2>&1 | wc -l) lines)"
[ "$out" = "devices 0 device ENODEV port ENODEV" ]
ktap_result "exclusive_mode_another_namespace_learns_nothing" $?

# the CLI there says so too (its own LIST_DEVICES and QUERYs)
n=$(ip netns exec "$N" rdmaxfer info --json 2>/dev/null | jq '.devices | length')
[ "$n" = 0 ]
r=$?
[ $r -eq 0 ] || ktap_diag "rdmaxfer info in another namespace lists '$n' devices"
ktap_result "exclusive_mode_info_lists_none" $r

out=$("$HELPER" query "$index" 2>&1)
ktap_diag "exclusive mode, from the initial namespace: $out"
[ "${out#devices 0 }" = "$out" ] && [ "${out%device ok port ok}" != "$out" ]
ktap_result "exclusive_mode_own_namespace_sees_its_device" $?

ktap_finish
