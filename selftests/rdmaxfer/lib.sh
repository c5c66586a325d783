#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# KTAP helpers for the rdmaxfer shell selftests (POSIX sh: the guest runs
# busybox ash).  Debian 6.1's selftests have no ktap_helpers.sh, so these are
# our own.  Usage:
#
#	. "$(dirname "$0")/lib.sh"
#	ktap_plan 3
#	ktap_check "name" command args...	# ok if the command succeeds
#	ktap_result "name" $?			# ok if the status is 0
#	ktap_skip "name" "why"
#	ktap_finish				# exits 0, 1 (a failure) or 4 (all skipped)
#
# Diagnostics go to stdout as "# ..." lines so they stay with the result.

KSFT_PASS=0
KSFT_FAIL=1
KSFT_SKIP=4

ktap_num=0
ktap_passed=0
ktap_failed=0
ktap_skipped=0

ktap_plan()
{
	echo "TAP version 13"
	echo "1..$1"
}

ktap_diag()
{
	printf '%s\n' "$@" | sed 's/^/# /'
}

# ktap_result NAME STATUS: record a result from an exit status.
ktap_result()
{
	ktap_num=$((ktap_num + 1))
	if [ "$2" -eq 0 ]; then
		ktap_passed=$((ktap_passed + 1))
		echo "ok $ktap_num $1"
	else
		ktap_failed=$((ktap_failed + 1))
		echo "not ok $ktap_num $1"
	fi
}

# ktap_check NAME CMD...: run CMD, show its output on failure.
ktap_check()
{
	_name=$1
	shift
	_out=$("$@" 2>&1)
	_rc=$?
	[ $_rc -eq 0 ] || ktap_diag "$_name: '$*' exited $_rc" "$_out"
	ktap_result "$_name" $_rc
}

ktap_skip()
{
	ktap_num=$((ktap_num + 1))
	ktap_skipped=$((ktap_skipped + 1))
	echo "ok $ktap_num $1 # SKIP $2"
}

ktap_finish()
{
	echo "# Totals: pass:$ktap_passed fail:$ktap_failed skip:$ktap_skipped"
	[ $ktap_failed -eq 0 ] || exit $KSFT_FAIL
	[ $ktap_passed -eq 0 ] && [ $ktap_skipped -gt 0 ] && exit $KSFT_SKIP
	exit $KSFT_PASS
}

# Fail the whole script (one failed result) with a reason.
ktap_fail_all()
{
	echo "TAP version 13"
	echo "1..1"
	echo "not ok 1 setup # $1"
	exit $KSFT_FAIL
}

# Skip the whole script (plan 0) with a reason.
ktap_skip_all()
{
	echo "TAP version 13"
	echo "1..0 # SKIP $1"
	exit $KSFT_SKIP
}

# --- rdmaxfer helpers ---------------------------------------------------

SELFTEST_DIR=$(cd "$(dirname "$0")" && pwd)
# The module: RDMAXFER_KO (the rig's guest sets it), else whatever modprobe
# finds.
RDMAXFER_KO=${RDMAXFER_KO:-}

rdmaxfer_loaded()
{
	[ -d /sys/module/rdmaxfer ]
}

rdmaxfer_load()
{
	rdmaxfer_loaded && return 0
	if [ -f "$RDMAXFER_KO" ]; then
		insmod "$RDMAXFER_KO"
	else
		modprobe rdmaxfer
	fi
}

rdmaxfer_unload()
{
	rdmaxfer_loaded || return 0
	rmmod rdmaxfer
}

# dev_is_iwarp DEV: the RDMA device DEV is iWARP (sysfs node type 4, RNIC)
dev_is_iwarp()
{
	[ "$(cut -d: -f1 "/sys/class/infiniband/$1/node_type" 2>/dev/null)" = 4 ]
}

# dev_is_siw DEV: DEV is a Soft-iWARP device (siw sets this node description
# on every device it makes, whatever its name)
dev_is_siw()
{
	grep -q '^Software iWARP' "/sys/class/infiniband/$1/node_desc" 2>/dev/null
}

# Wait up to $2 seconds (default 5) for a condition command $1 to succeed.
wait_for()
{
	_i=0
	while ! eval "$1" >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -gt $((${2:-5} * 10)) ] && return 1
		sleep 0.1
	done
	return 0
}

# --- cleanup and the device under test ------------------------------------

# at_exit CMD: run CMD when the test exits (also on SIGTERM, SIGINT, SIGHUP:
# the runner's timeout), after the commands registered after it.  Their exit
# statuses are not looked at; one that sets at_exit_failed=1 turns a
# successful exit into a failure.
at_exit_cmds=
at_exit_failed=
at_exit()
{
	[ -n "$at_exit_cmds" ] || { trap _at_exit EXIT; trap 'exit 143' TERM INT HUP; }
	at_exit_cmds="$1
$at_exit_cmds"
}

_at_exit()
{
	_st=$?
	# runner.sh's timeouts send SIGTERM more than once, to the whole group:
	# the cleanup (and the commands it starts) must not die of the next one
	trap '' TERM INT HUP
	_cmds=$at_exit_cmds
	at_exit_cmds=
	while read -r _c; do
		[ -n "$_c" ] || continue
		eval "$_c" </dev/null
	done <<-EOF
		$_cmds
	EOF
	[ -n "$at_exit_failed" ] && [ "$_st" -ne "$KSFT_FAIL" ] && _st=$KSFT_FAIL
	exit "$_st"
}

# rdmaxfer_env_up: the RDMA device the test runs on (rxe_env.sh): sets and
# exports RDMAXFER_TEST_DEV, _NETDEV, _ADDR, _ADDR6, _OTHER, _NETDEV2, _OWN,
# _PROVIDER and _PROVIDER_MOD, or
# skips the whole test saying why.  A device made here is removed at exit,
# and the test fails if RDMA objects were left on it.
rdmaxfer_env_up()
{
	rdmaxfer_env_try
	case $? in
	0) ;;
	1) ktap_skip_all "$rdmaxfer_env_why" ;;
	*) ktap_fail_all "$rdmaxfer_env_why" ;;
	esac
}

# rdmaxfer_env_try: rdmaxfer_env_up, but the reason in $rdmaxfer_env_why
# (one line) and status 1 when there is no device to be had here, 2 when
# rxe_env.sh failed otherwise (a bug: the caller should fail).
rdmaxfer_env_try()
{
	[ -z "${RDMAXFER_TEST_DEV:-}" ] && at_exit rdmaxfer_env_down
	_out=$("$SELFTEST_DIR/rxe_env.sh" up 2>&1)
	_st=$?
	# only its assignments are evaluated; anything else is a reason
	_env=$(printf '%s\n' "$_out" | grep '^RDMAXFER_TEST_[A-Z0-9_]*=[^ ;&|$`]*$')
	rdmaxfer_env_why=$(printf '%s\n' "$_out" | grep -v '^RDMAXFER_TEST_' | tr '\n' ' ')
	case $_st in
	0) ;;
	4) return 1 ;;
	*) rdmaxfer_env_why="rxe_env.sh up exited $_st: $rdmaxfer_env_why"; return 2 ;;
	esac
	eval "$_env"
	export RDMAXFER_TEST_DEV RDMAXFER_TEST_NETDEV RDMAXFER_TEST_ADDR RDMAXFER_TEST_ADDR6 \
		RDMAXFER_TEST_OTHER RDMAXFER_TEST_SILENT RDMAXFER_TEST_NETDEV2 RDMAXFER_TEST_OWN \
		RDMAXFER_TEST_PROVIDER RDMAXFER_TEST_PROVIDER_MOD
}

# shellcheck disable=SC2034 # the variables are the calling test's
# rdmaxfer_setup: load the module and bring the device up (rdmaxfer_env_up);
# sets DEV, NETDEV, ADDR, ADDR6, OTHER, NETDEV2, OWN, PROVIDER (rxe, siw) and
# PROVIDER_MOD (its module), short for the RDMAXFER_TEST_* variables.  Skips the test when either cannot be done.
rdmaxfer_setup()
{
	rdmaxfer_load || ktap_skip_all "cannot load the module"
	rdmaxfer_env_up
	DEV=$RDMAXFER_TEST_DEV
	NETDEV=$RDMAXFER_TEST_NETDEV
	ADDR=$RDMAXFER_TEST_ADDR
	ADDR6=$RDMAXFER_TEST_ADDR6
	OTHER=$RDMAXFER_TEST_OTHER
	NETDEV2=$RDMAXFER_TEST_NETDEV2
	OWN=$RDMAXFER_TEST_OWN
	PROVIDER=$RDMAXFER_TEST_PROVIDER
	PROVIDER_MOD=$RDMAXFER_TEST_PROVIDER_MOD
}

# rdmaxfer_setup_own: rdmaxfer_setup for a test that deletes and re-adds the
# device: skips unless the device is one rxe_env.sh made.
rdmaxfer_setup_own()
{
	rdmaxfer_setup
	[ "$OWN" = 1 ] ||
		ktap_skip_all "deletes and re-adds $DEV: runs only on a Soft-RoCE device of its own (unset RDMAXFER_TEST_DEV)"
}

# rdmaxfer_setup_cli: rdmaxfer_setup, for a test of the CLI with transfers:
# skips unless the CLI and jq are there and the module moves data.
rdmaxfer_setup_cli()
{
	command -v rdmaxfer >/dev/null || ktap_skip_all "the rdmaxfer CLI is not on PATH"
	command -v jq >/dev/null || ktap_skip_all "jq is not installed"
	rdmaxfer_setup
	rdmaxfer info --json | jq -e '.module.features | index("transfer")' >/dev/null ||
		ktap_skip_all "the module has no transfer support"
}

rdmaxfer_env_down()
{
	_out=$("$SELFTEST_DIR/rxe_env.sh" down 2>&1) && return 0
	ktap_diag "post-check: $_out"
	at_exit_failed=1
}

# other_rdma_devs DEV...: the RDMA devices of this host but DEV..., on one
# line (a test that unloads rdma_rxe runs only when this is empty: the
# others might be Soft-RoCE devices someone else uses).
other_rdma_devs()
{
	for _d in /sys/class/infiniband/*; do
		[ -e "$_d" ] || continue
		_n=${_d##*/}
		for _x in "$@"; do [ "$_n" = "$_x" ] && _n=; done
		[ -n "$_n" ] && printf '%s ' "$_n"
	done
	echo
}

# Does the RDMA link (device) $1 exist?  (`rdma link show DEV` wants DEV/PORT)
rdma_link_exists()
{
	rdma link show 2>/dev/null | grep -q "^link $1/"
}

# The netdev under RDMA link $1.
rdma_link_netdev()
{
	rdma link show 2>/dev/null | sed -n "s|^link $1/.* netdev \([^ ]*\).*|\1|p"
}

# Is the RDMA device $1 in `rdmaxfer info --json`?
rdmaxfer_lists()
{
	rdmaxfer info --json | jq -e --arg n "$1" 'any(.devices[]; .name == $n)' >/dev/null
}

# kmsg_mark: write a marker line to the kernel log; kernel_log_problems then
# looks at what came after it only (the whole log if /dev/kmsg is not
# writable).
kmsg_mark()
{
	kmsg_marker="$(basename "$0"): start $$ $(date +%s 2>/dev/null)"
	echo "$kmsg_marker" >/dev/kmsg 2>/dev/null || kmsg_marker=
}

# kernel_log_problems: print the oops, BUG, WARNING, KASAN, UBSAN, lockdep
# and hung-task lines logged since kmsg_mark; status 0 if there were none.
kernel_log_problems()
{
	_log=$(dmesg 2>/dev/null)
	if [ -n "${kmsg_marker:-}" ]; then
		_log=$(printf '%s\n' "$_log" | awk -v m="$kmsg_marker" \
			'index($0, m) { n = NR } { l[NR] = $0 } END { for (i = n + 1; i <= NR; i++) print l[i] }')
	fi
	! printf '%s\n' "$_log" | grep -E -- 'WARNING:|BUG:|kernel BUG at|Oops|general protection fault|refcount_t:|list_(add|del) corruption|UBSAN|KASAN|possible (recursive|circular) locking|inconsistent lock state|suspicious RCU usage|sleeping function called from invalid context|blocked for more than'
}

# --- running the CLI -------------------------------------------------------
# These use $tmp, a scratch directory the test creates, and set $rc.
# shellcheck disable=SC2154,SC2034

# run NAME CMD...: run CMD with stdout/stderr in $tmp/NAME.{out,err}; sets $rc.
run()
{
	_n=$1
	shift
	"$@" >"$tmp/$_n.out" 2>"$tmp/$_n.err"
	rc=$?
}

# show FILE...: print files of $tmp as diagnostics (the first 2000 bytes).
show()
{
	for _f in "$@"; do
		[ -f "$tmp/$_f" ] && ktap_diag "--- $_f:" "$(head -c 2000 "$tmp/$_f")"
	done
}

# one_error_line NAME PATTERN: stderr of NAME is one line "rdmaxfer: ..." matching PATTERN.
one_error_line()
{
	[ "$(wc -l <"$tmp/$1.err")" -eq 1 ] &&
		grep -q '^rdmaxfer: ' "$tmp/$1.err" &&
		grep -qi -- "$2" "$tmp/$1.err"
}

# --- a `rdmaxfer serve` in the background ------------------------------------
# These use $tmp and add the server's pid to $pids (the test kills $pids on
# exit).

# serve NAME ARGS...: start `rdmaxfer serve ARGS` in the background (stdout
# $tmp/NAME.log, stderr $tmp/NAME.err, pid in $tmp/NAME.pid) and wait until
# it listens (human mode prints "listening on ..."; --json prints nothing
# until it exits: wait a second).
serve()
{
	_n=$1
	shift
	rdmaxfer serve "$@" >"$tmp/$_n.log" 2>"$tmp/$_n.err" &
	echo $! >"$tmp/$_n.pid"
	pids="$pids $!"
	case " $* " in
	*" --json "*) sleep 1 ;;
	*) wait_for "grep -q '^listening on' '$tmp/$_n.log'" 15 ;;
	esac
}

# serve_quiet NAME: serve NAME's stderr says nothing but its start-up
# warning that it has no --key.
serve_quiet()
{
	! grep -v '^rdmaxfer: warning: no --key: ' "$tmp/$1.err" | grep -q .
}

# stop NAME: SIGTERM the server, wait; sets $rc to its exit status.
# shellcheck disable=SC2034
stop()
{
	_p=$(cat "$tmp/$1.pid")
	kill -TERM "$_p" 2>/dev/null
	wait "$_p"
	rc=$?
}
