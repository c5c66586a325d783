#!/bin/sh
# Default demo (rig.sh demo), used when the stage has no demo.sh of its own:
# what the module sees, and the module following a Soft-RoCE device that is
# deleted and added again.
show() {
	echo "\$ $*"
	sh -c "$*" 2>&1
	echo
}
show rdma link
show ls -l /dev/rdmaxfer
show rdmaxfer info
show "rdmaxfer info --json | jq -Mc '{module: .module.version, devices: [.devices[] | {name: .name, index: .index, caps: .caps}]}'"
show rdma link delete rxe0
show rdmaxfer info
show rdma link add rxe0 type rxe netdev veth0
show "rdmaxfer info --json | jq -Mc '[.devices[] | {name: .name, index: .index, state: .ports[0].state}]'"
show "dmesg | grep rdmaxfer"
