#!/bin/sh
# Default demo (rig.sh demo), used when the stage has no demo.sh of its own:
# what the module sees, then a server and a client moving a buffer over
# Soft-RoCE with RDMA WRITE and READ, verified end to end, and the module
# following a device that is deleted and added again.
show() {
	echo "\$ $*"
	sh -c "$*" 2>&1
	echo
}
show rdma link
show rdmaxfer info
show "dd if=/dev/urandom of=/tmp/data.bin bs=1M count=64 2>/dev/null; ls -l /tmp/data.bin"
echo "\$ rdmaxfer serve --size 64M --count 2 --out /tmp/served.bin &"
rdmaxfer serve --size 64M --count 2 --out /tmp/served.bin &
server=$!
sleep 1
echo
show "rdmaxfer write 192.0.2.1 --file /tmp/data.bin --verify"
show "rdmaxfer read 192.0.2.1 --size 64M --out /tmp/back.bin --verify"
wait $server
echo
show "cmp /tmp/data.bin /tmp/back.bin && cmp /tmp/data.bin /tmp/served.bin && echo 'all three copies are identical'"
show rdmaxfer stats
show rdma link delete rxe0
show "rdmaxfer info | head -2"
show rdma link add rxe0 type rxe netdev veth0
show "rdmaxfer info --json | jq -Mc '[.devices[] | {name: .name, index: .index, state: .ports[0].state}]'"
