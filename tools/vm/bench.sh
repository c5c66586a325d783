#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh - `make bench`: rdmaxfer against perftest in the rig's guests, and the plots.
#
#   tools/vm/bench.sh [single|pair|both]   (default: both, or BENCH_LAYOUT)
#
#   single  one guest, 2 vCPUs, both ends on its Soft-RoCE device over a veth pair
#           (RIG_MEM 6144: the file row keeps 2 GiB in its tmpfs)
#   pair    two guests, 1 vCPU each, the rig's link between them (rig.sh pair-run:
#           the servers run in the second guest, started through its peer-shell.sh)
# Each runs tools/vm/guest/bench.sh (its header says what is measured and how) with
# RIG_PIN_VCPUS=1 unless set otherwise, and prints its ratio and CPU tables.  Saved:
#   build/bench/LAYOUT/output.txt     everything the guest printed
#   build/bench/LAYOUT/NAME.dat       its "### DATA NAME" blocks (conns-LAYOUT, windows-LAYOUT)
#   build/bench/conns.png             bandwidth and CPU per operation against the number of
#                                     connections, both tools, from the layouts that ran
#   build/bench/windows.png           rate, CPU per operation and EXPOSE time against the
#                                     number of windows, rdmaxfer alone
# Environment (the guest script's): ROUNDS, BENCH_SCALE, BENCH_CPU, BENCH_CONNS, BENCH_WINDOWS,
# BENCH_FILE_MIB, BENCH_PIN, BENCH_ONLY="SECTION ..." (only those: bw, lat, conns, windows,
# file; e.g. BENCH_ONLY="lat conns" ROUNDS=7 tools/vm/bench.sh pair); BENCH_OUT (default
# <repo>/build/bench); rig.sh's own (RIG_KERNEL, ...).
# Exit status: 0 when every layout ran to its end and the plot was drawn.
set -euo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
RIG=$VM_DIR/rig.sh
PLOTS=$VM_DIR/plots
OUT=${BENCH_OUT:-$REPO/build/bench}

say() { echo "bench: $*" >&2; }
# shellcheck source=tools/vm/plots/lib.sh
. "$PLOTS/lib.sh"

layout=${1:-${BENCH_LAYOUT:-both}}
case $layout in
single) layouts=(single) ;;
pair) layouts=(pair) ;;
both) layouts=(single pair) ;;
*) echo "usage: $0 [single|pair|both]" >&2; exit 2 ;;
esac

# what the guest script reads, passed on to it
envs=''
for v in ROUNDS BENCH_SCALE BENCH_CPU BENCH_CONNS BENCH_WINDOWS BENCH_ONLY BENCH_FILE_MIB BENCH_PIN; do
    [[ -z ${!v:-} ]] || envs+="$v=${!v@Q} "
done

failed=()
for l in "${layouts[@]}"; do
    dir=$OUT/$l
    rm -rf "$dir"
    mkdir -p "$dir"
    say "$l: booting (output: ${dir#"$REPO"/}/output.txt)"
    rc=0
    if [[ $l == single ]]; then
        RIG_MEM=${RIG_MEM:-6144} RIG_PIN_VCPUS=${RIG_PIN_VCPUS:-1} RIG_TIMEOUT=${RIG_TIMEOUT:-2700} \
            "$RIG" run -- "${envs}bash /usr/lib/rig/bench.sh" | tee "$dir/output.txt" || rc=$?
    else
        RIG_MEM=${RIG_MEM:-4096} RIG_PIN_VCPUS=${RIG_PIN_VCPUS:-1} RIG_TIMEOUT=${RIG_TIMEOUT:-2700} \
            "$RIG" pair-run -- "${envs}bash /usr/lib/rig/bench.sh" | tee "$dir/output.txt" || rc=$?
    fi
    extract "$dir/output.txt" "$dir"
    ((rc == 0)) || { say "$l: exit status $rc"; failed+=("$l"); }
done

if compgen -G "$OUT/*/conns-*.dat" >/dev/null; then
    plot "$OUT" "$OUT/conns.png" bench-conns.gp || failed+=(plot)
fi
if compgen -G "$OUT/*/windows-*.dat" >/dev/null; then
    plot "$OUT" "$OUT/windows.png" bench-windows.gp || failed+=(plot)
fi
if ((${#failed[@]})); then
    say "failed: ${failed[*]}"
    exit 1
fi
say "done: ${OUT#"$REPO"/}"
