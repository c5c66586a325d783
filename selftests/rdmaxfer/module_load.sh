#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# module_load.sh - load and unload rdmaxfer.ko repeatedly; the device node,
# the open-file module reference, and the device replay at load.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root"
[ -f "$RDMAXFER_KO" ] || modinfo rdmaxfer >/dev/null 2>&1 ||
	ktap_skip_all "no rdmaxfer.ko (set RDMAXFER_KO)"

at_exit rdmaxfer_load

node_ok()
{
	[ -c /dev/rdmaxfer ] && [ "$(stat -c '%a %u %g' /dev/rdmaxfer)" = "600 0 0" ]
}

ktap_plan 5

ko=$RDMAXFER_KO
[ -f "$ko" ] || ko=rdmaxfer
info=$(modinfo "$ko")
# a module built into the kernel (ib_core on the rig's debug kernel) is no dependency
dep_ok()
{
	echo "$info" | grep -q "^depends:.*$1" ||
		grep -qs "/$1\.ko" "/lib/modules/$(uname -r)/modules.builtin"
}
echo "$info" | grep -q '^license: *GPL$' &&
	echo "$info" | grep -q '^description: *.\{10,\}' &&
	echo "$info" | grep -q '^version: *[0-9]' &&
	dep_ok ib_core && dep_ok rdma_cm
r=$?
[ $r -eq 0 ] || ktap_diag "$info"
ktap_result "modinfo" $r

rdmaxfer_load && wait_for node_ok
r=$?
[ $r -eq 0 ] || ktap_diag "$(ls -l /dev/rdmaxfer 2>&1)"
ktap_result "device_node_root_0600" $r

r=0
i=0
while [ $i -lt 20 ]; do
	i=$((i + 1))
	if ! rmmod rdmaxfer; then
		ktap_diag "iteration $i: rmmod failed"; r=1; break
	fi
	if [ -d /sys/module/rdmaxfer ] || ! wait_for '[ ! -e /dev/rdmaxfer ]'; then
		ktap_diag "iteration $i: module or node still there after rmmod"; r=1; break
	fi
	if ! rdmaxfer_load || ! wait_for node_ok; then
		ktap_diag "iteration $i: load failed or no node"; r=1; break
	fi
done
ktap_result "unload_load_x20" $r

# devices that exist before the load are listed right away (ib_client replay)
if ! command -v rdmaxfer >/dev/null || ! command -v jq >/dev/null; then
	ktap_skip "devices_replayed_at_load" "needs the CLI and jq"
elif ! rdmaxfer_env_try; then
	ktap_skip "devices_replayed_at_load" "$rdmaxfer_env_why"
else
	rmmod rdmaxfer && rdmaxfer_load && rdmaxfer_lists "$RDMAXFER_TEST_DEV"
	ktap_result "devices_replayed_at_load" $?
fi

# an open file pins the module; closing it lets rmmod through
exec 3<>/dev/rdmaxfer
rmmod rdmaxfer 2>/dev/null
busy=$?
loaded_while_open=0
rdmaxfer_loaded || loaded_while_open=1
exec 3>&-
rmmod rdmaxfer
gone=$?
rdmaxfer_load
[ $busy -ne 0 ] && [ $loaded_while_open -eq 0 ] && [ $gone -eq 0 ]
r=$?
[ $r -eq 0 ] || ktap_diag "rmmod with open fd: $busy (want non-zero), after close: $gone (want 0)"
ktap_result "open_file_pins_module" $r

ktap_finish
