#!/bin/sh
# Default demo (rig.sh demo), used when the stage has no demo.sh of its own.
show() {
	echo "\$ $*"
	"$@" 2>&1
	echo
}
show rdma link
show ibv_devices
show rdmaxfer info
show rdmaxfer info --json
show ls -l /dev/rdmaxfer
