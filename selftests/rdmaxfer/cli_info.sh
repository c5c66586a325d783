#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# cli_info.sh - `rdmaxfer info` (human and JSON) and the CLI contract:
# exit codes 0/1/2, one-line errors on stderr, a clear word when the module
# is not loaded or the device node is not accessible.
. "$(dirname "$0")/lib.sh"

command -v rdmaxfer >/dev/null || ktap_skip_all "the rdmaxfer CLI is not on PATH"
command -v jq >/dev/null || ktap_skip_all "jq is not installed"

tmp=$(mktemp -d)
at_exit 'rm -rf "$tmp"; rdmaxfer_load'
rdmaxfer_setup

ktap_plan 10

# The GIDs: RoCE has one per IP address of the netdev (RoCEv2: the IPv4
# address as ::ffff:a.b.c.d, and the IPv6 address), tied to the netdev.
# iWARP (an RNIC: siw, cxgb4, irdma in iWARP mode) addresses by IP, not GID:
# its one GID is the netdev's MAC address in the first 6 bytes, type IB.  The
# GID entry names no netdev on 6.1's siw and the device's netdev on 6.12's
# (siw then registers its netdev with the core): either is right.
iwarp=0
rdmaxfer info --json 2>/dev/null |
	jq -e --arg dev "$DEV" 'any(.devices[]; .name == $dev and .node_type == "RNIC")' >/dev/null &&
	iwarp=1
macgid=
if [ $iwarp -eq 1 ] && [ -r "/sys/class/net/$NETDEV/address" ]; then
	# shellcheck disable=SC2046 # split on purpose: the six bytes
	set -- $(tr ':' ' ' <"/sys/class/net/$NETDEV/address")
	macgid=$(printf '%x:%x:%x::' "0x$1$2" "0x$3$4" "0x$5$6")
fi

run human rdmaxfer info
if [ $iwarp -eq 1 ]; then
	[ $rc -eq 0 ] && [ ! -s "$tmp/human.err" ] &&
		grep -q '^rdmaxfer module ' "$tmp/human.out" &&
		grep -q "^$DEV: index [0-9]*, RNIC," "$tmp/human.out" &&
		grep -q 'port 1: ACTIVE, Ethernet' "$tmp/human.out" &&
		grep -q -E "gid 0 *$macgid *IB *(-|$NETDEV)\$" "$tmp/human.out"
else
	[ $rc -eq 0 ] && [ ! -s "$tmp/human.err" ] &&
		grep -q '^rdmaxfer module ' "$tmp/human.out" &&
		grep -q "^$DEV: " "$tmp/human.out" &&
		grep -q 'port 1: ACTIVE, Ethernet' "$tmp/human.out" &&
		grep -q "::ffff:$ADDR .*RoCEv2 *$NETDEV" "$tmp/human.out"
fi
r=$?
[ $r -eq 0 ] || [ $iwarp -eq 0 ] || ktap_diag "iWARP: the GID wanted is $macgid (the MAC of $NETDEV)"
[ $r -eq 0 ] || show human.out human.err
ktap_result "info_human" $r

run json rdmaxfer info --json
[ $rc -eq 0 ] && [ ! -s "$tmp/json.err" ] && jq -e -s 'length == 1' "$tmp/json.out" >/dev/null
r=$?
[ $r -eq 0 ] || show json.out json.err
ktap_result "info_json_parses" $r

jq -e --arg dev "$DEV" --arg gid4 "::ffff:$ADDR" --arg gid6 "$ADDR6" --arg netdev "$NETDEV" \
	--argjson iwarp "$iwarp" --arg macgid "$macgid" '
	.module.abi_version == 1 and (.module.version | length > 0) and
	(.module.features | index("device_query")) and (.module.features | index("transfer")) and
	(.module.features | index("recv_slots")) and (.module.features | index("ring")) and
	(.module.features | index("sink_slots")) and
	any(.devices[]; .name == $dev and (.caps | index("frwr")) and
	    .max_fast_reg_page_list_len > 0 and .max_qp_wr > 0 and
	    .ports[0].state == "ACTIVE" and .ports[0].link_layer == "Ethernet" and
	    if $iwarp == 1 then
		.node_type == "RNIC" and
		any(.ports[0].gids[]; .gid == $macgid and .type == "IB" and
		    (.netdev == "-" or .netdev == $netdev))
	    else
		any(.ports[0].gids[]; .gid == $gid4 and .type == "RoCEv2" and .netdev == $netdev) and
		any(.ports[0].gids[]; .gid == $gid6)
	    end)' "$tmp/json.out" >/dev/null
r=$?
[ $r -eq 0 ] || show json.out
ktap_result "info_json_content" $r

# human and JSON output describe the same devices
n_json=$(jq '.devices | length' "$tmp/json.out")
n_human=$(sed -n 's/^rdmaxfer module .*, \([0-9]*\) RDMA device.*/\1/p' "$tmp/human.out")
[ -n "$n_json" ] && [ "$n_json" = "$n_human" ] &&
	[ "$(jq -r '[.devices[].name] | join(" ")' "$tmp/json.out")" = \
	  "$(sed -n 's/^\([^ ]*\): index .*/\1/p' "$tmp/human.out" | tr '\n' ' ' | sed 's/ $//')" ]
r=$?
[ $r -eq 0 ] || ktap_diag "json says $n_json devices, human output $n_human"
ktap_result "human_and_json_agree" $r

run version rdmaxfer --version
[ $rc -eq 0 ] && grep -q "^module $(cat /sys/module/rdmaxfer/version) (ABI 1)" "$tmp/version.out"
r=$?
[ $r -eq 0 ] || show version.out version.err
ktap_result "version" $r

run help rdmaxfer --help
r1=$rc
run info_help rdmaxfer info --help
[ $r1 -eq 0 ] && [ $rc -eq 0 ] && grep -q '^  info ' "$tmp/help.out" &&
	grep -q '^usage: rdmaxfer info' "$tmp/info_help.out"
ktap_result "help" $?

r=0
for args in "bogus" "info --bogus" "info extra" "--bogus"; do
	# shellcheck disable=SC2086 # split on purpose
	run usage rdmaxfer $args
	if [ $rc -ne 2 ] || ! one_error_line usage '.'; then
		ktap_diag "'rdmaxfer $args' exited $rc"
		show usage.err
		r=1
	fi
done
run noargs rdmaxfer
[ $rc -eq 2 ] || { ktap_diag "'rdmaxfer' without a command exited $rc"; r=1; }
ktap_result "usage_errors_exit_2" $r

# stdout that cannot be written is a failure, not a silent success
rdmaxfer info --json >/dev/full 2>"$tmp/full.err"
rc=$?
[ $rc -eq 1 ] && one_error_line full 'writ'
r=$?
[ $r -eq 0 ] || { ktap_diag "exit $rc"; show full.err; }
ktap_result "write_error_exit_1" $r

if command -v su >/dev/null && id nobody >/dev/null 2>&1; then
	run unpriv su -s /bin/sh nobody -c "rdmaxfer info"
	[ $rc -eq 1 ] && one_error_line unpriv 'permission denied'
	r=$?
	[ $r -eq 0 ] || { ktap_diag "exit $rc"; show unpriv.out unpriv.err; }
	ktap_result "unprivileged_user_told_why" $r
else
	ktap_skip "unprivileged_user_told_why" "no su or no user nobody"
fi

if ! [ -f "$RDMAXFER_KO" ] && ! modinfo rdmaxfer >/dev/null 2>&1; then
	ktap_skip "module_not_loaded_told_why" "could not load the module back (set RDMAXFER_KO)"
else
	if rdmaxfer_unload; then
		run unloaded rdmaxfer info
		[ $rc -eq 1 ] && one_error_line unloaded 'not loaded'
		r=$?
		[ $r -eq 0 ] || { ktap_diag "exit $rc"; show unloaded.out unloaded.err; }
		rdmaxfer_load || { ktap_diag "cannot load the module back"; r=1; }
	else
		ktap_diag "rmmod rdmaxfer failed"
		r=1
	fi
	ktap_result "module_not_loaded_told_why" $r
fi

ktap_finish
