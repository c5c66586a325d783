#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# peer-shell.sh - the server guest of `rig.sh pair-run` (make bench's pair
# table): a shell for the client guest's commands on TCP port 18700, one
# /bin/sh per connection (busybox nc -ll -e), until the guest powers off.
# bench.sh starts perftest's server side and `rdmaxfer serve` through it
# and reads this guest's /proc/stat before and after each run.  No
# authentication: it listens on eth0 of a guest whose only link is the
# socket between the two QEMUs of one pair run (192.0.2.0/24, a
# documentation range), and it exists only in that run.
#
# A command that outlives its connection must not hold the socket:
#   printf 'CMD </dev/null >/dev/null 2>&1 &\nexit\n' | ... (bench.sh's peer_bg)

port=${PEER_SHELL_PORT:-18700}
echo "peer-shell: commands on $RIG_SELF_ADDR port $port"
exec busybox nc -ll -p "$port" -e /bin/sh
