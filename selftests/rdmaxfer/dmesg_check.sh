#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dmesg_check.sh - runs last: the kernel log of the whole run must show no
# oops, BUG, WARNING, lockdep or hung-task report, and never an unsafe
# global rkey (which an RDMA PD would announce), nor a window registration
# (REG_MR, a purely local work request) that failed for another reason than
# its connection going down: that is a bug in rdmaxfer or the provider (the
# EXPOSE EIO flake of issue 8 §5.10 would show here).  Patterns as
# blktests' _check_dmesg.
. "$(dirname "$0")/lib.sh"

log=$(dmesg 2>/dev/null) || ktap_skip_all "cannot read the kernel log"

check()
{
	_hits=$(echo "$log" | grep -E -- "$2")
	if [ -n "$_hits" ]; then
		ktap_diag "$_hits"
		ktap_result "$1" 1
	else
		ktap_result "$1" 0
	fi
}

ktap_plan 6
check "no_oops_or_bug" 'BUG:|kernel BUG at|Oops|general protection fault|Internal error|Unable to handle|Kernel panic'
check "no_warning" 'WARNING:|refcount_t:|list_(add|del) corruption|UBSAN|KASAN'
check "no_lockdep_report" 'possible recursive locking|possible circular locking|suspicious RCU usage|inconsistent lock state|sleeping function called from invalid context'
check "no_hung_task" 'blocked for more than [0-9]+ seconds|soft lockup|rcu_sched self-detected stall|rcu: INFO'
check "no_unsafe_global_rkey" 'unsafe global rkey'
check "no_failed_registration" 'rdmaxfer: conn [0-9]+: registration failed'
ktap_finish
