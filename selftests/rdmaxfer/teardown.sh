#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# teardown.sh - transfers that end badly: the client killed mid-transfer, the
# server killed mid-transfer, the RDMA device deleted (rdma link delete) and
# its provider unloaded (rmmod rdma_rxe or siw) under live connections, the device
# deleted under LISTENs being set up, rmmod with an open file; then rmmod
# when idle.  After each case nothing may
# be left: no pinned page (/proc/vmstat nr_foll_pin_acquired - released back
# to where it started, the surviving server's VmPin unchanged), no RDMA object
# (`rdma res show` qp, cm_id, mr, pd back to the idle counts, no CQ owned by
# rdmaxfer), and at the end the module unloads.
#
# Uses xfer_helper (serve, blast, write, relisten, hold) from this directory.  Runs
# on a Soft-RoCE or Soft-iWARP device of its own (lib.sh: rdmaxfer_setup_own).
. "$(dirname "$0")/lib.sh"

HELPER=$SELFTEST_DIR/xfer_helper
SIZE=8M

[ "$(id -u)" -eq 0 ] || ktap_skip_all "needs root"
command -v rdma >/dev/null || ktap_skip_all "no rdma tool (iproute2)"
[ -x "$HELPER" ] || ktap_skip_all "no $HELPER"
rdmaxfer_setup_own
"$HELPER" probe || ktap_skip_all "the module has no transfers (RDMAXFER_FEATURE_TRANSFER)"

T=$(mktemp -d /tmp/teardown.XXXXXX)
pids=""

# Kill what we started (by pid), put the provider module, the device and the module back.
restore()
{
	for p in $pids; do
		kill -9 "$p" 2>/dev/null
	done
	for p in $pids; do
		wait "$p" 2>/dev/null
	done
	modprobe "$PROVIDER_MOD" 2>/dev/null
	rdma_link_exists "$DEV" || rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV"
	rdmaxfer_load
	rm -rf "$T"
}
at_exit restore

# start NAME ARGS...: run the helper in the background, log in $T/NAME.log
# (emptied here, before the background job starts, so that nobody reads the
# log of the previous NAME)
start()
{
	_n=$1
	shift
	: >"$T/$_n.log"
	"$HELPER" "$@" >>"$T/$_n.log" 2>&1 &
	eval "pid_$_n=$!"
	pids="$pids $!"
}

pid_of()
{
	eval "echo \$pid_$1"
}

# Is the process running (not gone, not a zombie waiting for us)?
alive()
{
	[ -n "$1" ] && [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"
}

running()
{
	alive "$(pid_of "$1")"
}

# logged NAME REGEX [SECONDS]: wait for a line in NAME's log
logged()
{
	wait_for "grep -q '$2' '$T/$1.log'" "${3:-10}"
}

# gone NAME [SECONDS]: wait for the helper to exit; its status in $rc
gone()
{
	_p=$(pid_of "$1")
	if wait_for "! alive $_p" "${2:-30}"; then
		wait "$_p"
		rc=$?
		return 0
	fi
	rc=
	return 1
}

stop()
{
	_p=$(pid_of "$1")
	kill -9 "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null
}

show_log()
{
	ktap_diag "$1.log:" "$(tail -n 5 "$T/$1.log" 2>/dev/null)"
}

# Pages pinned with FOLL_PIN anywhere in the system, now.
pinned_pages()
{
	awk '/^nr_foll_pin_acquired /{a=$2} /^nr_foll_pin_released /{r=$2} END{print a-r}' /proc/vmstat
}

vmpin()
{
	sed -n 's/^VmPin:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null
}

# Counts of the RDMA objects that must come back to the idle state.  An idle
# module holds no RDMA object at all (its PD goes with its last connection
# or window); CQs from ib_core's pool belong to ib_core and stay with the
# device.  Everything else comes and goes with connections and buffers.
res_counts()
{
	for _t in qp cm_id mr; do
		printf '%s=%s ' "$_t" "$(rdma res show "$_t" 2>/dev/null | grep -c .)"
	done
	rdma res show pd 2>/dev/null | awk '
		!/\[rdmaxfer\]/ { other++; next }
		{ mine++ }
		END { printf "pd=%d pd_rdmaxfer=%d ", other, mine }'
	printf 'cq_rdmaxfer=%s\n' "$(rdma res show cq 2>/dev/null | grep -c '\[rdmaxfer\]')"
}

# clean: nothing pinned, no RDMA object beyond the idle state (after the
# teardown, which may be asynchronous, has had 10 s)
clean()
{
	if ! wait_for '[ "$(pinned_pages)" = "$pins0" ] && [ "$(res_counts)" = "$res0" ] &&
		      res_counts | grep -q "pd_rdmaxfer=0 .*cq_rdmaxfer=0"' 10; then
		ktap_diag "pinned pages $(pinned_pages) (idle: $pins0)" \
			"rdma res: $(res_counts)" "idle:     $res0" \
			"$(rdma res show qp; rdma res show cm_id; rdma res show mr; rdma res show pd)"
		return 1
	fi
	return 0
}

port_of()
{
	sed -n 's/^listening \([0-9]*\)$/\1/p' "$T/$1.log"
}

ktap_plan 19

# The idle state: nothing pinned (a file closed by an earlier test may still
# be finishing its teardown: give it time), no rdmaxfer object in use.
wait_for '[ "$(pinned_pages)" -eq 0 ]' 10
pins0=$(pinned_pages)
res0=$(res_counts)
[ "$pins0" -eq 0 ] || ktap_diag "pages pinned before the first case: $pins0"

# 1. the client is killed mid-transfer: the server sees the disconnect,
#    survives, accepts the next client; the killed client's pins are gone
start srv serve "$ADDR" 0 "$SIZE"
logged srv '^listening' && port=$(port_of srv)
pin_srv=$(vmpin "$(pid_of srv)")
pid_srv=$(pid_of srv)
start cli blast "$ADDR" "$port" "$SIZE"
if logged cli '^blasting' 30; then
	sleep 1
	stop cli
	logged srv '^disconnected' 10 && running srv
	r=$?
	[ $r -eq 0 ] || { show_log srv; show_log cli; }
	ktap_result "kill_client_server_sees_disconnect" $r
	out=$("$HELPER" write "$ADDR" "$port" 1M 2>&1)
	r=$?
	[ $r -eq 0 ] || ktap_diag "write after the kill: $out"
	ktap_result "kill_client_server_accepts_again" $r
	[ "$(vmpin "$pid_srv")" = "$pin_srv" ]
	r=$?
	[ $r -eq 0 ] || ktap_diag "server VmPin $(vmpin "$pid_srv") kB, was $pin_srv kB"
	ktap_result "kill_client_server_pins_unchanged" $r
else
	show_log srv
	show_log cli
	ktap_result "kill_client_server_sees_disconnect" 1
	ktap_skip "kill_client_server_accepts_again" "no transfer"
	ktap_skip "kill_client_server_pins_unchanged" "no transfer"
fi
stop srv
stop cli
clean
ktap_result "kill_client_nothing_left" $?

# 2. the server is killed mid-transfer: the client's operations complete
#    with errors, it exits 1 (not 3: nothing hangs)
start srv serve "$ADDR" 0 "$SIZE"
logged srv '^listening' && port=$(port_of srv)
start cli blast "$ADDR" "$port" "$SIZE"
if logged cli '^blasting' 30; then
	sleep 1
	stop srv
	gone cli 30 && [ "$rc" -eq 1 ] && grep -q '^drained' "$T/cli.log"
	r=$?
	[ $r -eq 0 ] || { ktap_diag "client exit status '$rc'"; show_log cli; }
	ktap_result "kill_server_client_errors_and_exits" $r
else
	show_log srv
	show_log cli
	ktap_result "kill_server_client_errors_and_exits" 1
fi
stop srv
stop cli
clean
ktap_result "kill_server_nothing_left" $?

# 3. the device is deleted under live connections: both ends see errors and exit,
#    the kernel keeps nothing; the device comes back and a new transfer works
start srv serve "$ADDR" 0 "$SIZE" 2
logged srv '^listening' && port=$(port_of srv)
start cli blast "$ADDR" "$port" "$SIZE"
start cli2 blast "$ADDR" "$port" "$SIZE"
if logged cli '^blasting' 30 && logged cli2 '^blasting' 30; then
	sleep 1
	rdma link delete "$DEV"
	r=$?
	[ $r -eq 0 ] || ktap_diag "rdma link delete $DEV failed"
	ktap_result "link_delete_returns" $r
	gone cli 30 && [ "$rc" -eq 1 ] && gone cli2 30 && [ "$rc" -eq 1 ]
	r=$?
	[ $r -eq 0 ] || { ktap_diag "client exit status '$rc'"; show_log cli; show_log cli2; }
	ktap_result "link_delete_clients_error_and_exit" $r
	# both ends of these connections were on the device: each went down because
	# the device was removed (ENODEV), not because "the peer closed it" (0)
	gone srv 30 && [ "$(grep -c '^disconnected .* status -19$' "$T/srv.log")" -eq 2 ]
	r=$?
	[ $r -eq 0 ] || { ktap_diag "the server must see two DISCONNECTED with ENODEV (-19)"; show_log srv; }
	ktap_result "link_delete_server_sees_enodev" $r
	for f in cli cli2 srv; do
		grep -v '^\(listening\|accepted\|blasting\)' "$T/$f.log" | sed "s/^/# $f: /"
	done
else
	show_log srv
	show_log cli
	show_log cli2
	ktap_result "link_delete_returns" 1
	ktap_skip "link_delete_clients_error_and_exit" "no transfer"
	ktap_skip "link_delete_server_sees_enodev" "no transfer"
fi
stop srv
stop cli
stop cli2
rdma_link_exists "$DEV" || rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV"
wait_for "rdma link show $DEV/1 | grep -q ACTIVE" 10
# the device's idle objects (its GSI QP, our PD) are back: compare again
clean
ktap_result "link_delete_nothing_left" $?
start srv serve "$ADDR" 0 "$SIZE"
logged srv '^listening' && port=$(port_of srv)
out=$("$HELPER" write "$ADDR" "$port" "$SIZE" 2>&1)
r=$?
[ $r -eq 0 ] || { ktap_diag "write after re-adding $DEV: $out"; show_log srv; }
ktap_result "link_readd_transfer_works" $r
stop srv

# 3b. the provider is unloaded under live connections (every device of its goes
#    through our ib_client remove at once): the same, and it comes back
#    (not on a host with other RDMA devices: they might be the same provider's)
others=$(other_rdma_devs "$DEV")
if [ -n "${others% }" ]; then
	ktap_skip "provider_unload_under_load" "other RDMA devices here ($others): $PROVIDER_MOD stays"
	ktap_skip "provider_unload_nothing_left_and_back" "other RDMA devices here"
elif [ "$PROVIDER" = siw ]; then
	# siw_exit_module() stops siw's TX threads before it unregisters its
	# devices: a QP posted to in between is never freed, and our removal
	# waits in siw_destroy_qp() for ever (Documentation/providers.md, siw)
	ktap_skip "provider_unload_under_load" "rmmod siw under load hangs in siw_destroy_qp(), a siw bug (Documentation/providers.md)"
	rmmod siw
	unload_rc=$?
	[ $unload_rc -eq 0 ] || ktap_diag "rmmod siw (idle) failed"
else
	unload_rc=0
	start srv serve "$ADDR" 0 "$SIZE" 1
	logged srv '^listening' && port=$(port_of srv)
	start cli blast "$ADDR" "$port" "$SIZE"
	if logged cli '^blasting' 30; then
		sleep 1
		rmmod "$PROVIDER_MOD" && gone cli 30 && [ "$rc" -eq 1 ] && gone srv 30
		r=$?
		[ $r -eq 0 ] || { ktap_diag "rmmod $PROVIDER_MOD: client status '$rc'"; show_log cli; show_log srv; }
		ktap_result "provider_unload_under_load" $r
	else
		show_log srv
		show_log cli
		ktap_result "provider_unload_under_load" 1
	fi
	stop srv
	stop cli
fi
if [ -z "${others% }" ]; then
	modprobe "$PROVIDER_MOD"
	rdma_link_exists "$DEV" || rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV"
	wait_for "rdma link show $DEV/1 | grep -q ACTIVE" 10
	start srv serve "$ADDR" 0 1M
	logged srv '^listening' && port=$(port_of srv)
	out=$("$HELPER" write "$ADDR" "$port" 1M 2>&1)
	r=$?
	[ $r -eq 0 ] || { ktap_diag "write after reloading $PROVIDER_MOD: $out"; show_log srv; }
	stop srv
	clean && [ $r -eq 0 ] && [ "$unload_rc" -eq 0 ]
	ktap_result "provider_unload_nothing_left_and_back" $?
fi

# 3c. LISTEN races the device's removal: rdma_cm reports DEVICE_REMOVAL for an id
#    bound to the device's address while LISTEN still has it between rdma_bind_addr
#    and rdma_listen.  The call fails with ENODEV (or succeeds), never uses
#    the id after the core destroyed it (a KASAN use-after-free in
#    rdma_listen before the fix, or EINVAL from its freed state), and
#    nothing is left.
#    The helpers loop until told to stop (SIGUSR1): a removal under KASAN
#    takes seconds.
kmsg_mark
for i in 1 2 3; do
	start "rl$i" relisten "$ADDR" 600
done
cycles=0
while [ $cycles -lt 8 ] && running rl1 && running rl2 && running rl3; do
	sleep 0.$((cycles % 5 + 3))
	rdma link delete "$DEV" || break
	sleep 0.$((cycles % 3 + 1))
	rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV" || break
	cycles=$((cycles + 1))
done
rdma_link_exists "$DEV" || rdma link add "$DEV" type "$PROVIDER" netdev "$NETDEV"
r=0
for i in 1 2 3; do
	kill -USR1 "$(pid_of "rl$i")" 2>/dev/null
	if gone "rl$i" 60 && [ "$rc" -eq 0 ]; then
		sed "s/^/# rl$i: /" "$T/rl$i.log"
	else
		ktap_diag "relisten $i: exit status '$rc'"
		show_log "rl$i"
		r=1
	fi
done
hits=$(kernel_log_problems)
[ -z "$hits" ] || { ktap_diag "$hits"; r=1; }
[ $cycles -eq 8 ] || { ktap_diag "$DEV deleted and re-added $cycles times of 8"; r=1; }
ktap_result "link_delete_races_listen" $r
wait_for "rdma link show $DEV/1 | grep -q ACTIVE" 10
clean
ktap_result "link_delete_races_listen_nothing_left" $?

# 4. rmmod is refused while a process holds the file, with or without
#    connections, and everything keeps working
start srv serve "$ADDR" 0 "$SIZE"
logged srv '^listening' && port=$(port_of srv)
start cli blast "$ADDR" "$port" "$SIZE"
if logged cli '^blasting' 30; then
	! rmmod rdmaxfer 2>/dev/null && rdmaxfer_loaded && sleep 1 &&
		running cli && running srv
	r=$?
	[ $r -eq 0 ] || { show_log srv; show_log cli; }
	ktap_result "rmmod_refused_during_transfer" $r
else
	show_log cli
	ktap_result "rmmod_refused_during_transfer" 1
fi
stop cli
stop srv
start hold hold
logged hold '^ready'
! rmmod rdmaxfer 2>/dev/null && rdmaxfer_loaded
ktap_result "rmmod_refused_with_open_file" $?
stop hold
clean
ktap_result "rmmod_cases_nothing_left" $?

# 5. idle after all of the above: the module unloads and comes back
rmmod rdmaxfer && ! rdmaxfer_loaded && rdmaxfer_load && wait_for "rdmaxfer_lists $DEV" 10
r=$?
[ $r -eq 0 ] || ktap_diag "$(lsmod | grep rdmaxfer)"
ktap_result "rmmod_when_idle_and_reload" $r

ktap_finish
