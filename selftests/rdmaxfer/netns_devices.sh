#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# netns_devices.sh - which RDMA devices a file of /dev/rdmaxfer may learn of.
# In the RDMA core's exclusive network-namespace mode (`rdma system set
# netns exclusive`) a device belongs to one namespace and `rdma dev` in
# another lists nothing; rdmaxfer's device queries (LIST_DEVICES,
# QUERY_DEVICE, QUERY_PORT) answer a file opened in another namespace the
# same way: no name, GUID or GID of the host's devices (kmod/device.c).  In
# the default shared mode every namespace sees every device.
#
# The mode can change only while no namespace but the initial one exists,
# and must not change while one made in the shared mode is still being
# torn down: 6.1's RDMA core hides a dying namespace from the mode switch
# before it has removed that namespace's compat devices, and the switch
# then removes them too (KASAN: use-after-free in kobject_uevent_env <-
# device_del <- remove_all_compat_devs <- rdma_compatdev_set, seen when a
# namespace made in the shared mode had just been deleted).  So the test
# runs before netns.sh (RUN_ORDER), switches to the exclusive mode first,
# makes its namespace only then, switches back, and only then looks at the
# shared mode from a namespace.
. "$(dirname "$0")/lib.sh"

HELPER=$SELFTEST_DIR/xfer_helper
[ -x "$HELPER" ] || ktap_skip_all "no xfer_helper next to the test"
command -v rdma >/dev/null || ktap_skip_all "the rdma tool (iproute2) is not installed"
command -v jq >/dev/null || ktap_skip_all "jq is not installed"
[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root (namespaces, the RDMA netns mode)"
rdma system show 2>/dev/null | grep -q 'netns shared' ||
	ktap_skip_all "the RDMA core is not in its shared netns mode: $(rdma system show 2>&1 | head -n1)"
rdmaxfer_setup

N=rdmaxfer-n-$$
index=$(rdmaxfer info --json | jq -r --arg dev "$DEV" '.devices[] | select(.name == $dev) | .index')
[ -n "$index" ] || ktap_fail_all "rdmaxfer info does not list $DEV"

# Before anything else: the core refuses (EBUSY) while other namespaces
# exist, e.g. containers on a host.
out=$(rdma system set netns exclusive 2>&1) ||
	ktap_skip_all "the RDMA netns mode cannot change here (other network namespaces?): $out"
cleanup()
{
	ip netns del "$N" 2>/dev/null
	# a namespace goes away asynchronously; until then the core says EBUSY
	wait_for "rdma system set netns shared" 20 ||
		ktap_diag "the RDMA netns mode could not be put back to shared"
}
at_exit cleanup

ktap_plan 5

# what a file opened in namespace N is told: "devices D device E port E"
query_in_n()
{
	ip netns add "$N" && ip netns exec "$N" "$HELPER" query "$index"
}

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

ip netns del "$N"
wait_for "rdma system set netns shared" 20
r=$?
[ $r -eq 0 ] || ktap_diag "rdma system set netns shared: $(rdma system set netns shared 2>&1)"
ktap_result "shared_mode_restored" $r

if [ $r -eq 0 ]; then
	out=$(query_in_n 2>&1)
	ktap_diag "shared mode, from another namespace: $out"
	[ "${out#devices 0 }" = "$out" ] && [ "${out%device ok port ok}" != "$out" ]
	ktap_result "shared_mode_another_namespace_sees_devices" $?
else
	ktap_skip "shared_mode_another_namespace_sees_devices" "the shared mode could not be restored"
fi

ktap_finish
