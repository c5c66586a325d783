#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# peer.sh - guest B of the two-guest test (the rig starts it in the
# background; RIG_ROLE, RIG_SELF_ADDR, RIG_PEER_ADDR, ... are set).
#
# Serves two_host.sh, which runs in guest A, until the guest powers off:
# `rdmaxfer serve` on the default port, listening on every address, IPv4 and
# IPv6 (on ::, or where the device is iWARP on each address of the guest),
# with one 4 MiB window (shared by all connections) preloaded from a text file
# that A generates the same way (gen_input below, also in two_host.sh), and --out
# so that writes are saved round by round and messages appended (the
# console only gets serve's "listening" and per-connection lines); and on
# port 18516 a 64 MiB window for the bandwidth test, and on port 18517 the
# preloaded window again, only read; on port 18518 a 4 MiB window for
# clients that prove the pair's key (pair_key).  If a serve ever exits,
# it is started again.

dir=${PEER_DIR:-/tmp/rdmaxfer-peer}
mkdir -p "$dir" || exit 1

# 2 MiB of text, the same bytes in both guests.
gen_input()
{
	seq 1 400000 | head -c 2097152
}

# The key of the pair, the same bytes in both guests (a test key: not secret).
pair_key()
{
	printf '%s' 'rdmaxfer two-guest test key 32 B'
}

# serve_forever ARGS...: run `rdmaxfer serve ARGS`, again if it exits.
serve_forever()
{
	while :; do
		rdmaxfer serve "$@"
		echo "peer: rdmaxfer serve $* exited $?, restarting"
		sleep 1
	done
}

gen_input >"$dir/in"
echo "peer: $(hostname 2>/dev/null) role ${RIG_ROLE:-?} addr ${RIG_SELF_ADDR:-?} ${RIG_SELF_ADDR6:-}"
# port 18516: a 64 MiB window for two_host.sh's bandwidth test, saved nowhere
serve_forever --port 18516 --size 64M --out /dev/null &
# port 18517: a 4 MiB window preloaded from gen_input that nobody writes to
# (serve's window is shared by all connections: writes on the default port
# would overwrite the preloaded bytes)
serve_forever --port 18517 --size 4M --in "$dir/in" --out /dev/null &
# port 18518: only for clients with the pair's key
pair_key >"$dir/pair.key"
serve_forever --port 18518 --size 4M --out /dev/null --key-file "$dir/pair.key" &
serve_forever --size 4M --in "$dir/in" --out "$dir/out"
