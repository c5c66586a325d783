#!/bin/bash
# lab-2.sh - Lab 2: memory registration cost vs buffer size
# (Documentation/labs/2-registration.md).
#   tools/vm/labs.sh 2            (host: boots the guest, runs this, plots build/labs/)
#   bash /usr/lib/rig/lab-2.sh    (in a `make shell` guest)
# `rdmaxfer regbench`, LAB_REPS repetitions per size (default 9; regbench reports the
# median), once as is (transparent huge pages allowed) and once with --no-thp. Data blocks
# regbench and regbench-nothp, one row per measured size:
#   size pages reg_us expose_us kernel_total_us kernel_per_page_ns revoke_us dereg_us
#   ibv_reg_mr_us ibv_per_page_ns ibv_dereg_mr_us windows
# (a value regbench did not report is NaN; skipped sizes are listed with their reason).
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

LAB_REPS=${LAB_REPS:-9}
SIZES=${LAB_SIZES:-4K,16K,64K,256K,1M,4M,16M,64M,256M}
COLS="size pages reg_us expose_us kernel_total_us kernel_per_page_ns revoke_us dereg_us ibv_reg_mr_us ibv_per_page_ns ibv_dereg_mr_us windows"

section "Registration cost: the kernel's path (pin, DMA-map, FRWR) vs userspace ibv_reg_mr"
show "ulimit -l"
show "grep -E 'MemTotal|MemFree' /proc/meminfo"
show "cat /sys/kernel/mm/transparent_hugepage/enabled"
# regbench_block NAME [regbench args...]: one regbench run -> data block NAME
regbench_block() {
	local name=$1 f=/tmp/$1.json
	shift
	if ! run_json "$f" rdmaxfer regbench --sizes "$SIZES" --reps "$LAB_REPS" --json "$@"; then
		fail "regbench $*"
		return
	fi
	jq -r '"device \(.device // "?"), page size \(.page_size // "?"), largest window \(.max_window_size // "?") bytes, THP \(.thp // "?")"' "$f"
	data_begin "$name" "$COLS"
	jq -r --arg c "$COLS" '($c | split(" ")) as $cols
		| .rows[] | select(.skipped == null)
		| [ $cols[] as $k | (.[$k] // "NaN") ] | map(tostring) | join(" ")' "$f"
	data_end
	jq -r '.rows[] | select(.skipped != null or .ibv_skipped != null)
		| "size \(.size): skipped: \(.skipped // ("ibv_reg_mr: " + .ibv_skipped))"' "$f"
}

echo
echo "A. Buffers as the program gets them (anonymous memory, transparent huge pages allowed)"
regbench_block regbench
echo
echo "B. The same with 4 KiB pages only (madvise MADV_NOHUGEPAGE: --no-thp)"
regbench_block regbench-nothp --no-thp
echo
echo "The same, as regbench prints it for people:"
show rdmaxfer regbench --sizes 4K,1M,64M --reps 3

lab_exit
