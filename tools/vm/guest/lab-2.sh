#!/bin/bash
# lab-2.sh - Lab 2: memory registration cost vs buffer size
# (Documentation/labs/2-registration.md).
#   tools/vm/labs.sh 2            (host: boots the guest, runs this, plots build/labs/)
#   bash /usr/lib/rig/lab-2.sh    (in a `make shell` guest)
# Runs `rdmaxfer regbench` LAB_REPS times (default 3) and prints each run and the
# per-size median of every column. Data blocks: regbench-run1.. and regbench (medians):
#   size pages reg_us expose_us kernel_total_us kernel_per_page_ns revoke_us dereg_us
#   ibv_reg_mr_us ibv_per_page_ns ibv_dereg_mr_us
# shellcheck source=lab-common.sh
. "$(dirname "$0")/lab-common.sh"

LAB_REPS=${LAB_REPS:-3}
SIZES=${LAB_SIZES:-4K,16K,64K,256K,1M,4M,16M,64M}
COLS="size pages reg_us expose_us kernel_total_us kernel_per_page_ns revoke_us dereg_us ibv_reg_mr_us ibv_per_page_ns ibv_dereg_mr_us"
# jq: one row per size, columns in $COLS order (a missing value prints as NaN for gnuplot)
JQ_ROWS='.rows[] | [ $cols[] as $c | (.[$c] // "NaN") ] | map(tostring) | join(" ")'

section "Registration cost: the kernel's path (pin + DMA-map + FRWR) vs userspace ibv_reg_mr"
show "ulimit -l"
show "grep -E 'MemTotal|MemFree' /proc/meminfo"
runs=()
for r in $(seq 1 "$LAB_REPS"); do
	if run_json "/tmp/reg$r.json" rdmaxfer regbench --sizes "$SIZES" --json; then
		runs+=("/tmp/reg$r.json")
		data_begin "regbench-run$r" "$COLS"
		jq -r --arg c "$COLS" '($c | split(" ")) as $cols | '"$JQ_ROWS" "/tmp/reg$r.json"
		data_end
	else
		fail "regbench run $r"
	fi
done

if [ ${#runs[@]} -gt 0 ]; then
	echo
	echo "Median of ${#runs[@]} run(s) per size (device: $(jq -r '.device // "?"' "${runs[0]}")):"
	data_begin regbench "$COLS"
	# per size, the median of each column over the runs
	jq -rs --arg c "$COLS" '
		($c | split(" ")) as $cols
		| (map(.rows) | add | group_by(.size))[]
		| . as $g
		| [ $cols[] as $k
		    | ([ $g[] | .[$k] | select(. != null) ] | sort) as $v
		    | if ($v | length) == 0 then "NaN" else $v[(($v | length) - 1) / 2 | floor] end ]
		| map(tostring) | join(" ")' "${runs[@]}"
	data_end
fi

lab_exit
