#!/bin/bash
# lab-2.sh - Lab 2: memory registration cost vs buffer size
# (Documentation/labs/2-registration.md).
#   tools/vm/labs.sh 2            (host: boots the guest, runs this, plots build/labs/)
#   bash /usr/lib/rig/lab-2.sh    (in a `make shell` guest)
# One `rdmaxfer regbench` run, LAB_REPS repetitions per size (default 5; regbench reports
# the median of them). Data block regbench, one row per measured size:
#   size pages reg_us expose_us kernel_total_us kernel_per_page_ns revoke_us dereg_us
#   ibv_reg_mr_us ibv_per_page_ns ibv_dereg_mr_us windows
# (a value regbench did not report is NaN; skipped sizes are listed with their reason).
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

LAB_REPS=${LAB_REPS:-5}
SIZES=${LAB_SIZES:-4K,16K,64K,256K,1M,4M,16M,64M,256M}
COLS="size pages reg_us expose_us kernel_total_us kernel_per_page_ns revoke_us dereg_us ibv_reg_mr_us ibv_per_page_ns ibv_dereg_mr_us windows"

section "Registration cost: the kernel's path (pin, DMA-map, FRWR) vs userspace ibv_reg_mr"
show "ulimit -l"
show "grep -E 'MemTotal|MemFree' /proc/meminfo"
show "cat /sys/kernel/mm/transparent_hugepage/enabled"
if run_json /tmp/reg.json rdmaxfer regbench --sizes "$SIZES" --reps "$LAB_REPS" --json; then
	jq -r '"device \(.device // "?"), page size \(.page_size // "?"), largest window \(.max_window_size // "?") bytes, THP \(.thp // "?")"' /tmp/reg.json
	data_begin regbench "$COLS"
	jq -r --arg c "$COLS" '($c | split(" ")) as $cols
		| .rows[] | select(.skipped == null)
		| [ $cols[] as $k | (.[$k] // "NaN") ] | map(tostring) | join(" ")' /tmp/reg.json
	data_end
	jq -r '.rows[] | select(.skipped != null or .ibv_skipped != null)
		| "size \(.size): skipped: \(.skipped // ("ibv_reg_mr: " + .ibv_skipped))"' /tmp/reg.json
	echo
	echo "The same, as regbench prints it for people:"
	show rdmaxfer regbench --sizes 4K,1M,64M --reps 3
else
	fail "regbench"
fi

lab_exit
